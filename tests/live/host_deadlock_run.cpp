// Host deadlocks and caller lines against a real process with Debian's gdb:
// tests/targets/deadlock_target.cpp has two threads that lock two mutexes in opposite orders.
// The built-in playbooks read each blocked mutex's owner by expressions (no calls into the
// target), the host-deadlock finding names the threads, the mutexes and the lines, and caller
// frames' source lines are the lines of the calls. Every thread of the target runs again after.
#include "cli_util.hpp"
#include "rocplay/heuristics/heuristics.hpp"
#include "rocplay/playbook/playbook.hpp"
#include "session_target.hpp"

#include <catch2/catch.hpp>

#include <fstream>

using namespace rocplay;
using namespace rocplay::testing;

namespace {

int deadlock_source_line(const std::string& marker) {
  return marker_line("deadlock_target.cpp", marker);
}

const Finding* find(const std::vector<Finding>& fs, std::string_view id) {
  for (const auto& f : fs) {
    if (f.id == id) {
      return &f;
    }
  }
  return nullptr;
}

} // namespace

TEST_CASE("host-stacks on a mutex deadlock: owners read, the loop named with its lines") {
  DeadlockTarget target;
  const int second_lock = deadlock_source_line("rocplay-test: second lock line");
  const int call_line = deadlock_source_line("rocplay-test: call line");
  const int cond_line = deadlock_source_line("rocplay-test: condition wait line");

  session::Session s(test_gdb(), test_options());
  auto driver = playbook::make_driver(s);
  playbook::RunOptions ro;
  ro.pid = target.pid();
  const auto r = playbook::run(playbook::find_playbook("host-stacks"), *driver, ro);
  REQUIRE_FALSE(r.fatal.has_value());
  CHECK(r.times.detached);
  CHECK_FALSE(r.times.left_stopped);
  const Snapshot& snap = r.snapshot;
  REQUIRE(snap.host_threads.size() == 4);

  // Each locker's mutex and owner: read by expressions, no call into the target.
  std::map<std::string, const HostThread*> by_name;
  for (const auto& t : snap.host_threads) {
    by_name[t.name] = &t;
  }
  REQUIRE(by_name.count("lock_ab"));
  REQUIRE(by_name.count("lock_ba"));
  const HostThread& ab = *by_name["lock_ab"];
  const HostThread& ba = *by_name["lock_ba"];
  REQUIRE(ab.mutex_wait.has_value());
  REQUIRE(ba.mutex_wait.has_value());
  CHECK(ab.mutex_wait->symbol == "mutex_b");
  CHECK(ba.mutex_wait->symbol == "mutex_a");
  CHECK(ab.mutex_wait->owner == static_cast<std::int64_t>(*ba.lwp));
  CHECK(ba.mutex_wait->owner == static_cast<std::int64_t>(*ab.lwp));
  bool calls_forbidden = false;
  for (const auto& ex : s.exchanges()) {
    CHECK(ex.command.find("call ") == std::string::npos);
    calls_forbidden = calls_forbidden || ex.command == "-gdb-set may-call-functions off";
  }
  CHECK(calls_forbidden);

  // Caller frames: the source line of `take_second(second)` itself, not the line after it.
  for (const HostThread* t : {&ab, &ba}) {
    const Frame* caller = nullptr;
    std::size_t index = 0;
    for (std::size_t i = 0; i < t->frames.size(); ++i) {
      if (t->frames[i].function.find("lock_in_order") != std::string::npos) {
        caller = &t->frames[i];
        index = i;
      }
    }
    REQUIRE(caller != nullptr);
    CHECK(caller->line == std::optional<std::uint32_t>(call_line));
    const SourceLine* sl = snap.frame_line(*t, index);
    REQUIRE(sl != nullptr); // `info line *(PC - 1)` was asked
    CHECK(sl->line == std::optional<std::uint32_t>(call_line));
    CHECK(sl->pc == *caller->pc - 1);
  }

  const Finding* f = find(r.findings, heuristics::kHostDeadlock);
  REQUIRE(f != nullptr);
  CHECK(r.findings.front().id == heuristics::kHostDeadlock); // the verdict
  CHECK(f->severity == Severity::Critical);
  std::string all = f->title + "\n" + f->summary + "\n";
  for (const auto& e : f->evidence) {
    all += e + "\n";
  }
  INFO(all);
  CHECK(all.find("mutex_a") != std::string::npos);
  CHECK(all.find("mutex_b") != std::string::npos);
  CHECK(all.find("\"lock_ab\"") != std::string::npos);
  CHECK(all.find("\"lock_ba\"") != std::string::npos);
  CHECK(all.find("deadlock_target.cpp:" + std::to_string(second_lock)) != std::string::npos);
  CHECK(all.find("deadlock_target.cpp:" + std::to_string(call_line)) != std::string::npos);
  REQUIRE(f->locations.size() == 2);
  CHECK(f->locations[0].line == std::optional<std::uint32_t>(second_lock));
  // The condition wait gets its own words.
  const Finding* w = find(r.findings, heuristics::kHostWaits);
  REQUIRE(w != nullptr);
  std::string waits;
  for (const auto& e : w->evidence) {
    waits += e + "\n";
  }
  CHECK(waits.find("condition variable at wait_forever at deadlock_target.cpp:" +
                   std::to_string(cond_line)) != std::string::npos);

  require_no_thread_stopped(target.pid(), 4);
}

TEST_CASE("rocplay run hang-triage on a mutex deadlock: the text verdict names it") {
  DeadlockTarget target;
  const CliRun run = run_rocplay(
      {"run", "hang-triage", "--pid", std::to_string(target.pid()), "--debugger", "gdb", "-q"},
      std::chrono::seconds(120), {"COLUMNS=100"});
  INFO(run.out << run.err);
  CHECK(run.out.find("VERDICT") != std::string::npos);
  CHECK(run.out.find("host deadlock: threads") != std::string::npos);
  CHECK(run.out.find("no known stuck-kernel pattern") == std::string::npos);
  // Stacks start at the user's code, system frames folded, and every line fits 100 columns.
  CHECK(run.out.find("take_second at deadlock_target.cpp") != std::string::npos);
  CHECK(run.out.find("(4 system frames inside)") != std::string::npos);
  // The report (the playbook's step list after it has its own layout) fits 100 columns.
  const std::string report = run.out.substr(0, run.out.find("\nPlaybook "));
  std::size_t start = 0;
  while (start < report.size()) {
    auto end = report.find('\n', start);
    end = end == std::string::npos ? report.size() : end;
    const std::string line = report.substr(start, end - start);
    INFO(line);
    // Prose wraps on words; a single word longer than the width is the only overflow.
    if (line.find(' ') != std::string::npos && line.rfind("  - ", 0) != 0) {
      CHECK(line.size() <= 100);
    }
    start = end + 1;
  }
  require_no_thread_stopped(target.pid(), 4);
}
