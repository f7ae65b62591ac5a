// What a `cli:` or `mi:` step printed, in the text report: under the step's line, indented and
// bounded (the JSON report carries it whole).
// Layer: src/report/ (library rocplay_report; docs/architecture.md).
#pragma once

#include <cstddef>
#include <ostream>
#include <string_view>

namespace rocplay::report {

struct StepOutputLimits {
  std::size_t max_lines = 12;    // lines shown; the rest are counted in a note
  std::size_t max_columns = 160; // a longer line is cut, with `...`
};

// Writes `output` (console text, or an MI result line) under a step: each line prefixed with
// `indent` and `| `, control bytes made visible, invalid UTF-8 replaced. When lines or columns were
// cut, a last line says how much and that `--format json` has it whole. Nothing for empty output.
void write_step_output_text(std::ostream& out, std::string_view output, std::string_view indent,
                            const StepOutputLimits& limits = {});

} // namespace rocplay::report
