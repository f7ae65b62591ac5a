// Playbooks against a real process with Debian's gdb: what the snapshot holds afterwards, that
// `info line` is asked once per unique PC and points at the right lines, and that the target is
// running again after every run, whatever happened in it.
#include "rocplay/playbook/playbook.hpp"
#include "rocplay/snapshot/frames.hpp"
#include "session_target.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <set>
#include <thread>

using namespace rocplay;
using namespace rocplay::testing;
using playbook::StepKind;
using playbook::StepStatus;

namespace {

struct Ran {
  playbook::RunResult result;
  std::vector<mi::Exchange> exchanges;
};

Ran run_playbook(const playbook::Playbook& pb, std::int64_t pid,
                 session::Options options = test_options(),
                 std::vector<std::pair<std::string, std::string>> vars = {}) {
  session::Session s(test_gdb(), options);
  auto driver = playbook::make_driver(s);
  playbook::RunOptions ro;
  ro.pid = pid;
  ro.vars = std::move(vars);
  Ran r{playbook::run(pb, *driver, ro), {}};
  r.exchanges = s.exchanges();
  return r;
}

playbook::Playbook user_playbook(const std::string& yaml, bool allow_unsafe = false) {
  playbook::LoadOptions o;
  o.allow_unsafe_commands = allow_unsafe;
  return playbook::load(yaml, "live.yaml", o);
}

const playbook::StepRecord* step_named(const playbook::RunResult& r, const std::string& name) {
  for (const auto& s : r.steps) {
    if (s.name == name) {
      return &s;
    }
  }
  return nullptr;
}

bool in_start_sync(const HostThread& t) {
  return !t.frames.empty() && t.frames.front().function.find("start_sync") != std::string::npos;
}

} // namespace

TEST_CASE("host-stacks: every thread, its PC and stack, info line at the spin line") {
  SpinTarget target;
  const int spin_line = target_source_line("rocplay-test: spin line");
  const int blocked_line = target_source_line("rocplay-test: blocked line");
  const auto ran = run_playbook(playbook::find_playbook("host-stacks"), target.pid());
  const auto& r = ran.result;
  const Snapshot& snap = r.snapshot;

  INFO(snap.warnings.size() << " snapshot warnings; fatal: "
                            << (r.fatal ? r.fatal->what() : "none"));
  REQUIRE_FALSE(r.fatal.has_value());
  CHECK(r.attached);
  CHECK(r.times.detached);
  CHECK_FALSE(r.times.left_stopped);
  CHECK(r.times.stop_seconds.has_value());
  for (const auto& s : r.steps) {
    INFO(s.name << ": " << playbook::to_string(s.status) << " " << s.message);
    CHECK((s.status == StepStatus::Ok || s.name == "detach (implicit)"));
  }
  CHECK(r.exit_code() != ExitCode::StepFailed);

  // main + 2 spinning + 1 blocked.
  REQUIRE(snap.host_threads.size() == 4);
  std::vector<const HostThread*> spinning;
  for (const auto& t : snap.host_threads) {
    if (in_start_sync(t)) {
      spinning.push_back(&t);
    }
    CHECK(t.lwp.has_value());
    CHECK_FALSE(t.frames.empty());
  }
  REQUIRE(spinning.size() == 2);
  for (const HostThread* t : spinning) {
    const Frame& top = t->frames.front();
    REQUIRE(top.pc.has_value());
    CHECK(top.file.ends_with("spin_target.cpp"));
    CHECK(top.line == std::optional<std::uint32_t>(spin_line));
    // info line of that PC: the same line, the same function.
    const SourceLine* sl = snap.source_line(*top.pc);
    REQUIRE(sl != nullptr);
    CHECK(sl->line == std::optional<std::uint32_t>(spin_line));
    CHECK(sl->file.ends_with("spin_target.cpp"));
    // The caller is spin_main.
    REQUIRE(t->frames.size() >= 2);
    CHECK(t->frames[1].function.find("spin_main") != std::string::npos);
  }
  // The blocked thread waits in blocked_on_condition, at the marked line.
  bool blocked_found = false;
  for (const auto& t : snap.host_threads) {
    for (const auto& f : t.frames) {
      // (std::condition_variable::wait<...blocked_on_condition()::<lambda()>> is the frame above)
      if (f.function.ends_with("blocked_on_condition")) {
        blocked_found = true;
        CHECK(f.line == std::optional<std::uint32_t>(blocked_line));
      }
    }
  }
  CHECK(blocked_found);

  // `info line` once per unique PC, never once per thread.
  std::vector<std::string> asked;
  for (const auto& ex : ran.exchanges) {
    if (ex.command.find("info line *") != std::string::npos) {
      asked.push_back(ex.command);
    }
  }
  const std::set<std::string> unique(asked.begin(), asked.end());
  CHECK(unique.size() == asked.size());
  std::set<std::uint64_t> top_pcs;
  for (const auto& t : snap.host_threads) {
    for (std::size_t i = 0; i < t.frames.size() && i < 3; ++i) {
      if (auto pc = t.lookup_pc(i)) { // callers at PC - 1, the call
        top_pcs.insert(*pc);
      }
    }
    // And the innermost frame of the target's own code with its caller.
    if (const Frame* user = innermost_user_frame(t)) {
      const auto u = static_cast<std::size_t>(user - t.frames.data());
      for (std::size_t i : {u, u + 1}) {
        if (auto pc = t.lookup_pc(i)) {
          top_pcs.insert(*pc);
        }
      }
    }
  }
  CHECK(asked.size() == top_pcs.size());
  // (The two spinning threads sit on one line, but a loop of a few instructions: their PCs may
  // differ, so the count of lookups is checked against the unique PCs above, not a number.)
  // One -stack-list-frames per host thread.
  std::size_t stacks = 0;
  for (const auto& ex : ran.exchanges) {
    stacks += ex.command.rfind("-stack-list-frames --thread ", 0) == 0 ? 1 : 0;
  }
  CHECK(stacks == snap.host_threads.size());

  require_running_again(target);
}

TEST_CASE("hang-triage with gdb: GPU steps skipped by requires/when, the rest runs") {
  SpinTarget target;
  const auto ran = run_playbook(playbook::find_playbook("hang-triage"), target.pid());
  const auto& r = ran.result;
  REQUIRE_FALSE(r.fatal.has_value());
  const auto* agents = step_named(r, "GPU agents");
  REQUIRE(agents != nullptr);
  CHECK(agents->status == StepStatus::Skipped);
  CHECK(agents->message == "when: has_mi_command(agent-info)");
  const auto* console_agents = step_named(r, "GPU agents (console)");
  REQUIRE(console_agents != nullptr);
  CHECK(console_agents->status == StepStatus::Skipped);
  CHECK(console_agents->message == "requires rocgdb");
  const auto* cuda = step_named(r, "CUDA kernels");
  REQUIRE(cuda != nullptr);
  CHECK(cuda->status == StepStatus::Skipped);
  for (const char* name : {"threads", "source lines", "host backtraces", "snapshot"}) {
    const auto* s = step_named(r, name);
    REQUIRE(s != nullptr);
    INFO(name << ": " << s->message);
    CHECK(s->status == StepStatus::Ok);
  }
  // Nothing GPU-side was sent to gdb.
  for (const auto& ex : ran.exchanges) {
    CHECK(ex.command.find("-agent-info") == std::string::npos);
    CHECK(ex.command.find("cuda") == std::string::npos);
  }
  CHECK(r.snapshot.host_threads.size() == 4);
  CHECK(r.snapshot.pid == std::optional<std::int64_t>(target.pid()));
  CHECK(r.snapshot.debugger == DebuggerKind::Gdb);
  CHECK(r.times.attach_seconds.has_value());
  require_running_again(target);
}

TEST_CASE("foreach with where, register and expect, against the live threads") {
  SpinTarget target;
  const auto pb = user_playbook(R"y(
vars:
  depth: 2
steps:
  - threads
  - foreach: threads
    where: thread.function startswith "start_sync"
    register: loop
    steps:
      - cli: thread ${thread.id}
      - mi: -stack-list-frames --thread ${thread.id} 0 ${depth}
        register: frames
        expect:
          - result.class == "done"
          - len(result.results.stack) == 3
          - result.results.stack.0.func startswith "start_sync"
  - mi: -thread-info
    register: all
    expect: len(result.results.threads) == 4
always:
  - cli: info threads
    when: loop.matched == 2
    register: info
)y");
  const auto ran = run_playbook(pb, target.pid());
  const auto& r = ran.result;
  REQUIRE_FALSE(r.fatal.has_value());
  CHECK_FALSE(r.aborted);
  const auto* loop = step_named(r, "foreach threads");
  REQUIRE(loop != nullptr);
  CHECK(loop->status == StepStatus::Ok);
  int bodies = 0;
  for (const auto& s : r.steps) {
    if (s.depth == 1) {
      ++bodies;
      INFO(s.name << " " << s.item << ": " << s.message);
      CHECK(s.status == StepStatus::Ok);
      CHECK(s.item.rfind("thread ", 0) == 0);
    }
  }
  CHECK(bodies == 4); // two steps for each of the two spinning threads
  const auto* info = step_named(r, "info threads");
  REQUIRE(info != nullptr);
  CHECK(info->status == StepStatus::Ok); // loop.matched == 2 held
  std::size_t selects = 0;
  for (const auto& ex : ran.exchanges) {
    selects += ex.command.find("\"thread ") != std::string::npos ? 1 : 0;
  }
  CHECK(selects == 2);
  require_running_again(target);
}

TEST_CASE("a failing step aborts by default and always and detach still run") {
  SpinTarget target;
  const auto pb = user_playbook(R"y(
steps:
  - mi: -no-such-command
    name: bad
  - threads
always:
  - mi: -list-features
    name: cleanup
)y");
  const auto r = run_playbook(pb, target.pid()).result;
  CHECK(r.aborted);
  CHECK(r.exit_code() == ExitCode::StepFailed);
  const auto* bad = step_named(r, "bad");
  REQUIRE(bad != nullptr);
  CHECK(bad->status == StepStatus::Failed);
  CHECK(bad->message.find("no-such-command") != std::string::npos);
  CHECK(step_named(r, "threads")->status == StepStatus::NotRun);
  CHECK(step_named(r, "cleanup")->status == StepStatus::Ok);
  CHECK(step_named(r, "detach (implicit)")->status == StepStatus::Ok);
  CHECK(r.times.detached);
  require_running_again(target);
}

TEST_CASE("on_error: continue records the failure and goes on, expect and fail_when decide") {
  SpinTarget target;
  const auto pb = user_playbook(R"y(
steps:
  - mi: -no-such-command
    name: ignored
    on_error: continue
  - mi: -thread-info
    name: fail_when holds
    fail_when: len(result.results.threads) > 1
    on_error: continue
  - mi: -no-such-command
    name: error expected
    fail_when: result.class != "error"
  - threads
)y");
  const auto r = run_playbook(pb, target.pid()).result;
  CHECK_FALSE(r.aborted);
  CHECK(step_named(r, "ignored")->status == StepStatus::Ignored);
  CHECK(step_named(r, "fail_when holds")->status == StepStatus::Ignored);
  CHECK(step_named(r, "fail_when holds")->message.find("fail_when holds") != std::string::npos);
  CHECK(step_named(r, "error expected")->status == StepStatus::Ok);
  CHECK(step_named(r, "threads")->status == StepStatus::Ok);
  CHECK(r.exit_code() != ExitCode::StepFailed);
  require_running_again(target);
}

TEST_CASE("a step past its deadline ends the run with Timeout and the target runs again") {
  SpinTarget target;
  const auto pb = user_playbook(R"y(
steps:
  - threads
  - cli: shell sleep 20
    name: slow
    timeout: 500ms
  - threads:
    name: after
)y",
                                true);
  const auto start = std::chrono::steady_clock::now();
  const auto r = run_playbook(pb, target.pid()).result;
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(15));
  const auto* slow = step_named(r, "slow");
  REQUIRE(slow != nullptr);
  CHECK(slow->status == StepStatus::TimedOut);
  CHECK(step_named(r, "after")->status == StepStatus::NotRun);
  REQUIRE(r.fatal.has_value());
  CHECK(r.exit_code() == ExitCode::Timeout);
  require_running_again(target);
}

TEST_CASE("kill -9 of the debugger mid-playbook: DebuggerCrashed, the target runs again") {
  SpinTarget target;
  const auto pb = user_playbook(R"y(
steps:
  - threads
  - cli: python import time; time.sleep(20)
    name: slow
  - threads:
    name: after
always:
  - mi: -list-features
    name: cleanup
)y",
                                true);
  session::Session s(test_gdb(), test_options());
  auto driver = playbook::make_driver(s);
  playbook::RunOptions ro;
  ro.pid = target.pid();
  const std::int64_t gdb_pid = s.debugger_pid();
  ro.progress = [&](const playbook::StepRecord& rec, bool done) {
    if (!done && rec.name == "slow") {
      std::thread([gdb_pid] {
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
        ::kill(static_cast<pid_t>(gdb_pid), SIGKILL);
      }).detach();
    }
  };
  const auto r = playbook::run(pb, *driver, ro);
  REQUIRE(r.fatal.has_value());
  CHECK(r.exit_code() == ExitCode::DebuggerCrashed);
  CHECK(step_named(r, "slow")->status == StepStatus::Failed);
  CHECK(step_named(r, "after")->status == StepStatus::NotRun);
  CHECK(step_named(r, "cleanup")->status == StepStatus::NotRun);
  require_running_again(target);
}

TEST_CASE("a process that does not exist: NoSuchProcess, nothing runs") {
  // A child that exited and was reaped: its pid names no process.
  const pid_t child = ::fork();
  if (child == 0) {
    ::_exit(0);
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  const auto r = run_playbook(playbook::find_playbook("host-stacks"), child).result;
  REQUIRE(r.fatal.has_value());
  CHECK(r.exit_code() == ExitCode::NoSuchProcess);
  CHECK_FALSE(r.attached);
  CHECK(step_named(r, "threads")->status == StepStatus::NotRun);
}

TEST_CASE("requirements and --var are checked before attaching") {
  SpinTarget target;
  target.reset_max_gap();
  session::Session s(test_gdb(), test_options());
  auto driver = playbook::make_driver(s);
  playbook::RunOptions ro;
  ro.pid = target.pid();
  try {
    (void)playbook::run(playbook::find_playbook("gpu-state"), *driver, ro);
    FAIL("gpu-state ran under gdb");
  } catch (const Error& e) {
    CHECK(e.code() == ExitCode::DebuggerNotFound);
    CHECK(e.hint().find("--debugger rocgdb") != std::string::npos);
  }
  ro.vars = {{"depht", "3"}};
  const auto pb = user_playbook("vars: {depth: 2}\nsteps: [threads]\n");
  try {
    (void)playbook::run(pb, *driver, ro);
    FAIL("unknown --var accepted");
  } catch (const Error& e) {
    CHECK(e.code() == ExitCode::Usage);
    CHECK(e.hint().find("did you mean `depth`?") != std::string::npos);
  }
  ro.vars = {{"depth", "two"}};
  CHECK_THROWS_AS(playbook::run(pb, *driver, ro), Error);
  for (const auto& ex : s.exchanges()) { // start-up only: never attached
    CHECK(ex.command.rfind("-target-attach", 0) == std::string::npos);
  }
  CHECK_FALSE(s.attached());
  CHECK(target.max_gap_seconds() < 0.5);
}

TEST_CASE("functions in the target cannot be called from a user playbook's expressions") {
  SpinTarget target;
  const auto pb = user_playbook(R"y(
steps:
  - mi: -data-evaluate-expression getpid()
    name: call
    register: call
    on_error: continue
)y");
  const auto r = run_playbook(pb, target.pid()).result;
  const auto* call = step_named(r, "call");
  REQUIRE(call != nullptr);
  CHECK(call->status == StepStatus::Ignored);
  require_running_again(target);
}

TEST_CASE("a run ends the debugger right after the detach, before the session ends") {
  SpinTarget target;
  session::Session s(test_gdb(), test_options());
  auto driver = playbook::make_driver(s);
  const std::int64_t gdb = s.debugger_pid();
  REQUIRE(gdb > 0);
  playbook::RunOptions ro;
  ro.pid = target.pid();
  const auto r = playbook::run(playbook::find_playbook("host-stacks"), *driver, ro);
  REQUIRE_FALSE(r.fatal.has_value());
  CHECK(r.times.detached);
  // Gone and reaped while the session object still lives: its exit overlapped the analysis.
  CHECK(::kill(static_cast<pid_t>(gdb), 0) == -1);
  const auto& ex = s.exchanges();
  std::vector<std::string> commands;
  for (const auto& e : ex) {
    if (!e.command.empty()) {
      commands.push_back(e.command);
    }
  }
  REQUIRE(commands.size() >= 2);
  CHECK(commands.back().find("-gdb-exit") != std::string::npos);
  CHECK(commands[commands.size() - 2].find("-target-detach") != std::string::npos);
  CHECK(target.advances()); // and the target goes on
}
