// The Progress section of a report: what several samples of one process say (stuck or moving).
// Layer: src/report/ (library rocplay_report; docs/architecture.md).
#pragma once

#include "rocplay/heuristics/progress.hpp"

#include <nlohmann/json.hpp>

#include <iosfwd>
#include <vector>

namespace rocplay::report {

// `Progress (3 samples over 4.1 s; ...)`, the verdict, then one line per dispatch, wave class,
// queue and host thread (blocked threads folded into one line). Nothing for one sample.
void write_progress_text(std::ostream& out, const SampleProgress& progress,
                         const std::vector<Sample>& samples, std::size_t width = 100);
// {"progress": ..., "samples": [{index, at, stop_seconds, wall_time, taken_at}, ...]}; later
// samples carry their whole snapshot (`snapshot`), the first is the report's own.
nlohmann::json progress_to_json(const SampleProgress& progress, const std::vector<Sample>& samples);

} // namespace rocplay::report
