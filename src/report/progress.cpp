// The Progress section: stuck or moving, per dispatch, wave class, queue and host thread.
#include "rocplay/report/progress.hpp"

#include "rocplay/report/report.hpp"

#include <fmt/format.h>

#include <ostream>
#include <string>

namespace rocplay::report {

void write_progress_text(std::ostream& out, const SampleProgress& p,
                         const std::vector<Sample>& samples, std::size_t width) {
  if (p.samples < 2) {
    if (!p.verdict_text.empty() && p.samples == 1) {
      out << "SampleProgress: " << p.verdict_text << "\n";
    }
    return;
  }
  std::string stops;
  for (const auto& s : samples) {
    stops += (stops.empty() ? "" : ", ") + stop_time_text(s.stop_seconds, 2);
  }
  // A post-mortem series has no stop times (the recordings were taken apart).
  out << fmt::format("Progress ({} samples over {:.1f} s{})\n", p.samples, p.seconds,
                     stops.empty() ? "" : fmt::format("; stopped {} each", stops));
  write_wrapped(out, width, "  verdict: ", p.verdict_text);
  std::size_t blocked = 0;
  std::string blocked_example;
  std::size_t threads_shown = 0;
  constexpr std::size_t kMaxThreadLines = 16;
  std::size_t threads_folded = 0;
  for (const auto& e : p.entries) {
    if (e.kind == "thread" && e.motion == Motion::Blocked) {
      if (blocked++ == 0) {
        blocked_example = fmt::format("thread {} {}", e.id, e.why);
      }
      continue;
    }
    if (e.kind == "thread" && threads_shown++ >= kMaxThreadLines) {
      ++threads_folded;
      continue;
    }
    const std::string indent = e.kind == "waves" ? "      " : "  ";
    write_wrapped(out, width,
                  fmt::format("{}{} {}{}: {}: ", indent, e.kind, e.id,
                              e.label.empty() ? "" : " " + e.label, to_string(e.motion)),
                  e.why);
  }
  if (threads_folded > 0) {
    out << fmt::format("  ... {} more host thread(s) (JSON has them all)\n", threads_folded);
  }
  if (blocked > 0) {
    write_wrapped(out, width, "  ",
                  fmt::format("{} host thread(s) blocked in the same frames in every sample "
                              "(e.g. {})",
                              blocked, blocked_example));
  }
}

nlohmann::json progress_to_json(const SampleProgress& progress,
                                const std::vector<Sample>& samples) {
  nlohmann::json list = nlohmann::json::array();
  for (std::size_t i = 0; i < samples.size(); ++i) {
    const auto& s = samples[i];
    nlohmann::json j = {{"index", s.index},
                        {"at", s.at},
                        {"stop_seconds", s.stop_seconds},
                        {"wall_time", s.wall_time},
                        {"taken_at", s.snapshot.taken_at}};
    if (i > 0) {
      j["snapshot"] = to_json(s.snapshot);
    }
    list.push_back(std::move(j));
  }
  return {{"progress", to_json(progress)}, {"samples", std::move(list)}};
}

} // namespace rocplay::report
