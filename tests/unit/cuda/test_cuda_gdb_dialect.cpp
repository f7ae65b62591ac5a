// The cuda-gdb dialect over real cuda-gdb 13.0 recordings (H200): the two README recordings
// (raw MI stdout) and the hardware-scenario recordings of tests/hardware (rocplay recordings).
#include "rocplay/mi/transcript.hpp"
#include "rocplay/snapshot/snapshot.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>

using namespace rocplay;

namespace {

std::string read_fixture(const std::string& rel) {
  std::ifstream in(std::string(ROCPLAY_SOURCE_DIR) + "/fixtures/cuda-gdb/" + rel, std::ios::binary);
  REQUIRE(in.good());
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The way the brief names it: snapshot::build over mi::read_transcript.
Snapshot build_raw(const std::string& text, snapshot::BuildOptions options = {}) {
  mi::TranscriptInfo info;
  auto exchanges = mi::read_transcript(text, &info);
  REQUIRE(info.parse_errors == 0);
  options.meta_json = info.meta_json;
  return snapshot::build(exchanges, std::move(options));
}

Snapshot load(const std::string& rel) {
  return build_raw(read_fixture(rel));
}

std::vector<const Wave*> waves_at_line(const Snapshot& s, std::uint32_t line) {
  std::vector<const Wave*> out;
  for (const auto& w : s.waves) {
    if (w.line == line) {
      out.push_back(&w);
    }
  }
  return out;
}

std::uint64_t total_threads(const Snapshot& s) {
  std::uint64_t n = 0;
  for (const auto& w : s.waves) {
    n += w.count;
  }
  return n;
}

const HostThread* host_thread(const Snapshot& s, std::string_view name) {
  for (const auto& t : s.host_threads) {
    if (t.name == name) {
      return &t;
    }
  }
  return nullptr;
}

bool has_frame(const HostThread& t, std::string_view needle) {
  return std::any_of(t.frames.begin(), t.frames.end(),
                     [&](const Frame& f) { return f.function.find(needle) != std::string::npos; });
}

// No host thread carries a GPU frame (cuda-gdb reports those through the host's selection).
void require_no_gpu_frames_on_host(const Snapshot& s, std::string_view kernel) {
  for (const auto& t : s.host_threads) {
    INFO("host thread " << t.id);
    REQUIRE(t.id != "cuda-focus");
    REQUIRE_FALSE(has_frame(t, kernel));
  }
}

// The recording with every exchange that holds one of `needles` dropped: the same real input
// with only the console tables, or only the MI tables, left.
std::string without_lines(const std::string& text, std::vector<std::string> needles) {
  std::istringstream in(text);
  std::string out;
  std::string line;
  while (std::getline(in, line)) {
    bool drop = std::any_of(needles.begin(), needles.end(), [&](const std::string& n) {
      return line.find(n) != std::string::npos;
    });
    if (!drop) {
      out += line + "\n";
    }
  }
  return out;
}

} // namespace

TEST_CASE("cuda-gdb syncspin recording: devices, kernel and coalesced thread ranges",
          "[cuda][snapshot]") {
  auto s = load("syncspin-h200.mi");
  CHECK(s.debugger == DebuggerKind::CudaGdb);

  REQUIRE(s.agents.size() == 1);
  const Agent& a = s.agents[0];
  CHECK(a.id == "0");
  CHECK(a.number == 0u);
  CHECK(a.name == "NVIDIA H200");
  CHECK(a.architecture == "sm_90");
  CHECK(a.cores == 132u);
  CHECK(a.threads == 132u * 64u);
  CHECK(a.location == "00:06.0");
  CHECK(a.current);

  REQUIRE(s.dispatches.size() == 1);
  const Dispatch& d = s.dispatches[0];
  CHECK(d.kernel_name == "allgather_vec");
  CHECK(d.grid == std::vector<std::uint64_t>{4, 1, 1});
  CHECK(d.workgroup == std::vector<std::uint64_t>{256, 1, 1});
  CHECK(d.agent == 0u);
  CHECK(d.dispatch_no == 0u);
  CHECK(d.packet_id == 1u); // cuda-gdb's grid id
  CHECK(d.status == "Active");
  CHECK_FALSE(d.queue.has_value());
  CHECK(d.kernel_address == 0x7fa6e37a0000u); // from `<_Z13allgather_vecPViiPf+192>`
  CHECK(s.queues.empty());
  CHECK(s.coverage.agents);
  CHECK(s.coverage.dispatches);
  CHECK(s.coverage.threads);
  CHECK_FALSE(s.coverage.queues);
  CHECK(std::any_of(s.notes.begin(), s.notes.end(), [](const std::string& n) {
    return n.find("no queue or stream") != std::string::npos;
  }));

  // 12 ranges covering all 4 x 256 threads.
  REQUIRE(s.waves.size() == 12);
  CHECK(total_threads(s) == 4 * 256);
  auto spin = waves_at_line(s, 8);
  REQUIRE(spin.size() == 4); // threads 0-7 of every block
  for (std::size_t b = 0; b < spin.size(); ++b) {
    const Wave& w = *spin[b];
    CHECK(w.count == 8);
    CHECK(w.first_work_item == 0u);
    CHECK(w.last_work_item == 7u);
    CHECK(w.workgroup[0] == static_cast<std::int64_t>(b));
    CHECK(w.workgroup_last[0] == static_cast<std::int64_t>(b));
    CHECK(w.pc == 0x7fa6e37a00c0u);
    CHECK(w.file == "/home/dev/repro/hang.cu");
    CHECK(w.inline_function == "start_sync");
    CHECK(w.function == "allgather_vec");
    CHECK(w.dispatch == 0u);
    CHECK(w.agent == 0u);
    CHECK(w.lane_count == 32u);
    CHECK_FALSE(w.unattributed);
  }
  // Only the focus range carries the focus lane (CudaFocus lane 0 of block 0 thread 0).
  CHECK(spin[0]->lane == 0u);
  CHECK_FALSE(spin[1]->lane.has_value());

  auto at10 = waves_at_line(s, 10);
  REQUIRE(at10.size() == 4);
  CHECK(at10[0]->count == 24);
  CHECK(at10[0]->first_work_item == 8u);
  CHECK(at10[0]->last_work_item == 31u);
  auto at14 = waves_at_line(s, 14);
  REQUIRE(at14.size() == 4);
  CHECK(at14[3]->count == 224);
  CHECK(at14[3]->first_work_item == 32u);
  CHECK(at14[3]->last_work_item == 255u);
  CHECK(at14[3]->workgroup[0] == 3);

  const SourceLine* sl = s.source_line(0x7fa6e37a00c0u);
  REQUIRE(sl != nullptr);
  CHECK(sl->line == 8u);
  CHECK(sl->inlined_from == "start_sync at line 13 of hang.cu");
  CHECK(sl->function == "allgather_vec(int volatile*, int, float*)"); // demangled on entry
  CHECK(sl->linkage_name == "_Z13allgather_vecPViiPf");

  REQUIRE(s.host_threads.size() == 4);
  require_no_gpu_frames_on_host(s, "allgather_vec");
  CHECK(s.warnings.empty());
}

TEST_CASE("cuda-gdb splitk recording: a stuck _clean kernel spinning on its counter",
          "[cuda][snapshot]") {
  auto s = load("splitk-clean-h200.mi");
  CHECK(s.debugger == DebuggerKind::CudaGdb);
  REQUIRE(s.agents.size() == 2);
  CHECK(s.agents[0].current);
  CHECK_FALSE(s.agents[1].current);
  CHECK(s.agents[1].location == "00:07.0");

  REQUIRE(s.dispatches.size() == 1);
  const Dispatch& d = s.dispatches[0];
  CHECK(d.kernel_name == "gemm_bf16_splitk_clean");
  CHECK(d.grid == std::vector<std::uint64_t>{3, 1, 1});
  CHECK(d.workgroup == std::vector<std::uint64_t>{128, 1, 1});
  CHECK(d.packet_id == 2u);

  REQUIRE(s.waves.size() == 9);
  CHECK(total_threads(s) == 3 * 128);
  auto spin = waves_at_line(s, 10);
  REQUIRE(spin.size() == 3); // thread 0 of each block polls the workspace counter
  for (const Wave* w : spin) {
    CHECK(w->count == 1);
    CHECK(w->first_work_item == 0u);
    CHECK(w->last_work_item == 0u);
    CHECK(w->inline_function == "splitk_reduce");
    CHECK(w->file == "/home/dev/repro/splitk.cu");
  }
  // The focus warp's lanes: lane 0 active in the poll, 1-31 divergent at the barrier.
  REQUIRE(s.lanes.size() == 32);
  CHECK(s.lanes[0].state == "active");
  CHECK(s.lanes[0].pc == 0x7f4def7a0180u);
  CHECK(s.lanes[5].state == "divergent");
  CHECK(s.lanes[5].pc == 0x7f4def7a01a0u);
  CHECK(s.lanes[5].work_item[0] == 5);

  // `cuda kernel 1` failed; the snapshot says so instead of failing.
  CHECK(std::any_of(s.warnings.begin(), s.warnings.end(), [](const std::string& w) {
    return w.find("Invalid coordinates requested") != std::string::npos;
  }));
  require_no_gpu_frames_on_host(s, "gemm_bf16_splitk_clean");
}

TEST_CASE("cuda-gdb console tables and MI tables give the same model", "[cuda][snapshot]") {
  auto same_waves = [](const Snapshot& x, const Snapshot& y) {
    REQUIRE(x.waves.size() == y.waves.size());
    for (std::size_t i = 0; i < x.waves.size(); ++i) {
      CHECK(x.waves[i] == y.waves[i]);
    }
  };
  for (const char* rel : {"syncspin-h200.mi", "splitk-clean-h200.mi", "h200/hostsync.rec"}) {
    INFO(rel);
    auto text = read_fixture(rel);
    auto both = build_raw(text);
    REQUIRE_FALSE(both.agents.empty());
    REQUIRE_FALSE(both.waves.empty());
    // Console only: every MI table answer dropped.
    auto console = build_raw(without_lines(text, {"InfoCuda"}));
    if (text.find("~\"  Dev PCI") != std::string::npos) {
      CHECK(console.agents == both.agents); // only where `info cuda devices` was asked
    }
    CHECK(console.dispatches == both.dispatches);
    same_waves(console, both);
    // MI only: the console tables dropped (header and row records).
    auto mi_only =
        build_raw(without_lines(text, {"~\"  Dev PCI", "~\"*   ", "~\"    ", "~\"  Kernel Parent",
                                       "~\"  BlockIdx", "~\"Kernel ", "~\"*  (", "~\"   ("}));
    CHECK(mi_only.agents == both.agents);
    CHECK(mi_only.dispatches == both.dispatches);
    if (text.find("CoalescedInfoCudaThreadsTable") != std::string::npos) {
      same_waves(mi_only, both); // the README recordings did not ask -cuda-info-threads
    }
  }
}

TEST_CASE("cuda-gdb hardware recordings: idle process, host blocked, PyTorch", "[cuda][snapshot]") {
  SECTION("no kernel in flight: `No CUDA kernels.` and empty tables") {
    auto s = load("h200/idle.rec");
    CHECK(s.debugger == DebuggerKind::CudaGdb);
    CHECK(s.debugger_version == "NVIDIA (R) cuda-gdb 13.0");
    CHECK(s.pid == 1263);
    CHECK(s.agents.size() == 1);
    CHECK(s.dispatches.empty());
    CHECK(s.waves.empty());
    CHECK(s.lanes.empty());
    CHECK(s.coverage.dispatches);
    CHECK(s.coverage.threads);
    const HostThread* main = host_thread(s, "idle");
    REQUIRE(main != nullptr);
    CHECK(has_frame(*main, "main"));
  }
  SECTION("host thread in cudaStreamSynchronize behind decode_step_wait_kv") {
    auto s = load("h200/hostsync.rec");
    REQUIRE(s.dispatches.size() == 1);
    CHECK(s.dispatches[0].kernel_name == "decode_step_wait_kv");
    CHECK(s.dispatches[0].grid == std::vector<std::uint64_t>{2, 1, 1});
    CHECK(total_threads(s) == 2 * 128);
    const HostThread* engine = host_thread(s, "engine");
    REQUIRE(engine != nullptr);
    CHECK(has_frame(*engine, "cudaStreamSynchronize"));
    require_no_gpu_frames_on_host(s, "decode_step_wait_kv");
    // @info-lines asked `info line` for every range's PC.
    for (const auto& w : s.waves) {
      REQUIRE(w.pc.has_value());
      CHECK(s.source_line(*w.pc) != nullptr);
    }
  }
  SECTION("healthy persistent kernel, two snapshots a second apart") {
    auto a = load("h200/healthy-a.rec");
    auto b = load("h200/healthy-b.rec");
    REQUIRE(a.dispatches.size() == 1);
    REQUIRE(b.dispatches.size() == 1);
    CHECK(a.dispatches[0].kernel_name == "stream_triad_persistent");
    CHECK(total_threads(a) == 8 * 256);
    CHECK(total_threads(b) == 8 * 256);
    const HostThread* main = host_thread(a, "healthy");
    REQUIRE(main != nullptr);
    CHECK_FALSE(has_frame(*main, "Synchronize")); // polls with a sleep
  }
  SECTION("PyTorch .item() behind torch.cuda._sleep, normal and fast attach") {
    auto normal = load("h200/torch-item.rec");
    auto fast = load("h200/torch-item-fast.rec");
    for (const Snapshot* s : {&normal, &fast}) {
      REQUIRE(s->dispatches.size() == 1);
      CHECK(s->dispatches[0].kernel_name == "at::cuda::(anonymous namespace)::spin_kernel");
      REQUIRE(s->waves.size() == 1);
      // No line information for this PC: no file, no line (cuda-gdb prints `0`).
      CHECK(s->waves[0].file.empty());
      CHECK_FALSE(s->waves[0].line.has_value());
      CHECK(s->waves[0].function == "at::cuda::(anonymous namespace)::spin_kernel");
    }
    // With host symbols the main thread shows the op that blocks; without, only the CUDA API.
    const HostThread* main_n = host_thread(normal, "python3");
    const HostThread* main_f = host_thread(fast, "python3");
    REQUIRE(main_n != nullptr);
    REQUIRE(main_f != nullptr);
    CHECK(has_frame(*main_n, "_local_scalar_dense"));
    CHECK(has_frame(*main_n, "cudaStreamSynchronize"));
    CHECK_FALSE(has_frame(*main_f, "_local_scalar_dense"));
    CHECK(has_frame(*main_f, "cudaStreamSynchronize"));
  }
}

TEST_CASE("cuda-gdb dialect takes damaged recordings in its stride", "[cuda][snapshot]") {
  auto text = read_fixture("syncspin-h200.mi");
  SECTION("every truncation point builds") {
    for (std::size_t cut = 0; cut < text.size(); cut += 97) {
      auto s = snapshot::build_from_transcript(std::string_view(text).substr(0, cut));
      CHECK(s.waves.size() <= 12);
    }
  }
  SECTION("unreadable coordinates are skipped with a warning") {
    std::string bad = text;
    // Garble one row's first block index, keeping the rest.
    auto p = bad.find("~\"   (1,0,0)   (8,0,0)");
    REQUIRE(p != std::string::npos);
    bad.replace(bad.find("(1,0,0)", p), 7, "(1,x,0)");
    auto s = snapshot::build_from_transcript(bad);
    CHECK(s.waves.size() == 11);
    CHECK(std::any_of(s.warnings.begin(), s.warnings.end(), [](const std::string& w) {
      return w.find("unreadable coordinates") != std::string::npos;
    }));
  }
}
