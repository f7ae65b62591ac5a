// The part of a report that says how a launched program ran and ended (`rocplay launch`,
// `rocplay run --wait-for-fault`): before the verdict in text, `launch` in JSON.
#pragma once

#include "rocplay/case/case.hpp"
#include "rocplay/report/run.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace rocplay::report {

// `Program  ./app 'a b' (pid 4242): stopped on SIGSEGV after 0.41 s; killed after the report`.
void write_launch_text(std::ostream& out, const LaunchInfo& launch, std::size_t width, bool color);
nlohmann::json launch_to_json(const LaunchInfo& launch);
// The whole report of a launched program (`rocplay.report`, schema_version 1): with `stopped` (a
// case whose playbook ran at the program's stop) run_case_to_json's document with `partial`, else
// no snapshot and no findings; and `launch` beside it.
nlohmann::json launch_report_to_json(const LaunchInfo& launch, const Case* stopped,
                                     bool partial = false);
// The last line of `--format jsonl`, after the findings: {"type":"launch","launch":{...}}.
nlohmann::json launch_jsonl_line(const LaunchInfo& launch);
// An argument as a shell would need it quoted, for the report only (nothing runs it).
std::string shell_quote(const std::string& word);

} // namespace rocplay::report
