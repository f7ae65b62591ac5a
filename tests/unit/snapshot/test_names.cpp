// Snapshot enum names (rocplay/core/names.hpp tables): the strings rocgdb prints and snapshot JSON
// carries, written out so a changed name fails.
#include "rocplay/core/names.hpp"
#include "rocplay/snapshot/snapshot.hpp"

#include <catch2/catch.hpp>

using namespace rocplay;

TEST_CASE("queue types keep the names rocgdb prints and snapshot JSON carries",
          "[snapshot][names]") {
  constexpr NameTable<QueueType, 5> expected{{
      {QueueType::Unknown, "Unknown"},
      {QueueType::Hsa, "HSA"},
      {QueueType::Pm4, "PM4"},
      {QueueType::Dma, "DMA"},
      {QueueType::Xgmi, "XGMI"},
  }};
  static_assert(names_cover(expected, QueueType::Xgmi));
  for (const auto& [value, name] : expected) {
    CHECK(to_string(value) == name);
    CHECK(value_of(expected, to_string(value)) == value);
  }
  for (const auto& [value, name] : expected) {
    CHECK(queue_type_from_string(name) == value);
  }
  // rocgdb's names are upper case; another spelling is an Unknown queue, never an error.
  CHECK(queue_type_from_string("hsa") == QueueType::Unknown);
  CHECK(queue_type_from_string("SDMA") == QueueType::Unknown);
  CHECK(queue_type_from_string("") == QueueType::Unknown);
}
