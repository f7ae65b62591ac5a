// The incident's wait-for graph (rocplay/heuristics/wait_graph.hpp): each rank's graph joined,
// and the cross-rank producers: a rank gone elsewhere, collectives from different call sites or
// paths, and the job's own collective records.
#include "rocplay/heuristics/wait_graph.hpp"

#include "heuristics/common.hpp"
#include "rocplay/snapshot/frames.hpp"

#include <fmt/format.h>

#include <map>
#include <set>
#include <tuple>

namespace rocplay::heuristics {
namespace wfg_ranks {

using graph::EdgeKind;
using graph::NodeId;
using graph::State;

using detail::graph_node;

std::string prefix_of(const RankGraph& r, std::size_t index) {
  if (r.rank) {
    return fmt::format("rank {}/", *r.rank);
  }
  if (r.pid) {
    return fmt::format("pid {}/", *r.pid);
  }
  return fmt::format("case {}/", index);
}

// `rank 3`, with its node when the case names one: `rank 3 (node2)`.
std::string who(const RankGraph& r, std::size_t index) {
  const std::string on = r.host.empty() ? std::string() : " (" + r.host + ")";
  if (r.rank) {
    return fmt::format("rank {}{}", *r.rank, on);
  }
  return (r.pid ? fmt::format("pid {}", *r.pid) : fmt::format("case {}", index)) + on;
}

// What a rank's collective waits on at its far end: its flag or peers node, else the dispatch.
NodeId far_end(const graph::Graph& g, const std::string& prefix, const std::string& dispatch_id) {
  for (std::string_view kind : {"flag:", "peers:"}) {
    if (NodeId n = g.find(prefix + std::string(kind) + dispatch_id); n != graph::Graph::npos) {
      return n;
    }
  }
  return g.find(prefix + "dispatch:" + dispatch_id);
}

// The host thread of a rank that waits on its dispatch: its line is the collective's call site.
const graph::Node* waiting_thread(const graph::Graph& g, NodeId dispatch) {
  for (const auto& e : g.edges()) {
    if (e.to == dispatch && g.node(e.from).kind == "thread") {
      return &g.node(e.from);
    }
  }
  return nullptr;
}

// Where a rank's own code stands: its heaviest thread node (the main thread) in its graph, else
// its snapshot's first thread that is not a runtime's.
std::string rank_where(const graph::Graph* g, const Snapshot* s) {
  if (g != nullptr) {
    const graph::Node* best = nullptr;
    for (const auto& n : g->nodes()) {
      if (n.kind == "thread" && !n.where.empty() && (best == nullptr || n.weight > best->weight)) {
        best = &n;
      }
    }
    if (best != nullptr) {
      return best->where;
    }
  }
  if (s == nullptr) {
    return {};
  }
  for (const auto& t : s->host_threads) {
    if (t.frames.empty() || detail::is_runtime_helper_thread(t.name)) {
      continue;
    }
    for (const auto& f : t.frames) {
      if (f.python && !detail::contains(f.file, "/lib/python3")) {
        return frame_where(f);
      }
    }
    return detail::thread_where(t);
  }
  return {};
}

struct Collective {
  std::size_t rank_index;
  std::string prefix;
  NodeId dispatch;
  std::string dispatch_id; // the snapshot's
  std::string kernel;
  std::string site;
  std::vector<std::string> path; // its waiting thread's call path
};

// Where two calls' user paths part, outermost frames compared first: `step_rank0
// (order.py:23)` against `step_rank1 (order.py:28)`. Empty when one path holds the other.
std::pair<std::string, std::string> parting(const std::vector<std::string>& x,
                                            const std::vector<std::string>& y) {
  auto i = x.rbegin();
  auto j = y.rbegin();
  for (; i != x.rend() && j != y.rend(); ++i, ++j) {
    if (*i != *j) {
      return {*i, *j};
    }
  }
  return {};
}

// `reduce_on (order.py:19)`, from a record's call site.
std::string record_site(const nlohmann::json& side) {
  if (!side.contains("call_site") || !side["call_site"].is_object()) {
    return {};
  }
  const auto& c = side["call_site"];
  const std::string file = c.value("file", std::string());
  const auto slash = file.rfind('/');
  return fmt::format("{} ({}:{})", c.value("function", std::string("??")),
                     slash == std::string::npos ? file : file.substr(slash + 1),
                     c.value("line", 0));
}

// The job's own collective records (Flight Recorder dumps, NCCL logs, RAS) as the collectives
// reader matched them: the first `collective-*` finding's details (the others are the same
// divergence told by another record, or later ones). Each rank's side that entered a diverging
// call becomes a node at its recorded call site. Missing rank: it waits for each rank absent from
// the call (a dead end, the rank gone elsewhere). Mismatch: the sides wait for each other. Order
// deadlock: each waits for the calls the absent ranks wait in, in their other group. Either is a
// cycle. A rank's own collective kernel, where its recording is beside the records, waits on it.
void add_divergences(graph::Graph& g, const std::vector<Finding>& cross_rank,
                     const std::vector<RankGraph>& ranks, const std::vector<Collective>& seen) {
  for (const auto& f : cross_rank) {
    const auto& d = f.details;
    if (!f.id.starts_with("collective-")) {
      continue;
    }
    if (!d.is_object() || !d.contains("sides") || !d["sides"].is_array() || !d.contains("kind") ||
        !d["kind"].is_string()) {
      return;
    }
    const std::string kind = d["kind"].get<std::string>();
    const std::string what = d.value("what", std::string());
    struct SideNode {
      int rank;
      NodeId node;
      bool entered;
      std::string group;
    };
    std::vector<SideNode> sides;
    for (const auto& side : d["sides"]) {
      if (!side.is_object() || !side.contains("rank") || !side["rank"].is_number_integer()) {
        continue;
      }
      const int rank = side["rank"].get<int>();
      const std::string group = side.value("group", std::string("?"));
      const auto seq = side.value("seq", std::uint64_t{0});
      const bool entered = side.value("entered", false);
      if (!entered && kind != "missing rank") {
        continue; // where it is instead is its other side (order deadlock)
      }
      std::size_t index = ranks.size();
      for (std::size_t i = 0; i < ranks.size(); ++i) {
        if (ranks[i].rank == rank) {
          index = i;
        }
      }
      NodeId node = graph::Graph::npos;
      if (entered) {
        node = g.add(graph_node(
            fmt::format("rank {}/record:{}#{}", rank, group, seq), "collective",
            fmt::format("rank {}: {}{} #{} of group {}", rank, side.value("op", std::string("?")),
                        side.contains("numel") && side["numel"].is_number_integer()
                            ? fmt::format(" of {} elements", side["numel"].get<std::int64_t>())
                            : std::string(),
                        seq, group),
            State::Blocked, record_site(side),
            fmt::format("{} by its records", side.value("state", std::string("waits")))));
      } else {
        node = g.find(fmt::format("rank {}/elsewhere", rank));
        if (node == graph::Graph::npos) {
          node = g.add(graph_node(
              fmt::format("rank {}/elsewhere", rank), "rank",
              fmt::format("rank {}: past #{} of group {}, never in the next", rank, seq, group),
              State::Blocked,
              index < ranks.size() ? rank_where(ranks[index].graph, ranks[index].snapshot)
                                   : std::string(),
              "its records end before the call its peers wait in"));
        }
        g.node(node).dead_end = true;
      }
      sides.push_back({rank, node, entered, group});
      // The rank's own collective kernel is this call: it waits where the records say.
      for (const auto& c : seen) {
        if (entered && index < ranks.size() && c.rank_index == index) {
          g.wait(far_end(g, c.prefix, c.dispatch_id), node, EdgeKind::One,
                 fmt::format("its records: {}", g.node(node).label));
        }
      }
    }
    for (const auto& a : sides) {
      for (const auto& b : sides) {
        if (!a.entered || a.rank == b.rank) {
          continue;
        }
        const bool waits = kind == "missing rank"     ? !b.entered
                           : kind == "order deadlock" ? b.group != a.group
                                                      : true;
        if (waits) {
          g.wait(a.node, b.node, EdgeKind::And, "collective records: " + what);
        }
      }
    }
    return;
  }
}

} // namespace wfg_ranks

graph::Graph incident_graph(const std::vector<RankGraph>& ranks,
                            const std::vector<Finding>& cross_rank) {
  using namespace wfg_ranks;
  graph::Graph g;
  std::vector<std::string> prefixes;
  std::vector<Collective> collectives;
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    prefixes.push_back(prefix_of(ranks[i], i));
    if (ranks[i].graph == nullptr) {
      continue;
    }
    const auto ids = g.merge(*ranks[i].graph, prefixes.back());
    const std::string dispatch_prefix = prefixes.back() + "dispatch:";
    for (NodeId n : ids) {
      graph::Node& node = g.node(n);
      node.label = who(ranks[i], i) + ": " + node.label;
      if (node.kind == "collective" && node.state != State::Moving &&
          node.id.starts_with(dispatch_prefix)) {
        const graph::Node* thread = waiting_thread(g, n);
        collectives.push_back({i, prefixes.back(), n, node.id.substr(dispatch_prefix.size()),
                               node.name, thread != nullptr ? thread->where : std::string(),
                               thread != nullptr ? thread->call_path : std::vector<std::string>()});
      }
    }
  }
  // A rank not in the collective its peers wait in: gone elsewhere, a root of its own.
  std::set<std::size_t> missing_ranks;
  for (const auto& f : cross_rank) {
    if (f.id != kMissingRank || !f.details.is_object() || !f.details.contains("missing")) {
      continue;
    }
    const std::string kernel = f.details.value("kernel", std::string());
    for (const auto& m : f.details["missing"]) {
      if (!m.is_number_integer()) {
        continue;
      }
      const int missing = m.get<int>();
      std::size_t index = ranks.size();
      for (std::size_t i = 0; i < ranks.size(); ++i) {
        if (ranks[i].rank == missing) {
          index = i;
        }
      }
      missing_ranks.insert(index);
      const NodeId gone = g.add(graph_node(
          fmt::format("rank {}/elsewhere", missing), "rank",
          fmt::format("rank {}: not in {}", missing, kernel), State::Blocked,
          index < ranks.size() ? rank_where(ranks[index].graph, ranks[index].snapshot)
                               : std::string(),
          "its peers wait for it in this collective (missing-rank); from snapshots alone, "
          "which call it made instead is not known"));
      g.node(gone).dead_end = true; // a rank gone elsewhere never joins this collective
      for (const auto& c : collectives) {
        if (c.rank_index != index && c.kernel == kernel) {
          g.wait(far_end(g, c.prefix, c.dispatch_id), gone, EdgeKind::And,
                 "missing-rank: every peer must enter the collective");
        }
      }
    }
  }
  add_divergences(g, cross_rank, ranks, collectives);
  // Collectives from different call sites (or kernels) on two ranks, each waiting for the other:
  // an order mismatch, a cycle across ranks.
  for (std::size_t a = 0; a < collectives.size(); ++a) {
    for (std::size_t b = a + 1; b < collectives.size(); ++b) {
      const Collective& x = collectives[a];
      const Collective& y = collectives[b];
      if (x.rank_index == y.rank_index || missing_ranks.count(x.rank_index) ||
          missing_ranks.count(y.rank_index)) {
        continue;
      }
      if (x.site.empty() || y.site.empty()) {
        continue; // no call site on one side: the calls cannot be told apart
      }
      std::string x_from = x.site;
      std::string y_from = y.site;
      if (x.site == y.site && x.kernel == y.kernel) {
        std::tie(x_from, y_from) = parting(x.path, y.path);
        if (x_from.empty()) {
          continue; // the same call by the same path: the same collective, waiting together
        }
      }
      const std::string why = fmt::format(
          "{} calls {} from {}, {} calls {} from {}: different calls wait for each other",
          who(ranks[x.rank_index], x.rank_index), x.kernel, x_from,
          who(ranks[y.rank_index], y.rank_index), y.kernel, y_from);
      g.wait(far_end(g, x.prefix, x.dispatch_id), y.dispatch, EdgeKind::And, why);
      g.wait(far_end(g, y.prefix, y.dispatch_id), x.dispatch, EdgeKind::And, why);
    }
  }
  return g;
}

} // namespace rocplay::heuristics
