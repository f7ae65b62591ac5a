// The heuristics over real cuda-gdb recordings: what rocplay reports offline for each H200 hang.
#include "rocplay/heuristics/heuristics.hpp"
#include "rocplay/mi/transcript.hpp"
#include "rocplay/snapshot/snapshot.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

using namespace rocplay;
using namespace rocplay::heuristics;

namespace {

Snapshot load_recording(const std::string& rel) {
  std::ifstream in(std::string(ROCPLAY_SOURCE_DIR) + "/fixtures/cuda-gdb/" + rel, std::ios::binary);
  REQUIRE(in.good());
  std::stringstream ss;
  ss << in.rdbuf();
  return snapshot::build_from_transcript(ss.str());
}

const Finding* find(const std::vector<Finding>& fs, std::string_view id) {
  auto it = std::find_if(fs.begin(), fs.end(), [&](const Finding& f) { return f.id == id; });
  return it == fs.end() ? nullptr : &*it;
}

std::string evidence_text(const Finding& f) {
  std::string all = f.title + "\n" + f.summary + "\n";
  for (const auto& e : f.evidence) {
    all += e + "\n";
  }
  return all;
}

bool mentions(const Finding& f, std::string_view needle) {
  return evidence_text(f).find(needle) != std::string::npos;
}

// splitk_two_streams.cu: every thread of both `_clean` kernels is in the snapshot's ranges,
// each range attributed to its kernel.
void check_both_splitk_kernels_listed(const Snapshot& s) {
  REQUIRE(s.dispatches.size() == 2);
  std::uint64_t per_kernel[2] = {0, 0};
  for (const auto& w : s.waves) {
    REQUIRE(w.dispatch.has_value());
    REQUIRE(*w.dispatch < 2);
    per_kernel[*w.dispatch] += w.count;
    CHECK_FALSE(w.unattributed);
  }
  CHECK(per_kernel[0] == 4 * 128); // gemm_a8w8_splitk_clean<<<4,128>>>
  CHECK(per_kernel[1] == 3 * 128); // gemm_bf16_splitk_clean<<<3,128>>>
}

} // namespace

TEST_CASE("sync-lane barrier spin from the README recording (raw MI log)", "[cuda][findings]") {
  auto s = load_recording("syncspin-h200.mi");
  auto fs = heuristics::run(s);
  const Finding* f = find(fs, kSyncLaneBarrierSpin);
  REQUIRE(f != nullptr);
  CHECK(f->severity == Severity::Critical);
  CHECK(f->confidence >= 0.8);
  CHECK(mentions(*f, "allgather_vec"));
  CHECK(mentions(*f, "start_sync"));
  CHECK(mentions(*f, "work-items 0-7")); // threads 0-7 of every block
  CHECK(mentions(*f, "0x7fa6e37a00c0"));
  REQUIRE_FALSE(f->locations.empty());
  CHECK(f->locations.front().file == "/home/dev/repro/hang.cu");
  CHECK(f->locations.front().line == 8u);
  CHECK_FALSE(f->next_step.empty());
}

TEST_CASE("hardware scenario 1: sync-lane spin with the host in cudaDeviceSynchronize",
          "[cuda][findings]") {
  auto fs = heuristics::run(load_recording("h200/syncspin.rec"));
  const Finding* spin = find(fs, kSyncLaneBarrierSpin);
  REQUIRE(spin != nullptr);
  CHECK(mentions(*spin, "start_sync"));
  CHECK(mentions(*spin, "ngpus = 8"));
  const Finding* host = find(fs, kHostBlockedOnGpu);
  REQUIRE(host != nullptr);
  CHECK(mentions(*host, "cudaDeviceSynchronize"));
  CHECK(mentions(*host, "allgather_vec"));
}

TEST_CASE("hardware scenario 5: engine thread blocked in cudaStreamSynchronize",
          "[cuda][findings]") {
  auto fs = heuristics::run(load_recording("h200/hostsync.rec"));
  const Finding* host = find(fs, kHostBlockedOnGpu);
  REQUIRE(host != nullptr);
  CHECK(mentions(*host, "\"engine\""));
  CHECK(mentions(*host, "cudaStreamSynchronize"));
  CHECK(mentions(*host, "decode_step_wait_kv"));
  CHECK(find(fs, kSyncLaneBarrierSpin) == nullptr);
}

TEST_CASE("hardware scenario 4: a healthy, progressing kernel gives no finding",
          "[cuda][findings]") {
  auto a = load_recording("h200/healthy-a.rec");
  auto b = load_recording("h200/healthy-b.rec");
  CHECK(heuristics::run(a).empty());
  CHECK(heuristics::run(b).empty());
  CHECK(heuristics::run_pair(a, b).empty());
}

TEST_CASE("no kernel in flight: nothing visible", "[cuda][findings]") {
  auto fs = heuristics::run(load_recording("h200/idle.rec"));
  REQUIRE(fs.size() == 1);
  CHECK(fs[0].id == kNothingVisible);
  CHECK(mentions(fs[0], "1263"));
}

TEST_CASE("PyTorch .item() behind a spinning kernel, with and without host symbols",
          "[cuda][findings]") {
  auto normal = heuristics::run(load_recording("h200/torch-item.rec"));
  const Finding* n = find(normal, kHostBlockedOnGpu);
  REQUIRE(n != nullptr);
  CHECK(mentions(*n, "_local_scalar_dense"));
  CHECK(mentions(*n, "spin_kernel"));
  // Fast mode loses the ATen frames but still names the CUDA call and the kernel.
  auto fast = heuristics::run(load_recording("h200/torch-item-fast.rec"));
  const Finding* f = find(fast, kHostBlockedOnGpu);
  REQUIRE(f != nullptr);
  CHECK(mentions(*f, "cudaStreamSynchronize"));
  CHECK_FALSE(mentions(*f, "_local_scalar_dense"));
}

TEST_CASE("across ranks: the rank with no collective in flight is the missing one",
          "[cuda][findings]") {
  // Rank 0 spins in allgather_vec's start_sync; rank 1 (an idle CUDA process) has nothing in
  // flight: run_ranks names rank 1.
  std::vector<Snapshot> ranks{load_recording("h200/syncspin.rec"), load_recording("h200/idle.rec")};
  ranks[0].rank = 0;
  ranks[1].rank = 1;
  auto fs = heuristics::run_ranks(ranks);
  const Finding* f = find(fs, kMissingRank);
  REQUIRE(f != nullptr);
  CHECK(f->rank == 1);
  CHECK(mentions(*f, "allgather_vec"));
}

// ---- `rocplay run hang-triage --debugger cuda-gdb` recordings (tests/hardware/run.sh) --------

TEST_CASE("rocplay on H200: two _clean split-K kernels deadlocked on one counter",
          "[cuda][findings][hardware]") {
  auto s = load_recording("h200-rocplay/splitk.rec");
  REQUIRE(s.dispatches.size() == 2);
  auto fs = heuristics::run(s);
  const Finding* f = find(fs, kSplitKCleanRace);
  REQUIRE(f != nullptr);
  CHECK(mentions(*f, "gemm_a8w8_splitk_clean"));
  CHECK(mentions(*f, "gemm_bf16_splitk_clean"));
  // `info cuda threads` lists the focus kernel's threads only: kernel 1's ranges are absent,
  // and the snapshot says so.
  for (const auto& w : s.waves) {
    CHECK(w.dispatch == 0u);
  }
  CHECK(std::any_of(s.warnings.begin(), s.warnings.end(), [](const std::string& w) {
    return w.find("no thread ranges for kernel(s) 1") != std::string::npos;
  }));
}

TEST_CASE("H200: `info cuda threads kernel N` adds the other kernel's ranges",
          "[cuda][snapshot][hardware]") {
  // Raw cuda-gdb probe: `info cuda threads` (focus kernel 0), then `info cuda threads kernel 1`
  // and `-cuda-info-threads kernel 1`; `all` filters are refused by cuda-gdb 13.0. One line of
  // this recording is cuda-gdb's own garbage before an untokened `^running`.
  mi::TranscriptInfo info;
  std::ifstream in(std::string(ROCPLAY_SOURCE_DIR) +
                       "/fixtures/cuda-gdb/h200x2-rocplay/splitk-probe.rec",
                   std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  auto s = snapshot::build_from_transcript(ss.str(), {}, &info);
  CHECK(info.parse_errors == 1);
  check_both_splitk_kernels_listed(s);
  CHECK(find(heuristics::run(s), kSplitKCleanRace) != nullptr);
}

TEST_CASE("rocplay on H100: hang-triage asks every kernel for its thread ranges",
          "[cuda][findings][hardware]") {
  // The built-in playbook after `info cuda threads` (focus kernel only) sends
  // `-cuda-info-threads kernel N` per kernel of `-cuda-info-kernels`.
  auto s = load_recording("h100-rocplay/splitk-per-kernel.rec");
  check_both_splitk_kernels_listed(s);
  CHECK(s.warnings.empty());
  const auto fs = heuristics::run(s);
  const Finding* f = find(fs, kSplitKCleanRace);
  REQUIRE(f != nullptr);
  CHECK(mentions(*f, "gemm_a8w8_splitk_clean"));
  CHECK(mentions(*f, "gemm_bf16_splitk_clean"));
}

TEST_CASE("rocplay on 2x H200: NCCL all_reduce with one rank skipping it",
          "[cuda][findings][hardware]") {
  auto r0 = load_recording("h200x2-rocplay/nccl-rank0.rec");
  auto r1 = load_recording("h200x2-rocplay/nccl-rank1.rec");
  REQUIRE(r0.agents.size() == 2);
  REQUIRE(r0.dispatches.size() == 1);
  CHECK(r0.dispatches[0].kernel_name == "ncclDevKernel_AllReduce_Sum_f32_RING_LL");
  CHECK(r0.dispatches[0].grid == std::vector<std::uint64_t>{24, 1, 1});
  CHECK(r0.dispatches[0].workgroup == std::vector<std::uint64_t>{544, 1, 1});
  std::uint64_t threads = 0;
  for (const auto& w : r0.waves) {
    threads += w.count;
    CHECK_FALSE(w.line.has_value()); // NCCL is built without line information
  }
  CHECK(threads == 24 * 544);
  CHECK(r1.dispatches.empty());
  CHECK(r1.coverage.dispatches);

  r0.rank = 0;
  r1.rank = 1;
  auto fs = heuristics::run_ranks({r0, r1});
  const Finding* f = find(fs, kMissingRank);
  REQUIRE(f != nullptr);
  CHECK(f->rank == 1);
  // TP=2: one rank in the collective is a quorum of one (docs/heuristics.md, missing-rank).
  CHECK(f->severity == Severity::Error);
  CHECK(mentions(*f, "ncclDevKernel_AllReduce_Sum_f32_RING_LL"));
}

TEST_CASE("rocplay on H200: host blocked, healthy, idle, PyTorch", "[cuda][findings][hardware]") {
  auto host = heuristics::run(load_recording("h200-rocplay/hostsync.rec"));
  const Finding* h = find(host, kHostBlockedOnGpu);
  REQUIRE(h != nullptr);
  CHECK(mentions(*h, "\"engine\""));

  auto a = load_recording("h200-rocplay/healthy.rec");
  auto b = load_recording("h200-rocplay/healthy-b.rec");
  CHECK(heuristics::run(a).empty());
  CHECK(heuristics::run(b).empty());
  CHECK(heuristics::run_pair(a, b).empty());

  auto idle = heuristics::run(load_recording("h200-rocplay/idle.rec"));
  REQUIRE(idle.size() == 1);
  CHECK(idle[0].id == kNothingVisible);

  auto torch = heuristics::run(load_recording("h200-rocplay/torch-item.rec"));
  const Finding* t = find(torch, kHostBlockedOnGpu);
  REQUIRE(t != nullptr);
  CHECK(mentions(*t, "_local_scalar_dense"));

  // --fast: cuda-gdb 13.0 could not unwind the blocked main thread without host symbols
  // ("Unable to access DWARF register number 83886081"); the snapshot says so.
  auto fast = load_recording("h200-rocplay/torch-item-fast.rec");
  CHECK(std::any_of(fast.warnings.begin(), fast.warnings.end(), [](const std::string& w) {
    return w.find("Unable to access DWARF register") != std::string::npos;
  }));
  REQUIRE(fast.dispatches.size() == 1);
  CHECK(fast.dispatches[0].kernel_name == "at::cuda::(anonymous namespace)::spin_kernel");
}

// Real spin loops span several instructions: one live stop caught the sync lanes of block 3 at a
// second PC of the poll line.
TEST_CASE("sync lanes caught at two PCs of one spin loop", "[cuda][findings][hardware]") {
  // Block 3's threads 0-7 were stopped at 0x...a00d0, blocks 0-2's at 0x...a00c0: both line 9,
  // the `while (flags[threadIdx.x] < 1 + rank)` poll inside start_sync.
  auto s = load_recording("h200-rocplay/syncspin.rec");
  std::set<std::uint64_t> spin_pcs;
  for (const auto& w : s.waves) {
    if (w.first_work_item == 0u && w.line == 9u) {
      spin_pcs.insert(*w.pc);
    }
  }
  REQUIRE(spin_pcs.size() == 2);
  auto fs = heuristics::run(s);
  const Finding* f = find(fs, kSyncLaneBarrierSpin);
  REQUIRE(f != nullptr);
  CHECK(f->severity == Severity::Critical);
  CHECK(mentions(*f, "0x7f88c77a00c0"));
  CHECK(mentions(*f, "0x7f88c77a00d0"));
  CHECK(mentions(*f, "start_sync"));
}

TEST_CASE("one stuck _clean kernel spinning on its workspace counter", "[cuda][findings]") {
  // splitk-clean-h200.mi: only gemm_bf16_splitk_clean is in flight (its sibling had passed);
  // thread 0 of each block spins at splitk.cu:10 in splitk_reduce.
  auto fs = heuristics::run(load_recording("splitk-clean-h200.mi"));
  const Finding* f = find(fs, kSplitKCleanRace);
  REQUIRE(f != nullptr);
  CHECK(mentions(*f, "gemm_bf16_splitk_clean"));
  CHECK(mentions(*f, "workspace counter"));
  CHECK(mentions(*f, "splitk_reduce"));
  REQUIRE_FALSE(f->locations.empty());
  CHECK(f->locations.front().line == 10u);
}
