// The wait-for graph (docs/architecture.md, "The wait-for graph"): nodes that wait, "waits for"
// edges with their evidence, each node's state, and the roots a verdict names: a node that waits
// on nothing that changes, or a cycle. Nothing here knows GPUs, debuggers or Python: producers
// (src/heuristics/graph_*.cpp) turn a case's facts into nodes and edges.
//
//   graph::Graph g;
//   graph::Node n;  n.id = "thread:1";  n.label = "main thread";  n.state = State::Blocked;
//   auto main = g.add(n);                    // and the GIL, its holder, ... likewise
//   g.wait(main, gil, graph::EdgeKind::One, "frame 0 take_gil");
//   for (const graph::Root& r : graph::find_roots(g)) ... r.node, r.cycle, r.chains
//
// Layer: src/graph/ (library rocplay_graph; depends on nothing else in the project).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace rocplay::graph {

// What a node does, as the samples and the snapshot tell it.
enum class State : std::uint8_t {
  Unknown,  // not asked, not seen, or seen once: neither a root nor a link that breaks a chain
  Moving,   // running and changing: whatever waits on it will be served
  Spinning, // running in place (a polling loop, a call that burns CPU and never returns)
  Blocked,  // asleep in a wait
};
std::string_view to_string(State state);

// How a waiter needs its targets (MUST's AND/OR waits).
enum class EdgeKind : std::uint8_t {
  And, // needs every target (a collective its peers, a barrier every lane)
  Or,  // needs any one target (a condition any signaller, a stream sync one of its dispatches)
  One, // needs exactly this target (a mutex's owner, the GIL's holder, a child process)
};
std::string_view to_string(EdgeKind kind);

using NodeId = std::size_t;

struct Node {
  std::string id;    // stable within one graph: `thread:4242`, `gil`, `dispatch:1`
  std::string kind;  // `thread`, `gil`, `mutex`, `dispatch`, `lanes`, `flag`, `rank`, ...
  std::string label; // for a person: `main thread`, `the GIL`, `poll_then_barrier (dispatch 1)`
  State state = State::Unknown;
  std::string where; // its line, Python line first: `train.py:16 (train_loop)`
  std::string doing; // how it stands: `in one C call for 2.0 s`, `polls a flag at k.cu:12`
  std::string name;  // what another graph knows it by (a collective's kernel), for joins
  // A thread's callers' lines, innermost first: two calls at one line (a helper every call goes
  // through) made by different paths are told apart by it.
  std::vector<std::string> call_path;
  bool fault = false; // a fault stop: always a root of its own
  // It waits on nothing that will ever change, by its producer's evidence (a flag no lane writes,
  // a rank gone elsewhere). A blocked node that waits on nothing in the graph is otherwise like
  // an unknown one: what would wake it is not seen.
  bool dead_end = false;
  // Larger leads: among roots (and symptoms) of equal standing, the one a person reads first.
  int weight = 0;
};

struct Edge {
  NodeId from = 0; // the waiter
  NodeId to = 0;   // what it waits for
  EdgeKind kind = EdgeKind::One;
  std::vector<std::string> evidence; // `frame 0 take_gil`, `lane table row 3`, `Read 7 / Write 8`
};

class Graph {
public:
  // Adds the node, or returns the one with the same id. A second add of one id merges: a known
  // state replaces Unknown, empty fields are filled, the weight is the larger.
  NodeId add(Node node);
  // `from` waits for `to`. A second edge between the same two nodes adds its evidence to the
  // first. Self-edges are kept (a thread that waits for a lock it holds is a cycle of one).
  void wait(NodeId from, NodeId to, EdgeKind kind, std::string evidence = {});
  // The node with this id; npos when there is none.
  NodeId find(std::string_view id) const;
  static constexpr NodeId npos = static_cast<NodeId>(-1);

  const std::vector<Node>& nodes() const { return nodes_; }
  const std::vector<Edge>& edges() const { return edges_; }
  Node& node(NodeId id) { return nodes_.at(id); }
  const Node& node(NodeId id) const { return nodes_.at(id); }
  bool empty() const { return nodes_.empty(); }

  // Copies `other` in, each id prefixed with `prefix` (a rank's graph joining the incident's);
  // returns the new id of each of other's nodes, in order.
  std::vector<NodeId> merge(const Graph& other, std::string_view prefix);

private:
  std::vector<Node> nodes_;
  std::vector<Edge> edges_;
  std::unordered_map<std::string, NodeId> by_id_;
  std::map<std::pair<NodeId, NodeId>, std::size_t> by_ends_;
};

// What a node can still do, from its state and what it waits for (the least fixpoint of "can
// complete": a waiter completes when its AND/ONE targets all can and, with OR targets, one can).
// A node that waits on nothing completes when it moves, never when it spins or is a dead end,
// and is unknown when it is blocked (its waker unseen) or unknown.
enum class Fate : std::uint8_t {
  Completes, // moving, or everything it needs is
  Stuck,     // waits forever whatever the unknown nodes do
  Unknown,   // stuck only if some unknown node is: the chain ends at unknown
};
std::vector<Fate> fates(const Graph& graph);

struct Root {
  // The root node; for a cycle, its member a person reads first (highest weight, then the first
  // added), with the whole cycle in `cycle_nodes` in wait order.
  NodeId node = 0;
  bool cycle = false;
  std::vector<NodeId> cycle_nodes;
  // Chains from each symptom (a stuck node nothing waits on) to the root, symptom first, root
  // last, by the fewest waits; the symptom of highest weight first. At most kMaxChains.
  std::vector<std::vector<NodeId>> chains;
  std::size_t waiters = 0; // every node stuck behind this root (itself excluded)
};
inline constexpr std::size_t kMaxChains = 8;

// The roots: each terminal part of the stuck nodes, a stuck node that waits on nothing (a spin, a
// call that never returns, a dead end: a flag nobody writes) or a cycle of waits. Independent roots
// stay separate. Faults first, then the one with the most waiters, then the highest weight.
std::vector<Root> find_roots(const Graph& graph);

// A chain that ends at an unknown node: the waiters it holds and what it ends at. A healthy or
// half-seen job has these and no root.
struct OpenEnd {
  NodeId node = 0;           // the unknown node
  std::vector<NodeId> chain; // symptom first, the unknown node last
};
std::vector<OpenEnd> open_ends(const Graph& graph);

// `label (where)`, the way a chain names a node.
std::string describe(const Node& node);

// The text report's `Cause:` lines, one per independent root (at most `max_roots`, the rest
// counted): the root with its line and what it does, then `<-` each waiter up to the symptom
// (`<-` reads "is waited for by"); a cycle as `A -> B -> A` (`->` reads "waits for"). With no
// root, the chains that end at an unknown node, saying so: never a cause. Empty when the graph
// holds no wait at all.
std::vector<std::string> cause_lines(const Graph& graph, std::size_t max_roots = 3);

} // namespace rocplay::graph
