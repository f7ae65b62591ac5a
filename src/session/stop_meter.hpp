// How long a process really is stopped: its main thread's state (/proc/PID/task/PID/stat), read
// every millisecond on a thread of its own. cuda-gdb stops and resumes its target several times
// inside its attach and its detach without a word over MI: on a look at a small CUDA program the
// target's own clock saw six stops and 0.29 s, where the MI records gave 0.11 s
// (docs/hardware-validation.md). So a session's stop is what this meter saw, and the recording
// keeps it (rocplay/core/target_stops.hpp). Internal to src/session.
#pragma once

#include "rocplay/core/target_stops.hpp"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

namespace rocplay::session::detail {

class StopMeter {
public:
  using Clock = std::chrono::steady_clock;
  using Intervals = StopIntervals; // [from, to) seconds since origin

  // Starts reading pid's state; nothing is read when its main thread cannot be opened.
  StopMeter(std::int64_t pid, Clock::time_point origin,
            std::chrono::microseconds period = std::chrono::milliseconds(1));
  StopMeter(const StopMeter&) = delete;
  StopMeter& operator=(const StopMeter&) = delete;
  ~StopMeter();

  // Stops reading. The intervals in which the main thread was stopped (state t or T); nullopt
  // when its state could not be read, or when it held more intervals than are kept.
  std::optional<Intervals> finish();

  static constexpr std::size_t max_intervals = 100'000;

private:
  void run(int fd);

  Clock::time_point origin_;
  std::chrono::microseconds period_;
  std::atomic<bool> done_{false};
  bool readable_ = false;
  bool overflowed_ = false;
  Intervals intervals_;
  std::thread thread_;
};

} // namespace rocplay::session::detail
