// How long a process really is stopped (session/stop_meter.hpp).
#include "session/stop_meter.hpp"

#include <fmt/format.h>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <string_view>
#include <system_error>

namespace rocplay::session::detail {

namespace {

// The state letter of a /proc/.../stat text: the field after the last `)` (a name may hold one).
char state_of(std::string_view stat) {
  const auto close = stat.rfind(')');
  return close != std::string_view::npos && close + 2 < stat.size() ? stat[close + 2] : '?';
}

} // namespace

StopMeter::StopMeter(std::int64_t pid, Clock::time_point origin, std::chrono::microseconds period)
    : origin_(origin), period_(period) {
  const std::string path = fmt::format("/proc/{}/task/{}/stat", pid, pid);
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return;
  }
  try {
    thread_ = std::thread([this, fd] { run(fd); });
  } catch (const std::system_error&) {
    ::close(fd);
  }
}

StopMeter::~StopMeter() {
  finish();
}

void StopMeter::run(int fd) {
  char buf[1024];
  double stopped_since = -1; // when the current stop was first seen; -1 while it runs
  auto next = Clock::now();
  for (;;) {
    const bool last = done_.load();
    const ssize_t n = ::pread(fd, buf, sizeof buf, 0);
    const double at = std::chrono::duration<double>(Clock::now() - origin_).count();
    const char state = n > 0 ? state_of(std::string_view(buf, static_cast<std::size_t>(n))) : '?';
    if (n <= 0) {
      break; // the process is gone: its stops end here
    }
    readable_ = true;
    const bool stopped = state == 't' || state == 'T';
    if (stopped && stopped_since < 0) {
      stopped_since = at;
    } else if (!stopped && stopped_since >= 0) {
      if (intervals_.size() >= max_intervals) {
        overflowed_ = true;
        break;
      }
      intervals_.emplace_back(stopped_since, at);
      stopped_since = -1;
    }
    if (last) {
      break;
    }
    // On time, or a period from now after a late wake (no burst of reads to catch up).
    next = std::max(next + period_, Clock::now());
    std::this_thread::sleep_until(next);
  }
  if (stopped_since >= 0 && !overflowed_) {
    const double at = std::chrono::duration<double>(Clock::now() - origin_).count();
    intervals_.emplace_back(stopped_since, at);
  }
  ::close(fd);
}

std::optional<StopMeter::Intervals> StopMeter::finish() {
  done_ = true;
  if (thread_.joinable()) {
    thread_.join();
  }
  if (!readable_ || overflowed_) {
    return std::nullopt;
  }
  return intervals_;
}

} // namespace rocplay::session::detail
