// The target's stops in a recording (rocplay/core/target_stops.hpp).
#include "rocplay/core/target_stops.hpp"

#include "rocplay/core/notes.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>

namespace rocplay {

namespace {

constexpr std::string_view kHead =
    "target stopped (its main thread's state, read every millisecond): ";

std::optional<double> read_number(std::string_view& text) {
  double v = 0;
  const auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || !std::isfinite(v) || v < 0) {
    return std::nullopt;
  }
  text.remove_prefix(static_cast<std::size_t>(p - text.data()));
  return v;
}

} // namespace

std::vector<std::string> target_stops_notes(const StopIntervals& stops) {
  std::vector<std::string> words;
  words.reserve(stops.size());
  for (const auto& [from, to] : stops) {
    words.push_back(fmt::format("{:.6f}-{:.6f}", from, to));
  }
  return list_notes(kHead, words);
}

bool parse_target_stops_note(std::string_view note, StopIntervals& stops, std::size_t max_stops) {
  if (!note.starts_with(kHead)) {
    return false;
  }
  note.remove_prefix(kHead.size());
  while (!note.empty() && stops.size() < max_stops) {
    const auto from = read_number(note);
    if (!from || note.empty() || note.front() != '-') {
      break;
    }
    note.remove_prefix(1);
    const auto to = read_number(note);
    if (!to || *to < *from) {
      break;
    }
    stops.emplace_back(*from, *to);
    if (!note.empty() && note.front() != ' ') {
      break;
    }
    if (!note.empty()) {
      note.remove_prefix(1);
    }
  }
  return true;
}

double stopped_within(const StopIntervals& stops, double from, double to) {
  double total = 0;
  for (const auto& [a, b] : stops) {
    total += std::max(0.0, std::min(b, to) - std::max(a, from));
  }
  return total;
}

} // namespace rocplay
