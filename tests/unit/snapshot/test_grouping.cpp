// STAT-style grouping of waves by (agent, dispatch, PC).
#include "rocplay/snapshot/grouping.hpp"
#include "support.hpp"

#include <catch2/catch.hpp>

using namespace rocplay;
using snapshot::Range;

TEST_CASE("TP=8 worker: 128 waves read as two classes", "[snapshot][grouping]") {
  Snapshot s = test::load("rocgdb/tp8-allgather-sync-spin/snapshot.mi");
  auto classes = snapshot::group_waves(s);
  REQUIRE(classes.size() == 2);
  // Larger class first within a dispatch.
  const auto& barrier = classes[0];
  const auto& spin = classes[1];
  CHECK(barrier.waves == 112);
  CHECK(barrier.wave_in_group == std::vector<Range>{{1, 7}});
  CHECK(snapshot::format_ranges(barrier.wave_in_group) == "1-7");
  CHECK(spin.waves == 16);
  CHECK(spin.pc == 0x7fe8a5e41b3cu);
  CHECK(spin.agent == 3u);
  CHECK(spin.dispatch == 412u);
  CHECK(spin.workgroups == 16);
  CHECK(snapshot::format_workgroups(spin) == "(0-15,0,0)");
  CHECK(spin.wave_in_group == std::vector<Range>{{0, 0}});
  CHECK(spin.kernel_name ==
        "void aiter::allgather_vec<__hip_bfloat16, 8>(void*, void*, aiter::Signal*, int)");
  CHECK(spin.line == 131u);
  CHECK(spin.first_thread == "5");
  auto j = snapshot::to_json(spin);
  CHECK(j["pc"] == "0x7fe8a5e41b3c");
  CHECK(j["wave_in_group"] == "0");
  CHECK(j["workgroup_box"][0] == nlohmann::json::array({0, 15}));
}

TEST_CASE("unknown coordinates are counted, not dropped", "[snapshot][grouping]") {
  Snapshot s = test::load("rocgdb/late-attach-unknown-coordinates/snapshot.mi");
  auto classes = snapshot::group_waves(s);
  std::size_t unknown = 0;
  std::size_t unattributed = 0;
  for (const auto& c : classes) {
    unknown += c.unknown_coordinates;
    unattributed += c.unattributed;
  }
  CHECK(unknown == 7);
  CHECK(unattributed == 7);
  // Known classes sort before unknown ones.
  CHECK(classes.front().dispatch == 4u);
  CHECK_FALSE(classes.back().agent);
}

TEST_CASE("cuda-gdb thread ranges group by work-item range", "[snapshot][grouping]") {
  // The shape of fixtures/cuda-gdb/syncspin-h200.mi: per block, threads 0-7 at one PC, 8-31 and
  // 32-255 at two others.
  Snapshot s;
  s.debugger = DebuggerKind::CudaGdb;
  Agent a;
  a.id = "0";
  a.number = 0;
  s.agents.push_back(a);
  Dispatch d;
  d.id = "0";
  d.agent = 0;
  d.dispatch_no = 0;
  d.kernel_name = "allgather_vec";
  s.dispatches.push_back(d);
  int tid = 0;
  for (int b = 0; b < 4; ++b) {
    for (auto [first, last, pc] :
         {std::tuple{0u, 7u, 0xc0u}, std::tuple{8u, 31u, 0xe0u}, std::tuple{32u, 255u, 0x100u}}) {
      Wave w;
      w.thread_id = "r" + std::to_string(tid++);
      w.agent = 0;
      w.dispatch = 0;
      w.workgroup = {b, 0, 0};
      w.workgroup_last = {b, 0, 0};
      w.first_work_item = first;
      w.last_work_item = last;
      w.count = last - first + 1;
      w.pc = pc;
      s.waves.push_back(w);
    }
  }
  test::check_invariants(s);
  auto classes = snapshot::group_waves(s);
  REQUIRE(classes.size() == 3);
  CHECK(classes[0].threads == 4 * 224);
  CHECK(classes[2].threads == 4 * 8);
  CHECK(classes[2].work_items == Range{0, 7});
  CHECK(classes[2].workgroups == 4);
  CHECK(classes[2].unknown_coordinates == 0);
}
