// The incident-first report: any report over several cases (live `--pids`/`--workers-of`, a watch
// capture, a post-mortem of several inputs) opens with the incident: the cross-target verdict,
// then one line per group of ranks that stand in the same place, STAT-style:
//
//   INCIDENT  8 targets, 8 examined: [error 0.95] rank 1 never joined the all-reduce
//     ranks 0,2-7 (pids 4300,4302-4307): ncclDevKernel_AllReduce_Sum_f32_RING_LL at all_reduce.h:52
//         kernel ncclDevKernel_AllReduce_Sum_f32_RING_LL made no progress
//     rank 1 (pid 4301): GPU idle, wait_for_batch at worker.py:88
//         no known stuck-kernel pattern
//
// JSON carries the same as an `incident` object, JSON Lines as its first line. The full
// per-target reports follow (docs/json-schema.md, "The incident").
// Layer: src/report/ (library rocplay_report; docs/architecture.md).
#pragma once

#include "rocplay/case/case.hpp"
#include "rocplay/report/report.hpp"
#include "rocplay/report/run.hpp"

#include <nlohmann/json.hpp>

#include <ostream>
#include <string_view>
#include <vector>

namespace rocplay::report {

// The schema version of the reports that carry an incident (`rocplay.run.multi`,
// `rocplay.postmortem`): 2 since the incident came first (docs/json-schema.md, "v2").
constexpr int kIncidentSchemaVersion = 3; // 3: the wait-for graph (`graph`)

class PostmortemBatch; // rocplay/report/postmortem.hpp: a post-mortem batch's inputs, as read

// The INCIDENT block: the verdict across the cases, then one line per group of cases that
// stand in the same place, with the verdict each case's own report leads with.
void write_incident_text(std::ostream& out, const Incident& incident, const TextOptions& options);
// {"title", "cases": N, "examined": N, "exit_code": N, "verdict": finding or null, "groups":
//  [{"ranks", "pids", "inputs", "who", "verdict", "where"}], "cross_rank_findings",
//  "crash_verdict", "series_findings", "notes"}
nlohmann::json incident_to_json(const Incident& incident);
// The incident as the first line of a JSON Lines report over several cases:
// incident_to_json with `"type":"incident"`, `schema` and `"schema_version":2`.
nlohmann::json incident_jsonl_line(const Incident& incident, std::string_view schema);
// A SARIF log (to_sarif) with the incident in its run's property bag
// (`runs[0].properties.incident`).
nlohmann::json sarif_with_incident(nlohmann::json sarif, const Incident& incident);

// `rocplay.run.multi` v2, written from the incident's cases: each target (`targets[]`, its
// report run_case_to_json), the cross-rank findings, the sample skew, and `incident`.
nlohmann::json multi_target_to_json(const Incident& incident);
// Its JSON Lines: `{"type":"incident",...}` first, then each target's line (its snapshot once, at
// the top), then the summary line.
std::vector<nlohmann::json> multi_target_to_jsonl(const Incident& incident);

// The one writer: the incident in `format`. A single case (Incident::several unset) keeps its
// command's layout: a launched program's (Case::launch: `launch`, `run --wait-for-fault`), one
// live run's (Case::run: `run --pid`), an agent log's (Case::faults: `agent-log`), one offline
// input's (Source::path: `postmortem` of one recording). With `batch` (a post-mortem: its inputs
// rendered as they were read, in `format`), the batch's report: the incident first (several
// inputs), then the inputs and the summary. Anything else is written by write_cases. Every
// `--format json` document written here carries `incident`; SARIF over several cases too.
void write(std::ostream& out, const Incident& incident, Format format, const TextOptions& options,
           std::string_view tool_version, const PostmortemBatch* batch = nullptr);
// The report of several live cases, in `format`: the incident first (two cases or more), then each
// target's report, then what holds across them.
void write_cases(std::ostream& out, const Incident& incident, Format format,
                 const TextOptions& options, std::string_view tool_version);

} // namespace rocplay::report
