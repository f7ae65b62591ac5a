// Watch verdict names (rocplay/core/names.hpp table): the verdict the watch log and summary
// print, written out so a changed name fails.
#include "rocplay/core/names.hpp"
#include "rocplay/watch/watch.hpp"

#include <catch2/catch.hpp>

using namespace rocplay;

TEST_CASE("watch verdicts keep their names", "[watch][names]") {
  constexpr NameTable<watch::Verdict, 5> expected{{
      {watch::Verdict::Healthy, "healthy"},
      {watch::Verdict::Quiet, "quiet"},
      {watch::Verdict::Hang, "hang"},
      {watch::Verdict::Waiting, "waiting"},
      {watch::Verdict::Gone, "gone"},
  }};
  static_assert(names_cover(expected, watch::Verdict::Gone));
  for (const auto& [value, name] : expected) {
    CHECK(watch::to_string(value) == name);
    CHECK(value_of(expected, watch::to_string(value)) == value);
  }
}
