// Stops by copy (`stop: copy`, `--stop copy`; rocplay/capture/capture.hpp) with Debian's gdb
// against real processes: rocplay holds the threads only while it copies them and gdb reads the
// copy as a core file. The snapshot must be the one an attach gives (threads, names, stacks,
// mutex owners), every thread must run again, and the report must say how the target was held.
#include "cli_util.hpp"
#include "rocplay/playbook/playbook.hpp"
#include "rocplay/session/process.hpp"
#include "session_target.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>

#include <map>
#include <thread>

// No `using namespace rocplay`: the unity build puts this file beside others with their own
// `Frame`.
namespace mi = rocplay::mi;
namespace playbook = rocplay::playbook;
namespace session = rocplay::session;
using rocplay::HostThread;
using rocplay::playbook::RunResult;
using rocplay::testing::DeadlockTarget;
using rocplay::testing::require_running_again;
using rocplay::testing::run_rocplay;
using rocplay::testing::SpinTarget;
using rocplay::testing::test_gdb;
using rocplay::testing::test_options;

namespace {

RunResult triage(std::int64_t pid, playbook::StopMode stop, std::uint32_t samples,
                 std::vector<mi::Exchange>* exchanges = nullptr) {
  session::Session s(test_gdb(), test_options());
  auto driver = playbook::make_driver(s);
  playbook::RunOptions ro;
  ro.pid = pid;
  ro.samples = samples;
  ro.interval = std::chrono::milliseconds(600);
  ro.stop = stop;
  auto r = playbook::run(playbook::find_playbook("hang-triage"), *driver, ro);
  if (exchanges != nullptr) {
    *exchanges = s.exchanges();
  }
  return r;
}

// Every thread running (not in a stop) and traced by nobody: the copy let each one go.
void require_every_thread_free(std::int64_t pid, std::size_t threads) {
  rocplay::testing::require_no_thread_stopped(pid, threads);
  for (const auto& t : rocplay::process::read_task_stats(pid)) {
    const auto status = rocplay::process::read_status(t.tid);
    INFO("thread " << t.tid);
    REQUIRE(status);
    CHECK(status->tracer_pid.value_or(-1) == 0);
  }
}

std::vector<std::string> functions(const HostThread& t) {
  std::vector<std::string> out;
  for (const auto& f : t.frames) {
    out.push_back(f.function);
  }
  return out;
}

// `rocplay run hang-triage` on `pid` with gdb, one sample, then `more`.
std::vector<std::string> hang_triage_args(std::int64_t pid, int attach_timeout,
                                          std::vector<std::string> more) {
  std::vector<std::string> a = {"run",
                                "hang-triage",
                                "--pid",
                                std::to_string(pid),
                                "--debugger",
                                "gdb",
                                "--samples",
                                "1",
                                "--timeout",
                                "20",
                                "--attach-timeout",
                                std::to_string(attach_timeout)};
  a.insert(a.end(), more.begin(), more.end());
  return a;
}

// The second sample's threads whose stacks were taken from the first (the runner's `stacks as in
// the sample before: LWP ...` notes), and its backtrace commands.
struct SecondSample {
  std::size_t inherited = 0;
  std::size_t backtraces = 0;
};
SecondSample second_sample_stacks(const std::vector<mi::Exchange>& exchanges) {
  SecondSample out;
  bool in_second = false;
  for (const auto& ex : exchanges) {
    for (const auto& n : ex.notes) {
      in_second = in_second || n.rfind("sample 2:", 0) == 0;
      if (n.rfind("stacks as in the sample before: ", 0) == 0) {
        out.inherited += static_cast<std::size_t>(std::count(n.begin(), n.end(), ' ')) - 5;
      }
    }
    if (in_second && ex.command.rfind("-stack-list-frames", 0) == 0) {
      ++out.backtraces;
    }
  }
  return out;
}

} // namespace

TEST_CASE("hang-triage by copy on a mutex deadlock: what an attach sees, every thread let go") {
  DeadlockTarget target;
  std::vector<mi::Exchange> copy_exchanges;
  const auto copied = triage(target.pid(), playbook::StopMode::Copy, 1, &copy_exchanges);
  const auto attached = triage(target.pid(), playbook::StopMode::Attach, 1);
  REQUIRE_FALSE(copied.fatal.has_value());
  REQUIRE_FALSE(attached.fatal.has_value());
  require_every_thread_free(target.pid(), DeadlockTarget::kThreads);

  // How the target was held, and that the debugger never attached to it.
  CHECK(copied.times.copied);
  CHECK(copied.times.detached);
  CHECK_FALSE(copied.times.left_stopped);
  REQUIRE(copied.times.stop_seconds.has_value());
  CHECK(*copied.times.stop_seconds > 0);
  CHECK_FALSE(attached.times.copied);
  bool read_core = false;
  for (const auto& ex : copy_exchanges) {
    CHECK(ex.command.rfind("-target-attach", 0) == std::string::npos);
    read_core = read_core || ex.command.rfind("-target-select core ", 0) == 0;
  }
  CHECK(read_core);

  // The same threads, names, stacks and mutex owners.
  REQUIRE(copied.snapshot.host_threads.size() == DeadlockTarget::kThreads);
  REQUIRE(attached.snapshot.host_threads.size() == DeadlockTarget::kThreads);
  std::map<std::uint64_t, const HostThread*> by_lwp;
  for (const auto& t : attached.snapshot.host_threads) {
    REQUIRE(t.lwp);
    by_lwp[*t.lwp] = &t;
  }
  std::size_t owners = 0;
  for (const auto& t : copied.snapshot.host_threads) {
    REQUIRE(t.lwp);
    REQUIRE(by_lwp.count(*t.lwp));
    const HostThread& a = *by_lwp[*t.lwp];
    INFO("thread " << *t.lwp << " " << t.name);
    CHECK(t.name == a.name);
    CHECK(functions(t) == functions(a));
    CHECK(t.mutex_wait.has_value() == a.mutex_wait.has_value());
    if (t.mutex_wait && a.mutex_wait) {
      CHECK(t.mutex_wait->symbol == a.mutex_wait->symbol);
      CHECK(t.mutex_wait->owner == a.mutex_wait->owner);
      owners += t.mutex_wait->owner.has_value() ? 1 : 0;
    }
  }
  CHECK(owners == 2); // both lockers' owners: read from the futex words the copy holds
  auto ids = [](const RunResult& r) {
    std::vector<std::string> out;
    for (const auto& f : r.findings) {
      out.push_back(f.id);
    }
    return out;
  };
  CHECK(ids(copied) == ids(attached));
}

TEST_CASE("two samples by copy: each sample's stop is its copy's hold, the target runs between") {
  SpinTarget target;
  const auto r = triage(target.pid(), playbook::StopMode::Copy, 2);
  REQUIRE_FALSE(r.fatal.has_value());
  CHECK(r.sampling_stopped.empty());
  REQUIRE(r.samples.size() == 2);
  for (const auto& s : r.samples) {
    INFO("sample " << s.index);
    CHECK(s.stop_seconds > 0);
    CHECK_FALSE(s.snapshot.host_threads.empty());
  }
  // Stop to stop, the interval (600 ms) apart: the copies' own reads of /proc before each hold
  // and the thread figures come on top, a few ms at 10 threads.
  CHECK(r.samples[1].at >= 0.59);
  CHECK(r.samples[1].at < 0.75);
  CHECK(r.times.copied);
  require_running_again(target);
  require_every_thread_free(target.pid(),
                            static_cast<std::size_t>(r.samples[1].snapshot.host_threads.size()));
}

TEST_CASE("rocplay run hang-triage with gdb copies by default, and --stop attach attaches") {
  SpinTarget target;
  auto args = [&](std::vector<std::string> more) {
    return hang_triage_args(target.pid(), 30, std::move(more));
  };
  const auto copy = run_rocplay(args({}));
  INFO("stderr: " << copy.err << "\nstdout: " << copy.out);
  REQUIRE_FALSE(copy.timed_out);
  CHECK((copy.exit_code == 0 || copy.exit_code == 1));
  CHECK(copy.out.find("held only while rocplay copied its threads") != std::string::npos);
  CHECK(copy.out.find("start_sync") != std::string::npos);
  const auto attach = run_rocplay(args({"--stop", "attach"}));
  INFO("stderr: " << attach.err << "\nstdout: " << attach.out);
  CHECK(attach.out.find("attach took") != std::string::npos);
  CHECK(attach.out.find("start_sync") != std::string::npos);
  const auto bad = run_rocplay(args({"--stop", "core"}));
  CHECK(bad.exit_code == 64);
  require_running_again(target);
}

TEST_CASE("two samples by copy of a deadlock: unchanged stacks are not unwound again") {
  DeadlockTarget target;
  // Past `ready` the lockers may still be on their way into the kernel on a loaded machine.
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  std::vector<mi::Exchange> exchanges;
  const auto r = triage(target.pid(), playbook::StopMode::Copy, 2, &exchanges);
  REQUIRE_FALSE(r.fatal.has_value());
  REQUIRE(r.samples.size() == 2);
  // Every thread is blocked: the second copy holds the same registers and stack bytes, so the
  // second sample asks the debugger for no backtrace and takes the first sample's.
  const auto [inherited, second_sample_backtraces] = second_sample_stacks(exchanges);
  // The two deadlocked lockers cannot move; the others (main in pause(), the waiter) do not
  // either, but a signal or a scheduler's spurious wake-up may change a stack: such a thread is
  // asked again. Either way each thread is unwound or inherited, never both or neither.
  CHECK(inherited >= 2);
  CHECK(inherited + second_sample_backtraces == DeadlockTarget::kThreads);
  const auto& first = r.samples[0].snapshot.host_threads;
  const auto& second = r.samples[1].snapshot.host_threads;
  REQUIRE(first.size() == DeadlockTarget::kThreads);
  REQUIRE(second.size() == DeadlockTarget::kThreads);
  std::map<std::uint64_t, const HostThread*> before;
  for (const auto& t : first) {
    before[*t.lwp] = &t;
  }
  for (const auto& t : second) {
    INFO("thread " << *t.lwp);
    REQUIRE(before.count(*t.lwp));
    CHECK(functions(t) == functions(*before[*t.lwp]));
    CHECK(t.frames.size() > 1);
  }
  require_every_thread_free(target.pid(), DeadlockTarget::kThreads);
}

TEST_CASE("two samples by copy of napping threads: their stacks are not unwound again") {
  SpinTarget::Config cfg;
  cfg.spin_threads = 4;
  cfg.sleepy = true; // 500 ms naps in start_sync, each interrupted one writing its time left back
  SpinTarget target(cfg);
  std::vector<mi::Exchange> exchanges;
  const auto r = triage(target.pid(), playbook::StopMode::Copy, 2, &exchanges);
  REQUIRE_FALSE(r.fatal.has_value());
  REQUIRE(r.samples.size() == 2);
  const auto [inherited, backtraces] = second_sample_stacks(exchanges);
  const auto& second = r.samples[1].snapshot.host_threads;
  CHECK(inherited + backtraces == second.size());
  // The nappers sleep again at the same place with only the time left different; main ticks.
  CHECK(inherited >= 3);
  std::size_t in_sync = 0;
  for (const auto& t : second) {
    const auto f = functions(t);
    in_sync += std::count(f.begin(), f.end(), "start_sync");
  }
  CHECK(in_sync == 4);
  require_running_again(target);
}

TEST_CASE("a thread in an uninterruptible wait: a copy reads it unheld, an attach gives up early") {
  SpinTarget::Config cfg;
  cfg.uninterruptible = true; // a thread `stuck` in vfork()'s wait, state D
  SpinTarget target(cfg);
  auto args = [&](std::vector<std::string> more, int attach_timeout = 60) {
    return hang_triage_args(target.pid(), attach_timeout, std::move(more));
  };
  // Each run below needs the thread still in its wait: its vfork child alive.
  auto require_stuck_in_d = [&] {
    std::string states;
    for (const auto& t : rocplay::process::read_task_stats(target.pid())) {
      states += t.state;
    }
    INFO("thread states: " << states);
    REQUIRE(std::count(states.begin(), states.end(), 'D') == 1);
  };
  require_stuck_in_d();
  // By copy: the other threads held, the stuck one copied from /proc with its frames.
  const auto copy = run_rocplay(args({"--format", "json"}));
  INFO("stderr: " << copy.err);
  REQUIRE_FALSE(copy.timed_out);
  REQUIRE((copy.exit_code == 0 || copy.exit_code == 1));
  const auto report = nlohmann::json::parse(copy.out);
  CHECK(report.at("run").at("target").at("copied") == true);
  CHECK(report.at("run").at("target").at("stop_seconds").get<double>() < 2);
  bool stuck_seen = false;
  for (const auto& t : report.at("snapshot").at("host_threads")) {
    if (t.value("name", "") != "stuck") {
      continue;
    }
    stuck_seen = true;
    std::vector<std::string> functions;
    for (const auto& f : t.at("frames")) {
      functions.push_back(f.value("function", ""));
    }
    INFO("stuck thread's frames: " << nlohmann::json(functions).dump());
    CHECK(std::find(functions.begin(), functions.end(), "stuck_in_vfork") != functions.end());
  }
  CHECK(stuck_seen);
  const auto text = run_rocplay(args({}));
  CHECK(text.out.find("was in an uninterruptible wait (state D") != std::string::npos);
  CHECK(text.out.find("could not be held") != std::string::npos);

  // Attached: gdb would wait for the stuck thread until the attach timeout (60 s here) with every
  // other thread stopped; with gdb, rocplay gives up after 3 s of it in state D and says what to
  // do (rocgdb and cuda-gdb wait out the timeout: they have no copy to offer instead).
  require_stuck_in_d();
  const auto started = std::chrono::steady_clock::now();
  const auto attach = run_rocplay(args({"--stop", "attach"}));
  const double took =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  INFO("stdout: " << attach.out << "\nstderr: " << attach.err);
  CHECK(took < 20);
  CHECK(attach.exit_code > 1);
  CHECK(attach.err.find("(stuck) of pid " + std::to_string(target.pid()) +
                        " is in an uninterruptible wait (state D") != std::string::npos);
  CHECK(attach.err.find("no debugger can stop it until that call returns") != std::string::npos);
  // gdb, killed mid-attach, leaves each thread it stopped delivering its SIGSTOP a moment later:
  // rocplay cancels that with SIGCONT at once and says so (the target must never be seen 'T').
  CHECK(
      unwrapped(attach.out)
          .find("rocplay sent it SIGCONT to cancel the stop the unfinished attach leaves behind") !=
      std::string::npos);
  // An attach timeout shorter than that: the grace the attach then gets to finish ends as soon as
  // the thread has been in state D for 3 s, and the error names it.
  require_stuck_in_d();
  const auto timed_out = run_rocplay(args({"--stop", "attach", "--format", "json"}, 2));
  INFO("timed-out attach, stderr: " << timed_out.err);
  CHECK(timed_out.err.find("(stuck) of pid " + std::to_string(target.pid()) +
                           " is in an uninterruptible wait (state D") != std::string::npos);
  const auto timed_out_report = nlohmann::json::parse(timed_out.out);
  CHECK(timed_out_report.at("run").at("target").at("stop_seconds").get<double>() < 4.5);
  CHECK(attach.err.find("--stop copy") != std::string::npos);
  require_running_again(target);
  require_every_thread_free(target.pid(), 5);
}

TEST_CASE("commands written ahead while gdb reads a copy: the same answers, a recording that "
          "reads back the same",
          "[live][copy]") {
  SpinTarget::Config cfg;
  cfg.spin_threads = 40;
  cfg.sleepy = true;
  SpinTarget target(cfg);
  char path[] = "/tmp/rocplay-batch-rec-XXXXXX";
  const int fd = ::mkstemp(path);
  REQUIRE(fd >= 0);
  ::close(fd);
  auto options = test_options();
  options.record_path = path;
  std::vector<std::string> commands;
  std::vector<mi::Exchange> one_by_one;
  std::vector<mi::Exchange> ahead;
  {
    session::Session s(test_gdb(), options);
    REQUIRE(s.stop_by_copy({}));
    s.attach(target.pid());
    const auto threads = s.execute("-thread-list-ids");
    REQUIRE(threads.result() != nullptr);
    for (const auto id : threads.result()->results()["thread-ids"]) {
      commands.push_back("-stack-list-frames --thread " + id.text() + " 0 9");
    }
    REQUIRE(commands.size() >= 40);         // more than one window's half: written in several goes
    commands.push_back("-no-such-command"); // an ^error among them is returned, not thrown
    for (const auto& c : commands) {
      one_by_one.push_back(s.execute(c));
    }
    ahead = s.execute_all(commands);
    s.detach();
  }
  REQUIRE(ahead.size() == commands.size());
  for (std::size_t i = 0; i < commands.size(); ++i) {
    INFO(commands[i]);
    CHECK(ahead[i].command == commands[i]);
    REQUIRE(ahead[i].result() != nullptr);
    REQUIRE(one_by_one[i].result() != nullptr);
    CHECK(ahead[i].result()->line().substr(ahead[i].result()->line().find('^')) ==
          one_by_one[i].result()->line().substr(one_by_one[i].result()->line().find('^')));
    CHECK(ahead[i].token != one_by_one[i].token);
  }
  CHECK(ahead.back().error_message().has_value());
  // Written ahead, a command's exchange begins when the answer before it ends: its `>` line has
  // that answer's time. Sent after the answer was read, it has a later one.
  const std::string text = rocplay::testing::read_file(path);
  ::unlink(path);
  std::vector<bool> at_answer; // per command line, in order: one by one, then ahead
  std::string last_in_time;
  for (std::size_t at = 0; at < text.size();) {
    const auto end = std::min(text.find('\n', at), text.size());
    const std::string line = text.substr(at, end - at);
    at = end + 1;
    const auto time_end = line.find(' ', 2);
    if (line.size() < 3 || time_end == std::string::npos) {
      continue;
    }
    const std::string time = line.substr(2, time_end - 2);
    if (line[0] == '<') {
      last_in_time = time;
    } else if (line[0] == '>' && (line.find("-stack-list-frames") != std::string::npos ||
                                  line.find("-no-such-command") != std::string::npos)) {
      at_answer.push_back(time == last_in_time);
    }
  }
  REQUIRE(at_answer.size() == 2 * commands.size());
  const auto n = static_cast<std::ptrdiff_t>(commands.size());
  CHECK(std::count(at_answer.begin(), at_answer.begin() + n, true) < n / 2);
  CHECK(std::count(at_answer.begin() + n, at_answer.end(), true) >= n - 2);
  // Replayed, every exchange pairs its command with its own answer, as in the session.
  const auto replay = mi::read_transcript(text);
  std::size_t paired = 0;
  for (const auto& ex : replay) {
    if (ex.command.rfind("-stack-list-frames", 0) == 0 || ex.command == "-no-such-command") {
      REQUIRE(ex.result() != nullptr);
      REQUIRE(ex.token.has_value());
      CHECK(ex.result()->line().rfind(std::to_string(*ex.token) + "^", 0) == 0);
      ++paired;
    }
  }
  CHECK(paired == 2 * commands.size());
  require_running_again(target);
}

TEST_CASE("commands for an attached target: answered in order, lifecycle commands refused",
          "[live][copy]") {
  SpinTarget target;
  {
    session::Session s(test_gdb(), test_options());
    s.attach(target.pid());
    const auto answers = s.execute_all({"-thread-info", "-stack-list-frames", "-thread-info"});
    REQUIRE(answers.size() == 3);
    CHECK_FALSE(answers[1].error_message().has_value());
    CHECK_THROWS_AS(s.execute_all({"-thread-info", "-target-detach"}), rocplay::Error);
    s.detach();
  }
  require_running_again(target);
}
