// The target's stops as the session measured them (session's StopMeter: its main thread's state,
// read every millisecond) and as a recording keeps them: notes `target stopped (its main thread's
// state, read every millisecond): 0.154700-0.203300 0.285000-0.301000`, in session seconds, split
// to stay under a note's size (docs/transcript-format.md, "The target's stops"). The session
// writes them after the detach; the snapshot's samples take their stops from them.
// Layer: src/core/ (library rocplay_core).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace rocplay {

using StopIntervals = std::vector<std::pair<double, double>>; // [from, to) session seconds

std::vector<std::string> target_stops_notes(const StopIntervals& stops);
// Appends a note's intervals to `stops`; false when `note` is not one. Intervals that do not
// read (to before from, not numbers) end the note; at most max_stops are kept in all.
bool parse_target_stops_note(std::string_view note, StopIntervals& stops,
                             std::size_t max_stops = 100'000);
// Seconds of `stops` inside [from, to).
double stopped_within(const StopIntervals& stops, double from, double to);

} // namespace rocplay
