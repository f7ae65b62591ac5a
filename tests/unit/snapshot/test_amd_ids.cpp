// rocgdb target ids, fences and grids (rocgdb-formats.md 1.3, 2.1, 2.5, 3).
#include "snapshot/amd_ids.hpp"

#include <catch2/catch.hpp>

#include <tuple>

using namespace rocplay;
using namespace rocplay::snapshot;

namespace {
using O32 = std::optional<std::uint32_t>;
using O64 = std::optional<std::uint64_t>;
using OI = std::optional<std::int64_t>;
} // namespace

TEST_CASE("wave target ids, with `?` in any slot", "[snapshot][amd]") {
  using Want = std::tuple<O32, O32, O64, O64, OI, OI, OI, O32>;
  auto row = GENERATE(table<const char*, const char*, Want>({
      {"all known", "AMDGPU Wave 1:2:1:1 (0,0,0)/0", Want{1u, 2u, 1u, 1u, 0, 0, 0, 0u}},
      {"large numbers", "AMDGPU Wave 8:3:41234:77812 (1023,15,2)/7",
       Want{8u, 3u, 41234u, 77812u, 1023, 15, 2, 7u}},
      {"late attach (gcore-after-attach.exp)", "AMDGPU Wave 1:1:?:1 (?,?,?)/?",
       Want{1u, 1u, std::nullopt, 1u, std::nullopt, std::nullopt, std::nullopt, std::nullopt}},
      {"unknown agent", "AMDGPU Wave ?:?:?:? (?,?,?)/?",
       Want{std::nullopt, std::nullopt, std::nullopt, std::nullopt, std::nullopt, std::nullopt,
            std::nullopt, std::nullopt}},
      {"ROCm 5.x prefix", "AMDGPU Thread 1:1:15:1 (0,0,0)/0", Want{1u, 1u, 15u, 1u, 0, 0, 0, 0u}},
  }));
  DYNAMIC_SECTION(std::get<0>(row)) {
    auto id = amd::parse_wave_id(std::get<1>(row));
    REQUIRE(id);
    const auto& [a, q, d, w, x, y, z, wig] = std::get<2>(row);
    CHECK(id->agent == a);
    CHECK(id->queue == q);
    CHECK(id->dispatch == d);
    CHECK(id->wave == w);
    CHECK(id->workgroup[0] == x);
    CHECK(id->workgroup[1] == y);
    CHECK(id->workgroup[2] == z);
    CHECK(id->wave_in_group == wig);
  }
}

TEST_CASE("malformed wave ids are refused, not guessed", "[snapshot][amd]") {
  auto bad =
      GENERATE(as<std::string>{}, "AMDGPU Wave 1:2:1 (0,0,0)/0", "AMDGPU Wave 1:2:1:1 (0,0)/0",
               "AMDGPU Wave 1:2:1:1 (0,0,0)", "AMDGPU Wave x:2:1:1 (0,0,0)/0",
               "Thread 0x7ffff6288180 (LWP 645917)", "AMDGPU Wave 99999999999:2:1:1 (0,0,0)/0", "");
  CAPTURE(bad);
  CHECK_FALSE(amd::parse_wave_id(bad));
}

TEST_CASE("lane, dispatch, queue and agent ids", "[snapshot][amd]") {
  auto lane = amd::parse_lane_id("AMDGPU Lane 1:2:1:1/5 (0,0,0)[5,0,0]");
  REQUIRE(lane);
  CHECK(lane->lane == 5u);
  CHECK(lane->work_item[0] == 5);
  auto unknown_lane = amd::parse_lane_id("AMDGPU Lane 1:2:1:1/0 (0,0,0)[?,?,?]");
  REQUIRE(unknown_lane);
  CHECK_FALSE(unknown_lane->work_item[0]);

  auto d = amd::parse_dispatch_id("AMDGPU Dispatch 1:2:1 (PKID 0)");
  REQUIRE(d);
  CHECK(d->agent == 1u);
  CHECK(d->queue == 2u);
  CHECK(d->dispatch == 1u);
  CHECK(d->packet_id == 0u);

  auto q = amd::parse_queue_id("AMDGPU Queue 1:2 (QID 1)");
  REQUIRE(q);
  CHECK(q->queue == 2u);
  CHECK(q->os_qid == 1u);

  CHECK(amd::parse_agent_gpu_id("AMDGPU Agent (GPUID 35090)") == 35090u);
  CHECK_FALSE(amd::parse_agent_gpu_id("AMDGPU Agent 35090"));
}

TEST_CASE("fence grammar [B] [|] [Aa|As] [|] [Ra|Rs]", "[snapshot][amd]") {
  auto row = GENERATE(table<const char*, bool, FenceScope, FenceScope, bool>({
      {"B|Aa|Ra", true, FenceScope::Agent, FenceScope::Agent, true},
      {"B|As|Rs", true, FenceScope::System, FenceScope::System, true},
      {"Aa|Ra", false, FenceScope::Agent, FenceScope::Agent, false},
      {"B", true, FenceScope::None, FenceScope::None, false},
      {"B|Rs", true, FenceScope::None, FenceScope::System, false},
      {"", false, FenceScope::None, FenceScope::None, false},
  }));
  DYNAMIC_SECTION("`" << std::get<0>(row) << "`") {
    auto f = amd::parse_fence(std::get<0>(row));
    REQUIRE(f);
    CHECK(f->barrier == std::get<1>(row));
    CHECK(f->acquire == std::get<2>(row));
    CHECK(f->release == std::get<3>(row));
    CHECK(f->full() == std::get<4>(row));
  }
  CHECK_FALSE(amd::parse_fence("B|Xx"));
}

TEST_CASE("grid and workgroup have 1 to 3 components", "[snapshot][amd]") {
  CHECK(amd::parse_dims("[256]") == std::vector<std::uint64_t>{256});
  CHECK(amd::parse_dims("[256,1]") == std::vector<std::uint64_t>{256, 1});
  CHECK(amd::parse_dims("[256,1,1]") == std::vector<std::uint64_t>{256, 1, 1});
  CHECK_FALSE(amd::parse_dims("[1,1,1,1]"));
  CHECK_FALSE(amd::parse_dims("[]"));
  CHECK_FALSE(amd::parse_dims("256,1,1"));
  CHECK(amd::lanes_for_architecture("gfx90a") == 64u);
  CHECK(amd::lanes_for_architecture("gfx942") == 64u);
  CHECK(amd::lanes_for_architecture("gfx1100") == 32u);
  CHECK_FALSE(amd::lanes_for_architecture("unknown"));
}
