// The wait-for graph alone: fates (AND/OR/ONE waits, moving and unknown nodes), roots (a stuck
// node that waits on nothing, a cycle, several independent ones), chains from the symptom to the
// root, open ends, merging a rank's graph. Small hand-made graphs of the shapes docs/heuristics.md
// names; the producers' graphs over real recordings are tested in tests/unit/heuristics.
#include "rocplay/graph/graph.hpp"

#include <catch2/catch.hpp>

#include <string>
#include <vector>

using namespace rocplay::graph;

namespace {

Node make(const std::string& id, const std::string& kind, const std::string& label,
          State state = State::Unknown, int weight = 0) {
  Node n;
  n.id = id;
  n.kind = kind;
  n.label = label;
  n.state = state;
  n.weight = weight;
  return n;
}

NodeId add(Graph& g, const std::string& id, State state, int weight = 0) {
  return g.add(make(id, "thread", id, state, weight));
}

std::vector<std::string> ids(const Graph& g, const std::vector<NodeId>& chain) {
  std::vector<std::string> out;
  for (NodeId n : chain) {
    out.push_back(g.node(n).id);
  }
  return out;
}

} // namespace

TEST_CASE("a thread waiting for the GIL whose holder spins: the holder is the root") {
  Graph g;
  auto main = add(g, "main", State::Blocked, 10);
  auto gil = g.add(make("gil", "gil", "the GIL"));
  auto holder = add(g, "t33", State::Spinning);
  g.wait(main, gil, EdgeKind::One, "frame 0 take_gil");
  g.wait(gil, holder, EdgeKind::One, "holder");
  auto roots = find_roots(g);
  REQUIRE(roots.size() == 1);
  CHECK(g.node(roots[0].node).id == "t33");
  CHECK_FALSE(roots[0].cycle);
  CHECK(roots[0].waiters == 2);
  REQUIRE(roots[0].chains.size() == 1);
  CHECK(ids(g, roots[0].chains[0]) == std::vector<std::string>{"main", "gil", "t33"});
  CHECK(g.edges()[0].evidence == std::vector<std::string>{"frame 0 take_gil"});
  CHECK(fates(g) == std::vector<Fate>{Fate::Stuck, Fate::Stuck, Fate::Stuck});
}

TEST_CASE("a blocked node that waits on nothing seen is an open end, a dead end is a root") {
  Graph g;
  auto main = add(g, "main", State::Blocked);
  auto sleeper = add(g, "sleeper", State::Blocked);
  g.wait(main, sleeper, EdgeKind::One);
  CHECK(find_roots(g).empty());
  REQUIRE(open_ends(g).size() == 1);
  CHECK(g.node(open_ends(g)[0].node).id == "sleeper");
  g.node(sleeper).dead_end = true;
  auto roots = find_roots(g);
  REQUIRE(roots.size() == 1);
  CHECK(g.node(roots[0].node).id == "sleeper");
}

TEST_CASE("a moving holder breaks the chain: no root") {
  Graph g;
  auto main = add(g, "main", State::Blocked);
  auto holder = add(g, "t2", State::Moving);
  g.wait(main, holder, EdgeKind::One);
  CHECK(find_roots(g).empty());
  CHECK(open_ends(g).empty());
  CHECK(fates(g) == std::vector<Fate>{Fate::Completes, Fate::Completes});
}

TEST_CASE("a chain that ends at an unknown node is not a root but an open end") {
  Graph g;
  auto r0 = add(g, "rank0", State::Blocked, 5);
  auto coll = g.add(make("coll", "collective", "AllReduce"));
  auto r1 = add(g, "rank1", State::Unknown);
  g.wait(r0, coll, EdgeKind::One);
  g.wait(coll, r1, EdgeKind::And);
  CHECK(find_roots(g).empty());
  auto ends = open_ends(g);
  REQUIRE(ends.size() == 1);
  CHECK(g.node(ends[0].node).id == "rank1");
  CHECK(ids(g, ends[0].chain) == std::vector<std::string>{"rank0", "coll", "rank1"});
}

TEST_CASE("three mutexes in a circle are one cycle root, named from its heaviest member") {
  Graph g;
  auto a = add(g, "a", State::Blocked);
  auto b = add(g, "b", State::Blocked, 3);
  auto c = add(g, "c", State::Blocked);
  auto waiter = add(g, "d", State::Blocked);
  g.wait(a, b, EdgeKind::One);
  g.wait(b, c, EdgeKind::One);
  g.wait(c, a, EdgeKind::One);
  g.wait(waiter, a, EdgeKind::One);
  auto roots = find_roots(g);
  REQUIRE(roots.size() == 1);
  CHECK(roots[0].cycle);
  CHECK(g.node(roots[0].node).id == "b");
  CHECK(ids(g, roots[0].cycle_nodes) == std::vector<std::string>{"b", "c", "a"});
  CHECK(roots[0].waiters == 1);
  REQUIRE(roots[0].chains.size() == 1);
  CHECK(ids(g, roots[0].chains[0]) == std::vector<std::string>{"d", "a"});
}

TEST_CASE("a thread waiting for a lock it holds is a cycle of one") {
  Graph g;
  auto a = add(g, "a", State::Blocked);
  g.wait(a, a, EdgeKind::One);
  auto roots = find_roots(g);
  REQUIRE(roots.size() == 1);
  CHECK(roots[0].cycle);
  CHECK(ids(g, roots[0].cycle_nodes) == std::vector<std::string>{"a"});
}

TEST_CASE("OR waits: stuck only when every alternative is") {
  Graph g;
  auto w = add(g, "waiter", State::Blocked);
  auto x = add(g, "x", State::Spinning);
  auto y = add(g, "y", State::Moving);
  g.wait(w, x, EdgeKind::Or);
  g.wait(w, y, EdgeKind::Or);
  CHECK(fates(g)[w] == Fate::Completes);
  // x is stuck on its own: a root with no waiter.
  auto roots = find_roots(g);
  REQUIRE(roots.size() == 1);
  CHECK(g.node(roots[0].node).id == "x");
  CHECK(roots[0].waiters == 0);

  Graph h;
  auto w2 = add(h, "waiter", State::Blocked);
  auto x2 = add(h, "x", State::Spinning);
  auto u2 = add(h, "u", State::Unknown);
  h.wait(w2, x2, EdgeKind::Or);
  h.wait(w2, u2, EdgeKind::Or);
  CHECK(fates(h)[w2] == Fate::Unknown); // the unknown alternative may still serve it
}

TEST_CASE("AND waits: one stuck target is enough, and independent roots stay separate") {
  Graph g;
  auto barrier = g.add(make("barrier", "lanes", "255 lanes at the barrier", State::Blocked, 1));
  auto poll = g.add(make("poll", "lanes", "lane 0", State::Spinning));
  auto other = add(g, "other", State::Moving);
  Node unwritten = make("flag", "flag", "the flag", State::Blocked);
  unwritten.dead_end = true;
  auto flag = g.add(unwritten);
  g.wait(barrier, poll, EdgeKind::And);
  g.wait(barrier, other, EdgeKind::And);
  g.wait(poll, flag, EdgeKind::One);
  auto lonely = add(g, "lonely", State::Spinning);
  auto lonely_waiter = add(g, "lw", State::Blocked);
  auto lonely_waiter2 = add(g, "lw2", State::Blocked);
  g.wait(lonely_waiter, lonely, EdgeKind::One);
  g.wait(lonely_waiter2, lonely, EdgeKind::One);
  g.wait(lonely_waiter2, lonely, EdgeKind::One, "second evidence");
  CHECK(g.edges().size() == 5); // the repeated edge merged
  auto roots = find_roots(g);
  REQUIRE(roots.size() == 2);
  CHECK(g.node(roots[0].node).id == "flag"); // two waiters each: the first added leads
  CHECK(ids(g, roots[0].chains[0]) == std::vector<std::string>{"barrier", "poll", "flag"});
  CHECK(g.node(roots[1].node).id == "lonely");
  CHECK(roots[1].chains.size() == 2);
}

TEST_CASE("a fault is a root of its own and leads") {
  Graph g;
  auto a = add(g, "a", State::Blocked);
  auto b = add(g, "b", State::Blocked);
  g.wait(a, b, EdgeKind::One);
  g.wait(b, a, EdgeKind::One);
  Node faulted = make("fault", "thread", "faulted", State::Moving);
  faulted.fault = true;
  auto f = g.add(faulted);
  auto m = add(g, "m", State::Moving);
  g.wait(f, m, EdgeKind::One); // ignored: the fault is where it ends
  auto roots = find_roots(g);
  REQUIRE(roots.size() == 2);
  CHECK(g.node(roots[0].node).id == "fault");
  CHECK(roots[1].cycle);
}

TEST_CASE("adding a node twice merges what the second one knows") {
  Graph g;
  auto n = g.add(make("x", "thread", ""));
  Node second = make("x", "", "main thread", State::Blocked, 4);
  second.where = "a.py:3";
  auto again = g.add(second);
  CHECK(n == again);
  CHECK(g.node(n).state == State::Blocked);
  CHECK(describe(g.node(n)) == "main thread (a.py:3)");
  CHECK(g.node(n).weight == 4);
  CHECK(g.find("nope") == Graph::npos);
  CHECK_THROWS(g.wait(n, 7, EdgeKind::One));
}

TEST_CASE("two ranks' graphs joined with prefixes close a cycle across ranks") {
  Graph r0;
  auto t0 = add(r0, "main", State::Blocked, 5);
  auto c0 = r0.add(make("coll:A", "collective", "AllReduce", State::Blocked));
  r0.wait(t0, c0, EdgeKind::One);
  Graph r1 = r0;
  Graph job;
  auto n0 = job.merge(r0, "rank0/");
  auto n1 = job.merge(r1, "rank1/");
  CHECK(job.node(n1[1]).id == "rank1/coll:A");
  // Each rank's collective waits for the other rank's thread, which waits in its own collective.
  job.wait(n0[1], n1[0], EdgeKind::And, "peer rank 1");
  job.wait(n1[1], n0[0], EdgeKind::And, "peer rank 0");
  auto roots = find_roots(job);
  REQUIRE(roots.size() == 1);
  CHECK(roots[0].cycle);
  CHECK(roots[0].cycle_nodes.size() == 4);
}

TEST_CASE("a thousand threads behind one root: every waiter counted, chains capped") {
  Graph g;
  auto root = add(g, "holder", State::Spinning);
  for (int i = 0; i < 1000; ++i) {
    auto t = add(g, "t" + std::to_string(i), State::Blocked, i == 500 ? 9 : 0);
    g.wait(t, root, EdgeKind::One);
  }
  auto roots = find_roots(g);
  REQUIRE(roots.size() == 1);
  CHECK(roots[0].waiters == 1000);
  CHECK(roots[0].chains.size() == kMaxChains);
  CHECK(g.node(roots[0].chains[0].front()).id == "t500");
}

TEST_CASE("a long chain is walked without recursion") {
  Graph g;
  NodeId prev = add(g, "n0", State::Blocked);
  for (int i = 1; i < 5000; ++i) {
    NodeId n = add(g, "n" + std::to_string(i), i == 4999 ? State::Spinning : State::Blocked);
    g.wait(prev, n, EdgeKind::One);
    prev = n;
  }
  auto roots = find_roots(g);
  REQUIRE(roots.size() == 1);
  CHECK(g.node(roots[0].node).id == "n4999");
  CHECK(roots[0].chains[0].size() == 5000);
}

TEST_CASE("cause lines: the root with its line, then its waiters up to the symptom") {
  Graph g;
  Node main = make("main", "thread", "main thread", State::Blocked, 5);
  main.where = "train_loop (train.py:16)";
  Node holder = make("t33", "thread", "thread 33", State::Spinning);
  holder.where = "tokenize_batch (data.py:10)";
  holder.doing = "in one C call for 2.0 s";
  auto m = g.add(main);
  auto gil = g.add(make("gil", "gil", "the GIL", State::Blocked));
  auto h = g.add(holder);
  g.wait(m, gil, EdgeKind::One);
  g.wait(gil, h, EdgeKind::One);
  auto lines = cause_lines(g);
  REQUIRE(lines.size() == 1);
  CHECK(lines[0] == "thread 33 (tokenize_batch (data.py:10)), in one C call for 2.0 s <- the GIL "
                    "<- main thread (train_loop (train.py:16))");

  Graph cycle;
  auto a = cycle.add(make("a", "thread", "thread 2", State::Blocked));
  auto b = cycle.add(make("b", "mutex", "mutex_b", State::Blocked));
  cycle.wait(a, b, EdgeKind::One);
  cycle.wait(b, a, EdgeKind::One);
  CHECK(cause_lines(cycle) == std::vector<std::string>{"a cycle of waits: thread 2 -> mutex_b -> "
                                                       "thread 2"});

  Graph open;
  auto w = open.add(make("w", "thread", "rank 0 main thread", State::Blocked));
  auto u = open.add(make("u", "rank", "rank 1", State::Unknown));
  open.wait(w, u, EdgeKind::And);
  CHECK(cause_lines(open) ==
        std::vector<std::string>{"none found: the waits end at what could not be seen: rank 1 <- "
                                 "rank 0 main thread"});

  Graph moving;
  auto x = moving.add(make("x", "thread", "x", State::Blocked));
  auto y = moving.add(make("y", "thread", "y", State::Moving));
  moving.wait(x, y, EdgeKind::One);
  CHECK(cause_lines(moving) ==
        std::vector<std::string>{"none: every wait seen ends at work that moved"});
  CHECK(cause_lines(Graph{}).empty());
}
