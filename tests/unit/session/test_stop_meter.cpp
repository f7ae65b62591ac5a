// The session's stop meter (session/stop_meter.hpp) on a real process stopped by a signal: what
// it measures is the time the process spent stopped, not what anyone said about it.
#include "session/stop_meter.hpp"

#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>

using rocplay::session::detail::StopMeter;
using namespace std::chrono_literals;

TEST_CASE("stop meter: a process stopped twice reads as two stops of their lengths") {
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    for (;;) {
      ::pause();
    }
  }
  const auto origin = StopMeter::Clock::now();
  StopMeter meter(child, origin);
  std::this_thread::sleep_for(50ms);
  ::kill(child, SIGSTOP);
  std::this_thread::sleep_for(300ms);
  ::kill(child, SIGCONT);
  std::this_thread::sleep_for(100ms);
  ::kill(child, SIGSTOP);
  std::this_thread::sleep_for(100ms);
  ::kill(child, SIGCONT);
  std::this_thread::sleep_for(50ms);
  const auto stops = meter.finish();
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  REQUIRE(stops);
  REQUIRE(stops->size() == 2);
  // Generous bounds: a loaded 2-core builder wakes the meter late, never early.
  const double first = (*stops)[0].second - (*stops)[0].first;
  const double second = (*stops)[1].second - (*stops)[1].first;
  CHECK(first > 0.25);
  CHECK(first < 0.45);
  CHECK(second > 0.07);
  CHECK(second < 0.25);
  CHECK((*stops)[0].first > 0.04);
  CHECK((*stops)[1].first > (*stops)[0].second);
}

TEST_CASE("stop meter: a process it cannot read gives no figure, one that ends gives its stops") {
  CHECK_FALSE(StopMeter(999'999'999, StopMeter::Clock::now()).finish());

  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    ::raise(SIGSTOP);
    ::_exit(0);
  }
  int status = 0;
  REQUIRE(::waitpid(child, &status, WUNTRACED) == child); // stopped now
  StopMeter meter(child, StopMeter::Clock::now());
  std::this_thread::sleep_for(50ms);
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  std::this_thread::sleep_for(20ms);
  const auto stops = meter.finish();
  REQUIRE(stops);
  REQUIRE(stops->size() == 1); // stopped from the first read until it was gone
  CHECK((*stops)[0].second - (*stops)[0].first > 0.04);
}
