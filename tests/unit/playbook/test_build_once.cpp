// The snapshot of a live run is built once per sample (issue 28): each exchange goes to a builder
// once, as it arrives; the steps inside the stop read the sample so far without finishing it
// (Builder::peek, Builder::host_thread_ids); every sample is finished after the detach. A
// replayed gdb session (fixtures/playbook/spin-gdb.rec) that can "run" between samples.
#include "replay_driver.hpp"
#include "rocplay/snapshot/sampling.hpp"

#include <catch2/catch.hpp>

using namespace rocplay;
using namespace rocplay::playbook;

namespace {

// The replay, able to let the target "run" between samples: the session's notes become
// command-less exchanges, as the session files them.
class SamplingReplay : public test::ReplayDriver {
public:
  using ReplayDriver::ReplayDriver;
  bool can_resume() const override { return true; }
  session::ResumeResult run_for(std::chrono::milliseconds /*interval*/,
                                std::chrono::milliseconds /*stop_timeout*/,
                                const session::IntervalStart& /*interval_start*/) override {
    clock_ += 1;
    session::ResumeResult r;
    r.resumed_at = clock_;
    r.interrupted_at = clock_ + 0.5;
    r.stopped_at = clock_ + 0.5;
    return r;
  }
  void note(std::string_view text) override { add_note(std::string(text)); }
  double now() const override { return clock_; }
  void detach() override {
    if (!detached_at_) {
      detached_at_ = snapshot::builder_counts();
    }
    ReplayDriver::detach();
  }

  // What the builders had done when the target was detached.
  std::optional<snapshot::BuilderCounts> detached_at_;

private:
  double clock_ = 10;
};

const std::string& spin_gdb_recording() {
  static const std::string text = test::read_fixture("fixtures/playbook/spin-gdb.rec");
  return text;
}

} // namespace

TEST_CASE("a live run feeds each exchange to a builder once and finishes each sample after the "
          "detach") {
  for (std::uint32_t samples : {1u, 2u, 3u}) {
    INFO(samples << " sample(s)");
    SamplingReplay driver(spin_gdb_recording());
    RunOptions ro;
    ro.pid = 24224;
    ro.samples = samples;
    ro.interval = std::chrono::milliseconds(10);
    const auto before = snapshot::builder_counts();
    const RunResult r = run(find_playbook("hang-triage"), driver, ro);
    const auto after = snapshot::builder_counts();
    REQUIRE_FALSE(r.fatal.has_value());
    REQUIRE(r.samples.size() == (samples > 1 ? samples : 0));
    // The steps that read the snapshot ran, in every sample.
    for (const char* name :
         {"host backtraces", "mutex owners", "source lines", "code at the PCs"}) {
      std::size_t ran = 0;
      for (const auto& s : r.steps) {
        ran += s.name == name && s.status != StepStatus::NotRun ? 1 : 0;
      }
      CHECK(ran == samples);
    }
    CHECK(after.builders - before.builders == samples);
    CHECK(after.finished - before.finished == samples);
    CHECK(after.added - before.added == driver.exchanges().size());
    // Inside the stops nothing was finished: the steps peeked at the sample so far.
    REQUIRE(driver.detached_at_.has_value());
    CHECK(driver.detached_at_->finished == before.finished);
    CHECK(driver.detached_at_->peeked > before.peeked);
    CHECK(driver.detached_at_->peeked - before.peeked <= 2 * samples);
  }
}

TEST_CASE("the samples a live run builds as it goes are those built over its exchanges after the "
          "fact") {
  SamplingReplay driver(spin_gdb_recording());
  RunOptions ro;
  ro.pid = 24224;
  ro.samples = 2;
  ro.interval = std::chrono::milliseconds(10);
  const RunResult r = run(find_playbook("hang-triage"), driver, ro);
  REQUIRE(r.samples.size() == 2);
  snapshot::BuildOptions bo;
  bo.debugger = DebuggerKind::Gdb;
  bo.label = "hang-triage";
  const auto again = snapshot::build_samples(driver.exchanges(), bo);
  REQUIRE(again.size() == 2);
  for (std::size_t i = 0; i < 2; ++i) {
    INFO("sample " << i + 1);
    const Snapshot& live = r.samples[i].snapshot;
    const Snapshot& built = again[i].snapshot;
    CHECK(live.host_threads == built.host_threads);
    CHECK(live.source_lines.size() == built.source_lines.size());
    CHECK(live.code_windows.size() == built.code_windows.size());
    CHECK(live.warnings == built.warnings);
  }
  CHECK(r.samples[1].snapshot.host_threads.size() == 4);
}
