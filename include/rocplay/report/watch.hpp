// `rocplay watch`'s one-line summary of a capture: what was seen, what is stuck, where the
// report is. One line, so it fits an alert, a journal entry or a chat message.
#pragma once

#include "rocplay/case/case.hpp"

#include <string>

namespace rocplay::report {

// What a capture is besides its incident: where and when, why, where its report went.
struct CaptureHeader {
  std::string host;
  std::string time; // ISO 8601, UTC
  std::string why;  // the signs that started it: `log quiet 62.0s, GPU busy 100% (renderD128)`
  std::string report_path;
  bool interrupted = false;
};

// `rocplay watch: HOST TIME: hang captured (WHY): 2/2 targets examined; stuck: rank 0 pid 4301
// 2 threads in start_sync(int) at x.cpp:88; ...; findings: no-progress x2; report: PATH`.
// Names from the target (threads, functions) are cut and stripped of control characters; the
// whole line is at most `max_chars`.
std::string capture_summary_line(const CaptureHeader& capture, const Incident& incident,
                                 std::size_t max_chars = 2000);

} // namespace rocplay::report
