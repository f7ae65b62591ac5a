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
constexpr int kIncidentSchemaVersion = 2;

// The INCIDENT block: the verdict across the cases, then one line per group of cases that
// stand in the same place, with the verdict each case's own report leads with.
void write_incident_text(std::ostream& out, const Incident& incident, const TextOptions& options);
// {"cases": N, "examined": N, "exit_code": N, "verdict": finding or null, "groups": [{"ranks",
//  "pids", "inputs", "who", "verdict", "where"}]}
nlohmann::json incident_to_json(const Incident& incident);

// One live case's run report, borrowing the case (it outlives the report).
RunReport run_report_of(const Case& live_case);
// The several-target view of a live incident, borrowing it.
MultiTargetReport multi_target_report(const Incident& incident);

// `rocplay.run.multi` v2: v1's document with `incident` (incident_to_json) beside it.
nlohmann::json multi_target_to_json(const Incident& incident);
// Its JSON Lines: `{"type":"incident",...}` first, then each target's line (its snapshot once, at
// the top), then the summary line.
std::vector<nlohmann::json> multi_target_to_jsonl(const Incident& incident);

// The one writer: the incident in `format`. A single case (Incident::several unset) keeps its
// command's layout: a launched program's (Case::launch: `launch`, `run --wait-for-fault`), one
// live run's (Case::run: `run --pid`), an agent log's (Case::faults: `agent-log`), one offline
// input's (Source::path: `postmortem` of one recording); anything else is written by write_cases.
void write(std::ostream& out, const Incident& incident, Format format, const TextOptions& options,
           std::string_view tool_version);
// The report of several live cases, in `format`: the incident first (two cases or more), then each
// target's report, then what holds across them.
void write_cases(std::ostream& out, const Incident& incident, Format format,
                 const TextOptions& options, std::string_view tool_version);

} // namespace rocplay::report
