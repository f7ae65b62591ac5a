// agent-log --code-objects: the saved code object of each fault group, opened and decoded.
// Internal to src/agentlog.
#pragma once

#include "rocplay/agentlog/agentlog.hpp"

namespace rocplay::agentlog {

// Fills each group's saved_object from the file --save-code-objects left for it.
void read_saved_objects(const AnalyzeOptions& options, Report& report);

} // namespace rocplay::agentlog
