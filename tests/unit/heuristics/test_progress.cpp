// The progress analysis over several samples: the reconstructed rocgdb two-snapshot fixtures
// (queue stalled, queue advancing), a spin confirmed or turned into "slow, not stuck", and a
// recording's exchanges split into samples at their notes.
#include "../finding_of.hpp"
#include "../snapshot/support.hpp"

#include "rocplay/core/target_stops.hpp"
#include "rocplay/heuristics/progress.hpp"
#include "rocplay/snapshot/sampling.hpp"

#include <catch2/catch.hpp>

#include <algorithm>

using namespace rocplay;

namespace {

std::vector<Sample> two(const Snapshot& a, const Snapshot& b, double seconds) {
  std::vector<Sample> out(2);
  out[0].index = 1;
  out[0].snapshot = a;
  out[1].index = 2;
  out[1].at = seconds;
  out[1].snapshot = b;
  return out;
}

const ProgressEntry* entry(const SampleProgress& p, std::string_view kind) {
  for (const auto& e : p.entries) {
    if (e.kind == kind) {
      return &e;
    }
  }
  return nullptr;
}

} // namespace

TEST_CASE("progress: reconstructed rocgdb queue stall reads stuck, and queue-stall runs") {
  const auto a = test::load("rocgdb/queue-stall-two-snapshots/snapshot-1.mi");
  const auto b = test::load("rocgdb/queue-stall-two-snapshots/snapshot-2.mi");
  const auto sampled = heuristics::run_samples(two(a, b, 6.0));
  const auto* stall = test::finding_of(sampled.findings, heuristics::kQueueStall);
  REQUIRE(stall != nullptr);
  CHECK(sampled.progress.verdict == Motion::Stuck);
  CHECK(sampled.progress.verdict_text.rfind("STUCK", 0) == 0);
  const auto* q = entry(sampled.progress, "queue");
  REQUIRE(q != nullptr);
  CHECK(q->motion == Motion::Stuck);
  CHECK(q->why.find("unchanged") != std::string::npos);
}

TEST_CASE("progress: reconstructed rocgdb healthy progress reads moving, no stuck finding") {
  const auto a = test::load("rocgdb/healthy-progress/snapshot-1.mi");
  const auto b = test::load("rocgdb/healthy-progress/snapshot-2.mi");
  const auto sampled = heuristics::run_samples(two(a, b, 5.0));
  CHECK(test::finding_of(sampled.findings, heuristics::kQueueStall) == nullptr);
  CHECK(test::finding_of(sampled.findings, heuristics::kNoProgress) == nullptr);
  CHECK(sampled.progress.verdict == Motion::Moving);
  bool moved_read = false;
  for (const auto& e : sampled.progress.entries) {
    if (e.kind == "queue" && e.motion == Motion::Moving) {
      moved_read =
          e.why.find("read index") != std::string::npos && e.why.find("->") != std::string::npos;
    }
    CHECK(e.motion != Motion::Stuck);
  }
  CHECK(moved_read);
}

TEST_CASE("progress: a sync-lane spin seen again in place is confirmed") {
  const auto s = test::load("rocgdb/tp8-allgather-sync-spin/snapshot.mi");
  const auto sampled = heuristics::run_samples(two(s, s, 4.1));
  const auto* spin = test::finding_of(sampled.findings, heuristics::kSyncLaneBarrierSpin);
  REQUIRE(spin != nullptr);
  CHECK(spin->details.at("progress").at("confirmed") == true);
  CHECK(spin->details.at("progress").at("motion") == "stuck");
  CHECK(std::any_of(spin->evidence.begin(), spin->evidence.end(), [](const std::string& e) {
    return e.find("CONFIRMED by 2 samples over 4.1 s") != std::string::npos;
  }));
  const auto single = heuristics::run(s);
  const auto* before = test::finding_of(single, heuristics::kSyncLaneBarrierSpin);
  REQUIRE(before != nullptr);
  CHECK(spin->confidence > before->confidence);
  CHECK(spin->severity == before->severity);
  CHECK(sampled.progress.verdict == Motion::Stuck);
  // No second finding for what the spin finding already names.
  CHECK(test::finding_of(sampled.findings, heuristics::kNoProgress) == nullptr);
}

TEST_CASE("progress: a spin whose waves moved on is kept as slow, not stuck") {
  const auto s = test::load("rocgdb/tp8-allgather-sync-spin/snapshot.mi");
  Snapshot later = s;
  for (auto& w : later.waves) {
    if (w.pc) {
      *w.pc += 0x400; // far past any polling loop
    }
  }
  for (auto& q : later.queues) {
    if (q.read) {
      ++*q.read; // and the queues moved on
    }
  }
  const auto sampled = heuristics::run_samples(two(s, later, 2.0));
  const auto* spin = test::finding_of(sampled.findings, heuristics::kSyncLaneBarrierSpin);
  REQUIRE(spin != nullptr);
  CHECK(spin->title.rfind("slow, not stuck", 0) == 0);
  CHECK(spin->severity <= Severity::Warning);
  CHECK(spin->details.at("progress").at("confirmed") == false);
  CHECK(spin->details.at("progress").at("motion") == "moving");
  CHECK(sampled.progress.verdict == Motion::Moving);
  CHECK(test::finding_of(sampled.findings, heuristics::kNoProgress) == nullptr);
}

TEST_CASE("progress: one sample says it cannot tell") {
  const auto s = test::load("rocgdb/tp8-allgather-sync-spin/snapshot.mi");
  std::vector<Sample> one(1);
  one[0].snapshot = s;
  const auto p = heuristics::analyze_progress(one);
  CHECK(p.verdict == Motion::Unknown);
  CHECK(p.entries.empty());
}

TEST_CASE("sampling: a session's exchanges split at the sample notes, with stop times") {
  std::vector<mi::Exchange> exchanges;
  exchanges.push_back(test::exchange("-gdb-set pagination off", 0.1, 0.2));
  exchanges.push_back(test::exchange("-target-attach 42", 1.0, 1.1));
  exchanges.push_back(test::exchange("-thread-info", 1.2, 1.3));
  exchanges.back().notes.push_back(snapshot::sample_note(1, 1.0, 1000.0));
  exchanges.push_back(test::exchange("-exec-continue", 1.4, 1.5));
  exchanges.push_back(test::exchange("", 3.5, 0));
  exchanges.back().notes.push_back(snapshot::sample_note(2, 3.5, 1002.5));
  exchanges.push_back(test::exchange("-thread-info", 3.7, 3.8));
  exchanges.push_back(test::exchange("-exec-continue", 3.9, 4.0));
  exchanges.push_back(test::exchange("", 6.0, 0));
  exchanges.back().notes.push_back(snapshot::sample_note(4, 6.0, 1005.0)); // not 3: ignored
  exchanges.back().notes.push_back(snapshot::sample_note(3, 6.0, 1005.0));
  exchanges.push_back(test::exchange("-target-detach", 6.2, 6.3));
  const auto samples = snapshot::build_samples(exchanges);
  REQUIRE(samples.size() == 3);
  CHECK(samples[0].at == Approx(0));
  CHECK(samples[0].stop_seconds == Approx(0.5));
  CHECK(samples[0].wall_time == Approx(1000.0));
  CHECK(samples[1].at == Approx(2.5));
  CHECK(samples[1].stop_seconds == Approx(0.5));
  CHECK(samples[2].index == 3);
  CHECK(samples[2].at == Approx(5.0));
  CHECK(samples[2].stop_seconds == Approx(0.3));
  // No notes: one sample, as before.
  std::vector<mi::Exchange> plain(exchanges.begin(), exchanges.begin() + 3);
  CHECK(snapshot::build_samples(plain).size() == 1);
}

TEST_CASE("sampling: the session's measured stops give each sample its stop") {
  // cuda-gdb's shape: stopped in pieces inside the attach (the MI records say 1.0 to 1.5 less a
  // run of 1.1 to 1.4), stopped past `-exec-continue`'s answer, the second sample's stop begun
  // before its *stopped; and the detach.
  std::vector<mi::Exchange> exchanges;
  exchanges.push_back(test::exchange("-target-attach 42", 1.0, 1.1));
  exchanges.back().notes.push_back("the target ran during the attach: the debugger resumed every "
                                   "thread at 1.100000 s and stopped them at 1.400000 s");
  exchanges.push_back(test::exchange("-thread-info", 1.42, 1.43));
  exchanges.back().notes.push_back(snapshot::sample_note(1, 1.0, 1000.0));
  exchanges.push_back(test::exchange("-exec-continue", 1.45, 1.5));
  exchanges.push_back(test::exchange("", 3.5, 0));
  exchanges.back().notes.push_back(snapshot::sample_note(2, 3.5, 1002.5));
  exchanges.push_back(test::exchange("-target-detach", 3.6, 3.7));
  for (auto& note : target_stops_notes({{1.001, 1.05}, {1.2, 1.25}, {1.3, 1.52}, {3.49, 3.69}})) {
    exchanges.back().notes.push_back(std::move(note));
  }
  const auto samples = snapshot::build_samples(exchanges);
  REQUIRE(samples.size() == 2);
  CHECK(samples[0].stop_seconds == Approx(0.049 + 0.05 + 0.22));
  CHECK(samples[1].stop_seconds == Approx(0.2));
  // Without the notes: the debugger's account, as before.
  exchanges.back().notes.clear();
  const auto told = snapshot::build_samples(exchanges);
  REQUIRE(told.size() == 2);
  CHECK(told[0].stop_seconds == Approx(0.5 - 0.3));
  CHECK(told[1].stop_seconds == Approx(0.2));
}
