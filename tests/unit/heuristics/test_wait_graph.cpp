// The wait-for graph's producers on hand-built snapshots of shapes no recording holds yet: a
// thread waiting for the GIL in a stripped interpreter (no take_gil symbol) behind a holder in a
// C call, a call that never returns across samples, two ranks in collectives from different call
// sites (an order mismatch: a cycle across ranks), a missing rank, and the hook for the job's
// collective records. Every real recording's graph is checked in
// tests/unit/postmortem/test_wait_graph_recordings.cpp.
#include "rocplay/graph/graph.hpp"
#include "rocplay/heuristics/heuristics.hpp"
#include "rocplay/heuristics/wait_graph.hpp"

#include <catch2/catch.hpp>

using namespace rocplay;
using rocplay::graph::find_roots;

namespace {

Frame native(std::uint32_t level, std::string function, std::uint64_t pc) {
  Frame f;
  f.level = level;
  f.function = std::move(function);
  f.pc = pc;
  f.from = "/usr/bin/python3.11";
  return f;
}

Frame python(std::uint32_t level, std::string function, std::string file, std::uint32_t line) {
  Frame f;
  f.level = level;
  f.function = std::move(function);
  f.file = std::move(file);
  f.line = line;
  f.python = true;
  return f;
}

HostThread thread(std::string id, std::uint64_t lwp, std::vector<Frame> frames) {
  HostThread t;
  t.id = std::move(id);
  t.lwp = lwp;
  t.frames = std::move(frames);
  return t;
}

std::string id_of(const graph::Graph& g, graph::NodeId n) {
  return g.node(n).id;
}

} // namespace

TEST_CASE("GIL: a stripped interpreter's futex wait under the eval loop waits for the holder") {
  Snapshot s;
  s.pid = 100;
  s.host_threads.push_back(thread(
      "1", 100,
      {native(0, "__futex_abstimed_wait_common", 0x10), native(1, "??", 0x20),
       native(2, "??", 0x30), native(3, "_PyEval_EvalFrameDefault", 0x40),
       python(4, "train_loop", "/app/train.py", 16), python(5, "<module>", "/app/train.py", 30)}));
  HostThread holder =
      thread("2", 101,
             {native(0, "mix_inner", 0x1000), native(1, "rocplay_busy", 0x2000),
              native(2, "ffi_call", 0x3000), python(3, "tokenize_batch", "/app/data.py", 10),
              python(4, "run", "/usr/lib/python3.11/threading.py", 975)});
  holder.holds_gil = true;
  s.host_threads.push_back(holder);
  // A thread in Event.wait: a lock of the program's own, named; never a GIL waiter.
  s.host_threads.push_back(thread(
      "3", 102,
      {native(0, "__futex_abstimed_wait_common", 0x50), native(1, "do_futex_wait", 0x51),
       native(2, "__new_sem_wait_slow64", 0x52), native(3, "PyThread_acquire_lock_timed", 0x53),
       native(4, "_PyEval_EvalFrameDefault", 0x54),
       python(5, "wait", "/usr/lib/python3.11/threading.py", 327),
       python(6, "consume", "/app/worker.py", 44)}));

  // Two samples: the holder's call is the same, frame 0 moved, and it burned the CPU.
  std::vector<Sample> samples(2);
  samples[0].snapshot = s;
  samples[1].index = 2;
  samples[1].at = 2.0;
  samples[1].snapshot = s;
  HostThread& later = samples[1].snapshot.host_threads[1];
  later.frames[0] = native(0, "mix", 0x1800);
  later.figures = ThreadFigures{"R", 1.9, 2.0};
  samples[1].snapshot.host_threads[0].figures = ThreadFigures{"S", 0.0, 2.0};
  samples[1].snapshot.host_threads[2].figures = ThreadFigures{"S", 0.0, 2.0};
  const auto sampled = heuristics::run_samples(samples);

  heuristics::GraphInputs in;
  in.snapshot = &samples[0].snapshot;
  in.findings = &sampled.findings;
  in.progress = &sampled.progress;
  in.samples = &samples;
  const auto g = heuristics::wait_graph(in);
  const auto roots = find_roots(g);
  REQUIRE(roots.size() == 1);
  const auto& root = g.node(roots[0].node);
  CHECK(root.id == "thread:101");
  CHECK(root.state == graph::State::Spinning);
  CHECK(root.where == "tokenize_batch (data.py:10)");
  CHECK_THAT(root.doing, Catch::Contains("in one call") && Catch::Contains("never returns"));
  REQUIRE(roots[0].chains.size() == 1);
  const auto& chain = roots[0].chains[0];
  REQUIRE(chain.size() == 3);
  CHECK(id_of(g, chain[0]) == "thread:100");
  CHECK(g.node(chain[0]).where == "train_loop (train.py:16)");
  CHECK(id_of(g, chain[1]) == "gil");
  // The Event.wait thread names its caller's line, not threading.py's.
  CHECK(g.node(g.find("thread:102")).where == "consume (worker.py:44)");
  CHECK(graph::cause_lines(g).front().starts_with("thread 2 (tokenize_batch (data.py:10)), "));

  SECTION("a holder that slept between the samples is not called stuck") {
    samples[1].snapshot.host_threads[1].figures = ThreadFigures{"S", 0.0, 2.0};
    const auto again = heuristics::run_samples(samples);
    in.progress = &again.progress;
    in.findings = &again.findings;
    const auto g2 = heuristics::wait_graph(in);
    CHECK(find_roots(g2).empty());
    CHECK(graph::cause_lines(g2) ==
          std::vector<std::string>{"none: every wait seen ends at work that moved"});
  }
}

TEST_CASE("ranks in collectives from different call sites close a cycle across ranks") {
  auto rank_graph = [](const std::string& site) {
    graph::Graph g;
    graph::Node t;
    t.id = "thread:1";
    t.kind = "thread";
    t.label = "main thread";
    t.state = graph::State::Blocked;
    t.where = site;
    t.weight = 3;
    graph::Node d;
    d.id = "dispatch:7";
    d.kind = "collective";
    d.label = "ncclDevKernel_AllReduce_Sum_f32_RING_LL (dispatch 7)";
    d.name = "ncclDevKernel_AllReduce_Sum_f32_RING_LL";
    graph::Node peers;
    peers.id = "peers:7";
    peers.kind = "rank";
    peers.label = "the peer ranks";
    const auto tn = g.add(t);
    const auto dn = g.add(d);
    const auto pn = g.add(peers);
    g.wait(tn, dn, graph::EdgeKind::Or, "frame cudaStreamSynchronize");
    g.wait(dn, pn, graph::EdgeKind::And, "collective-wait");
    return g;
  };
  const auto a = rank_graph("step_rank0 (order.py:21)");
  const auto b = rank_graph("step_rank1 (order.py:26)");
  std::vector<heuristics::RankGraph> ranks = {{0, 10, &a, nullptr, {}}, {1, 11, &b, nullptr, {}}};
  const auto g = heuristics::incident_graph(ranks, {});
  const auto roots = find_roots(g);
  REQUIRE(roots.size() == 1);
  CHECK(roots[0].cycle);
  CHECK(roots[0].cycle_nodes.size() == 4);
  CHECK(roots[0].waiters == 2); // each rank's main thread
  const std::string cause = graph::cause_lines(g).front();
  CHECK_THAT(cause, Catch::StartsWith("a cycle of waits: ") && Catch::Contains("rank 0: ") &&
                        Catch::Contains("rank 1: "));

  SECTION("the same call site on both ranks is one collective waiting together: no cycle") {
    const auto c = rank_graph("step (order.py:21)");
    const auto d = rank_graph("step (order.py:21)");
    std::vector<heuristics::RankGraph> same = {{0, 10, &c, nullptr, {}}, {1, 11, &d, nullptr, {}}};
    const auto h = heuristics::incident_graph(same, {});
    CHECK(find_roots(h).empty());
    CHECK_FALSE(graph::open_ends(h).empty()); // the peers: not seen as stuck
  }

  SECTION("a missing rank is the root its peers wait for") {
    Finding missing;
    missing.id = std::string(heuristics::kMissingRank);
    missing.details = {{"kernel", "ncclDevKernel_AllReduce_Sum_f32_RING_LL"}, {"missing", {1}}};
    graph::Graph idle;
    graph::Node t;
    t.id = "thread:1";
    t.kind = "thread";
    t.label = "main thread";
    t.where = "sleep_forever (mismatch.py:40)";
    t.weight = 3;
    idle.add(t);
    std::vector<heuristics::RankGraph> two = {{0, 10, &a, nullptr, {}},
                                              {1, 11, &idle, nullptr, {}}};
    const auto h = heuristics::incident_graph(two, {missing});
    const auto r = find_roots(h);
    REQUIRE(r.size() == 1);
    CHECK(h.node(r[0].node).id == "rank 1/elsewhere");
    CHECK(h.node(r[0].node).where == "sleep_forever (mismatch.py:40)");
    REQUIRE_FALSE(r[0].chains.empty());
    CHECK(h.node(r[0].chains[0].front()).id == "rank 0/thread:1");
  }
}

TEST_CASE("collective records: a started call waits for the ranks behind in its group") {
  graph::Graph g;
  heuristics::add_collective_records(g, {});
  CHECK(g.empty());
  heuristics::add_collective_records(g,
                                     {{0, "allreduce", "A", 12, "train.py:40 (step)", "started"},
                                      {1, "allreduce", "A", 11, "train.py:40 (step)", "completed"},
                                      {1, "allgather", "B", 3, "train.py:52 (step)", "started"},
                                      {0, "allgather", "B", 3, "train.py:52 (step)", "completed"}});
  const auto call = g.find("collective:A#12");
  REQUIRE(call != graph::Graph::npos);
  CHECK(g.node(call).label == "allreduce #12 on group A");
  bool waits_for_rank1 = false;
  for (const auto& e : g.edges()) {
    waits_for_rank1 = waits_for_rank1 || (e.from == call && g.node(e.to).id == "rank 1");
  }
  CHECK(waits_for_rank1);
  CHECK(g.find("collective:B#3") == graph::Graph::npos); // nobody behind in B
  // Rank 1's own state is not known from records: an open end, not a cause.
  CHECK(find_roots(g).empty());
  CHECK(graph::open_ends(g).size() == 1);
}
