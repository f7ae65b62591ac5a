// The built-in playbooks against rocgdb sessions (fixtures/rocgdb: transcripts in rocgdb's
// documented formats): which GPU commands each sends, that the console tables stand in for the MI
// commands on an old rocgdb, and that the findings come out of the run.
#include "replay_driver.hpp"

#include <catch2/catch.hpp>

#include <algorithm>

using namespace rocplay;
using namespace rocplay::playbook;

namespace {

RunResult replay(const std::string& playbook, test::ReplayDriver& driver) {
  RunOptions ro;
  ro.pid = 4303;
  return run(find_playbook(playbook), driver, ro);
}

std::size_t sent(const test::ReplayDriver& d, const std::string& command) {
  return static_cast<std::size_t>(std::count(d.sent.begin(), d.sent.end(), command));
}

bool has_finding(const RunResult& r, std::string_view id) {
  return std::any_of(r.findings.begin(), r.findings.end(),
                     [&](const Finding& f) { return f.id == id; });
}

} // namespace

TEST_CASE("gpu-state on rocgdb with the MI commands: agents, queues, dispatches, a finding") {
  test::ReplayDriver driver(
      test::read_fixture("fixtures/rocgdb/tp8-allgather-sync-spin/snapshot.mi"));
  REQUIRE(driver.debugger().kind == DebuggerKind::RocGdb);
  const auto r = replay("gpu-state", driver);
  REQUIRE_FALSE(r.fatal.has_value());
  for (const char* name : {"GPU agents", "GPU queues", "GPU dispatches"}) {
    INFO(name << ": " << test::step_named(r, name).message);
    CHECK(test::step_named(r, name).status == StepStatus::Ok);
  }
  CHECK(test::step_named(r, "GPU agents (console)").status == StepStatus::Skipped);
  CHECK(test::step_named(r, "CUDA kernels").status == StepStatus::Skipped);
  CHECK(sent(driver, "-agent-info") == 1);
  CHECK(sent(driver, "-dispatch-info") == 1);
  CHECK(sent(driver, "-thread-info") == 0); // the shortest stop: no threads
  CHECK_FALSE(r.snapshot.agents.empty());
  CHECK_FALSE(r.snapshot.dispatches.empty());
}

TEST_CASE("hang-triage on rocgdb: info line once per unique wave PC, the sync-lane finding") {
  test::ReplayDriver driver(
      test::read_fixture("fixtures/rocgdb/tp8-allgather-sync-spin/snapshot.mi"));
  const auto r = replay("hang-triage", driver);
  REQUIRE_FALSE(r.fatal.has_value());
  CHECK_FALSE(r.aborted);
  CHECK(test::step_named(r, "GPU dispatches").status == StepStatus::Ok);
  CHECK(test::step_named(r, "threads").status == StepStatus::Ok);
  REQUIRE(r.snapshot.waves.size() > 2);
  std::set<std::uint64_t> wave_pcs;
  for (const auto& w : r.snapshot.waves) {
    if (w.pc) {
      wave_pcs.insert(*w.pc);
    }
  }
  REQUIRE_FALSE(wave_pcs.empty());
  CHECK(wave_pcs.size() < r.snapshot.waves.size()); // waves share PCs
  for (auto pc : wave_pcs) {
    const std::string cmd = fmt::format("-interpreter-exec console \"info line *{:#x}\"", pc);
    INFO(cmd);
    CHECK(sent(driver, cmd) == 1);
  }
  CHECK(has_finding(r, heuristics::kSyncLaneBarrierSpin));
  CHECK(r.exit_code() == ExitCode::Findings);
}

TEST_CASE("hang-triage on a ROCm 5 rocgdb without the MI commands: the console tables instead") {
  test::ReplayDriver driver(test::read_fixture("fixtures/rocgdb/rocm5-old-format/snapshot.mi"));
  const auto r = replay("hang-triage", driver);
  REQUIRE_FALSE(r.fatal.has_value());
  CHECK(test::step_named(r, "GPU agents").status == StepStatus::Skipped);
  for (const char* name :
       {"GPU agents (console)", "GPU queues (console)", "GPU dispatches (console)"}) {
    INFO(name << ": " << test::step_named(r, name).message);
    CHECK(test::step_named(r, name).status == StepStatus::Ok);
  }
  CHECK(sent(driver, "-interpreter-exec console \"info agents\"") == 1);
  CHECK(sent(driver, "-agent-info") == 0);
  CHECK_FALSE(r.snapshot.agents.empty());
  // A healthy run: nothing at warning or above.
  CHECK(r.exit_code() == ExitCode::Ok);
}

TEST_CASE("rocgdb-dump: the seed's command file, step by step") {
  test::ReplayDriver driver(test::read_fixture("fixtures/rocgdb/rocm5-old-format/snapshot.mi"));
  const auto r = replay("rocgdb-dump", driver);
  REQUIRE_FALSE(r.fatal.has_value());
  for (const char* name : {"info agents", "info dispatches", "info queues"}) {
    CHECK(test::step_named(r, name).status == StepStatus::Ok);
  }
  // `bt 30` is not in this recording: the step fails, the rest goes on (on_error: continue).
  CHECK(test::step_named(r, "main thread bt").status == StepStatus::Ignored);
  CHECK(test::step_named(r, "snapshot").status == StepStatus::Ok);
  CHECK(test::step_named(r, "detach").in_always);
  CHECK(test::step_named(r, "detach").status == StepStatus::Ok);
  CHECK(driver.sent.front() == "-gdb-set may-call-functions off");
  CHECK(sent(driver, "-gdb-set pagination off") == 1);

  test::ReplayDriver gdb(test::read_fixture("fixtures/playbook/spin-gdb.rec"));
  CHECK_THROWS_AS(replay("rocgdb-dump", gdb), Error); // requires rocgdb
}
