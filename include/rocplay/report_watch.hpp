// `rocplay watch`'s one-line summary of a capture: what was seen, what is stuck, where the
// report is. One line, so it fits an alert, a journal entry or a chat message.
#pragma once

#include "rocplay/heuristics.hpp"
#include "rocplay/progress.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace rocplay::report {

struct CaptureTarget {
  std::int64_t pid = 0;
  std::optional<int> rank;
  bool examined = false;
  std::string error; // why it was not examined
  std::vector<Finding> findings;
  SampleProgress progress;
};

struct Capture {
  std::string host;
  std::string time; // ISO 8601, UTC
  std::string why;  // the signs that started it: `log quiet 62.0s, GPU busy 100% (renderD128)`
  std::vector<CaptureTarget> targets;
  std::vector<Finding> cross_rank;
  std::string report_path;
  bool interrupted = false;
};

// `rocplay watch: HOST TIME: hang captured (WHY): 2/2 targets examined; stuck: rank 0 pid 4301
// 2 threads in start_sync(int) at x.cpp:88; ...; findings: no-progress x2; report: PATH`.
// Names from the target (threads, functions) are cut and stripped of control characters; the
// whole line is at most `max_chars`.
std::string capture_summary_line(const Capture& capture, std::size_t max_chars = 2000);

} // namespace rocplay::report
