// The part of a report that says how a launched program ran and ended (`rocplay launch`,
// `rocplay run --wait-for-fault`): before the verdict in text, `launch` in JSON.
#pragma once

#include "rocplay/report_run.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace rocplay::report {

struct LaunchSummary {
  std::vector<std::string> argv; // as the program got them (empty for --wait-for-fault)
  std::int64_t pid = 0;
  std::string outcome; // session::to_string(LaunchOutcome): faulted, exited, ...
  std::optional<int> exit_code;
  std::string exit_signal;
  std::string stop_signal; // SIGSEGV, CUDA_EXCEPTION_14, SIGINT
  std::string stop_reason;
  std::string user_signal; // SIGINT when rocplay was interrupted
  double ran_seconds = 0;
  std::optional<double> timeout_seconds;
  std::size_t passed_signals = 0;
  std::vector<std::string> api_errors; // CUDA calls that failed, as cuda-gdb printed them
  // What happened to the program after the report: `killed`, `detached`, `running (detached)`,
  // `exited`.
  std::string after;
};

// `Program  ./app 'a b' (pid 4242): stopped on SIGSEGV after 0.41 s; killed after the report`.
void write_launch_text(std::ostream& out, const LaunchSummary& launch, std::size_t width,
                       bool color);
nlohmann::json launch_to_json(const LaunchSummary& launch);
// The whole report of a launched program (`rocplay.report`, schema_version 1): with `run` (the
// playbook ran at its stop) run_report_to_json's document, else no snapshot and no findings; and
// `launch` beside it.
nlohmann::json launch_report_to_json(const LaunchSummary& launch, const RunReport* run);
// The last line of `--format jsonl`, after the findings: {"type":"launch","launch":{...}}.
nlohmann::json launch_jsonl_line(const LaunchSummary& launch);
// An argument as a shell would need it quoted, for the report only (nothing runs it).
std::string shell_quote(const std::string& word);

} // namespace rocplay::report
