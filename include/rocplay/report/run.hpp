// A playbook run's report, one target or several at once (`rocplay run --pid`, `--pids`,
// `--workers-of`): the findings report, what the run did, its samples, and for several targets
// the cross-rank findings (`rocplay.run.multi`). docs/json-schema.md documents every key.
// Layer: src/report/ (library rocplay_report; docs/architecture.md).
#pragma once

#include "rocplay/heuristics/progress.hpp"
#include "rocplay/report/report.hpp"
#include "rocplay/report/run_result.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

namespace rocplay::report {

// The `run` section: what the playbook did, step by step, and what happened to the target.
nlohmann::json run_section_to_json(const playbook::RunResult& result);
// As text: `Playbook NAME on pid N with KIND (VERSION)`, the `Target:` line, the steps, the
// unsafe commands let through, warnings, and what stopped the run early.
void write_run_section_text(std::ostream& out, const playbook::RunResult& result);
// One line on what happened to the target, exactly: whether rocplay attached (or the attach did
// not complete), how long it was stopped, detached, SIGCONT, and its state afterwards.
std::string target_account(const playbook::RunResult& result);
// What ended the run early, in one sentence (its fatal error, else the first step that failed or
// timed out); empty when it ran to its end.
std::string failure_text(const playbook::RunResult& result);
// The label the report leads with when the run ended early: `RUN INTERRUPTED` for a signal to
// rocplay (codes 128 and up), else `RUN FAILED`.
std::string failure_label(const playbook::RunResult& result);
// Where the failed step is (`hang.yaml:12:5`), else `the playbook`.
std::string failed_step_position(const playbook::RunResult& result);
// Whether one run has a text report: it attached, or it ended early after the attach was sent.
// Otherwise the steps say why (the command prints them on stderr), unless the attach itself
// failed (attach_refused), where the error says it all.
bool has_text_report(const playbook::RunResult& result);
bool attach_refused(const playbook::RunResult& result);

// What one target's run saw. The pointers borrow the run's result: it outlives the report.
struct RunReport {
  const Snapshot* snapshot = nullptr;
  const std::vector<Finding>* findings = nullptr;
  nlohmann::json run; // what the playbook did (run_section_to_json)
  // Set when several samples were asked for: the Progress section and each sample.
  const SampleProgress* progress = nullptr;
  const std::vector<Sample>* samples = nullptr;
  std::optional<bool> partial; // written as `partial` when set: the run ended early
  std::string steps_text;      // the playbook's steps as text (write_run_section_text)
};
// The report of one run (borrowing: `result` outlives it): its snapshot, findings, `run` section,
// steps as text, and with several samples its progress.
RunReport run_report_of(const playbook::RunResult& result);
// report_to_json's document plus `run`, and with samples `progress` and `samples`.
nlohmann::json run_report_to_json(const RunReport& report);
// The last line of `run --format jsonl`, after the findings: `{"type": "run", "partial", "run"}`.
nlohmann::json run_jsonl_line(const RunReport& report);
// As `rocplay run` prints it: the report (write_text; `options` carries a failure), the Progress
// section with samples, then the steps.
void write_run_text(std::ostream& out, const RunReport& report, const TextOptions& options);

struct TargetReport {
  std::int64_t pid = 0;
  std::optional<int> rank;
  int exit_code = 0;
  double seconds = 0;
  std::string error; // why it was not examined; empty when the playbook ran
  std::string error_hint;
  std::optional<RunReport> report; // absent when the playbook never ran
  bool attached = false;           // without it, the text report holds the steps alone
};

struct MultiTargetReport {
  std::string playbook;
  std::vector<TargetReport> targets;
  std::size_t examined = 0;
  std::vector<Finding> cross_rank;
  // Per sample index: how far apart the targets' stops began, in seconds.
  std::vector<std::pair<std::uint32_t, double>> sample_skew;
  bool lockstep = false;          // the samples were taken in lockstep
  std::vector<std::string> notes; // said once, after the targets
};

// Each target (`=== pid 4301 (rank 0): exit 1, 2.31s`, its report and steps), then the
// cross-rank part: sample skew, notes and findings.
void write_multi_target_text(std::ostream& out, const MultiTargetReport& report,
                             const TextOptions& options);
// {"schema":"rocplay.run.multi","schema_version":1,"playbook",..,"targets":[...],
//  "cross_rank_findings":[...],"sample_skew":[...]}
nlohmann::json multi_target_to_json(const MultiTargetReport& report);
// JSON Lines: one `{"type":"target",...}` per target (with its snapshot at the top, which
// `rocplay postmortem` reads back), then `{"type":"summary",...}`.
std::vector<nlohmann::json> multi_target_to_jsonl(const MultiTargetReport& report);
// For SARIF: the cross-rank findings, then each target's.
std::vector<Finding> multi_target_findings(const MultiTargetReport& report);

} // namespace rocplay::report
