// Progress motion names (rocplay/core/names.hpp table): an entry's `motion` in progress JSON,
// written out so a changed name fails.
#include "rocplay/core/names.hpp"
#include "rocplay/heuristics/progress.hpp"

#include <catch2/catch.hpp>

using namespace rocplay;

TEST_CASE("progress motions keep their names", "[heuristics][names]") {
  constexpr NameTable<Motion, 4> expected{{
      {Motion::Unknown, "unknown"},
      {Motion::Stuck, "stuck"},
      {Motion::Blocked, "blocked"},
      {Motion::Moving, "moving"},
  }};
  static_assert(names_cover(expected, Motion::Moving));
  for (const auto& [value, name] : expected) {
    CHECK(to_string(value) == name);
    CHECK(value_of(expected, to_string(value)) == value);
  }
}
