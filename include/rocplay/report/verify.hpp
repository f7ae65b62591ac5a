// `launch --verify`'s comparison in a report (`rocplay launch --verify`, `postmortem` of its
// recordings): the verdict over the runs, then one line per run. Text before the first run's
// report; `verification` in JSON.
#pragma once

#include "rocplay/case/case.hpp"

#include <nlohmann/json.hpp>

#include <ostream>

namespace rocplay::report {

// Writes nothing when the incident holds no verification. `headline`: the verdict with its
// meaning and next step first (a launch's report); without, the runs only (the incident's
// headline already said the rest).
void write_verification_text(std::ostream& out, const Incident& incident, std::size_t width,
                             bool color, bool headline = true);
// {"verdict": finding, "runs": [{index, of, experiment, env, outcome, exit_code, exit_signal,
// seconds, fault: {function, file, line, pc, on_gpu, signal} | null, launch_line, concurrent,
// recording}]}; null when the incident holds no verification.
nlohmann::json verification_to_json(const Incident& incident);

} // namespace rocplay::report
