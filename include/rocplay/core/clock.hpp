// Wall-clock times as reports and recordings write them. Implemented in src/core/.
#pragma once

#include <string>

namespace rocplay {

// Seconds since the Unix epoch, with the fraction.
double unix_now();
// `2026-11-24T03:55:00Z`: ISO 8601 in UTC, whole seconds.
std::string iso_time(double unix_seconds);
std::string iso_now();

} // namespace rocplay
