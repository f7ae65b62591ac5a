// `rocplay run --wait-for-fault` against real gdb and tests/targets/spin_target: rocplay attaches
// to a running process and lets it run. Each way the wait ends is checked from the outside: a
// fault (reported at its line, then detached: the process dies of it, exit 81), the --timeout
// (detached with every thread running, exit 83), SIGINT and SIGTERM to rocplay (detached,
// running, 130/143). No path leaves a thread stopped or traced, or a debugger behind.
#include "cli_util.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <csignal>
#include <thread>

using namespace rocplay;
using namespace rocplay::testing;
using namespace std::chrono_literals;

namespace {

// spin_target's threads: main, two spinning, one blocked.
constexpr std::size_t kTargetThreads = 4;

std::vector<std::string> wait_args(std::int64_t pid, std::vector<std::string> extra = {}) {
  std::vector<std::string> a = {
      "run", "fault-triage", "--pid", std::to_string(pid), "--debugger", "gdb", "--wait-for-fault"};
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

// rocplay has attached and let the target run again: the wait has begun. A signal sent before the
// attach would reach the process with no debugger, and one sent during it races the attach.
bool waiting(const SpinTarget& target) {
  const auto st = process::read_status(target.pid());
  return st && st->tracer_pid.value_or(0) != 0 && !process::is_stopped(target.state()) &&
         target.advances(200ms);
}

// The detached target: no thread stopped or traced, and it makes progress.
void require_running_untraced(SpinTarget& target) {
  require_no_thread_stopped(target.pid(), kTargetThreads);
  CHECK(process::traced_threads(target.pid()).empty());
  require_running_again(target);
}

nlohmann::json parse_json(const std::string& text) {
  auto j = nlohmann::json::parse(text, nullptr, false);
  REQUIRE_FALSE(j.is_discarded());
  return j;
}

// rocplay waits on the target; once it does, `signo` goes to the target from this process. The
// JSON report, read from its file.
struct Waited {
  CliRun run;
  bool sent = false;
  nlohmann::json report;
};
Waited wait_then_send(SpinTarget& target, int signo, Descendants& spawned) {
  TempDir dir;
  const std::string path = dir.path() + "/report.json";
  Waited w;
  w.run = testing::run_rocplay(wait_args(target.pid(), {"--format", "json", "-o", path}), 120s, {},
                               [&](pid_t rocplay, const std::string&) {
                                 spawned.scan(rocplay);
                                 if (!w.sent && waiting(target)) {
                                   ::kill(static_cast<pid_t>(target.pid()), signo);
                                   w.sent = true;
                                 }
                               });
  if (std::filesystem::exists(path)) {
    w.report = parse_json(read_file(path));
  }
  return w;
}

// What became of the detached target, once it is no longer running (5 s at most).
std::string fate_after_detach(SpinTarget& target) {
  std::string fate = target.fate();
  for (int i = 0; i < 250 && fate == "running"; ++i) {
    std::this_thread::sleep_for(20ms);
    fate = target.fate();
  }
  return fate;
}

} // namespace

TEST_CASE("run --wait-for-fault: the fault is reported at its line, then the process is detached "
          "and dies of it (81)") {
  SpinTarget::Config config;
  config.segv_on_usr2 = true;
  SpinTarget target(config);
  Descendants spawned;
  // The target's SIGUSR2 handler asks its main thread to fault.
  const auto [r, sent, j] = wait_then_send(target, SIGUSR2, spawned);
  INFO("stderr: " << r.err);
  REQUIRE(sent);
  REQUIRE_FALSE(r.timed_out);
  CHECK(r.exit_code == 81);
  CHECK(j["launch"]["outcome"] == "faulted");
  CHECK(j["launch"]["stop_signal"] == "SIGSEGV");
  CHECK(j["launch"]["passed_signals"] >= 1); // the SIGUSR2, passed on to the process
  CHECK(j["launch"]["after"] == "detached after the report");
  const auto& fault = j["snapshot"]["fault"];
  CHECK(fault["kind"] == "memory-violation");
  CHECK(fault["function"].get<std::string>().find("write_through_null") != std::string::npos);
  CHECK(fault["line"] == target_source_line("rocplay-test: fault line"));
  CHECK(fault["address"] == "0x0");
  REQUIRE_FALSE(j["findings"].empty());
  CHECK(j["findings"][0]["id"] == "host-fault");
  // Every thread was there to read at the stop.
  CHECK(j["snapshot"]["host_threads"].size() == kTargetThreads);
  // Detached, it went on with its SIGSEGV, as it would have without rocplay.
  CHECK(fate_after_detach(target) == "killed by signal " + std::to_string(SIGSEGV));
  CHECK(spawned.count() > 0);
  spawned.require_none_left();
}

TEST_CASE("run --wait-for-fault: a SIGSEGV another process sends is named with its sender, not "
          "as a faulting access") {
  SpinTarget target;
  Descendants spawned;
  const auto [r, sent, j] = wait_then_send(target, SIGSEGV, spawned);
  INFO("stderr: " << r.err);
  REQUIRE(sent);
  REQUIRE_FALSE(r.timed_out);
  CHECK(r.exit_code == 81);
  const auto& fault = j["snapshot"]["fault"];
  CHECK(fault["signal"] == "SIGSEGV");
  CHECK(fault["signal_code"] == 0); // SI_USER: kill()
  CHECK(fault["sender_pid"] == ::getpid());
  CHECK_FALSE(fault.contains("address"));
  REQUIRE_FALSE(j["findings"].empty());
  const auto& f = j["findings"][0];
  CHECK(f["id"] == "host-fault");
  CHECK(f["title"].get<std::string>().find("Host signal: SIGSEGV (Segmentation fault) sent by "
                                           "process " +
                                           std::to_string(::getpid())) == 0);
  CHECK(f["next_step"].get<std::string>().find("ps -o pid,ppid,user,args -p " +
                                               std::to_string(::getpid())) != std::string::npos);
  // Detached, it died of the signal, as it would have without rocplay.
  CHECK(fate_after_detach(target) == "killed by signal " + std::to_string(SIGSEGV));
  spawned.require_none_left();
}

TEST_CASE("run --wait-for-fault: at --timeout the process is detached with every thread running "
          "(83)") {
  SpinTarget target;
  Descendants spawned;
  const auto start = std::chrono::steady_clock::now();
  const auto r = run_rocplay(wait_args(target.pid(), {"--timeout", "2s", "--format", "json"}), 120s,
                             {}, [&](pid_t rocplay, const std::string&) { spawned.scan(rocplay); });
  INFO("stderr: " << r.err);
  REQUIRE_FALSE(r.timed_out);
  CHECK(r.exit_code == 83);
  CHECK(std::chrono::steady_clock::now() - start >= 2s);
  const auto j = parse_json(r.out);
  CHECK(j["launch"]["outcome"] == "timed-out");
  CHECK(j["launch"]["after"] == "detached; it keeps running");
  CHECK(j["findings"].empty());
  require_running_untraced(target);
  CHECK(target.fate() == "running");
  spawned.require_none_left();
}

TEST_CASE("run --wait-for-fault: SIGINT or SIGTERM to rocplay detaches, the process keeps "
          "running (130/143)") {
  int sig = SIGINT;
  int code = 130;
  SECTION("SIGINT") {}
  SECTION("SIGTERM") {
    sig = SIGTERM;
    code = 143;
  }
  SpinTarget target;
  Descendants spawned;
  bool sent = false;
  const auto r =
      run_rocplay(wait_args(target.pid()), 120s, {}, [&](pid_t rocplay, const std::string&) {
        spawned.scan(rocplay);
        if (!sent && waiting(target)) {
          ::kill(rocplay, sig);
          sent = true;
        }
      });
  INFO("signal " << sig << ", stderr: " << r.err);
  REQUIRE(sent);
  REQUIRE_FALSE(r.timed_out);
  CHECK(r.exit_code == code);
  CHECK(r.term_signal == 0);
  CHECK(r.err.find("interrupted while waiting for a fault; pid " + std::to_string(target.pid()) +
                   " was detached and keeps running") != std::string::npos);
  require_running_untraced(target);
  CHECK(target.fate() == "running");
  spawned.require_none_left();
}
