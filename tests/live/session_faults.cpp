// Live fault injection: each ends with the right Error code and the target running again.
#include "session_target.hpp"

#include <catch2/catch.hpp>

#include <grp.h>
#include <sys/wait.h>

#include <functional>

using namespace rocplay;
using rocplay::testing::SpinTarget;
using namespace std::chrono_literals;

namespace {

// Runs `body` in a forked child and returns its wait status. The child never returns into
// Catch2: it leaves with _exit(body()).
int run_in_child(const std::function<int()>& body,
                 const std::function<void(pid_t)>& parent = nullptr) {
  const pid_t child = ::fork();
  if (child == 0) {
    int code = 70;
    try {
      code = body();
    } catch (const Error& e) {
      code = static_cast<int>(e.code());
    } catch (...) {
      code = 71;
    }
    ::_exit(code);
  }
  REQUIRE(child > 0);
  if (parent) {
    parent(child);
  }
  int status = 0;
  // Bounded: a child that hangs is killed after 60 s and the test fails.
  for (int i = 0; i < 6000; ++i) {
    if (::waitpid(child, &status, WNOHANG) == child) {
      return status;
    }
    std::this_thread::sleep_for(10ms);
  }
  ::kill(child, SIGKILL);
  ::waitpid(child, &status, 0);
  FAIL("child did not finish within 60 s");
  return status;
}

int exit_code_of(int status) {
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

void check_running(SpinTarget& target) {
  INFO("target state " << target.state());
  if (target.state() == 'Z') {
    FAIL("the target died: " << target.fate());
  }
  CHECK_FALSE(process::is_stopped(target.state()));
  const auto status = process::read_status(target.pid());
  REQUIRE(status.has_value());
  CHECK(status->tracer_pid == 0);
  CHECK(target.advances());
}

template <class F> ExitCode code_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.code();
  }
  return ExitCode::Ok;
}

std::int64_t free_pid() {
  const pid_t child = ::fork();
  if (child == 0) {
    ::_exit(0);
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  return child; // reaped: nobody has this pid now (reuse within the test is unlikely)
}

} // namespace

TEST_CASE("kill -9 of the debugger mid-session", "[live][session][faults]") {
  SpinTarget target;
  session::Session s(testing::test_gdb(), testing::test_options());
  s.attach(target.pid());
  REQUIRE(::kill(static_cast<pid_t>(s.debugger_pid()), SIGKILL) == 0);
  std::string message;
  try {
    s.execute("-thread-info");
    FAIL("execute after the debugger died must throw");
  } catch (const Error& e) {
    CHECK(e.code() == ExitCode::DebuggerCrashed);
    message = e.what();
  }
  INFO(message);
  CHECK(message.find("SIGKILL") != std::string::npos);
  CHECK(s.times().detached);
  CHECK(code_of([&] { s.execute("-thread-info"); }) == ExitCode::DebuggerCrashed);
  check_running(target);
}

TEST_CASE("a command that never gets its result times out and detaches",
          "[live][session][faults]") {
  SpinTarget target;
  auto options = testing::test_options();
  options.interrupt_grace = 5000ms;
  session::Session s(testing::test_gdb(), options);
  s.attach(target.pid());
  const auto cont = s.execute("-exec-continue");
  REQUIRE(cont.result() != nullptr);
  CHECK(cont.result()->klass() == "running");
  // Synchronous MI reads no command while the target runs: this one waits for a stop that never
  // comes.
  CHECK(code_of([&] { s.execute("-thread-info", 1000ms); }) == ExitCode::Timeout);
  CHECK(s.times().detached);
  CHECK_FALSE(s.times().left_stopped);
  CHECK(code_of([&] { s.execute("-thread-info"); }) == ExitCode::Timeout);
  check_running(target);
}

TEST_CASE("an attach past its deadline times out and detaches", "[live][session][faults]") {
  SpinTarget::Config config;
  config.spin_threads = 50;
  config.sleepy = true;
  SpinTarget target(config);
  auto options = testing::test_options();
  options.attach_timeout = 1ms;
  session::Session s(testing::test_gdb(), options);
  std::string message;
  try {
    s.attach(target.pid());
    FAIL("attach within 1 ms should not happen");
  } catch (const Error& e) {
    CHECK(e.code() == ExitCode::Timeout);
    message = e.what();
  }
  CHECK(message.find("attach") != std::string::npos);
  check_running(target);
}

TEST_CASE("a wedged debugger is killed and the target released", "[live][session][faults]") {
  SpinTarget target;
  auto options = testing::test_options();
  options.interrupt_grace = 500ms;
  session::Session s(testing::test_gdb(), options);
  s.attach(target.pid());
  // A stopped debugger answers nothing, not even SIGINT.
  REQUIRE(::kill(static_cast<pid_t>(s.debugger_pid()), SIGSTOP) == 0);
  CHECK(code_of([&] { s.execute("-thread-info", 1000ms); }) == ExitCode::Timeout);
  CHECK(s.times().detached);
  check_running(target);
}

TEST_CASE("no such process", "[live][session][faults]") {
  const auto pid = free_pid();
  session::Session s(testing::test_gdb(), testing::test_options());
  std::string message;
  try {
    s.attach(pid);
  } catch (const Error& e) {
    CHECK(e.code() == ExitCode::NoSuchProcess);
    message = e.what();
    CHECK_FALSE(e.hint().empty());
  }
  CHECK(message.find(std::to_string(pid)) != std::string::npos);
  CHECK_FALSE(s.attached());

  SECTION("and when the debugger is the one to find out") {
    auto options = testing::test_options();
    options.check_preconditions = false;
    session::Session s2(testing::test_gdb(), options);
    CHECK(code_of([&] { s2.attach(pid); }) == ExitCode::NoSuchProcess);
  }
}

TEST_CASE("ptrace refused: an unprivileged user against a root process",
          "[live][session][faults]") {
  if (::geteuid() != 0) {
    SUCCEED("needs root to drop to another user; skipped");
    return;
  }
  SpinTarget target;
  const auto dbg = testing::test_gdb();
  auto as_nobody = [&](bool precheck) {
    return [&dbg, &target, precheck] {
      // What `setpriv --reuid=65534 --regid=65534 --clear-groups` does.
      if (::setgroups(0, nullptr) != 0 || ::setresgid(65534, 65534, 65534) != 0 ||
          ::setresuid(65534, 65534, 65534) != 0) {
        return 72;
      }
      auto options = testing::test_options();
      options.check_preconditions = precheck;
      session::Session s(dbg, options);
      s.attach(target.pid());
      return 0;
    };
  };
  SECTION("found by the precondition check") {
    CHECK(exit_code_of(run_in_child(as_nobody(true))) == static_cast<int>(ExitCode::PtraceDenied));
  }
  SECTION("reported by the debugger") {
    CHECK(exit_code_of(run_in_child(as_nobody(false))) == static_cast<int>(ExitCode::PtraceDenied));
  }
  check_running(target);
}

TEST_CASE("the precondition check names the existing tracer", "[live][session][faults]") {
  SpinTarget target;
  session::Session holder(testing::test_gdb(), testing::test_options());
  holder.attach(target.pid());
  std::string message;
  try {
    session::check_attach(target.pid(), testing::test_gdb(), testing::test_options());
  } catch (const Error& e) {
    CHECK(e.code() == ExitCode::PtraceDenied);
    message = e.what();
  }
  INFO(message);
  CHECK(message.find("already traced by pid " + std::to_string(holder.debugger_pid())) !=
        std::string::npos);
  holder.detach();
  check_running(target);
}

TEST_CASE("HSA_TOOLS_LIB in the target: rocgdb would see no dispatches", "[live][session]") {
  SpinTarget::Config config;
  config.extra_env = {"HSA_TOOLS_LIB=librocm-debug-agent.so.2"};
  SpinTarget target(config);
  session::Debugger rocgdb = testing::test_gdb();
  rocgdb.kind = DebuggerKind::RocGdb;
  const auto options = testing::test_options();

  CHECK(code_of([&] { session::check_attach(target.pid(), rocgdb, options); }) ==
        ExitCode::HookHeld);

  auto allow = options;
  allow.allow_hook_held = true;
  std::vector<std::string> warnings;
  const auto info = session::check_attach(target.pid(), rocgdb, allow, &warnings);
  CHECK(info.env.at("HSA_TOOLS_LIB") == "librocm-debug-agent.so.2");
  REQUIRE(warnings.size() == 1);
  CHECK(warnings[0].find("HSA_TOOLS_LIB") != std::string::npos);

  // Plain gdb sees host threads only anyway: no error.
  CHECK(code_of([&] { session::check_attach(target.pid(), testing::test_gdb(), options); }) ==
        ExitCode::Ok);

  // Through a Session: refused before anything stops the target.
  session::Session s(rocgdb, options);
  CHECK(code_of([&] { s.attach(target.pid()); }) == ExitCode::HookHeld);
  CHECK_FALSE(s.attached());
  check_running(target);
}

TEST_CASE("a target stopped behind the debugger's back gets SIGCONT", "[live][session][faults]") {
  SpinTarget target;
  session::Session s(testing::test_gdb(), testing::test_options());
  s.attach(target.pid());
  // A SIGSTOP queued while traced is delivered after detach: the classic "left stopped".
  REQUIRE(::kill(static_cast<pid_t>(target.pid()), SIGSTOP) == 0);
  s.detach();
  INFO("left_stopped=" << s.times().left_stopped);
  if (s.times().left_stopped) {
    bool loud = false;
    for (const auto& w : s.warnings()) {
      loud = loud || w.find("TARGET LEFT STOPPED") != std::string::npos;
    }
    CHECK(loud);
  }
  check_running(target);
}

TEST_CASE("a target already stopped before attach is left as it was", "[live][session]") {
  SpinTarget target;
  REQUIRE(::kill(static_cast<pid_t>(target.pid()), SIGSTOP) == 0);
  for (int i = 0; i < 100 && !process::is_stopped(target.state()); ++i) {
    std::this_thread::sleep_for(5ms);
  }
  REQUIRE(process::is_stopped(target.state()));
  {
    session::Session s(testing::test_gdb(), testing::test_options());
    s.attach(target.pid());
    s.detach();
    CHECK_FALSE(s.times().left_stopped);
    bool noted = false;
    for (const auto& w : s.warnings()) {
      noted = noted || w.find("already stopped before") != std::string::npos;
    }
    CHECK(noted);
    CHECK(process::is_stopped(s.times().state_after));
    CHECK(process::is_stopped(target.state()));
  }
  ::kill(static_cast<pid_t>(target.pid()), SIGCONT);
  check_running(target);
}

namespace {

// A rocplay-like child: signal guard, session, attach, then commands until a signal ends it.
// The parent sends `sig` once the target has a tracer (the attach is under way).
void signal_during_attach(int sig) {
  SpinTarget::Config config;
  config.spin_threads = 200; // a longer attach, so the signal lands inside it
  config.sleepy = true;
  SpinTarget target(config);
  const auto dbg = testing::test_gdb();
  const auto target_pid = target.pid();
  bool traced_when_sent = false;
  const int status = run_in_child(
      [&] {
        session::install_signal_guard();
        session::Session s(dbg, testing::test_options());
        s.attach(target_pid);
        const auto deadline = std::chrono::steady_clock::now() + 20s;
        while (std::chrono::steady_clock::now() < deadline) {
          s.execute("-thread-info");
        }
        return 0;
      },
      [&](pid_t child) {
        for (int i = 0; i < 20000; ++i) {
          const auto st = process::read_status(target_pid);
          if (st && st->tracer_pid.value_or(0) != 0) {
            traced_when_sent = true;
            break;
          }
          std::this_thread::sleep_for(1ms);
        }
        ::kill(child, sig);
      });
  CHECK(traced_when_sent);
  CHECK(exit_code_of(status) == 128 + sig);
  check_running(target);
}

} // namespace

TEST_CASE("SIGINT to rocplay during attach: detach, then exit 130", "[live][session][faults]") {
  signal_during_attach(SIGINT);
}

TEST_CASE("SIGTERM to rocplay during attach: detach, then exit 143", "[live][session][faults]") {
  signal_during_attach(SIGTERM);
}

TEST_CASE("SIGHUP to rocplay mid-session: detach, then exit 129", "[live][session][faults]") {
  SpinTarget target;
  const auto dbg = testing::test_gdb();
  const auto target_pid = target.pid();
  int ready[2];
  REQUIRE(::pipe(ready) == 0);
  const int status = run_in_child(
      [&] {
        ::close(ready[0]);
        session::install_signal_guard();
        session::Session s(dbg, testing::test_options());
        s.attach(target_pid);
        const char byte = 'r';
        if (::write(ready[1], &byte, 1) != 1) {
          return 73;
        }
        const auto deadline = std::chrono::steady_clock::now() + 20s;
        while (std::chrono::steady_clock::now() < deadline) {
          s.execute("-thread-info");
        }
        return 0;
      },
      [&](pid_t child) {
        ::close(ready[1]);
        char byte = 0;
        CHECK(::read(ready[0], &byte, 1) == 1);
        ::close(ready[0]);
        ::kill(child, SIGHUP);
      });
  CHECK(exit_code_of(status) == 129);
  check_running(target);
}
