// The reports of `rocplay run`, the fan-out and `rocplay postmortem` over the same recording agree,
// with real gdb against tests/targets/deadlock_target (a lock-order deadlock and a waiter: findings
// with locations, four threads with frames, two samples). What may differ, and why:
// - `run` (steps, the target's times, `partial`): only the live run has it; a recording holds the
//   debugger's exchanges, not what rocplay did around them.
// - the snapshot's `label`: the live run names it after the playbook, a post-mortem after the file.
// - the snapshot's `wave_classes` and `code`: views the run report computes from the snapshot when
//   it renders it; `postmortem --snapshots` writes the snapshot as it is.
// Everything else is compared whole: every finding (id, severity, title, locations, evidence,
// details, rank), the threads with their frames, the samples and the progress analysis.
#include "cli_util.hpp"
#include "session_target.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

using namespace rocplay::testing;
using nlohmann::json;

namespace {

// `rocplay postmortem FILE --format json --snapshots`: the one input's document.
json postmortem_of(const std::string& recording) {
  const CliRun pm =
      run_rocplay({"postmortem", recording, "--format", "json", "--snapshots", "--no-progress"});
  INFO(pm.err);
  REQUIRE(pm.exit_code == 1); // findings
  const json doc = json::parse(pm.out);
  REQUIRE(doc["inputs"].size() == 1);
  const json& input = doc["inputs"][0];
  REQUIRE(input["status"] == "ok");
  return input;
}

// The snapshot without the fields that differ for a reason (see the top of this file).
json comparable_snapshot(json snapshot) {
  for (const char* key : {"label", "wave_classes", "code"}) {
    snapshot.erase(key);
  }
  return snapshot;
}

json comparable_samples(json samples) {
  for (auto& sample : samples) {
    if (sample.contains("snapshot")) {
      sample["snapshot"].erase("label");
    }
  }
  return samples;
}

// A live report (`run`'s document, or one fan-out target's `report`) against the post-mortem of
// the recording that run wrote.
void require_agreement(const json& live, const json& replayed) {
  // The findings, first by the fields a reader acts on, then whole.
  const json& live_findings = live["findings"];
  const json& replayed_findings = replayed["findings"];
  REQUIRE(live_findings.size() >= 2); // host-deadlock and host-waits
  CHECK(live_findings[0]["id"] == "host-deadlock");
  REQUIRE(live_findings.size() == replayed_findings.size());
  for (std::size_t i = 0; i < live_findings.size(); ++i) {
    INFO("finding " << i << ": " << live_findings[i]["id"]);
    for (const char* key : {"id", "severity", "title", "locations"}) {
      INFO(key);
      CHECK(live_findings[i][key] == replayed_findings[i][key]);
    }
    CHECK(live_findings[i] == replayed_findings[i]);
  }

  // The threads and their frames.
  const json& threads = live["snapshot"]["host_threads"];
  REQUIRE(threads.size() == DeadlockTarget::kThreads);
  for (const auto& t : threads) {
    CHECK_FALSE(t["frames"].empty());
  }
  CHECK(threads == replayed["snapshot"]["host_threads"]);
  CHECK(comparable_snapshot(live["snapshot"]) == comparable_snapshot(replayed["snapshot"]));

  // Two samples (hang-triage's), each stop's time and snapshot, and what moved between them.
  REQUIRE(live["samples"].size() == 2);
  CHECK(comparable_samples(live["samples"]) == comparable_samples(replayed["samples"]));
  CHECK(live["progress"] == replayed["progress"]);
}

} // namespace

TEST_CASE("run and postmortem over the same recording report the same findings and threads") {
  DeadlockTarget target;
  TempDir dir;
  const std::string recording = dir.path() + "/run.rocplay";
  const CliRun r =
      run_rocplay({"run", "hang-triage", "--pid", std::to_string(target.pid()), "--debugger", "gdb",
                   "--record", recording, "--format", "json", "-q"},
                  std::chrono::seconds(120));
  INFO(r.err);
  REQUIRE_FALSE(r.timed_out);
  REQUIRE(r.exit_code == 1);
  require_no_thread_stopped(target.pid(), DeadlockTarget::kThreads);
  const json live = json::parse(r.out);
  CHECK(live["schema"] == "rocplay.report");
  CHECK(live.contains("run")); // live only
  const json replayed = postmortem_of(recording);
  CHECK_FALSE(replayed.contains("run"));
  // A lone --pid has no rank: neither says one.
  CHECK_FALSE(live["snapshot"].contains("rank"));
  CHECK_FALSE(replayed["snapshot"].contains("rank"));
  require_agreement(live, replayed);
}

TEST_CASE("a fan-out's targets each report what the post-mortem of their recording reports") {
  DeadlockTarget a;
  DeadlockTarget b;
  TempDir dir;
  // One --record for every target: each one's file gets its pid before the extension.
  const CliRun r = run_rocplay(
      {"run", "hang-triage", "--pids", std::to_string(a.pid()) + "," + std::to_string(b.pid()),
       "--debugger", "gdb", "--record", dir.path() + "/fan.rocplay", "--format", "json", "-q"},
      std::chrono::seconds(120));
  INFO(r.err);
  REQUIRE_FALSE(r.timed_out);
  REQUIRE(r.exit_code == 1);
  require_no_thread_stopped(a.pid(), DeadlockTarget::kThreads);
  require_no_thread_stopped(b.pid(), DeadlockTarget::kThreads);
  const json multi = json::parse(r.out);
  CHECK(multi["schema"] == "rocplay.run.multi");
  REQUIRE(multi["targets"].size() == 2);
  for (std::size_t i = 0; i < 2; ++i) {
    const json& target = multi["targets"][i];
    INFO("target " << i << ": pid " << target["pid"]);
    CHECK(target["rank"] == i); // no RANK in their environment: the order given
    const json replayed = postmortem_of(
        dir.path() + "/fan." + std::to_string(target["pid"].get<long long>()) + ".rocplay");
    // The recording carries the rank, so the post-mortem's findings carry it as the live ones do.
    CHECK(replayed["rank"] == i);
    CHECK(target["report"]["findings"][0]["rank"] == i);
    require_agreement(target["report"], replayed);
  }
}
