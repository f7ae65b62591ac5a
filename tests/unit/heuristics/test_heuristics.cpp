// Each heuristic's evidence and its edges: what makes it fire, what keeps it silent.
#include "../snapshot/support.hpp"
#include "rocplay/heuristics/heuristics.hpp"

#include <catch2/catch.hpp>

using namespace rocplay;

namespace {

bool mentions(const Finding& f, std::string_view needle) {
  for (const auto& e : f.evidence) {
    if (e.find(needle) != std::string::npos) {
      return true;
    }
  }
  return f.summary.find(needle) != std::string::npos ||
         f.next_step.find(needle) != std::string::npos || f.title.find(needle) != std::string::npos;
}

// A small AMD snapshot: one agent, one dispatch per entry of `kernels` on its own queue.
Snapshot amd(const std::vector<std::string>& kernels, std::uint32_t agents = 1) {
  Snapshot s;
  s.debugger = DebuggerKind::RocGdb;
  s.coverage = {true, true, true, true};
  for (std::uint32_t a = 1; a <= agents; ++a) {
    Agent ag;
    ag.id = "1." + std::to_string(a);
    ag.number = a;
    ag.architecture = "gfx942";
    s.agents.push_back(ag);
  }
  std::uint32_t q = 1;
  for (const auto& k : kernels) {
    Queue queue;
    queue.id = "1." + std::to_string(q);
    queue.agent = 1;
    queue.queue_no = q;
    queue.type = QueueType::Hsa;
    queue.read = 10;
    queue.write = 12;
    queue.target_id = "AMDGPU Queue 1:" + std::to_string(q) + " (QID " + std::to_string(q) + ")";
    s.queues.push_back(queue);
    Dispatch d;
    d.id = "1." + std::to_string(q);
    d.agent = 1;
    d.queue = q;
    d.dispatch_no = 100 + q;
    d.packet_id = 10;
    d.target_id =
        "AMDGPU Dispatch 1:" + std::to_string(q) + ":" + std::to_string(100 + q) + " (PKID 10)";
    d.kernel_name = k;
    d.fence_text = "B|Aa|Ra";
    d.fence = {true, FenceScope::Agent, FenceScope::Agent};
    d.grid = {4096, 1, 1};
    d.workgroup = {256, 1, 1};
    s.dispatches.push_back(d);
    ++q;
  }
  return s;
}

// Waves of dispatch `d`: `groups` work-groups of `per_group` waves; pc_of(group, slot).
template <class F>
void add_waves(Snapshot& s, const Dispatch& d, int groups, int per_group, F pc_of,
               std::string function = "k") {
  int tid = 100 + static_cast<int>(s.waves.size());
  for (int g = 0; g < groups; ++g) {
    for (int w = 0; w < per_group; ++w) {
      Wave wave;
      wave.thread_id = std::to_string(tid++);
      wave.agent = d.agent;
      wave.queue = d.queue;
      wave.dispatch = d.dispatch_no;
      wave.workgroup = {g, 0, 0};
      wave.wave_in_group = static_cast<std::uint32_t>(w);
      wave.lane_count = 64;
      wave.pc = pc_of(g, w);
      wave.function = function;
      s.waves.push_back(wave);
    }
  }
}

} // namespace

// ------------------------------------------------------------------ sync-lane barrier spin

TEST_CASE("sync-lane: TP=8 fixture names start_sync and puts end_sync off the path",
          "[heuristics][sync-lane]") {
  Snapshot s = test::load("rocgdb/tp8-allgather-sync-spin/snapshot.mi");
  auto fs = heuristics::sync_lane_barrier_spin(s, {});
  REQUIRE(fs.size() == 1);
  const Finding& f = fs[0];
  CHECK(f.id == heuristics::kSyncLaneBarrierSpin);
  CHECK(f.severity == Severity::Critical);
  CHECK(f.confidence == Approx(0.9));
  CHECK(f.details["routine"] == "start_sync");
  CHECK(f.details["ngpus"] == 8);
  CHECK(f.details["ngpus_source"] == "agents visible to the process");
  CHECK(f.details["spin"]["waves"] == 16);
  CHECK(f.details["spin"]["pc"] == "0x7fe8a5e41b3c");
  CHECK(f.details["spin"]["source"]["line"] == 131);
  CHECK(f.details["rest"][0]["wave_in_group"] == "1-7");
  CHECK(f.details["dispatch"]["id"] == "1.1");
  REQUIRE(f.locations.size() == 1);
  CHECK(f.locations[0].line == 131u);
  CHECK(f.locations[0].pc == 0x7fe8a5e41b3cu);
  CHECK(mentions(f, "end_sync and everything after it never ran"));
  CHECK(mentions(f, "Do not edit end_sync"));
  CHECK(mentions(f, "work-items 0-7"));
}

TEST_CASE("sync-lane: cuda-gdb thread ranges, ngpus from the spinning range",
          "[heuristics][sync-lane]") {
  // The shape of the real recording fixtures/cuda-gdb/syncspin-h200.mi: allgather_vec<<<4,256>>>,
  // threads 0-7 of every block at hang.cu:8 inside inlined start_sync, 8-31 at line 10,
  // 32-255 at line 14.
  Snapshot s;
  s.debugger = DebuggerKind::CudaGdb;
  s.coverage = {true, false, true, true};
  Agent a;
  a.id = "0";
  a.number = 0;
  a.architecture = "sm_90";
  s.agents.push_back(a);
  Dispatch d;
  d.id = "0";
  d.agent = 0;
  d.dispatch_no = 0;
  d.kernel_name = "allgather_vec(int volatile*, int, float*)";
  d.grid = {4, 1, 1};
  d.workgroup = {256, 1, 1};
  s.dispatches.push_back(d);
  int tid = 0;
  for (int b = 0; b < 4; ++b) {
    struct R {
      std::uint32_t first, last;
      std::uint64_t pc;
      std::uint32_t line;
      const char* inl;
    };
    for (R r : {R{0, 7, 0x7fa6e37a00c0, 8, "start_sync"},
                R{8, 31, 0x7fa6e37a00e0, 10, "start_sync"}, R{32, 255, 0x7fa6e37a0100, 14, ""}}) {
      Wave w;
      w.thread_id = "range" + std::to_string(tid++);
      w.agent = 0;
      w.dispatch = 0;
      w.workgroup = {b, 0, 0};
      w.workgroup_last = {b, 0, 0};
      w.first_work_item = r.first;
      w.last_work_item = r.last;
      w.count = r.last - r.first + 1;
      w.pc = r.pc;
      w.function = "allgather_vec";
      w.file = "/home/dev/repro/hang.cu";
      w.line = r.line;
      w.inline_function = r.inl;
      s.waves.push_back(w);
    }
  }
  SourceLine sl;
  sl.pc = 0x7fa6e37a00c0;
  sl.file = "/home/dev/repro/hang.cu";
  sl.line = 8;
  sl.function = "allgather_vec(int volatile*, int, float*)"; // the model holds demangled names
  sl.offset = 192;
  sl.inlined_from = "start_sync at line 13 of hang.cu";
  s.source_lines.push_back(sl);
  test::check_invariants(s);

  auto fs = heuristics::sync_lane_barrier_spin(s, {});
  REQUIRE(fs.size() == 1);
  CHECK(fs[0].details["ngpus"] == 8);
  CHECK(fs[0].details["ngpus_source"] == "work-items of the spinning range");
  CHECK(fs[0].details["routine"] == "start_sync");
  CHECK(fs[0].details["spin"]["threads"] == 32);
  CHECK(fs[0].locations[0].line == 8u);
  CHECK(mentions(fs[0], "the other 992 threads")); // not "waves": these are thread ranges
  CHECK(mentions(fs[0], "32 threads at pc 0x7fa6e37a00c0"));
  // A caller that knows the TP size wins over the inference.
  heuristics::Context ctx;
  ctx.ngpus = 4;
  auto given = heuristics::sync_lane_barrier_spin(s, ctx);
  REQUIRE(given.size() == 1);
  CHECK(given[0].details["ngpus"] == 4);
}

TEST_CASE("sync-lane: stays silent without the pattern", "[heuristics][sync-lane]") {
  const std::string kAllgather =
      "void aiter::allgather_vec<__hip_bfloat16, 8>(void*, void*, aiter::Signal*, int)";
  SECTION("every wave at one PC (no sync-lane class of its own)") {
    Snapshot s = amd({kAllgather}, 8);
    add_waves(s, s.dispatches[0], 4, 8, [](int, int) { return 0x1000u; });
    test::check_invariants(s);
    CHECK(heuristics::sync_lane_barrier_spin(s, {}).empty());
  }
  SECTION("sync lanes at two places far apart (not one loop)") {
    Snapshot s = amd({kAllgather}, 8);
    add_waves(s, s.dispatches[0], 4, 8,
              [](int g, int w) { return w == 0 ? 0x1000u + (g % 2) * 0x800u : 0x2000u; });
    CHECK(heuristics::sync_lane_barrier_spin(s, {}).empty());
  }
  SECTION("every wave in the same loop, caught at different PCs of it") {
    Snapshot s = amd({kAllgather}, 8);
    add_waves(s, s.dispatches[0], 4, 8, [](int, int w) { return w == 0 ? 0x1000u : 0x1010u; });
    CHECK(heuristics::sync_lane_barrier_spin(s, {}).empty());
  }
  SECTION("sync-lane class also holds other slots") {
    Snapshot s = amd({kAllgather}, 8);
    add_waves(s, s.dispatches[0], 4, 8, [](int, int w) { return w <= 1 ? 0x1000u : 0x2000u; });
    CHECK(heuristics::sync_lane_barrier_spin(s, {}).empty());
  }
  SECTION("a GEMM with wave 0 apart, not a collective and no start_sync") {
    Snapshot s = amd({"Cijk_Alik_Bljk_BBS_BH_MT128x128x64"}, 8);
    add_waves(s, s.dispatches[0], 4, 4, [](int, int w) { return w == 0 ? 0x1000u : 0x2000u; });
    CHECK(heuristics::sync_lane_barrier_spin(s, {}).empty());
  }
  SECTION("late attach: slots unknown") {
    Snapshot s = amd({kAllgather}, 8);
    add_waves(s, s.dispatches[0], 4, 8, [](int, int w) { return w == 0 ? 0x1000u : 0x2000u; });
    for (auto& w : s.waves) {
      w.wave_in_group.reset();
      w.workgroup = {};
    }
    CHECK(heuristics::sync_lane_barrier_spin(s, {}).empty());
  }
  SECTION("a collective whose sync lanes sit apart, without line info: lower confidence") {
    Snapshot s = amd({kAllgather}, 8);
    add_waves(s, s.dispatches[0], 4, 8, [](int, int w) { return w == 0 ? 0x1000u : 0x2000u; });
    auto fs = heuristics::sync_lane_barrier_spin(s, {});
    REQUIRE(fs.size() == 1);
    CHECK(fs[0].confidence == Approx(0.6));
    CHECK(fs[0].severity == Severity::Error);
    CHECK(fs[0].details["routine"] == "");
  }
}

TEST_CASE("sync-lane: the loop caught at two of its PCs is one spin", "[heuristics][sync-lane]") {
  // As on real hardware (fixtures/cuda-gdb/h200-rocplay/syncspin.rec): one work-group's sync
  // lanes were stopped 16 bytes further into the poll loop than the others'.
  Snapshot s = amd({"void aiter::allgather_vec<__hip_bfloat16, 8>(void*, void*, aiter::Signal*, "
                    "int)"},
                   8);
  add_waves(s, s.dispatches[0], 4, 8, [](int g, int w) {
    return w != 0 ? 0x2000u : g == 3 ? 0x1010u : 0x1000u;
  });
  for (auto& w : s.waves) {
    w.inline_function = w.wave_in_group == 0u ? "aiter::start_sync<8>" : "";
  }
  auto fs = heuristics::sync_lane_barrier_spin(s, {});
  REQUIRE(fs.size() == 1);
  CHECK(fs[0].details["spin_pcs"] == nlohmann::json::array({"0x1000", "0x1010"}));
  CHECK(fs[0].details["spin"]["waves"] == 3);
  CHECK(fs[0].details["spin_threads"] == 4);
  CHECK(mentions(fs[0], "sampled at 2 PCs of the loop"));
}

TEST_CASE("sync-lane: end_sync wording", "[heuristics][sync-lane]") {
  Snapshot s = amd({"ncclDevKernel_AllGather_RING_LL"}, 2);
  add_waves(s, s.dispatches[0], 2, 4, [](int, int w) { return w == 0 ? 0x1000u : 0x2000u; });
  for (auto& w : s.waves) {
    w.inline_function = w.wave_in_group == 0u ? "end_sync<2>" : "";
  }
  auto fs = heuristics::sync_lane_barrier_spin(s, {});
  REQUIRE(fs.size() == 1);
  CHECK(fs[0].details["routine"] == "end_sync");
  CHECK_FALSE(mentions(fs[0], "Do not edit end_sync"));
  CHECK(mentions(fs[0], "never reached end_sync"));
}

// ------------------------------------------------------------------ split-K _clean

TEST_CASE("splitk-clean: fixture evidence and fix shape", "[heuristics][splitk]") {
  Snapshot s = test::load("rocgdb/splitk-clean-two-queues/snapshot.mi");
  auto fs = heuristics::splitk_clean_race(s);
  REQUIRE(fs.size() == 1);
  const Finding& f = fs[0];
  CHECK(f.confidence == Approx(0.85));
  CHECK(f.details["dispatches"].size() == 2);
  CHECK(f.details["dispatches"][0]["fence"] == "B|Aa|Ra");
  CHECK(f.details["dispatches"][1]["queue"] == 2);
  CHECK(f.details["dispatches"][0]["wave_classes"].size() == 2);
  CHECK(mentions(f, "(device, stream)"));
  CHECK(mentions(f, "only hides the race"));
  CHECK(f.locations.size() == 4);
}

TEST_CASE("splitk-clean: edges", "[heuristics][splitk]") {
  const std::string a = "aiter::bf16gemm_fp32bf16_tn_96x64_splitk_clean";
  const std::string b = "aiter::bf16gemm_fp32bf16_tn_256x64_splitk_clean";
  SECTION("one _clean kernel without waves to show it waits") {
    CHECK(heuristics::splitk_clean_race(amd({a, "Cijk_Alik_Bljk"})).empty());
  }
  SECTION("one _clean kernel whose leaders poll the counter: the race's aftermath") {
    Snapshot s = amd({a});
    add_waves(s, s.dispatches[0], 3, 4, [](int, int w) { return w == 0 ? 0x2a40u : 0x2b18u; });
    auto fs = heuristics::splitk_clean_race(s);
    REQUIRE(fs.size() == 1);
    CHECK(fs[0].confidence == Approx(0.45));
    CHECK(fs[0].details["single"] == true);
    CHECK(mentions(fs[0], "only one `_clean` kernel in flight"));
    CHECK(mentions(fs[0], "(device, stream)"));
    // Every wave in the loop: no leader pattern, no finding.
    Snapshot all = amd({a});
    add_waves(all, all.dispatches[0], 3, 4, [](int, int) { return 0x2a40u; });
    CHECK(heuristics::splitk_clean_race(all).empty());
  }
  SECTION("same queue: ordered, no race") {
    Snapshot s = amd({a, b});
    s.dispatches[1].queue = 1;
    CHECK(heuristics::splitk_clean_race(s).empty());
  }
  SECTION("a fence that is not full") {
    Snapshot s = amd({a, b});
    s.dispatches[1].fence_text = "Aa|Ra";
    s.dispatches[1].fence.barrier = false;
    CHECK(heuristics::splitk_clean_race(s).empty());
  }
  SECTION("different agents: different per-device workspaces") {
    Snapshot s = amd({a, b}, 2);
    s.dispatches[1].agent = 2;
    CHECK(heuristics::splitk_clean_race(s).empty());
  }
  SECTION("`_clean` must end the kernel's own name") {
    CHECK(heuristics::splitk_clean_race(
              amd({"void cleanup_clean_kernel<int>(int*)", "void foo_clean_up(int)"}))
              .empty());
  }
  SECTION("queues and fences unknown (cuda-gdb): fires, with lower confidence") {
    Snapshot s = amd({a, b});
    for (auto& d : s.dispatches) {
      d.queue.reset();
      d.fence_text.clear();
      d.fence = {};
    }
    auto fs = heuristics::splitk_clean_race(s);
    REQUIRE(fs.size() == 1);
    CHECK(fs[0].confidence == Approx(0.5));
  }
}

// ------------------------------------------------------------------ queue stall

TEST_CASE("queue-stall: fixture pair, and not the healthy pair", "[heuristics][queue-stall]") {
  Snapshot a = test::load("rocgdb/queue-stall-two-snapshots/snapshot-1.mi");
  Snapshot b = test::load("rocgdb/queue-stall-two-snapshots/snapshot-2.mi");
  auto fs = heuristics::queue_stall(a, b);
  REQUIRE(fs.size() == 1);
  CHECK(fs[0].details["queue"]["read"] == 57);
  CHECK(fs[0].details["queue"]["write"] == 60);
  CHECK(fs[0].details["pcs_compared"] == true);
  CHECK(fs[0].confidence == Approx(0.8));
  CHECK(mentions(fs[0], "moe_align_block_size_kernel"));
  CHECK(mentions(fs[0], "2026-11-21T16:20:06Z"));

  Snapshot h1 = test::load("rocgdb/healthy-progress/snapshot-1.mi");
  Snapshot h2 = test::load("rocgdb/healthy-progress/snapshot-2.mi");
  CHECK(heuristics::queue_stall(h1, h2).empty());
  // The same snapshot twice is a stall only if packets are pending.
  CHECK(heuristics::queue_stall(a, a).size() == 1);
}

TEST_CASE("queue-stall: PCs that moved far mean progress", "[heuristics][queue-stall]") {
  Snapshot a = amd({"k"});
  add_waves(a, a.dispatches[0], 2, 2, [](int, int) { return 0x1000u; });
  Snapshot b = a;
  CHECK(heuristics::queue_stall(a, b).size() == 1);
  for (auto& w : b.waves) {
    *w.pc += 0x40; // inside the loop window
  }
  CHECK(heuristics::queue_stall(a, b).size() == 1);
  for (auto& w : b.waves) {
    *w.pc += 0x4000; // far away: the kernel moved on
  }
  CHECK(heuristics::queue_stall(a, b).empty());
  Snapshot c = a;
  c.queues[0].read = 11; // the head advanced
  CHECK(heuristics::queue_stall(a, c).empty());
  Snapshot d = a;
  d.dispatches[0].packet_id = 11; // a different head dispatch
  d.dispatches[0].target_id = "AMDGPU Dispatch 1:1:102 (PKID 11)";
  CHECK(heuristics::queue_stall(a, d).empty());
}

// ------------------------------------------------------------------ nothing visible

TEST_CASE("nothing-visible: dispatcher with and without worker PIDs", "[heuristics][nothing]") {
  Snapshot s = test::load("rocgdb/dispatcher-nothing-active/snapshot.mi");
  auto bare = heuristics::nothing_visible(s, {});
  REQUIRE(bare.size() == 1);
  CHECK(bare[0].details["cause"] == "not-a-worker");
  CHECK(bare[0].confidence == Approx(0.55));
  CHECK(mentions(bare[0], "ps -ef --forest"));

  heuristics::Context ctx;
  ctx.worker_pids = {4301, 4302};
  auto named = heuristics::nothing_visible(s, ctx);
  REQUIRE(named.size() == 1);
  CHECK(named[0].confidence == Approx(0.85));
  CHECK(mentions(named[0], "rocplay run --pid 4301"));
  CHECK(mentions(named[0], "4301 4302"));
}

TEST_CASE("nothing-visible: debug agent, idle GPU, and when to keep quiet",
          "[heuristics][nothing]") {
  Snapshot hook = test::load("rocgdb/debug-agent-holds-hook/snapshot.mi");
  auto fs = heuristics::nothing_visible(hook, {});
  REQUIRE(fs.size() == 1);
  CHECK(fs[0].details["cause"] == "debug-agent");
  CHECK(fs[0].confidence == Approx(0.9));
  CHECK(mentions(fs[0], "HSA_TOOLS_LIB=/opt/rocm/lib/librocm-debug-agent.so.2"));

  Snapshot idle = amd({"k"});
  idle.dispatches.clear();
  auto i = heuristics::nothing_visible(idle, {});
  REQUIRE(i.size() == 1);
  CHECK(i[0].severity == Severity::Info);
  CHECK(i[0].details["cause"] == "idle");

  Snapshot runtime_only = amd({});
  auto r = heuristics::nothing_visible(runtime_only, {});
  REQUIRE(r.size() == 1);
  CHECK(r[0].details["cause"] == "not-a-worker");
  CHECK(mentions(r[0], "GPU agents but no queues or dispatches"));

  Snapshot not_asked;
  not_asked.debugger = DebuggerKind::RocGdb;
  CHECK(heuristics::nothing_visible(not_asked, {}).empty());

  Snapshot cpu = amd({});
  cpu.debugger = DebuggerKind::Gdb;
  cpu.agents.clear();
  CHECK(heuristics::nothing_visible(cpu, {}).empty());
}

TEST_CASE("context_from_meta reads worker PIDs and ngpus, ignores the rest",
          "[heuristics][nothing]") {
  auto ctx = heuristics::context_from_meta(
      R"({"pid":4290,"worker_pids":[4301,4302,"x"],"ngpus":8,"other":true})");
  CHECK(ctx.worker_pids == std::vector<std::int64_t>{4301, 4302});
  CHECK(ctx.ngpus == 8);
  CHECK(heuristics::context_from_meta("not json").worker_pids.empty());
  CHECK_FALSE(heuristics::context_from_meta(R"({"ngpus":-3})").ngpus);
}

// ------------------------------------------------------------------ host blocked

TEST_CASE("host-blocked: .item() over hipMemcpyWithStream", "[heuristics][host]") {
  Snapshot s = test::load("rocgdb/host-blocked-item/snapshot.mi");
  auto fs = heuristics::host_blocked_on_gpu(s);
  REQUIRE(fs.size() == 1);
  const Finding& f = fs[0];
  CHECK(f.details["threads"][0]["id"] == "1");
  CHECK(f.details["threads"][0]["call"] == "_local_scalar_dense");
  CHECK(f.details["threads"][0]["lwp"] == 4512);
  CHECK(f.details["dispatches"][0]["kernel"] == "_swa_write_kernel");
  CHECK(mentions(f, "hipMemcpyWithStream <- _local_scalar_dense_cuda"));
  CHECK(mentions(f, "Do not add torch.cuda.synchronize()"));
}

TEST_CASE("host-blocked: which calls count", "[heuristics][host]") {
  auto row = GENERATE(table<const char*, bool>({
      {"hipStreamSynchronize", true},
      {"hipDeviceSynchronize", true},
      {"hipMemcpyAsync", true},
      {"hipMemcpyDtoH", true},
      {"cudaStreamSynchronize", true},
      {"cudaDeviceSynchronize", true},
      {"at::native::_local_scalar_dense_cuda(at::Tensor const&)", true},
      {"hipLaunchKernel", false},
      {"__GI___clock_nanosleep", false},
      {"epoll_wait", false},
  }));
  DYNAMIC_SECTION(std::get<0>(row)) {
    Snapshot s = amd({"k"});
    HostThread t;
    t.id = "1";
    Frame inner;
    inner.function = "ioctl";
    Frame call;
    call.level = 1;
    call.function = std::get<0>(row);
    t.frames = {inner, call};
    s.host_threads.push_back(t);
    CHECK(heuristics::host_blocked_on_gpu(s).size() == (std::get<1>(row) ? 1u : 0u));
    // Nothing in flight: the host is not waiting on a GPU kernel.
    s.dispatches.clear();
    CHECK(heuristics::host_blocked_on_gpu(s).empty());
  }
}

// ------------------------------------------------------------------ missing rank

TEST_CASE("missing-rank: rank 5 never entered allgather_vec", "[heuristics][ranks]") {
  std::vector<Snapshot> ranks;
  for (int r = 0; r < 8; ++r) {
    ranks.push_back(test::load("rocgdb/tp8-missing-rank/rank" + std::to_string(r) + ".mi"));
  }
  auto fs = heuristics::missing_rank(ranks);
  REQUIRE(fs.size() == 1);
  CHECK(fs[0].rank == 5);
  CHECK(fs[0].details["missing"] == nlohmann::json::array({5}));
  CHECK(fs[0].details["kernel"] == "allgather_vec");
  CHECK(fs[0].confidence == Approx(0.85));
  CHECK(mentions(fs[0], "rank 5 (missing): in flight: Cijk_Alik_Bljk"));
  CHECK(mentions(fs[0], "py-spy dump --pid 4306"));
  // The other ranks show the spin themselves.
  std::size_t spinning = 0;
  for (const auto& s : ranks) {
    spinning += heuristics::sync_lane_barrier_spin(s, {}).size();
  }
  CHECK(spinning == 7);
}

TEST_CASE("missing-rank: a different grid marks the odd rank", "[heuristics][ranks]") {
  std::vector<Snapshot> ranks;
  for (int r = 0; r < 4; ++r) {
    Snapshot s =
        amd({"void aiter::allgather_vec<__hip_bfloat16, 4>(void*, void*, aiter::Signal*, int)"});
    s.rank = r;
    if (r == 2) {
      s.dispatches[0].grid = {2048, 1, 1};
    }
    ranks.push_back(s);
  }
  auto fs = heuristics::missing_rank(ranks);
  REQUIRE(fs.size() == 1);
  CHECK(fs[0].rank == 2);
  CHECK(fs[0].details["odd"] == nlohmann::json::array({2}));
  // All equal: nothing to say.
  ranks[2].dispatches[0].grid = {4096, 1, 1};
  CHECK(heuristics::missing_rank(ranks).empty());
  // One snapshot is not a set of ranks.
  CHECK(heuristics::missing_rank({ranks[0]}).empty());
}

TEST_CASE("run() orders findings by severity then confidence", "[heuristics]") {
  Snapshot s = test::load("rocgdb/tp8-allgather-sync-spin/snapshot.mi");
  HostThread t;
  t.id = "99";
  Frame f;
  f.function = "hipStreamSynchronize";
  t.frames.push_back(f);
  s.host_threads.push_back(t);
  auto fs = heuristics::run(s);
  REQUIRE(fs.size() == 2);
  CHECK(fs[0].id == heuristics::kSyncLaneBarrierSpin);
  CHECK(fs[1].id == heuristics::kHostBlockedOnGpu);
  CHECK(fs[0].rank == 2);
  CHECK(severity_from_string("critical") == Severity::Critical);
  CHECK_FALSE(severity_from_string("fatal"));
}

TEST_CASE("a kernel's source file is its first attributed wave's, found for all dispatches at once",
          "[heuristics]") {
  // Two agents run dispatch 5 each; waves of both come interleaved, the first of each without a
  // file of its own. A third dispatch has no waves; a fourth (agent 1, queue unknown) is shadowed
  // by the first, which the waves name first.
  Snapshot s;
  s.debugger = DebuggerKind::RocGdb;
  s.coverage = {true, true, true, true};
  auto dispatch = [&](std::string id, std::optional<std::uint32_t> agent,
                      std::optional<std::uint32_t> queue, std::uint64_t no, std::string kernel) {
    Dispatch d;
    d.id = std::move(id);
    d.agent = agent;
    d.queue = queue;
    d.dispatch_no = no;
    d.kernel_name = std::move(kernel);
    s.dispatches.push_back(d);
  };
  dispatch("1.1", 1, 1, 5, "kern_a(float*)");
  dispatch("1.2", 2, 1, 5, "kern_b(float*)");
  dispatch("1.3", std::nullopt, std::nullopt, 7, "kern_c(float*)");
  dispatch("1.4", 1, std::nullopt, 5, "kern_d(float*)");
  int tid = 10;
  auto wave = [&](std::uint32_t agent, std::uint64_t pc, const char* file) {
    Wave w;
    w.thread_id = std::to_string(tid++);
    w.agent = agent;
    w.queue = 1;
    w.dispatch = 5;
    w.pc = pc;
    w.file = file;
    s.waves.push_back(w);
  };
  wave(2, 0x2000, "");           // no file, no line information: dispatch 1.2 still open
  wave(1, 0x1000, "");           // `info line` names 1.1's file
  wave(1, 0x1000, "");           // the same PC again
  wave(2, 0x2040, "b_wave.cu");  // 1.2's file
  wave(1, 0x1040, "a_later.cu"); // 1.1 already has one
  wave(2, 0x2080, "b_later.cu");
  SourceLine line;
  line.pc = 0x1000;
  line.file = "a_line.hip";
  s.source_lines.push_back(line);
  HostThread t;
  t.id = "1";
  Frame f;
  f.function = "hipMemcpyAsync";
  t.frames.push_back(f);
  s.host_threads.push_back(t);

  auto sources = [](const std::vector<Finding>& fs) {
    REQUIRE(fs.size() == 1);
    std::vector<std::string> out;
    for (const auto& d : fs[0].details["dispatches"]) {
      // `-`: no file, the hint from the kernel's name alone.
      std::string source = d["kernel_info"].value("source", std::string());
      const bool by_name = source == classify_kernel(d["kernel"].get<std::string>()).source_hint;
      out.push_back(by_name ? "-" : source);
    }
    return out;
  };
  CHECK(sources(heuristics::host_blocked_on_gpu(s)) ==
        std::vector<std::string>{"a_line.hip", "b_wave.cu", "-", "-"});
  // A GPU fault on one of agent 2's waves: its frame names dispatch 1.2's file first.
  Fault fault;
  fault.kind = FaultKind::MemoryViolation;
  fault.signal = "SIGSEGV";
  fault.on_gpu = true;
  fault.thread_id = "13";
  Frame ff;
  ff.function = "kern_b(float*)";
  ff.file = "b_fault.hip";
  ff.line = 12;
  fault.frames.push_back(ff);
  s.fault = fault;
  CHECK(sources(heuristics::host_blocked_on_gpu(s)) ==
        std::vector<std::string>{"a_line.hip", "b_fault.hip", "-", "-"});
  // cuda-gdb's focus names the kernel by number: every dispatch numbered so takes the file.
  s.fault->kernel = 7;
  CHECK(sources(heuristics::host_blocked_on_gpu(s)) ==
        std::vector<std::string>{"a_line.hip", "b_wave.cu", "b_fault.hip", "-"});
  // The same answers through run(), where the heuristics share one analysis of the snapshot.
  s.fault.reset();
  const auto all = heuristics::run(s);
  auto blocked = std::find_if(all.begin(), all.end(), [](const Finding& f) {
    return f.id == heuristics::kHostBlockedOnGpu;
  });
  REQUIRE(blocked != all.end());
  CHECK(sources({*blocked}) == std::vector<std::string>{"a_line.hip", "b_wave.cu", "-", "-"});
}
