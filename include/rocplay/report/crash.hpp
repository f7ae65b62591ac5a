// The crash verdict as a person reads it (rocplay/crash/crash.hpp builds the findings).
// Layer: src/report/ (library rocplay_report; docs/architecture.md).
#pragma once

#include "rocplay/core/finding.hpp"

#include <ostream>
#include <vector>

namespace rocplay::report {

// The verdict finding first (`crash-verdict`), then any cross-rank crash findings. Writes
// nothing for an empty list. Sections wrap to `width` columns.
void write_crash_verdict(std::ostream& out, const std::vector<Finding>& findings,
                         bool color = false, std::size_t width = 100);

} // namespace rocplay::report
