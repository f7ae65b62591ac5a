// Case status names (rocplay/core/names.hpp table): a case's `status` in reports, written out so
// a changed name fails.
#include "rocplay/case/case.hpp"
#include "rocplay/core/names.hpp"

#include <catch2/catch.hpp>

using namespace rocplay;

TEST_CASE("case statuses keep their names", "[case][names]") {
  constexpr NameTable<CaseStatus, 4> expected{{
      {CaseStatus::Examined, "examined"},
      {CaseStatus::Partial, "partial"},
      {CaseStatus::NotExamined, "not-examined"},
      {CaseStatus::Unreadable, "unreadable"},
  }};
  static_assert(names_cover(expected, CaseStatus::Unreadable));
  for (const auto& [value, name] : expected) {
    CHECK(to_string(value) == name);
    CHECK(value_of(expected, to_string(value)) == value);
  }
}
