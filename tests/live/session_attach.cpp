// Live: a real gdb attached to tests/targets/spin_target through rocplay::session::Session.
#include "session_target.hpp"

#include "../../mi/tests/same_exchanges.hpp" // shared with mi's own exchange tests
#include "rocplay/mi/transcript.hpp"

#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

using namespace rocplay;
using rocplay::testing::SpinTarget;

namespace {

struct ThreadRow {
  std::string id;
  std::string func;
  std::string file;
  std::optional<std::uint64_t> pc;
  std::optional<std::int64_t> line;
};

std::vector<ThreadRow> thread_rows(const mi::Exchange& ex) {
  std::vector<ThreadRow> rows;
  const auto* r = ex.result();
  REQUIRE(r != nullptr);
  for (const auto t : r->results()["threads"]) {
    ThreadRow row;
    row.id = t["id"].text();
    row.func = t["frame"]["func"].text();
    row.file = t["frame"]["file"].text();
    row.pc = t["frame"]["addr"].as_address().to_optional();
    row.line = t["frame"]["line"].as_i64().to_optional();
    rows.push_back(row);
  }
  return rows;
}

} // namespace

TEST_CASE("attach, read threads, map their PC to the source line, detach", "[live][session]") {
  SpinTarget target;
  const int spin_line = testing::target_source_line("rocplay-test: spin line");
  const auto dbg = testing::test_gdb();
  CHECK(dbg.kind == DebuggerKind::Gdb);

  std::vector<std::string> warnings;
  {
    session::Session s(dbg, testing::test_options());
    CHECK(s.mi_version() == 3);
    CHECK_FALSE(s.features().empty());
    CHECK_FALSE(s.has_mi_command("agent-info")); // plain gdb has no ROCgdb MI commands

    s.attach(target.pid());
    CHECK(s.attached());
    CHECK(s.pid() == target.pid());
    REQUIRE(s.times().attach_seconds.has_value());
    CHECK(process::is_stopped(target.state()));
    CHECK(s.target().comm == "spin_target");

    const auto threads = s.execute("-thread-info");
    REQUIRE(threads.result() != nullptr);
    CHECK(threads.result()->klass() == "done");
    const auto rows = thread_rows(threads);
    // main + 2 spinning + 1 blocked on the condition variable
    CHECK(rows.size() == 4);
    std::set<std::uint64_t> spin_pcs;
    int spinning = 0;
    for (const auto& row : rows) {
      if (row.func.find("start_sync") != std::string::npos) {
        ++spinning;
        CHECK(row.line == spin_line);
        CHECK(row.file.find("spin_target.cpp") != std::string::npos);
        REQUIRE(row.pc.has_value());
        spin_pcs.insert(*row.pc);
      }
    }
    CHECK(spinning == 2);

    // `info line *PC` once per unique PC points at the spin line.
    for (const auto pc : spin_pcs) {
      char cmd[64];
      std::snprintf(cmd, sizeof cmd, "info line *0x%llx", static_cast<unsigned long long>(pc));
      const auto ex = s.console(cmd);
      REQUIRE(ex.result() != nullptr);
      CHECK(ex.result()->klass() == "done");
      const std::string text = ex.console();
      INFO(text);
      CHECK(text.find("Line " + std::to_string(spin_line) + " of \"") != std::string::npos);
      CHECK(text.find("spin_target.cpp") != std::string::npos);
    }

    // The blocked thread's stack reaches blocked_on_condition.
    const auto bt = s.console("thread apply all bt 20");
    CHECK(bt.console().find("blocked_on_condition") != std::string::npos);

    s.detach();
    CHECK(s.times().detached);
    CHECK_FALSE(s.times().left_stopped);
    REQUIRE(s.times().stop_seconds.has_value());
    CHECK(*s.times().stop_seconds >= *s.times().attach_seconds);
    s.detach(); // idempotent
    warnings = s.warnings();
  }
  // gdb's libthread_db notices are known-benign: one summary line, not two warnings.
  int noise_lines = 0;
  for (const auto& w : warnings) {
    INFO(w);
    CHECK(w.find("Thread debugging using") == std::string::npos);
    if (w.rfind("suppressed ", 0) == 0) {
      ++noise_lines;
      CHECK(w.find("libthread_db") != std::string::npos);
    }
  }
  CHECK(noise_lines == 1);
  CHECK_FALSE(process::is_stopped(target.state()));
  CHECK(target.advances());
  // The target measured its own stop: a gap of at least the attach.
  CHECK(target.max_gap_seconds() > 0.0);
}

TEST_CASE("the destructor detaches when the caller forgets", "[live][session]") {
  SpinTarget target;
  {
    session::Session s(testing::test_gdb(), testing::test_options());
    s.attach(target.pid());
    CHECK(process::is_stopped(target.state()));
  }
  CHECK_FALSE(process::is_stopped(target.state()));
  CHECK(target.advances());
}

TEST_CASE("a recording replays into the same exchanges", "[live][session][transcript]") {
  SpinTarget target;
  char path[] = "/tmp/rocplay-record-XXXXXX";
  const int fd = ::mkstemp(path);
  REQUIRE(fd >= 0);
  ::close(fd);
  auto options = testing::test_options();
  options.record_path = path;
  options.rank = 3;
  options.worker_pids = {4301, 4302};
  std::vector<mi::Exchange> live;
  {
    session::Session s(testing::test_gdb(), options);
    s.attach(target.pid());
    s.execute("-thread-info");
    s.console("info line start_sync");
    s.execute("-this-command-does-not-exist"); // an ^error is recorded too
    s.detach();
    live = s.exchanges();
  }
  const std::string text = testing::read_file(path);
  ::unlink(path);
  REQUIRE(text.rfind("# rocplay-transcript 1\n", 0) == 0);
  CHECK(text.find("# meta {") != std::string::npos);
  CHECK(text.find("\"rank\":3") != std::string::npos);
  CHECK(text.find("\"worker_pids\":[4301,4302]") != std::string::npos);
  CHECK(text.find("\"pid\":" + std::to_string(target.pid())) != std::string::npos);

  mi::TranscriptInfo info;
  const auto replay = mi::read_transcript(text, &info);
  CHECK(info.format == mi::TranscriptFormat::Recording);
  CHECK(info.parse_errors == 0);
  CHECK_FALSE(info.truncated);
  CHECK(info.meta_json.find("\"kind\":\"gdb\"") != std::string::npos);
  // Compare up to detach's result: what gdb wrote after it (=library-unloaded) may have been read
  // only after `live` was copied, by the destructor's -gdb-exit.
  std::size_t upto = 0;
  for (std::size_t i = 0; i < live.size(); ++i) {
    if (live[i].command == "-target-detach") {
      upto = i + 1;
    }
  }
  REQUIRE(upto > 0);
  mi::testing::check_same_exchanges(live, replay, upto);
  // The attach command and its stop are both there.
  bool saw_attach = false;
  bool saw_stopped = false;
  for (const auto& ex : replay) {
    saw_attach = saw_attach || ex.command.rfind("-target-attach ", 0) == 0;
    for (const auto& r : ex.records) {
      saw_stopped = saw_stopped || (r.kind() == mi::RecordKind::Exec && r.klass() == "stopped");
    }
  }
  CHECK(saw_attach);
  CHECK(saw_stopped);
  CHECK(target.advances());
}

TEST_CASE("fast attach skips shared-library symbols", "[live][session]") {
  SpinTarget target;
  auto options = testing::test_options();
  options.fast_attach = true;
  session::Session s(testing::test_gdb(), options);
  s.attach(target.pid());
  const auto ex = s.execute("-thread-info");
  REQUIRE(ex.result() != nullptr);
  CHECK(ex.result()->klass() == "done");
  // The executable's own symbols are still there.
  CHECK(ex.result()->line().find("start_sync") != std::string_view::npos);
  s.detach();
  CHECK(target.advances());
}

TEST_CASE("the target's environment is read before attaching", "[live][session]") {
  SpinTarget::Config config;
  config.extra_env = {"RANK=5", "LOCAL_RANK=1", "WORLD_SIZE=8", "HIP_VISIBLE_DEVICES=1",
                      "SECRET_TOKEN=do-not-copy"};
  SpinTarget target(config);
  session::Session s(testing::test_gdb(), testing::test_options());
  s.attach(target.pid());
  const auto& env = s.target().env;
  CHECK(env.at("RANK") == "5");
  CHECK(env.at("LOCAL_RANK") == "1");
  CHECK(env.at("WORLD_SIZE") == "8");
  CHECK(env.at("HIP_VISIBLE_DEVICES") == "1");
  CHECK(env.count("SECRET_TOKEN") == 0);
  s.detach();
}

TEST_CASE("detach, kill and quit go through the session", "[live][session]") {
  SpinTarget target;
  session::Session s(testing::test_gdb(), testing::test_options());
  s.attach(target.pid());
  auto code_of = [](auto&& f) {
    try {
      f();
    } catch (const Error& e) {
      return e.code();
    }
    return ExitCode::Ok;
  };
  CHECK(code_of([&] { s.console("kill"); }) == ExitCode::BadPlaybook);
  CHECK(code_of([&] { s.execute("-interpreter-exec console \"quit\""); }) == ExitCode::BadPlaybook);
  CHECK(code_of([&] { s.execute("-gdb-exit"); }) == ExitCode::BadPlaybook);
  CHECK(process::is_stopped(target.state())); // still attached, nothing happened
  // A playbook's own detach takes the session's path: the session knows it is detached.
  const auto ex = s.execute("-target-detach");
  REQUIRE(ex.result() != nullptr);
  CHECK(ex.result()->klass() == "done");
  CHECK_FALSE(s.attached());
  CHECK(s.times().detached);
  CHECK(target.advances());
}

TEST_CASE("a debugger that refuses mi3 is spoken to in mi2", "[live][session]") {
  char dir_tmpl[] = "/tmp/rocplay-mi2-XXXXXX";
  const char* dir = ::mkdtemp(dir_tmpl);
  REQUIRE(dir != nullptr);
  const std::string wrapper = std::string(dir) + "/old-gdb";
  {
    std::ofstream out(wrapper);
    // An older GDB's answer to an interpreter it does not know, then the real gdb for mi2.
    out << "#!/bin/sh\n"
        << "for a in \"$@\"; do\n"
        << "  if [ \"$a\" = --interpreter=mi3 ]; then\n"
        << "    echo \"Interpreter \\`mi3' unrecognized\" >&2; exit 1\n"
        << "  fi\n"
        << "done\n"
        << "exec " << testing::test_gdb().path << " \"$@\"\n";
  }
  ::chmod(wrapper.c_str(), 0755);
  session::Debugger old = testing::test_gdb();
  old.path = wrapper;
  SpinTarget target;
  {
    session::Session s(old, testing::test_options());
    CHECK(s.mi_version() == 2);
    s.attach(target.pid());
    const auto ex = s.execute("-thread-info");
    REQUIRE(ex.result() != nullptr);
    CHECK(ex.result()->klass() == "done");
    s.detach();
  }
  ::unlink(wrapper.c_str());
  ::rmdir(dir);
  CHECK(target.advances());
}

TEST_CASE("run_for: waiting for the interval to begin (a lockstep) lets the target run",
          "[live][session]") {
  SpinTarget target;
  session::Session s(testing::test_gdb(), testing::test_options());
  s.attach(target.pid());
  REQUIRE(process::is_stopped(target.state()));
  using Clock = std::chrono::steady_clock;
  std::optional<Clock::time_point> asked_first;
  std::uint64_t counter_at_first = 0;
  std::uint64_t counter_at_start = 0;
  bool stopped_while_waiting = false;
  // A lockstep whose last target arrives 400 ms later: the target must run all along.
  const session::IntervalStart start = [&]() -> std::optional<Clock::time_point> {
    const auto now = Clock::now();
    if (!asked_first) {
      asked_first = now;
      counter_at_first = target.counter();
      return std::nullopt;
    }
    if (now - *asked_first >= std::chrono::milliseconds(100)) {
      stopped_while_waiting = stopped_while_waiting || process::is_stopped(target.state());
    }
    if (now - *asked_first < std::chrono::milliseconds(400)) {
      return std::nullopt;
    }
    counter_at_start = target.counter();
    return now;
  };
  const session::ResumeResult r =
      s.run_for(std::chrono::milliseconds(200), std::chrono::seconds(10), start);
  CHECK_FALSE(r.exited);
  CHECK(r.interrupted_at > 0);
  CHECK(r.stopped_at - r.resumed_at >= 0.55); // the wait, then the whole interval
  CHECK_FALSE(stopped_while_waiting);
  CHECK(counter_at_start > counter_at_first + 2);
  CHECK(process::is_stopped(target.state()));
  s.detach();
  CHECK(target.advances());
  // The run is one window of the target's account, left out of its stop.
  const auto& t = s.times();
  REQUIRE(t.run_windows.size() == 1);
  CHECK(t.run_windows[0].second - t.run_windows[0].first >= 0.55);
  REQUIRE(t.stop_seconds.has_value());
  CHECK(*t.stop_seconds < *t.total_seconds - 0.55);
}

TEST_CASE("the debugger keeps no descriptor of rocplay's but its stdio", "[live][session]") {
  // Two targets' sessions start their debuggers from two threads. A descriptor of one launch
  // that the other's debugger kept (Boost 1.81 leaves every descriptor below its own launch pipe
  // open across the exec) held the first launch until the second debugger quit: in a node of
  // `--slurm-job`, both ranks waited on each other until the run's bound ended them.
  int leak[2] = {-1, -1};
  REQUIRE(::pipe(leak) == 0);
  struct stat st {};
  REQUIRE(::fstat(leak[1], &st) == 0);
  const std::string pipe_name = "pipe:[" + std::to_string(st.st_ino) + "]";
  std::vector<std::string> held;
  {
    session::Session s(testing::test_gdb(), testing::test_options());
    const std::string fd_dir = "/proc/" + std::to_string(s.debugger_pid()) + "/fd";
    for (const auto& e : std::filesystem::directory_iterator(fd_dir)) {
      std::error_code ec;
      held.push_back(std::filesystem::read_symlink(e.path(), ec).string());
    }
  }
  ::close(leak[0]);
  ::close(leak[1]);
  CHECK(held.size() >= 3);
  for (const auto& h : held) {
    INFO(h);
    CHECK(h != pipe_name);
  }
}
