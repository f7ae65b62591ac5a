// Two-sample cuda-gdb recordings from an H100 (fixtures/cuda-gdb/h100-samples/): the spins read
// stuck with the confirmation in their finding, the healthy persistent kernel reads moving with
// no finding; through the same path `rocplay postmortem` takes.
#include "replay.hpp"

#include "rocplay/progress.hpp"

#include <catch2/catch.hpp>

using namespace rocplay;

namespace {

heuristics::SampledFindings replay(const std::string& rel) {
  const auto r = test::replay_samples(rel);
  const auto& samples = r.samples;
  REQUIRE(samples.size() == 2);
  CHECK(samples[1].at > 2.0);
  CHECK(samples[0].stop_seconds > 0);
  CHECK(samples[1].stop_seconds > 0);
  CHECK(samples[1].stop_seconds <= samples[0].stop_seconds); // no attach in the later stop
  return heuristics::run_samples(samples, r.context);
}

const Finding* find_in(const std::vector<Finding>& fs, std::string_view id) {
  for (const auto& f : fs) {
    if (f.id == id) {
      return &f;
    }
  }
  return nullptr;
}

} // namespace

TEST_CASE("cuda samples: syncspin reads stuck, the sync-lane spin confirmed") {
  const auto r = replay("cuda-gdb/h100-samples/syncspin.rec");
  CHECK(r.progress.verdict == Motion::Stuck);
  const auto* f = find_in(r.findings, heuristics::kSyncLaneBarrierSpin);
  REQUIRE(f != nullptr);
  CHECK(f->details.at("progress").at("confirmed") == true);
  CHECK(f->severity == Severity::Critical);
}

TEST_CASE("cuda samples: splitk reads stuck, the split-K race confirmed") {
  const auto r = replay("cuda-gdb/h100-samples/splitk.rec");
  CHECK(r.progress.verdict == Motion::Stuck);
  const auto* f = find_in(r.findings, heuristics::kSplitKCleanRace);
  REQUIRE(f != nullptr);
  CHECK(f->details.at("progress").at("confirmed") == true);
}

TEST_CASE("cuda samples: the healthy persistent kernel reads moving, no finding") {
  const auto r = replay("cuda-gdb/h100-samples/healthy.rec");
  CHECK(r.progress.verdict == Motion::Moving);
  for (const auto& f : r.findings) {
    INFO(f.id << ": " << f.title);
    CHECK(f.severity < Severity::Warning);
  }
  bool moved = false;
  for (const auto& e : r.progress.entries) {
    moved = moved || (e.kind == "dispatch" && e.motion == Motion::Moving &&
                      e.why.find("left its loop region") != std::string::npos);
  }
  CHECK(moved);
}
