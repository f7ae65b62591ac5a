// `rocplay agent-log`'s report: rocm-debug-agent fault groups (agentlog::Report, the model the
// agentlog layer reads from server logs) as versioned JSON (`rocplay.agent-log`), a person's text
// (verdict first), and findings, so the shared JSON Lines and SARIF writers and the post-mortem
// cover faults too. docs/json-schema.md documents every key.
// Layer: src/report/ (library rocplay_report; docs/architecture.md).
#pragma once

#include "rocplay/agentlog/agentlog.hpp"
#include "rocplay/core/finding.hpp"

#include <nlohmann/json.hpp>

#include <cstddef>
#include <ostream>
#include <vector>

namespace rocplay::report {

constexpr int kAgentLogSchemaVersion = 1;

// {"schema":"rocplay.agent-log","schema_version":1,"sources":[...],"summary":{...},
//  "groups":[...],"host_faults":[...],"warnings":[...],"warnings_dropped":N}, and `message` and
// `hint` when the logs held no dump.
nlohmann::json agent_log_to_json(const agentlog::Report& report);
// One fault group: the elements of `groups`, and each fault finding's `details`.
nlohmann::json fault_group_to_json(const agentlog::FaultGroup& group);

// One Finding per fault group (ids `fault-device-assert`, `fault-memory-violation`,
// `fault-illegal-instruction`, `fault-gpu-exception`); groups that are no fault (running waves,
// breakpoints) give none.
std::vector<Finding> agent_log_findings(const agentlog::Report& report);

struct AgentLogTextOptions {
  bool color = false;
  std::size_t max_groups = 20;
  bool verbose = false; // every caveat, sample and context line
};
// `rocplay agent-log: 2 faults (2 of 9 waves) in 2 dumps from a.log`, then each fault group.
void write_agent_log_text(std::ostream& out, const agentlog::Report& report,
                          const AgentLogTextOptions& options = {});

} // namespace rocplay::report
