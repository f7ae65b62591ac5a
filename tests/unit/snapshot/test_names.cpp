// Snapshot enum names (rocplay/core/names.hpp tables): the strings rocgdb prints and snapshot JSON
// carries, written out so a changed name fails.
#include "rocplay/core/error.hpp"
#include "rocplay/core/names.hpp"
#include "rocplay/snapshot/snapshot.hpp"
#include "support.hpp"

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

TEST_CASE("fence scopes keep their snapshot JSON names, and each reads back", "[snapshot][names]") {
  constexpr NameTable<FenceScope, 3> expected{{
      {FenceScope::None, "none"},
      {FenceScope::Agent, "agent"},
      {FenceScope::System, "system"},
  }};
  static_assert(names_cover(expected, FenceScope::System));
  const nlohmann::json good = to_json(test::load("rocgdb/tp8-allgather-sync-spin/snapshot.mi"));
  REQUIRE(!good["dispatches"].empty());
  for (const auto& [scope, name] : expected) {
    auto j = good;
    j["dispatches"][0]["fence"]["acquire"] = name;
    j["dispatches"][0]["fence"]["release"] = name;
    const Snapshot s = snapshot_from_json(j);
    CHECK(s.dispatches[0].fence.acquire == scope);
    CHECK(s.dispatches[0].fence.release == scope);
    CHECK(to_json(s)["dispatches"][0]["fence"]["acquire"] == name);
  }
  // An empty scope reads as none (as before); another spelling is an error that names the field.
  auto j = good;
  j["dispatches"][0]["fence"]["acquire"] = "";
  CHECK(snapshot_from_json(j).dispatches[0].fence.acquire == FenceScope::None);
  j["dispatches"][0]["fence"]["acquire"] = "Agent";
  CHECK_THROWS_AS(snapshot_from_json(j), Error);
}
