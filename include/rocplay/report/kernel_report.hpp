// Rendering code-object facts: kernel-info's text (an ASCII fit view within 100 columns) and
// JSON, and the disassembly windows that agent-log and live reports show.
// Layer: src/report/ (library rocplay_report; docs/architecture.md).
#pragma once

#include "rocplay/codeobj/kernel_info.hpp"
#include "rocplay/isa/instructions.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace rocplay::report {

constexpr std::size_t kKernelInfoWidth = 100;

// The ASCII fit view of one kernel on one architecture; every line within `width` columns and
// the first says it is an ISA fit, not measured occupancy.
void write_fit_text(std::ostream& out, const codeobj::Fit& fit, const std::string& indent,
                    std::size_t width = kKernelInfoWidth);
nlohmann::json fit_to_json(const codeobj::Fit& fit);

// Instructions as a listing: the PC marked `=>`, the loop's extent marked with `|` and its
// backward branch with `^`.
void write_window_text(std::ostream& out, const std::vector<isa::Instruction>& window,
                       std::optional<std::uint64_t> pc, const std::optional<isa::Loop>& loop,
                       const std::string& indent, std::size_t width = kKernelInfoWidth);

void write_kernel_info_text(std::ostream& out, const codeobj::KernelInfo& info, bool verbose);
// {"schema":"rocplay.kernel-info","schema_version":1,"objects":[...],"problems":[...],
//  "windows":[...]}; docs/json-schema.md documents it.
nlohmann::json kernel_info_to_json(const codeobj::KernelInfo& info);
// The same document written as it is built, one kernel per line: a thousand kernels' tree at once
// cost more than the 100 ms kernel-info has (docs/benchmarks.md).
void write_kernel_info_json(std::ostream& out, const codeobj::KernelInfo& info);

} // namespace rocplay::report
