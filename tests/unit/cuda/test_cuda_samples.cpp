// Two-sample cuda-gdb recordings from an H100 (fixtures/cuda-gdb/h100-samples/): the spins read
// stuck with the confirmation in their finding, the healthy persistent kernel reads moving with
// no finding; through the same path `rocplay postmortem` takes.
#include "replay.hpp"

#include "rocplay/heuristics/progress.hpp"
#include "rocplay/snapshot/code_loops.hpp"

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
    // Most of its threads wait at the loop's load in both samples, as in a poll; 96 of 1,792
    // changed PC over 112 bytes of loop body (docs/heuristics.md, "Progress across samples").
    moved =
        moved || (e.kind == "dispatch" && e.motion == Motion::Moving &&
                  e.why.find("changed PC between samples, over 112 bytes") != std::string::npos);
  }
  CHECK(moved);
}

TEST_CASE("cuda samples: PyTorch with libtorch read by its exported symbols still names the wait") {
  // rocplay a5a6f78's default run on the H100 (docs/hardware-validation.md): the three libtorch
  // libraries were preloaded from symbol-light copies.
  const auto t = test::replay_samples("cuda-gdb/h100-samples/torch-light-symbols.rec");
  REQUIRE(t.samples.size() == 2);
  const auto& notes = t.samples[0].snapshot.notes;
  const auto note = std::find_if(notes.begin(), notes.end(), [](const std::string& n) {
    return n.starts_with(kLightSymbolsNote);
  });
  REQUIRE(note != notes.end());
  CHECK(note->find("libtorch_cuda.so (211501 symbols)") != std::string::npos);
  const auto r = heuristics::run_samples(t.samples, t.context);
  CHECK(r.progress.verdict == Motion::Stuck);
  const auto* f = find_in(r.findings, heuristics::kHostBlockedOnGpu);
  REQUIRE(f != nullptr);
  CHECK(f->title.find("_local_scalar_dense") != std::string::npos);
  CHECK(f->details.at("progress").at("confirmed") == true);
}

TEST_CASE("cuda samples: device code decoded after the detach serves both samples") {
  // Real: the 2-sample run on the H100 with nvdisasm at hand. The window was asked (`info
  // symbol`) in each stop, kept once and decoded after the detach, so its notes follow the last
  // sample; the first sample reads the same spin loop.
  const auto r = test::replay_samples("cuda-gdb/h100-samples/syncspin-nvdisasm.rec");
  REQUIRE(r.samples.size() == 2);
  for (const auto& sample : r.samples) {
    INFO("sample " << sample.index);
    bool spin = false;
    for (const auto& l : snapshot::code_loops(sample.snapshot)) {
      if (l.gpu && l.loop && l.loop->spin) {
        spin = true;
        CHECK(l.loop->describe() ==
              "spin loop of 4 instructions: LDG.E.STRONG.SYS, YIELD, ISETP.GE.AND, BRA");
      }
    }
    CHECK(spin);
    std::size_t decoded = 0;
    for (const auto& w : sample.snapshot.code_windows) {
      if (!w.decoded_by.empty()) {
        ++decoded;
        CHECK(w.decoded_by == "nvdisasm");
        CHECK(w.thread == "cuda kernel 0 block 0,0,0 thread 0,0,0");
      }
    }
    CHECK(decoded == 1); // kept once in the run, shared by both samples
  }
  const auto sampled = heuristics::run_samples(r.samples, r.context);
  CHECK(sampled.progress.verdict == Motion::Stuck);
  CHECK(find_in(sampled.findings, heuristics::kSyncLaneBarrierSpin) != nullptr);
}

TEST_CASE("cuda: PyTorch's spin_kernel loop from nvdisasm, one sample") {
  const Snapshot s = test::load("cuda-gdb/h100-rocplay/torch-nvdisasm.rec");
  const auto loops = snapshot::code_loops(s);
  const snapshot::CodeLoop* spin_kernel = nullptr;
  for (const auto& l : loops) {
    if (l.gpu && l.function.find("spin_kernel") != std::string::npos) {
      spin_kernel = &l;
    }
  }
  REQUIRE(spin_kernel != nullptr);
  REQUIRE(spin_kernel->loop);
  CHECK(spin_kernel->loop->describe() ==
        "loop of 6 instructions: CS2R, IADD3, IMAD.X, ISETP.GE.U32.AND, ISETP.GE.AND.EX, BRA");
  CHECK_FALSE(spin_kernel->loop->spin); // it reads the clock, polls no memory
  CHECK(spin_kernel->loop->clock_wait);
}
