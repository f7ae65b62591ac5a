#include "rocplay/core/clock.hpp"

#include <fmt/chrono.h>

#include <chrono>
#include <ctime>

namespace rocplay {

double unix_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string iso_time(double unix_seconds) {
  return fmt::format("{:%Y-%m-%dT%H:%M:%SZ}", fmt::gmtime(static_cast<std::time_t>(unix_seconds)));
}

std::string iso_now() {
  return fmt::format("{:%Y-%m-%dT%H:%M:%SZ}", fmt::gmtime(std::time(nullptr)));
}

} // namespace rocplay
