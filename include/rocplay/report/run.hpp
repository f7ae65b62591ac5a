// A playbook run's report (`rocplay run --pid`, and each target of `--pids`, `--workers-of`): the
// findings report, what the run did, its samples, read from the run's Case. Several targets
// together are written by report::write (rocplay/report/incident.hpp). docs/json-schema.md
// documents every key.
// Layer: src/report/ (library rocplay_report; docs/architecture.md).
#pragma once

#include "rocplay/case/case.hpp"
#include "rocplay/case/run_result.hpp"
#include "rocplay/heuristics/progress.hpp"
#include "rocplay/report/report.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace rocplay::report {

// The `run` section: what the playbook did, step by step, and what happened to the target.
nlohmann::json run_section_to_json(const playbook::RunResult& result);
// Its inverse, for a run reported by another rocplay (a node of `--slurm-job`): the fields the
// section carries (steps, target account, warnings, samples' times, the fatal error); the
// snapshot and findings are the case's. Throws Error(DataError) naming the first field that is
// missing or of the wrong type.
playbook::RunResult run_section_from_json(const nlohmann::json& section);
// As text: `Playbook NAME on pid N with KIND (VERSION)`, the `Target:` line, the steps, the
// unsafe commands let through, warnings, and what stopped the run early.
void write_run_section_text(std::ostream& out, const playbook::RunResult& result,
                            std::size_t width = 100);
// One line on what happened to the target, exactly: whether rocplay attached (or the attach did
// not complete), how long it was stopped, detached, SIGCONT, and its state afterwards.
std::string target_account(const playbook::RunResult& result);
// What to do about a target found stopped after the detach (rocplay sent it SIGCONT): after an
// attach that did not complete, the stop was the debugger's own; otherwise something else's.
std::string left_stopped_hint(const playbook::RunResult& result);
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

// One live case's report (`run --pid`, each target of `--pids`), read from the case itself:
// report_to_json's document (its snapshot and findings) plus `run` (run_section_to_json of
// Case::run), with several samples wanted `progress` and `samples`, and `partial` when given.
nlohmann::json run_case_to_json(const Case& live_case, std::optional<bool> partial = std::nullopt);
// The last line of `run --format jsonl`, after the findings: `{"type": "run", "partial", "run"}`.
nlohmann::json run_jsonl_line(const Case& live_case, bool partial);
// As `rocplay run` prints it: the report (write_text; `options` carries a failure), the Progress
// section with several samples wanted, then the steps (write_run_section_text).
void write_run_case_text(std::ostream& out, const Case& live_case, const TextOptions& options);

} // namespace rocplay::report
