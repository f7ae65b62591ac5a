// The recording `rocplay watch` wrote when it captured a hang on an H100 (fixtures/cuda-gdb/
// h100-watch/, tests/hardware/watch_syncspin.sh): three samples of the syncspin worker, taken
// after its server's log went quiet with the GPU at 100%. Replayed as `rocplay postmortem` does:
// stuck in every sample, the sync-lane spin confirmed, and the recording ends with the detach.
#include "replay.hpp"

#include "rocplay/heuristics/progress.hpp"

#include <catch2/catch.hpp>

using namespace rocplay;

TEST_CASE("cuda watch capture (H100): three samples read stuck in start_sync, then detached") {
  const std::string rel = "cuda-gdb/h100-watch/syncspin-capture.rocplay";
  const auto replayed = test::replay_samples(rel);
  const auto& samples = replayed.samples;
  REQUIRE(samples.size() == 3);
  CHECK(samples[2].at - samples[0].at > 4.0); // --interval 2s between the stops
  for (const auto& s : samples) {
    CHECK(s.snapshot.debugger == DebuggerKind::CudaGdb);
    CHECK(s.snapshot.pid == 1877);
  }
  const auto r = heuristics::run_samples(samples, replayed.context);
  CHECK(r.progress.verdict == Motion::Stuck);
  REQUIRE_FALSE(r.findings.empty());
  const Finding& top = r.findings.front();
  CHECK(top.id == heuristics::kSyncLaneBarrierSpin);
  CHECK(top.title.find("allgather_vec spins in start_sync") != std::string::npos);
  CHECK(top.details.at("progress").at("confirmed") == true);
  CHECK(test::read_file(test::fixture_path(rel)).find("detached from pid 1877") !=
        std::string::npos);
}
