// The heuristics over real cuda-gdb recordings: what rocplay reports offline for each H200 hang.
#include "rocplay/heuristics.hpp"
#include "rocplay/snapshot.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>

using namespace rocplay;
using namespace rocplay::heuristics;

namespace {

Snapshot load(const std::string& rel) {
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

} // namespace

TEST_CASE("sync-lane barrier spin from the README recording (raw MI log)", "[cuda][findings]") {
  auto s = load("syncspin-h200.mi");
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
  auto fs = heuristics::run(load("h200/syncspin.rec"));
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
  auto fs = heuristics::run(load("h200/hostsync.rec"));
  const Finding* host = find(fs, kHostBlockedOnGpu);
  REQUIRE(host != nullptr);
  CHECK(mentions(*host, "\"engine\""));
  CHECK(mentions(*host, "cudaStreamSynchronize"));
  CHECK(mentions(*host, "decode_step_wait_kv"));
  CHECK(find(fs, kSyncLaneBarrierSpin) == nullptr);
}

TEST_CASE("hardware scenario 4: a healthy, progressing kernel gives no finding",
          "[cuda][findings]") {
  auto a = load("h200/healthy-a.rec");
  auto b = load("h200/healthy-b.rec");
  CHECK(heuristics::run(a).empty());
  CHECK(heuristics::run(b).empty());
  CHECK(heuristics::run_pair(a, b).empty());
}

TEST_CASE("no kernel in flight: nothing visible", "[cuda][findings]") {
  auto fs = heuristics::run(load("h200/idle.rec"));
  REQUIRE(fs.size() == 1);
  CHECK(fs[0].id == kNothingVisible);
  CHECK(mentions(fs[0], "1263"));
}

TEST_CASE("PyTorch .item() behind a spinning kernel, with and without host symbols",
          "[cuda][findings]") {
  auto normal = heuristics::run(load("h200/torch-item.rec"));
  const Finding* n = find(normal, kHostBlockedOnGpu);
  REQUIRE(n != nullptr);
  CHECK(mentions(*n, "_local_scalar_dense"));
  CHECK(mentions(*n, "spin_kernel"));
  // Fast mode loses the ATen frames but still names the CUDA call and the kernel.
  auto fast = heuristics::run(load("h200/torch-item-fast.rec"));
  const Finding* f = find(fast, kHostBlockedOnGpu);
  REQUIRE(f != nullptr);
  CHECK(mentions(*f, "cudaStreamSynchronize"));
  CHECK_FALSE(mentions(*f, "_local_scalar_dense"));
}

TEST_CASE("across ranks: the rank with no collective in flight is the missing one",
          "[cuda][findings]") {
  // Rank 0 spins in allgather_vec's start_sync; rank 1 (an idle CUDA process) has nothing in
  // flight: run_ranks names rank 1.
  std::vector<Snapshot> ranks{load("h200/syncspin.rec"), load("h200/idle.rec")};
  ranks[0].rank = 0;
  ranks[1].rank = 1;
  auto fs = heuristics::run_ranks(ranks);
  const Finding* f = find(fs, kMissingRank);
  REQUIRE(f != nullptr);
  CHECK(f->rank == 1);
  CHECK(mentions(*f, "allgather_vec"));
}
