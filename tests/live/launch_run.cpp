// `rocplay launch` against real gdb and tests/targets/fault_target: each way a program can end
// (segfault, abort, divide by zero, a thrown exception, a normal exit, past --timeout, SIGINT to
// rocplay) gets its exit code, its finding, and leaves no process behind; the program's arguments
// and standard streams arrive byte for byte.
#include "cli_util.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <unistd.h>

#include <csignal>
#include <thread>

using namespace rocplay;
using namespace rocplay::testing;
using namespace std::chrono_literals;

namespace {

int fault_line(const std::string& marker) {
  return marker_line("fault_target.cpp", "// FAULT: " + marker);
}

std::vector<std::string> launch_args(std::vector<std::string> options,
                                     std::vector<std::string> program) {
  std::vector<std::string> a = {"launch", "--debugger", "gdb"};
  a.insert(a.end(), options.begin(), options.end());
  a.push_back("--");
  a.push_back(find_built("fault_target"));
  a.insert(a.end(), program.begin(), program.end());
  return a;
}

nlohmann::json json_of(const CliRun& r) {
  auto j = nlohmann::json::parse(r.out, nullptr, false);
  REQUIRE_FALSE(j.is_discarded());
  return j;
}

// The program writes to rocplay's own stdout: the JSON report goes to a file.
struct JsonRun {
  CliRun run;
  nlohmann::json report;
};
JsonRun launch_json(std::vector<std::string> options, std::vector<std::string> program,
                    const std::function<void(pid_t, const std::string&)>& watch = {}) {
  TempDir dir;
  const std::string path = dir.path() + "/report.json";
  options.insert(options.end(), {"--format", "json", "-o", path});
  JsonRun r;
  r.run = run_rocplay(launch_args(options, program), std::chrono::seconds(120), {}, watch);
  r.report = nlohmann::json::parse(read_file(path), nullptr, false);
  return r;
}

// The launched program is gone: not running, not stopped, not a zombie left to anyone.
void require_gone(std::int64_t pid) {
  REQUIRE(pid > 0);
  for (int i = 0; i < 100; ++i) {
    const auto st = process::read_stat(pid);
    if (!st || st->state == 'X' || st->state == 'Z') { // a zombie is dead
      return;
    }
    std::this_thread::sleep_for(20ms);
  }
  const auto st = process::read_stat(pid);
  FAIL("pid " << pid << " is still there, state " << (st ? st->state : '?'));
}

// No debugger or helper of ours is left: nothing whose command line names this build's
// fault_target (its full path: other checkouts' tests may run theirs at the same time).
const nlohmann::json& first_finding(const nlohmann::json& j) {
  REQUIRE(j.contains("findings"));
  REQUIRE_FALSE(j["findings"].empty());
  return j["findings"][0];
}

} // namespace

TEST_CASE("launch: a segfault is reported at the faulting line and the program killed (81)") {
  const auto [r, j] = launch_json({}, {"segv"});
  INFO("stderr: " << r.err);
  REQUIRE_FALSE(r.timed_out);
  CHECK(r.exit_code == 81);
  CHECK(j["launch"]["outcome"] == "faulted");
  CHECK(j["launch"]["stop_signal"] == "SIGSEGV");
  const auto& f = first_finding(j);
  CHECK(f["id"] == "host-fault");
  CHECK(f["severity"] == "critical");
  const auto& fault = j["snapshot"]["fault"];
  CHECK(fault["kind"] == "memory-violation");
  CHECK(fault["signal"] == "SIGSEGV");
  CHECK(fault["function"].get<std::string>().find("write_through_null") != std::string::npos);
  CHECK(fault["line"] == fault_line("segv"));
  CHECK(fault["address"] == "0x0");
  CHECK(fault["signal_code"] == 1); // SEGV_MAPERR: the kernel's, for the store
  CHECK(f["details"]["fault"]["sent_by"] == "kernel");
  CHECK(f["title"].get<std::string>().rfind("Host fault: memory violation", 0) == 0);
  CHECK(j["launch"]["after"] == "killed after the report");
  require_gone(j["launch"]["pid"].get<std::int64_t>());
  CHECK(stray_process(find_built("fault_target")).empty());
}

TEST_CASE("launch: abort names the user's frame, not the C library's (assert kind)") {
  const auto [r, j] = launch_json({}, {"abort"});
  INFO("stderr: " << r.err);
  CHECK(r.exit_code == 81);
  CHECK(r.err.find("bad config, aborting") != std::string::npos); // the program's own stderr
  CHECK(j["snapshot"]["fault"]["kind"] == "assert");
  const auto& f = first_finding(j);
  CHECK(f["id"] == "host-fault");
  bool user_frame = false;
  for (const auto& l : f["locations"]) {
    user_frame |= l.value("function", "").find("check_config") != std::string::npos &&
                  l.value("line", 0) == fault_line("abort");
  }
  CHECK(user_frame);
  // abort() sends SIGABRT to its own thread: a process's signal, and still the program's assert.
  CHECK(j["snapshot"]["fault"]["signal_code"] == -6); // SI_TKILL
  CHECK(j["snapshot"]["fault"]["sender_pid"] == j["launch"]["pid"]);
  CHECK(f["title"].get<std::string>().rfind("Host fault: assert", 0) == 0);
  require_gone(j["launch"]["pid"].get<std::int64_t>());
}

TEST_CASE("launch: a SIGSEGV the program raises itself is named as sent, not as a faulting "
          "access") {
  const auto [r, j] = launch_json({}, {"raise-segv"});
  INFO("stderr: " << r.err);
  REQUIRE_FALSE(r.timed_out);
  CHECK(r.exit_code == 81);
  const auto pid = j["launch"]["pid"].get<std::int64_t>();
  const auto& fault = j["snapshot"]["fault"];
  CHECK(fault["signal"] == "SIGSEGV");
  CHECK(fault["signal_code"] == -6); // SI_TKILL: raise()
  CHECK(fault["sender_pid"] == pid);
  CHECK_FALSE(fault.contains("address")); // si_addr holds the sender there, not an address
  const auto& f = first_finding(j);
  CHECK(f["id"] == "host-fault");
  const std::string title = f["title"];
  CHECK(title.find("Host signal: SIGSEGV") == 0);
  CHECK(title.find("sent by the program itself (pid " + std::to_string(pid) + ")") !=
        std::string::npos);
  CHECK(f["details"]["fault"]["sent_by"] == "process");
  CHECK(f["next_step"].get<std::string>().find("sent SIGSEGV to itself") != std::string::npos);
  bool user_frame = false;
  for (const auto& l : f["locations"]) {
    user_frame |= l.value("function", "").find("raise_segv") != std::string::npos &&
                  l.value("line", 0) == fault_line("raise-segv");
  }
  CHECK(user_frame);
  require_gone(pid);
}

TEST_CASE("launch: divide by zero is an arithmetic fault at its line") {
  const auto [r, j] = launch_json({}, {"fpe"});
  INFO("stderr: " << r.err);
  CHECK(r.exit_code == 81);
  CHECK(j["snapshot"]["fault"]["kind"] == "arithmetic");
  CHECK(j["snapshot"]["fault"]["signal"] == "SIGFPE");
  CHECK(j["snapshot"]["fault"]["line"] == fault_line("fpe"));
  CHECK(first_finding(j)["id"] == "host-fault");
  require_gone(j["launch"]["pid"].get<std::int64_t>());
}

TEST_CASE("launch: --catch throw stops at the throw, without it the program handles it") {
  const auto [r, j] = launch_json({"--catch", "throw"}, {"throw"});
  INFO("stderr: " << r.err);
  CHECK(r.exit_code == 81);
  CHECK(j["snapshot"]["fault"]["kind"] == "exception");
  const auto& f = first_finding(j);
  CHECK(f["id"] == "host-fault");
  bool thrower = false;
  for (const auto& l : f["locations"]) {
    thrower |= l.value("function", "").find("load_model") != std::string::npos;
  }
  CHECK(thrower);
  require_gone(j["launch"]["pid"].get<std::int64_t>());

  const auto [plain, pj] = launch_json({}, {"throw"});
  INFO("stderr: " << plain.err);
  CHECK(plain.exit_code == 80);
  CHECK(pj["launch"]["outcome"] == "exited");
  CHECK(pj["launch"]["exit_code"] == 5);
}

TEST_CASE("launch: a normal exit passes through as 0, another status as 80 with the status") {
  const auto ok = run_rocplay(launch_args({}, {"exit", "0"}), 120s);
  INFO("stderr: " << ok.err);
  CHECK(ok.exit_code == 0);
  CHECK(ok.out.find("exited with status") != std::string::npos);
  const auto [bad, j] = launch_json({}, {"exit", "7"});
  CHECK(bad.exit_code == 80);
  CHECK(j["launch"]["exit_code"] == 7);
  CHECK(j["findings"].empty());
  CHECK(stray_process(find_built("fault_target")).empty());
}

TEST_CASE("launch: a signal that is no fault is passed on, and the program goes on") {
  const auto [r, j] = launch_json({}, {"signal-then-exit"});
  INFO("stderr: " << r.err);
  CHECK(r.exit_code == 80);
  CHECK(j["launch"]["exit_code"] == 3);
  CHECK(j["launch"]["passed_signals"] == 1);
}

TEST_CASE("launch: past --timeout the program is stopped, reported and killed (83)") {
  const auto start = std::chrono::steady_clock::now();
  const auto [r, j] = launch_json({"--timeout", "1s"}, {"sleep", "60"});
  INFO("stderr: " << r.err);
  CHECK(r.exit_code == 83);
  CHECK(std::chrono::steady_clock::now() - start < 45s);
  CHECK(j["launch"]["outcome"] == "timed-out");
  CHECK_FALSE(j["snapshot"].contains("fault"));
  CHECK_FALSE(j["snapshot"]["host_threads"].empty()); // the snapshot of where it was
  require_gone(j["launch"]["pid"].get<std::int64_t>());
  CHECK(stray_process(find_built("fault_target")).empty());
}

TEST_CASE("launch: the first SIGINT or SIGTERM stops the program and reports, nothing is left "
          "(130/143)") {
  int sig = SIGINT;
  int code = 130;
  std::string word = "SIGINT";
  SECTION("SIGINT") {}
  SECTION("SIGTERM") {
    sig = SIGTERM;
    code = 143;
    word = "SIGTERM";
  }
  Descendants spawned;
  bool sent = false;
  const auto [r, j] = launch_json({}, {"sleep", "60"}, [&](pid_t pid, const std::string& err) {
    spawned.scan(pid);
    if (!sent && err.find("fault_target sleeping") != std::string::npos) {
      std::this_thread::sleep_for(300ms);
      ::kill(pid, sig);
      sent = true;
    }
  });
  INFO("stderr: " << r.err);
  INFO("stdout: " << r.out);
  REQUIRE(sent);
  CHECK(r.exit_code == code);
  CHECK(r.term_signal == 0);
  CHECK(j["launch"]["outcome"] == "interrupted");
  CHECK(j["launch"]["user_signal"] == word);
  CHECK(j["launch"]["after"] == "killed after the report");
  CHECK_FALSE(j["snapshot"]["host_threads"].empty());
  require_gone(j["launch"]["pid"].get<std::int64_t>());
  CHECK(spawned.count() >= 2); // the debugger and the program
  spawned.require_none_left();
  CHECK(stray_process(find_built("fault_target")).empty());
}

TEST_CASE("launch: a second SIGINT while the program is being stopped ends at once, nothing is "
          "left (130)") {
  // A gdb whose wrapper takes rocplay's SIGINT and never passes it on: the program does not stop
  // for the first signal, and without the second rocplay would wait out --stop-timeout.
  TempDir dir;
  const std::string gdb = test_gdb().path;
  const std::string wrapper =
      dir.file("gdb-ignoring-sigint", "#!/bin/bash\n"
                                      "if [ \"$1\" = --version ]; then exec " +
                                          gdb +
                                          " \"$@\"; fi\n"
                                          "trap ':' INT\n" +
                                          gdb + " \"$@\"\n");
  std::filesystem::permissions(wrapper, std::filesystem::perms::owner_all);
  std::vector<std::string> args = launch_args({}, {"sleep", "60"});
  args[2] = wrapper; // --debugger
  args.insert(args.begin() + 3, {"--stop-timeout", "60s"});
  Descendants spawned;
  int sent = 0;
  std::chrono::steady_clock::time_point second;
  const auto r = run_rocplay(args, 120s, {}, [&](pid_t pid, const std::string& err) {
    spawned.scan(pid);
    if (sent == 0 && err.find("fault_target sleeping") != std::string::npos) {
      std::this_thread::sleep_for(300ms);
      ::kill(pid, SIGINT);
      sent = 1;
    } else if (sent == 1) {
      std::this_thread::sleep_for(1s); // the first one is being acted on: the stop is awaited
      ::kill(pid, SIGINT);
      second = std::chrono::steady_clock::now();
      sent = 2;
    }
  });
  INFO("stderr: " << r.err);
  REQUIRE(sent == 2);
  REQUIRE_FALSE(r.timed_out);
  CHECK(r.exit_code == 130);
  // The interrupt grace (5 s, twice) at most, not the 60 s stop timeout.
  CHECK(std::chrono::steady_clock::now() - second < 20s);
  CHECK(r.err.find("interrupted by SIGINT; the program was killed before exiting") !=
        std::string::npos);
  CHECK(spawned.count() >= 2); // the debugger and the program
  spawned.require_none_left();
  CHECK(stray_process(find_built("fault_target")).empty());
}

TEST_CASE("launch: arguments with spaces, quotes, newlines arrive as given, stdin and stdout "
          "are the program's") {
  TempDir dir;
  const std::string record = dir.path() + "/args.txt";
  const std::string input = dir.file("input.txt", "line one\nline two\n");
  const std::vector<std::string> words = {
      "args",        record,  "two words",        "it's", "\"quoted\"", "new\nline", "",
      "back\\slash", "$HOME", "; rm -rf nothing", "*",    "--"};
  std::vector<std::string> argv = {"/bin/sh", "-c", "exec \"$0\" \"$@\" < \"$ROCPLAY_TEST_INPUT\"",
                                   find_built("rocplay")};
  for (const auto& a : launch_args({}, words)) {
    argv.push_back(a);
  }
  const auto r = run_program(argv, 120s, {"ROCPLAY_TEST_INPUT=" + input});
  INFO("stderr: " << r.err);
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("line one\nline two\n") != std::string::npos);
  CHECK(r.err.find("fault_target: to stderr") != std::string::npos);
  std::string expected =
      std::to_string(find_built("fault_target").size()) + ":" + find_built("fault_target") + "\n";
  for (const auto& w : words) {
    expected += std::to_string(w.size()) + ":" + w + "\n";
  }
  const char* lc = std::getenv("LC_ALL");
  expected += std::string("LC_ALL=") + (lc != nullptr ? lc : "(unset)") + "\n";
  CHECK(read_file(record) == expected);
}

TEST_CASE("launch: a program that does not exist is refused before anything starts (66)") {
  const auto r = run_rocplay({"launch", "--debugger", "gdb", "--", "/nonexistent/app", "x"}, 60s);
  CHECK(r.exit_code == 66);
  CHECK(r.err.find("/nonexistent/app") != std::string::npos);
  const auto none = run_rocplay({"launch", "--debugger", "gdb"}, 60s);
  CHECK(none.exit_code == 64);
}

TEST_CASE("launch: --detach-on-fault lets the program go on with its fault") {
  const auto [r, j] = launch_json({"--detach-on-fault"}, {"segv"});
  INFO("stderr: " << r.err);
  CHECK(r.exit_code == 81);
  CHECK(j["launch"]["after"].get<std::string>().find("detached") != std::string::npos);
  require_gone(j["launch"]["pid"].get<std::int64_t>()); // it died of its SIGSEGV
}

TEST_CASE("launch: the recording replays into the same fault finding") {
  TempDir dir;
  const std::string rec = dir.path() + "/segv.rec";
  const auto r = run_rocplay(launch_args({"--record", rec}, {"segv"}), 120s);
  INFO("stderr: " << r.err);
  CHECK(r.exit_code == 81);
  const auto pm = run_rocplay({"postmortem", rec, "--format", "json"}, 60s);
  INFO("postmortem stderr: " << pm.err);
  const auto j = json_of(pm);
  REQUIRE(j.contains("inputs"));
  REQUIRE_FALSE(j["inputs"].empty());
  CHECK(first_finding(j["inputs"][0])["id"] == "host-fault");
}
