// The incident's wait-for graph (rocplay/case/case.hpp): the cases' graphs joined.
#include "rocplay/heuristics/wait_graph.hpp"
#include "rocplay/case/case.hpp"

namespace rocplay::incident {

graph::Graph wait_graph(const Incident& inc) {
  if (inc.cases.size() < 2) {
    return {};
  }
  std::vector<heuristics::RankGraph> ranks;
  for (const auto& c : inc.cases) {
    if (!c.examined() || c.graph.empty()) {
      continue;
    }
    heuristics::RankGraph r;
    r.rank = c.source.rank ? c.source.rank : c.snapshot.rank;
    r.pid = c.source.pid ? c.source.pid : c.snapshot.pid;
    r.host = c.source.host;
    r.graph = &c.graph;
    r.snapshot = &c.snapshot;
    ranks.push_back(r);
  }
  return heuristics::incident_graph(ranks, inc.cross_rank);
}

} // namespace rocplay::incident
