// The `run` section of a playbook run's report, rendered by the report layer from a run's result
// alone (no playbook, no debugger): the Target line as docs/session.md gives it, the steps as
// text and the `run` object's keys (docs/json-schema.md, "The `run` object").
#include "rocplay/report/run.hpp"

#include <catch2/catch.hpp>

#include <sstream>
#include <string>

using namespace rocplay;
using playbook::RunResult;
using playbook::StepKind;
using playbook::StepRecord;
using playbook::StepStatus;

namespace {

StepRecord step(std::string name, StepKind kind, StepStatus status, std::string message = {}) {
  StepRecord s;
  s.name = std::move(name);
  s.kind = kind;
  s.status = status;
  s.message = std::move(message);
  return s;
}

RunResult attached_run() {
  RunResult r;
  r.playbook = "hang-triage";
  r.pid = 4242;
  r.debugger = {DebuggerKind::Gdb, "gdb", "GNU gdb (Debian 13.1-3) 13.1"};
  r.attached = true;
  r.times.attach_sent = true;
  r.times.attach_seconds = 0.4;
  r.times.stop_seconds = 0.43;
  r.times.detached = true;
  r.times.state_after = 'S';
  return r;
}

} // namespace

TEST_CASE("the Target line says what happened to the target, as docs/session.md shows it") {
  RunResult never;
  never.times.state_after = 'S';
  CHECK(report::target_account(never) ==
        "not attached: rocplay never stopped it; now running (state S, sleeping)");

  CHECK(report::target_account(attached_run()) ==
        "attach took 0.400 s, stopped for 0.430 s; detached; now running (state S, sleeping)");

  RunResult stalled;
  stalled.times.attach_sent = true;
  stalled.times.stop_seconds = 0.6;
  stalled.times.detached = true;
  stalled.times.left_stopped = true;
  stalled.times.state_after = 'R';
  CHECK(report::target_account(stalled) ==
        "the attach did not complete; stopped for 0.600 s; detached; it was still stopped "
        "afterwards, so rocplay sent it SIGCONT; now running (state R)");
  CHECK(stalled.exit_code() == ExitCode::TargetLeftStopped);
  CHECK(report::left_stopped_hint(stalled).find("the debugger's unfinished attach") !=
        std::string::npos);

  // Killed mid-attach: SIGCONT at once, before the attach's SIGSTOPs could stop it.
  RunResult cancelled = stalled;
  cancelled.times.left_stopped = false;
  cancelled.times.stop_cancelled = true;
  CHECK(report::target_account(cancelled) ==
        "the attach did not complete; stopped for 0.600 s; detached; rocplay sent it SIGCONT to "
        "cancel the stop the unfinished attach leaves behind; now running (state R)");
  CHECK(report::left_stopped_hint(attached_run()).find("something else may be tracing it") !=
        std::string::npos);
}

TEST_CASE("the steps as text: one line a step, consecutive skipped steps on one") {
  RunResult r = attached_run();
  r.steps.push_back(step("attach (implicit)", StepKind::Attach, StepStatus::Ok));
  r.steps.push_back(step("agents", StepKind::Cli, StepStatus::Skipped, "requires rocgdb"));
  r.steps.push_back(step("queues", StepKind::Cli, StepStatus::Skipped, "requires rocgdb"));
  r.steps.push_back(step("bad", StepKind::Mi, StepStatus::Failed, "Undefined MI command: x"));
  r.steps.back().position = {"unit.yaml", 3, 5};
  r.aborted = true;
  std::ostringstream out;
  report::write_run_section_text(out, r);
  CHECK(out.str() == "Playbook hang-triage on pid 4242 with gdb (GNU gdb (Debian 13.1-3) 13.1)\n"
                     "Target: attach took 0.400 s, stopped for 0.430 s; detached; now running "
                     "(state S, sleeping)\n"
                     "Steps:\n"
                     "  ok          0.000s  attach (implicit)\n"
                     "  skipped             2 steps (agents, queues): requires rocgdb\n"
                     "  FAILED      0.000s  bad: Undefined MI command: x\n"
                     "            at unit.yaml:3:5\n");
  CHECK(r.exit_code() == ExitCode::StepFailed);
}

TEST_CASE("the run object holds the documented keys") {
  RunResult r = attached_run();
  r.steps.push_back(step("threads", StepKind::Threads, StepStatus::Ok));
  r.steps.back().commands = {"-thread-info"};
  r.steps.back().command_count = 1;
  const auto j = report::run_section_to_json(r);
  for (const char* key : {"playbook", "pid", "debugger", "target", "steps", "warnings", "aborted",
                          "seconds", "exit_code"}) {
    CHECK(j.contains(key));
  }
  CHECK_FALSE(j.contains("error"));
  CHECK_FALSE(j.contains("sampling"));
  CHECK(j.at("debugger").at("kind") == "gdb");
  CHECK(j.at("target").at("state_after") == "S");
  CHECK(j.at("target").at("account") == report::target_account(r));
  CHECK(j.at("steps").at(0).at("kind") == "threads");
  CHECK_FALSE(j.at("steps").at(0).contains("output")); // only mi: and cli: steps have output
  CHECK(j.at("exit_code") == 0);
}
