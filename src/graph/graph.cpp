// The wait-for graph: nodes, edges, fates, roots and chains (rocplay/graph/graph.hpp).
#include "rocplay/graph/graph.hpp"

#include <algorithm>
#include <deque>
#include <stdexcept>
#include <utility>

namespace rocplay::graph {

std::string_view to_string(State state) {
  switch (state) {
  case State::Moving:
    return "moving";
  case State::Spinning:
    return "spinning";
  case State::Blocked:
    return "blocked";
  case State::Unknown:
    break;
  }
  return "unknown";
}

std::string_view to_string(EdgeKind kind) {
  switch (kind) {
  case EdgeKind::And:
    return "and";
  case EdgeKind::Or:
    return "or";
  case EdgeKind::One:
    break;
  }
  return "one";
}

NodeId Graph::add(Node node) {
  if (NodeId at = find(node.id); at != npos) {
    Node& old = nodes_[at];
    if (old.state == State::Unknown) {
      old.state = node.state;
    }
    for (auto [mine, theirs] :
         {std::pair{&old.kind, &node.kind}, std::pair{&old.label, &node.label},
          std::pair{&old.where, &node.where}, std::pair{&old.doing, &node.doing},
          std::pair{&old.name, &node.name}}) {
      if (mine->empty()) {
        *mine = std::move(*theirs);
      }
    }
    if (old.call_path.empty()) {
      old.call_path = std::move(node.call_path);
    }
    old.fault = old.fault || node.fault;
    old.dead_end = old.dead_end || node.dead_end;
    old.weight = std::max(old.weight, node.weight);
    return at;
  }
  by_id_.emplace(node.id, nodes_.size());
  nodes_.push_back(std::move(node));
  return nodes_.size() - 1;
}

void Graph::wait(NodeId from, NodeId to, EdgeKind kind, std::string evidence) {
  if (from >= nodes_.size() || to >= nodes_.size()) {
    throw std::out_of_range("graph: an edge to a node that does not exist");
  }
  if (auto it = by_ends_.find({from, to}); it != by_ends_.end()) {
    Edge& e = edges_[it->second];
    if (!evidence.empty() &&
        std::find(e.evidence.begin(), e.evidence.end(), evidence) == e.evidence.end()) {
      e.evidence.push_back(std::move(evidence));
    }
    return;
  }
  by_ends_.emplace(std::pair{from, to}, edges_.size());
  Edge e{from, to, kind, {}};
  if (!evidence.empty()) {
    e.evidence.push_back(std::move(evidence));
  }
  edges_.push_back(std::move(e));
}

NodeId Graph::find(std::string_view id) const {
  auto it = by_id_.find(std::string(id));
  return it == by_id_.end() ? npos : it->second;
}

std::vector<NodeId> Graph::merge(const Graph& other, std::string_view prefix) {
  std::vector<NodeId> ids;
  ids.reserve(other.nodes_.size());
  for (const Node& n : other.nodes_) {
    Node copy = n;
    copy.id = std::string(prefix) + n.id;
    ids.push_back(add(std::move(copy)));
  }
  for (const Edge& e : other.edges_) {
    for (const auto& ev : e.evidence) {
      wait(ids[e.from], ids[e.to], e.kind, ev);
    }
    if (e.evidence.empty()) {
      wait(ids[e.from], ids[e.to], e.kind);
    }
  }
  return ids;
}

namespace {

struct Adjacency {
  std::vector<std::vector<std::size_t>> out; // edge indexes by waiter
  std::vector<std::vector<std::size_t>> in;  // edge indexes by target
};

Adjacency adjacency(const Graph& g) {
  Adjacency a;
  a.out.resize(g.nodes().size());
  a.in.resize(g.nodes().size());
  for (std::size_t i = 0; i < g.edges().size(); ++i) {
    const Edge& e = g.edges()[i];
    if (g.node(e.from).fault) {
      continue; // a fault is a root of its own: whatever it waited for no longer matters
    }
    a.out[e.from].push_back(i);
    a.in[e.to].push_back(i);
  }
  return a;
}

// The least fixpoint of "can complete". Unknown nodes that wait on nothing complete when
// `unknown_completes` (the optimistic pass) and never otherwise.
std::vector<bool> completes(const Graph& g, const Adjacency& a, bool unknown_completes) {
  const std::size_t n = g.nodes().size();
  std::vector<bool> done(n, false);
  std::vector<std::size_t> and_left(n, 0);
  std::vector<bool> has_or(n, false);
  std::vector<bool> or_met(n, false);
  std::deque<NodeId> work;
  auto settle = [&](NodeId v) {
    if (!done[v]) {
      done[v] = true;
      work.push_back(v);
    }
  };
  for (NodeId v = 0; v < n; ++v) {
    const Node& node = g.node(v);
    for (std::size_t e : a.out[v]) {
      if (g.edges()[e].kind == EdgeKind::Or) {
        has_or[v] = true;
      } else {
        ++and_left[v];
      }
    }
    if (node.fault) {
      continue;
    }
    if (node.state == State::Moving) {
      settle(v);
    } else if (a.out[v].empty()) {
      // Blocked on nothing in the graph: its waker is not seen, as unknown as an unknown node.
      const bool open =
          !node.dead_end && (node.state == State::Unknown || node.state == State::Blocked);
      if (open && unknown_completes) {
        settle(v);
      }
    } else if (and_left[v] == 0 && !has_or[v]) {
      settle(v);
    }
  }
  while (!work.empty()) {
    NodeId t = work.front();
    work.pop_front();
    for (std::size_t e : a.in[t]) {
      const Edge& edge = g.edges()[e];
      NodeId w = edge.from;
      if (done[w]) {
        continue;
      }
      if (edge.kind == EdgeKind::Or) {
        or_met[w] = true;
      } else if (and_left[w] > 0) {
        --and_left[w];
      }
      if (and_left[w] == 0 && (!has_or[w] || or_met[w])) {
        settle(w);
      }
    }
  }
  return done;
}

// Strongly connected components of the stuck nodes over stuck-to-stuck edges (iterative Tarjan).
std::vector<std::size_t> stuck_components(const Graph& g, const Adjacency& a,
                                          const std::vector<Fate>& fate, std::size_t& count) {
  const std::size_t n = g.nodes().size();
  constexpr std::size_t kNone = static_cast<std::size_t>(-1);
  std::vector<std::size_t> comp(n, kNone), index(n, kNone), low(n, 0);
  std::vector<bool> on_stack(n, false);
  std::vector<NodeId> stack;
  std::vector<std::pair<NodeId, std::size_t>> calls; // node, next out-edge position
  std::size_t next_index = 0;
  count = 0;
  for (NodeId s = 0; s < n; ++s) {
    if (fate[s] != Fate::Stuck || index[s] != kNone) {
      continue;
    }
    calls.push_back({s, 0});
    index[s] = low[s] = next_index++;
    stack.push_back(s);
    on_stack[s] = true;
    while (!calls.empty()) {
      auto& [v, pos] = calls.back();
      if (pos < a.out[v].size()) {
        NodeId w = g.edges()[a.out[v][pos++]].to;
        if (fate[w] != Fate::Stuck) {
          continue;
        }
        if (index[w] == kNone) {
          index[w] = low[w] = next_index++;
          stack.push_back(w);
          on_stack[w] = true;
          calls.push_back({w, 0});
        } else if (on_stack[w]) {
          low[v] = std::min(low[v], index[w]);
        }
        continue;
      }
      NodeId done_v = v;
      calls.pop_back();
      if (!calls.empty()) {
        low[calls.back().first] = std::min(low[calls.back().first], low[done_v]);
      }
      if (low[done_v] == index[done_v]) {
        NodeId w = 0;
        do {
          w = stack.back();
          stack.pop_back();
          on_stack[w] = false;
          comp[w] = count;
        } while (w != done_v);
        ++count;
      }
    }
  }
  return comp;
}

// Nodes whose fate is `want` that wait (through such nodes) for one of `targets`: for each, the
// next node on its shortest way there; targets map to themselves.
std::vector<NodeId> toward(const Graph& g, const Adjacency& a, const std::vector<Fate>& fate,
                           const std::vector<NodeId>& targets, Fate want) {
  std::vector<NodeId> next(g.nodes().size(), Graph::npos);
  std::deque<NodeId> queue;
  for (NodeId t : targets) {
    next[t] = t;
    queue.push_back(t);
  }
  while (!queue.empty()) {
    NodeId t = queue.front();
    queue.pop_front();
    for (std::size_t e : a.in[t]) {
      NodeId w = g.edges()[e].from;
      if (next[w] == Graph::npos && fate[w] == want) {
        next[w] = t;
        queue.push_back(w);
      }
    }
  }
  return next;
}

// Chains from the symptoms (reached nodes nothing stuck waits on) along `next`, symptom first,
// the highest weight first, then the longest; at most kMaxChains.
std::vector<std::vector<NodeId>> chains_of(const Graph& g, const Adjacency& a,
                                           const std::vector<Fate>& fate,
                                           const std::vector<NodeId>& next, Fate want) {
  std::vector<std::vector<NodeId>> chains;
  for (NodeId v = 0; v < g.nodes().size(); ++v) {
    if (next[v] == Graph::npos || next[v] == v) {
      continue;
    }
    bool waited_on = std::any_of(a.in[v].begin(), a.in[v].end(), [&](std::size_t e) {
      return fate[g.edges()[e].from] == want && next[g.edges()[e].from] != Graph::npos;
    });
    if (waited_on) {
      continue;
    }
    std::vector<NodeId> chain{v};
    while (next[chain.back()] != chain.back() && chain.size() <= g.nodes().size()) {
      chain.push_back(next[chain.back()]);
    }
    chains.push_back(std::move(chain));
  }
  std::stable_sort(chains.begin(), chains.end(), [&](const auto& x, const auto& y) {
    if (g.node(x.front()).weight != g.node(y.front()).weight) {
      return g.node(x.front()).weight > g.node(y.front()).weight;
    }
    return x.size() > y.size();
  });
  if (chains.size() > kMaxChains) {
    chains.resize(kMaxChains);
  }
  return chains;
}

} // namespace

std::vector<Fate> fates(const Graph& graph) {
  const Adjacency a = adjacency(graph);
  const auto optimistic = completes(graph, a, true);
  const auto pessimistic = completes(graph, a, false);
  std::vector<Fate> out(graph.nodes().size(), Fate::Unknown);
  for (NodeId v = 0; v < out.size(); ++v) {
    if (pessimistic[v]) {
      out[v] = Fate::Completes;
    } else if (!optimistic[v]) {
      out[v] = Fate::Stuck;
    }
  }
  return out;
}

std::vector<Root> find_roots(const Graph& graph) {
  const Adjacency a = adjacency(graph);
  const std::vector<Fate> fate = fates(graph);
  std::size_t count = 0;
  const auto comp = stuck_components(graph, a, fate, count);
  // A component is terminal when no stuck-to-stuck edge leaves it.
  std::vector<bool> terminal(count, true);
  std::vector<std::vector<NodeId>> members(count);
  for (NodeId v = 0; v < graph.nodes().size(); ++v) {
    if (fate[v] != Fate::Stuck) {
      continue;
    }
    members[comp[v]].push_back(v);
    for (std::size_t e : a.out[v]) {
      NodeId w = graph.edges()[e].to;
      if (fate[w] == Fate::Stuck && comp[w] != comp[v]) {
        terminal[comp[v]] = false;
      }
    }
  }
  std::vector<Root> roots;
  for (std::size_t c = 0; c < count; ++c) {
    if (!terminal[c]) {
      continue;
    }
    const auto& m = members[c];
    Root r;
    r.node = *std::max_element(m.begin(), m.end(), [&](NodeId x, NodeId y) {
      return graph.node(x).weight < graph.node(y).weight ||
             (graph.node(x).weight == graph.node(y).weight && x > y);
    });
    const bool self_loop =
        std::any_of(a.out[r.node].begin(), a.out[r.node].end(),
                    [&](std::size_t e) { return graph.edges()[e].to == r.node; });
    r.cycle = m.size() > 1 || self_loop;
    if (r.cycle) {
      // The cycle through the root, in wait order: the shortest way from the root back to it.
      std::vector<NodeId> prev(graph.nodes().size(), Graph::npos);
      std::deque<NodeId> queue{r.node};
      bool closed = false;
      while (!queue.empty() && !closed) {
        NodeId v = queue.front();
        queue.pop_front();
        for (std::size_t e : a.out[v]) {
          NodeId w = graph.edges()[e].to;
          if (comp[w] != c || fate[w] != Fate::Stuck) {
            continue;
          }
          if (w == r.node) {
            prev[w] = v;
            closed = true;
            break;
          }
          if (prev[w] == Graph::npos) {
            prev[w] = v;
            queue.push_back(w);
          }
        }
      }
      std::vector<NodeId> back{r.node};
      for (NodeId v = prev[r.node]; closed && v != r.node && back.size() <= m.size(); v = prev[v]) {
        back.push_back(v);
      }
      // `back` walks against the waits; the cycle reads root -> what it waits for -> ...
      r.cycle_nodes.push_back(r.node);
      for (auto it = back.rbegin(); it != back.rend() && *it != r.node; ++it) {
        r.cycle_nodes.push_back(*it);
      }
    }
    const auto next = toward(graph, a, fate, m, Fate::Stuck);
    for (NodeId v = 0; v < graph.nodes().size(); ++v) {
      if (next[v] != Graph::npos && comp[v] != c) {
        ++r.waiters;
      }
    }
    // A chain into a cycle ends at the member it enters; `cycle_nodes` says the rest.
    r.chains = chains_of(graph, a, fate, next, Fate::Stuck);
    if (r.chains.empty() && !r.cycle) {
      r.chains.push_back({r.node});
    }
    roots.push_back(std::move(r));
  }
  std::stable_sort(roots.begin(), roots.end(), [&](const Root& x, const Root& y) {
    const Node& nx = graph.node(x.node);
    const Node& ny = graph.node(y.node);
    if (nx.fault != ny.fault) {
      return nx.fault;
    }
    if (x.waiters != y.waiters) {
      return x.waiters > y.waiters;
    }
    return nx.weight > ny.weight;
  });
  return roots;
}

std::vector<OpenEnd> open_ends(const Graph& graph) {
  const Adjacency a = adjacency(graph);
  const std::vector<Fate> fate = fates(graph);
  std::vector<OpenEnd> out;
  for (NodeId v = 0; v < graph.nodes().size(); ++v) {
    if (fate[v] != Fate::Unknown || !a.out[v].empty() || a.in[v].empty()) {
      continue;
    }
    const auto next = toward(graph, a, fate, {v}, Fate::Unknown);
    auto chains = chains_of(graph, a, fate, next, Fate::Unknown);
    if (!chains.empty()) {
      out.push_back({v, std::move(chains.front())});
    }
  }
  return out;
}

std::string describe(const Node& node) {
  if (node.where.empty()) {
    return node.label;
  }
  return node.label + " (" + node.where + ")";
}

namespace {

std::string with_doing(const Node& node) {
  std::string out = describe(node);
  if (!node.doing.empty()) {
    out += ", " + node.doing;
  }
  return out;
}

// `<- b <- c`: the chain's nodes before its last, from the root's side to the symptom.
std::string waiters_text(const Graph& g, const std::vector<NodeId>& chain) {
  std::string out;
  for (std::size_t i = chain.size(); i-- > 1;) {
    out += " <- " + describe(g.node(chain[i - 1]));
  }
  return out;
}

} // namespace

std::vector<std::string> cause_lines(const Graph& graph, std::size_t max_roots) {
  std::vector<std::string> out;
  if (graph.edges().empty() &&
      std::none_of(graph.nodes().begin(), graph.nodes().end(), [](const Node& n) {
        return n.fault || n.dead_end || n.state == State::Spinning;
      })) {
    return out;
  }
  const auto roots = find_roots(graph);
  for (std::size_t i = 0; i < roots.size() && i < max_roots; ++i) {
    const Root& r = roots[i];
    std::string line;
    if (r.cycle) {
      line = "a cycle of waits: ";
      for (NodeId n : r.cycle_nodes) {
        line += describe(graph.node(n)) + " -> ";
      }
      line += graph.node(r.cycle_nodes.front()).label;
      if (!r.chains.empty() && r.chains.front().size() > 1) {
        line += "; behind it" + waiters_text(graph, r.chains.front());
      }
    } else {
      line = with_doing(graph.node(r.node));
      if (!r.chains.empty()) {
        line += waiters_text(graph, r.chains.front());
      }
    }
    const std::size_t shown = r.chains.empty() ? 0 : r.chains.front().size() - 1;
    if (r.waiters > shown && shown > 0) {
      line += " (" + std::to_string(r.waiters - shown) + " more waiting)";
    }
    out.push_back(std::move(line));
  }
  if (roots.size() > max_roots) {
    out.push_back(std::to_string(roots.size() - max_roots) + " more independent root(s)");
  }
  if (!roots.empty()) {
    return out;
  }
  const auto ends = open_ends(graph);
  for (std::size_t i = 0; i < ends.size() && i < max_roots; ++i) {
    out.push_back("none found: the waits end at what could not be seen: " +
                  with_doing(graph.node(ends[i].node)) + waiters_text(graph, ends[i].chain));
  }
  if (ends.empty() && !graph.edges().empty()) {
    out.push_back("none: every wait seen ends at work that moved");
  }
  return out;
}

} // namespace rocplay::graph
