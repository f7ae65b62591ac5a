// A recording's notes that carry a list: `HEAD word word ...`, split into several notes of the
// same head so that each stays well under a note's size (the readers bound a note to 4,096 bytes).
// The session's measured stops (core/target_stops) and the runner's unchanged stacks
// (snapshot::unchanged_stacks_notes) are written so.
// Layer: src/core/ (library rocplay_core).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace rocplay {

// Notes of `head` and the words, space-separated, each closed once it passes 3,000 bytes; none
// for no words.
std::vector<std::string> list_notes(std::string_view head, const std::vector<std::string>& words);

} // namespace rocplay
