// The lines an agent-log fault group is described with, shared by its text report and its
// findings (their titles and evidence say it the same way). Internal to src/report.
#pragma once

#include "rocplay/agentlog/agentlog.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace rocplay::report::agent_log_lines {

// fault-device-assert, fault-memory-violation, fault-illegal-instruction, fault-gpu-exception.
std::string_view finding_id(const agentlog::FaultGroup& group);
// Lanes as ranges: `0-3,8`.
std::string lanes_text(const std::vector<std::uint32_t>& lanes);
std::string ints_text(const std::vector<int>& values);
std::string hex32(std::uint32_t value);
// The first `max` characters of a kernel name, `...` after a cut.
std::string short_kernel(const std::string& name, std::size_t max);
// The kernel as a title names it: its op (else its short name) and its data type.
std::string kernel_title(const agentlog::FaultGroup& group);
// `pc 0x... (+N more, one per process) = kernel+OFFSET (ELF 0x...)`.
std::string where_text(const agentlog::FaultGroup& group);
// `v3: active lanes hold 0x...`, and the other lanes' range.
std::string register_line(const agentlog::RegisterSummary& summary);
// Per wave: the address range, and which lanes reached the page the runtime named.
std::vector<std::string> access_summary(const agentlog::MemoryAccess& access,
                                        std::size_t max_waves);

} // namespace rocplay::report::agent_log_lines
