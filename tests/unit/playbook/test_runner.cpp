// The runner over a replayed gdb session (fixtures/playbook/spin-gdb.rec): step order and status,
// skip rules, foreach, register/expect/fail_when, on_error, faults, and detach on every path.
#include "replay_driver.hpp"
#include "rocplay/snapshot/frames.hpp"

#include <catch2/catch.hpp>

#include <sstream>

using namespace rocplay;
using namespace rocplay::playbook;

namespace {

const std::string& recording() {
  return test::spin_gdb_recording();
}

Playbook user(const std::string& yaml, bool allow_unsafe = false) {
  LoadOptions o;
  o.allow_unsafe_commands = allow_unsafe;
  return load(yaml, "unit.yaml", o);
}

RunResult replay(const Playbook& pb, test::ReplayDriver& driver,
                 std::vector<std::pair<std::string, std::string>> vars = {}) {
  RunOptions ro;
  ro.pid = 24224;
  ro.vars = std::move(vars);
  return run(pb, driver, ro);
}

std::size_t count_sent(const test::ReplayDriver& d, const std::string& prefix) {
  std::size_t n = 0;
  for (const auto& c : d.sent) {
    n += c.rfind(prefix, 0) == 0 ? 1 : 0;
  }
  return n;
}

} // namespace

TEST_CASE("hang-triage over a replayed gdb session") {
  test::ReplayDriver driver(recording());
  const auto r = replay(find_playbook("hang-triage"), driver);
  REQUIRE_FALSE(r.fatal.has_value());
  CHECK_FALSE(r.aborted);
  CHECK(r.attached);
  CHECK(driver.detach_calls >= 1);
  CHECK_FALSE(driver.attached);
  CHECK(test::step_named(r, "GPU agents").status == StepStatus::Skipped);
  CHECK(test::step_named(r, "CUDA threads").status == StepStatus::Skipped);
  CHECK(test::step_named(r, "CUDA threads").message == "requires cuda-gdb");
  for (const char* name : {"attach", "threads", "host backtraces", "source lines", "snapshot"}) {
    INFO(name << ": " << test::step_named(r, name).message);
    CHECK(test::step_named(r, name).status == StepStatus::Ok);
  }
  CHECK(test::step_named(r, "detach (implicit)").status == StepStatus::Ok);
  CHECK(test::step_named(r, "detach (implicit)").in_always);
  // The first command keeps expressions from calling into the target.
  REQUIRE_FALSE(driver.sent.empty());
  CHECK(driver.sent.front() == "-gdb-set may-call-functions off");
  CHECK(count_sent(driver, "-thread-info") == 1);
  CHECK(count_sent(driver, "-stack-list-frames --thread ") == 4);
  CHECK(test::step_named(r, "host backtraces").command_count == 4);

  const Snapshot& snap = r.snapshot;
  REQUIRE(snap.host_threads.size() == 4);
  CHECK(snap.pid == std::optional<std::int64_t>(24224));
  CHECK(snap.label == "hang-triage");
  int spinning = 0;
  for (const auto& t : snap.host_threads) {
    REQUIRE_FALSE(t.frames.empty());
    if (t.frames[0].function == "start_sync") {
      ++spinning;
      CHECK(t.frames[0].file == "/src/rocplay/tests/targets/spin_target.cpp");
      CHECK(t.frames[0].line == std::optional<std::uint32_t>(86));
      const SourceLine* sl = snap.source_line(*t.frames[0].pc);
      REQUIRE(sl != nullptr);
      CHECK(sl->line == std::optional<std::uint32_t>(86));
    }
  }
  CHECK(spinning == 2);

  // info line once per unique PC of the top three frames (callers at PC - 1) and of each
  // thread's innermost frame of its own code and that frame's caller, never once per thread.
  std::set<std::uint64_t> pcs;
  for (const auto& t : snap.host_threads) {
    for (std::size_t i = 0; i < 3 && i < t.frames.size(); ++i) {
      pcs.insert(*t.lookup_pc(i));
    }
    if (const Frame* user = innermost_user_frame(t)) {
      const auto u = static_cast<std::size_t>(user - t.frames.data());
      for (std::size_t i : {u, u + 1}) {
        if (auto pc = t.lookup_pc(i)) {
          pcs.insert(*pc);
        }
      }
    }
  }
  const std::size_t lookups = count_sent(driver, "-interpreter-exec console \"info line *");
  CHECK(lookups == pcs.size());
  std::set<std::string> unique;
  for (const auto& c : driver.sent) {
    if (c.find("info line") != std::string::npos) {
      unique.insert(c);
    }
  }
  CHECK(unique.size() == lookups);
}

TEST_CASE("a second info-line does not ask again for PCs already looked up") {
  test::ReplayDriver driver(recording());
  const auto r = replay(user("steps:\n  - backtrace: {frames: 30}\n  - info-line: {frames: 3}\n"
                             "  - info-line: {frames: 3}\n    name: again\n"),
                        driver);
  CHECK(test::step_named(r, "again").status == StepStatus::Ok);
  CHECK(test::step_named(r, "again").command_count == 0);
}

TEST_CASE("foreach: where, loop item in commands, register, expect") {
  test::ReplayDriver driver(recording());
  const auto pb = user(R"y(
vars:
  last: 2
steps:
  - threads
  - foreach: threads
    where: thread.function == "start_sync" and thread.line == 86
    register: loop
    steps:
      - cli: thread ${thread.id}
        register: selected
        expect: result.output contains "Switching to thread"
      - mi: -stack-list-frames --thread ${thread.id} 0 ${last}
        expect:
          - len(result.results.stack) == 3
          - result.results.stack.0.func == "start_sync"
          - result.results.stack.1.func contains "spin_main"
  - mi: -list-features
    when: loop.matched == 2 and loop.count == 4 and selected.status == "ok"
    name: after
)y");
  const auto r = replay(pb, driver);
  REQUIRE_FALSE(r.fatal.has_value());
  CHECK_FALSE(r.aborted);
  int body = 0;
  std::set<std::string> items;
  for (const auto& s : r.steps) {
    if (s.depth == 1) {
      ++body;
      items.insert(s.item);
      INFO(s.name << " " << s.item << ": " << s.message);
      CHECK(s.status == StepStatus::Ok);
    }
  }
  CHECK(body == 4);
  CHECK(items == std::set<std::string>{"thread 2", "thread 3"});
  CHECK(test::step_named(r, "after").status == StepStatus::Ok);
  CHECK(count_sent(driver, "-interpreter-exec console \"thread ") == 2);
}

TEST_CASE("foreach limit stops early with a warning and no match is not a failure") {
  test::ReplayDriver driver(recording());
  const auto r = replay(user(R"y(
steps:
  - foreach: threads
    where: thread.function == "start_sync"
    limit: 1
    steps:
      - cli: thread ${thread.id}
  - foreach: threads
    where: thread.function == "nothing"
    steps:
      - cli: thread ${thread.id}
    name: none
)y"),
                        driver);
  CHECK(test::step_named(r, "foreach threads").status == StepStatus::Ok);
  CHECK(test::step_named(r, "foreach threads").message == "stopped at limit 1");
  CHECK(test::step_named(r, "none").status == StepStatus::Ok);
  CHECK(test::step_named(r, "none").message == "no threads matched");
  bool warned = false;
  for (const auto& w : r.warnings) {
    warned = warned || w.find("more items match than limit 1") != std::string::npos;
  }
  CHECK(warned);
  CHECK(count_sent(driver, "-interpreter-exec console \"thread ") == 1);
}

TEST_CASE("a failing step aborts, the rest is not run, always and the detach run") {
  test::ReplayDriver driver(recording());
  const auto r = replay(user(R"y(
steps:
  - threads
  - mi: -no-such-command
    name: bad
  - backtrace
always:
  - mi: -list-features
    name: cleanup
  - backtrace:
    name: always needs target
)y"),
                        driver);
  CHECK(r.aborted);
  CHECK(r.exit_code() == ExitCode::StepFailed);
  CHECK(test::step_named(r, "bad").status == StepStatus::Failed);
  CHECK(test::step_named(r, "bad").message.find("no-such-command") != std::string::npos);
  CHECK(test::step_named(r, "bad").position.str() == "unit.yaml:4:5");
  CHECK(test::step_named(r, "backtrace").status == StepStatus::NotRun);
  CHECK(test::step_named(r, "cleanup").status == StepStatus::Ok);
  CHECK(test::step_named(r, "always needs target").status == StepStatus::Ok);
  CHECK(test::step_named(r, "detach (implicit)").status == StepStatus::Ok);
  CHECK(driver.detach_calls >= 1);
  CHECK_FALSE(driver.attached);
}

TEST_CASE("on_error: continue, fail_when and expect") {
  test::ReplayDriver driver(recording());
  const auto r = replay(user(R"y(
on_error: continue
steps:
  - mi: -no-such-command
    name: ignored
  - mi: -thread-info
    name: expect fails
    expect: len(result.results.threads) == 5
  - mi: -no-such-command
    name: error wanted
    fail_when: result.class != "error"
    on_error: abort
  - mi: -list-features
    name: fail_when holds
    fail_when: result.results.features contains "python"
  - mi: -list-features
    name: expect holds
    register: f
    expect: [result.class == "done", len(result.results.features) > 3]
  - mi: -list-features
    name: uses register
    when: f.status == "ok" and f.ms >= 0
)y"),
                        driver);
  CHECK_FALSE(r.aborted);
  CHECK(r.exit_code() != ExitCode::StepFailed);
  CHECK(test::step_named(r, "ignored").status == StepStatus::Ignored);
  CHECK(test::step_named(r, "expect fails").status == StepStatus::Ignored);
  // The failed expect says what the value it read was.
  CHECK(test::step_named(r, "expect fails").message ==
        "expect does not hold: len(result.results.threads) == 5 (actual: "
        "result.results.threads = [4 items])");
  CHECK(test::step_named(r, "error wanted").status == StepStatus::Ok);
  CHECK(test::step_named(r, "fail_when holds").status == StepStatus::Ignored);
  CHECK(test::step_named(r, "expect holds").status == StepStatus::Ok);
  CHECK(test::step_named(r, "uses register").status == StepStatus::Ok);
}

TEST_CASE("skips: requires, when, and steps that need the target when it is not attached") {
  test::ReplayDriver driver(recording());
  const auto r = replay(user(R"y(
vars: {mode: quick}
steps:
  - mi: -list-features
    requires: [rocgdb, cuda-gdb]
    name: gpu only
  - mi: -list-features
    when: mode == "full"
    name: full only
  - mi: -list-features
    when: debugger == "gdb" and debugger_version == "13.1" and pid == 24224
    name: gdb here
)y"),
                        driver);
  CHECK(test::step_named(r, "gpu only").status == StepStatus::Skipped);
  CHECK(test::step_named(r, "gpu only").message == "requires rocgdb or cuda-gdb");
  CHECK(test::step_named(r, "full only").status == StepStatus::Skipped);
  CHECK(test::step_named(r, "full only").message == "when: mode == \"full\"");
  CHECK(test::step_named(r, "gdb here").status == StepStatus::Ok);
  test::ReplayDriver d2(recording());
  const auto r2 = replay(user(R"y(
vars: {mode: quick}
steps:
  - mi: -list-features
    when: mode == "full"
    name: full only
)y"),
                         d2, {{"mode", "full"}});
  CHECK(test::step_named(r2, "full only").status == StepStatus::Ok);
}

TEST_CASE("variables: typed --var, bare integers, refused strings") {
  const auto pb = user(R"y(
vars:
  last: 0
  word: start_sync
steps:
  - threads
  - mi: -stack-list-frames --thread 2 0 ${last}
    name: typed
    on_error: continue
  - cli: info line ${word}
    name: word
    on_error: continue
)y");
  {
    test::ReplayDriver driver(recording());
    const auto r = replay(pb, driver, {{"last", "2"}});
    CHECK(std::find(driver.sent.begin(), driver.sent.end(), "-stack-list-frames --thread 2 0 2") !=
          driver.sent.end());
    CHECK(test::step_named(r, "typed").status == StepStatus::Ok);
  }
  {
    // A value that cannot go into its console command is refused before the attach.
    test::ReplayDriver driver(recording());
    try {
      (void)replay(pb, driver, {{"last", "2"}, {"word", "two words"}});
      FAIL("a value with a space went into a console command");
    } catch (const Error& e) {
      CHECK(e.code() == ExitCode::Usage);
      CHECK(std::string(e.what()).find("unit.yaml:10:5: step `word`: ${word} = \"two words\" "
                                       "cannot go into a console command safely") == 0);
      CHECK(std::string(e.what()).find("(from --var word=two words)") != std::string::npos);
      CHECK(e.hint().find("nothing was attached") != std::string::npos);
    }
    CHECK_FALSE(driver.attached);
    CHECK(driver.sent.empty());
  }
  test::ReplayDriver driver(recording());
  try {
    (void)replay(pb, driver, {{"last", "two"}});
    FAIL("a non-number was accepted for an integer variable");
  } catch (const Error& e) {
    CHECK(e.code() == ExitCode::Usage);
    CHECK(std::string(e.what()) == "--var last=two: expected a whole number");
  }
  try {
    (void)replay(pb, driver, {{"lats", "2"}});
    FAIL("an undeclared variable was accepted");
  } catch (const Error& e) {
    CHECK(e.code() == ExitCode::Usage);
    CHECK(e.hint() == "did you mean `last`?");
  }
  CHECK_THROWS_AS(replay(pb, driver, {{"word", "a\nb"}}), Error);
  CHECK(driver.sent.empty()); // nothing reached the debugger
  CHECK(driver.detach_calls >= 1);
}

TEST_CASE("requirements are checked before anything is sent") {
  test::ReplayDriver driver(recording());
  try {
    (void)replay(find_playbook("gpu-state"), driver);
    FAIL("gpu-state ran under gdb");
  } catch (const Error& e) {
    CHECK(e.code() == ExitCode::DebuggerNotFound);
    CHECK(e.hint().find("--debugger rocgdb") != std::string::npos);
  }
  try {
    (void)replay(user("requirements: {min_version: {gdb: \"14.2\"}}\nsteps: [threads]\n"), driver);
    FAIL("gdb 13.1 passed a 14.2 requirement");
  } catch (const Error& e) {
    CHECK(e.code() == ExitCode::DebuggerNotFound);
    CHECK(std::string(e.what()).find("needs gdb 14.2 or newer") != std::string::npos);
  }
  CHECK(driver.sent.empty());
  const auto r = replay(user("requirements: {debuggers: [gdb], min_version: {gdb: \"13.1\"}}\n"
                             "steps: [threads]\n"),
                        driver);
  CHECK(test::step_named(r, "threads").status == StepStatus::Ok);
}

TEST_CASE("faults: timeout, a dead debugger, a signal, an attach refused, an internal error") {
  struct Case {
    const char* on;
    Error error;
    ExitCode code;
  };
  const std::vector<Case> cases = {
      {"-stack-list-frames", Error(ExitCode::Timeout, "timed out"), ExitCode::Timeout},
      {"-stack-list-frames", Error(ExitCode::DebuggerCrashed, "gdb died"),
       ExitCode::DebuggerCrashed},
      {"-stack-list-frames", Error(static_cast<ExitCode>(143), "SIGTERM"),
       static_cast<ExitCode>(143)},
      {"-target-attach", Error(ExitCode::NoSuchProcess, "no pid", "check the pid"),
       ExitCode::NoSuchProcess},
  };
  for (const auto& c : cases) {
    INFO(c.on << " -> " << c.error.what());
    test::ReplayDriver driver(recording());
    driver.before_command = [&](const std::string& cmd) {
      if (cmd.rfind(c.on, 0) == 0) {
        throw c.error;
      }
    };
    const auto r = replay(user(R"y(
steps:
  - threads
  - backtrace:
    on_error: continue
  - mi: -list-features
    name: later
always:
  - mi: -list-features
    name: cleanup
)y"),
                          driver);
    REQUIRE(r.fatal.has_value());
    CHECK(r.exit_code() == c.code);
    CHECK(test::step_named(r, "later").status == StepStatus::NotRun);
    CHECK(driver.detach_calls >= 1);
    if (c.code == ExitCode::NoSuchProcess) {
      CHECK_FALSE(r.attached);
      CHECK(test::step_named(r, "attach (implicit)").status == StepStatus::Failed);
      CHECK(test::step_named(r, "threads").status == StepStatus::NotRun);
      CHECK(r.fatal->hint() == "check the pid");
      CHECK(test::step_named(r, "cleanup").status == StepStatus::Ok); // the debugger still answers
    } else {
      CHECK(test::step_named(r, "backtrace").status ==
            (c.code == ExitCode::Timeout ? StepStatus::TimedOut : StepStatus::Failed));
      CHECK(test::step_named(r, "cleanup").status == StepStatus::NotRun); // the session is over
    }
  }

  test::ReplayDriver driver(recording());
  driver.before_command = [](const std::string& cmd) {
    if (cmd == "-thread-info") {
      throw std::runtime_error("boom");
    }
  };
  const auto r = replay(user("steps: [threads]\n"), driver);
  REQUIRE(r.fatal.has_value());
  CHECK(r.exit_code() == ExitCode::Internal);
  CHECK(driver.detach_calls >= 1);
}

TEST_CASE("a command a --var makes unsafe is refused before the attach") {
  // A built-in-trust playbook can send anything; a user playbook with --allow-unsafe-commands
  // too. Without it, a substituted value cannot smuggle a refused command in, and the value is
  // known before the attach, so the target is never stopped for it.
  test::ReplayDriver driver(recording());
  const auto pb = user(R"y(
vars: {target: x}
steps:
  - mi: -interpreter-exec console "thread apply all ${target}"
    on_error: continue
    name: wrapped
)y");
  try {
    (void)replay(pb, driver, {{"target", "shell"}});
    FAIL("an unsafe command made by a --var was not refused");
  } catch (const Error& e) {
    CHECK(e.code() == ExitCode::BadPlaybook);
    CHECK(std::string(e.what()).find("unit.yaml:4:5: step `wrapped` would send") == 0);
    CHECK(std::string(e.what()).find("refused") != std::string::npos);
  }
  CHECK_FALSE(driver.attached);
  CHECK(count_sent(driver, "-interpreter-exec console \"thread apply") == 0);
}

TEST_CASE("with --allow-unsafe-commands the run lists the unsafe commands that ran") {
  test::ReplayDriver driver(recording());
  LoadOptions lo;
  lo.allow_unsafe_commands = true;
  const auto pb = load("steps:\n  - threads\n  - cli: info threads\n", "unit.yaml", lo);
  const auto r = replay(pb, driver);
  CHECK(r.unsafe_commands_allowed);
  CHECK(r.unsafe_commands_run.empty()); // `info threads` needed no flag
  // Its report: tests/unit/drivers/test_run_report.cpp.
}

TEST_CASE("a registered snapshot step holds the counts of the snapshot so far") {
  test::ReplayDriver driver(recording());
  const auto r = replay(user(R"y(
steps:
  - threads
  - snapshot:
    register: snap
    expect: [result.threads == 4, result.agents == 0, result.source_lines == 0]
  - mi: -list-features
    when: snap.threads == 4 and snap.waves == 0
    name: after
  - snapshot:
    name: unread
)y"),
                        driver);
  CHECK(test::step_named(r, "snapshot").status == StepStatus::Ok);
  CHECK(test::step_named(r, "after").status == StepStatus::Ok);
  CHECK(test::step_named(r, "unread").status == StepStatus::Ok);
  CHECK(test::step_named(r, "unread").message == "built after the detach");
  CHECK(r.snapshot.host_threads.size() == 4);
}

// Four ranks on H200 (fixtures/cuda-gdb/h200x4-server): cuda-gdb failed to attach to rank 2's GPU
// side, and resuming such a rank for a second sample got no answer for 30 s while the rank was
// counted stopped. The runner now detaches after the one sample; rank 0 (attached) still resumes.
TEST_CASE("no second sample after cuda-gdb failed to attach to the GPU side") {
  const std::string dir = "fixtures/cuda-gdb/h200x4-server/";
  RunOptions ro;
  ro.samples = 2;
  {
    test::ReplayDriver driver(test::read_fixture(dir + "server-rank2.rec"));
    driver.resumable = true;
    ro.pid = 1577;
    bool told = false; // a fan-out learns of it, to touch the job no more
    ro.gpu_attach_failed = [&told] { told = true; };
    const auto r = run(find_playbook("hang-triage"), driver, ro);
    ro.gpu_attach_failed = nullptr;
    CHECK(told);
    CHECK(driver.run_for_calls == 0);
    CHECK(r.samples_wanted == 1);
    CHECK_THAT(r.sampling_stopped, Catch::Contains("attach to the GPU side failed"));
    CHECK(driver.detach_calls >= 1);
    CHECK_FALSE(driver.attached);
  }
  {
    test::ReplayDriver driver(test::read_fixture(dir + "server-rank0.rec"));
    driver.resumable = true;
    ro.pid = 1575;
    const auto r = run(find_playbook("hang-triage"), driver, ro);
    CHECK(driver.run_for_calls == 1);
    CHECK(r.samples_wanted == 2);
    CHECK_FALSE(driver.attached);
  }
}
