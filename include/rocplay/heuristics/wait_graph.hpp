// The wait-for graph of a case and of an incident (docs/heuristics.md, "Producers"): each
// producer turns facts the snapshot, the samples and today's findings already hold into nodes
// and "waits for" edges with their evidence; graph::find_roots then names the cause. The
// findings stay as they are; the graph adds the chain from the symptom to the root.
//
//   graph::Graph g = heuristics::wait_graph({.snapshot = &c.snapshot, .classes = &c.classes,
//                                            .findings = &c.findings, ...});
//   for (const auto& line : graph::cause_lines(g)) ...   // `Cause:` lines of the text report
//
// Layer: src/heuristics/ (library rocplay_heuristics).
#pragma once

#include "rocplay/graph/graph.hpp"
#include "rocplay/heuristics/progress.hpp"
#include "rocplay/snapshot/grouping.hpp"
#include "rocplay/snapshot/sampling.hpp"
#include "rocplay/snapshot/snapshot.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace rocplay::heuristics {

// What one case's producers read; every pointer may be null (nothing of that kind).
struct GraphInputs {
  const Snapshot* snapshot = nullptr;                        // the first (or only) sample's
  const std::vector<snapshot::WaveClass>* classes = nullptr; // its waves grouped
  const std::vector<Finding>* findings = nullptr;            // today's findings of the case
  const SampleProgress* progress = nullptr;                  // several samples compared
  const std::vector<Sample>* samples = nullptr;              // the samples themselves
};

// Every single-case producer over one case's facts.
graph::Graph wait_graph(const GraphInputs& inputs);

// What only the graph sees: a host thread, running in one call in every sample, that is the root
// of the case's waits (a launch that never returns behind a lazy module load). An error finding
// (`host-call-never-returns`) when the case has none of that rank already, else nothing.
std::vector<Finding> graph_findings(const graph::Graph& graph,
                                    const std::vector<Finding>& findings);

// One rank's graph as the incident joins it.
struct RankGraph {
  std::optional<int> rank;
  std::optional<std::int64_t> pid;
  const graph::Graph* graph = nullptr;
  const Snapshot* snapshot = nullptr; // for what the rank does instead (may be null)
  std::string host; // the node (a --slurm-job case); empty: this machine or unknown
};

// The incident's graph: each rank's graph joined (ids prefixed `rank R/`), plus the cross-rank
// producers: a rank whose peers wait in a collective it is not in (missing-rank), ranks in
// collectives from different call sites or call paths (an order mismatch: a cycle across ranks),
// and the job's own collective records (the first `collective-*` finding: its ranks' calls at
// their recorded lines, a mismatch or order deadlock as a cycle, a missing rank a dead end).
graph::Graph incident_graph(const std::vector<RankGraph>& ranks,
                            const std::vector<Finding>& cross_rank);

// The PCs of the lanes a dispatch's `lanes:D:poll` node stands for: the waves (or cuda-gdb thread
// ranges) holding each work-group's first work-items, in one polling loop while the rest of the
// dispatch waits elsewhere (sync lanes, split-K leaders). Empty when its waves are not in that
// shape. The HTML report outlines them in its wave map.
std::vector<std::uint64_t> polling_pcs(const Snapshot& snapshot,
                                       const std::vector<snapshot::WaveClass>& classes,
                                       const Dispatch& dispatch);

// The graph as JSON (docs/json-schema.md, `graph`, schema_version 3): `nodes` {id, kind, label,
// state, where, doing, fault}, `edges` {from, to, kind, evidence[]}, `roots` {node, cycle,
// cycle_nodes, chain (node ids from the symptom to the root), waiters}, `open_ends` {node, chain}.
nlohmann::json graph_to_json(const graph::Graph& graph);

} // namespace rocplay::heuristics
