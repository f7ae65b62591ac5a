// Launch outcome names (rocplay/core/names.hpp table): the `outcome` of a launch in reports,
// written out so a changed name fails.
#include "rocplay/core/names.hpp"
#include "rocplay/session/launch.hpp"

#include <catch2/catch.hpp>

using namespace rocplay;

TEST_CASE("launch outcomes keep their names", "[session][names]") {
  constexpr NameTable<session::LaunchOutcome, 7> expected{{
      {session::LaunchOutcome::Faulted, "faulted"},
      {session::LaunchOutcome::Exited, "exited"},
      {session::LaunchOutcome::Signalled, "killed-by-signal"},
      {session::LaunchOutcome::TimedOut, "timed-out"},
      {session::LaunchOutcome::Interrupted, "interrupted"},
      {session::LaunchOutcome::NotStarted, "not-started"},
      {session::LaunchOutcome::Lost, "lost"},
  }};
  static_assert(names_cover(expected, session::LaunchOutcome::Lost));
  for (const auto& [value, name] : expected) {
    CHECK(session::to_string(value) == name);
    CHECK(value_of(expected, session::to_string(value)) == value);
  }
}
