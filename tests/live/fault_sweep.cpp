// The systematic fault matrix: for every built-in playbook and exchange index k, the debugger is
// SIGKILLed right after the result of command k (and, separately, rocplay gets SIGINT or SIGTERM
// there), against a real gdb and a real target. After each: the target runs, nobody traces it, it
// makes progress, and the exit code and the report say what happened.
//
// The injection point is rocplay's ROCPLAY_FAULT_INJECT=K:ACTION hook (docs/session.md). CI runs
// the short form (three points per playbook, one per action); `scripts/fault_sweep.sh` runs the
// whole matrix (the "[.fault-sweep]" test below); docs/session.md gives its count.
#include "cli_util.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <dirent.h>

#include <cstdlib>
#include <regex>

using namespace rocplay;
using namespace rocplay::testing;
using namespace std::chrono_literals;

namespace {

const std::vector<std::string> kSweepPlaybooks = {"hang-triage", "host-stacks", "gpu-state",
                                                  "rocgdb-dump"};

struct SweepAction {
  std::string name; // ROCPLAY_FAULT_INJECT's ACTION
  int exit_code;    // when the fault lands before the run is over
  std::string says; // what stderr must name
};
const std::vector<SweepAction> kSweepActions = {
    {"kill-debugger", 76, "SIGKILL"}, {"sigint", 130, "SIGINT"}, {"sigterm", 143, "SIGTERM"}};

// Every thread of the target: not stopped and not traced; and the target makes progress.
void sweep_check_target_free(SpinTarget& target, const std::string& where) {
  INFO(where << ": target " << target.fate());
  DIR* dir = ::opendir(("/proc/" + std::to_string(target.pid()) + "/task").c_str());
  REQUIRE(dir != nullptr);
  std::size_t threads = 0;
  while (const dirent* e = ::readdir(dir)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') {
      continue;
    }
    const std::int64_t tid = std::stoll(e->d_name);
    // A tracer-stop can outlive a killed tracer for a moment; rocplay waits for that too.
    std::optional<process::Stat> st;
    for (int i = 0; i < 50; ++i) {
      st = process::read_stat(tid);
      if (!st || !process::is_stopped(st->state)) {
        break;
      }
      std::this_thread::sleep_for(20ms);
    }
    const auto status = process::read_status(tid);
    if (!st || !status) {
      continue; // the thread is gone
    }
    ++threads;
    INFO("thread " << tid << " state " << st->state);
    CHECK_FALSE(process::is_stopped(st->state));
    CHECK(status->tracer_pid.value_or(-1) == 0);
  }
  ::closedir(dir);
  CHECK(threads >= 3);
  CHECK(target.advances());
}

struct SweepOutcome {
  bool past_end = false; // exchange k never came: the run was whole
  std::uint64_t exchanges = 0;
};

// One fault, checked. Returns whether k was past the run's last exchange (and how many there were).
SweepOutcome sweep_one_fault(SpinTarget& target, const std::string& playbook, std::uint64_t k,
                             const SweepAction& action) {
  const std::string where = playbook + " k=" + std::to_string(k) + " " + action.name;
  const auto r =
      run_rocplay({"run", playbook, "--pid", std::to_string(target.pid()), "--debugger", "gdb",
                   "--attach-timeout", "60", "--timeout", "30", "--format", "json", "--quiet"},
                  120s, {"ROCPLAY_FAULT_INJECT=" + std::to_string(k) + ":" + action.name});
  INFO(where);
  INFO("stderr: " << r.err);
  INFO("stdout: " << r.out.substr(0, 2000));
  REQUIRE_FALSE(r.timed_out);
  CHECK(r.term_signal == 0); // every fault ends in an exit code, never death by a signal
  SweepOutcome out;
  static const std::regex never(R"(exchange \d+ never came \((\d+) in all\))");
  std::smatch m;
  if (std::regex_search(r.err, m, never)) {
    out.past_end = true;
    out.exchanges = std::stoull(m[1].str());
    CHECK((r.exit_code == 0 || r.exit_code == 1));
    sweep_check_target_free(target, where);
    return out;
  }
  nlohmann::json doc;
  if (!r.out.empty()) {
    doc = nlohmann::json::parse(r.out, nullptr, false);
    REQUIRE_FALSE(doc.is_discarded());
  }
  const bool whole = doc.is_object() && doc.value("partial", true) == false;
  if (action.name == "kill-debugger" && whole) {
    // The debugger died after the playbook had detached: the run was whole and says so.
    CHECK((r.exit_code == 0 || r.exit_code == 1));
    CHECK(doc["run"]["target"]["detached"] == true);
  } else {
    CHECK(r.exit_code == action.exit_code);
    CHECK(r.err.find(action.says) != std::string::npos);
    if (doc.is_object() && !whole) {
      // A partial report says what ended it and how the target is.
      CHECK(doc["run"]["error"]["code"] == action.exit_code);
      if (doc["run"]["target"]["attach_sent"] == true) {
        CHECK(doc["run"]["target"]["detached"] == true);
      }
      const std::string state = doc["run"]["target"].value("state_after", std::string("?"));
      CHECK(state != "T");
      CHECK(state != "t");
    }
  }
  sweep_check_target_free(target, where);
  return out;
}

// How many commands a whole run sends; 0 for a playbook that needs another debugger than gdb
// (rocgdb-dump): it is refused before the attach and has no exchanges to sweep.
std::uint64_t sweep_exchange_count(SpinTarget& target, const std::string& playbook) {
  const auto probe = run_rocplay({"run", playbook, "--pid", std::to_string(target.pid()),
                                  "--debugger", "gdb", "--format", "json", "--quiet"},
                                 120s, {"ROCPLAY_FAULT_INJECT=1000000:kill-debugger"});
  if (probe.exit_code == 69 && probe.err.find("needs ") != std::string::npos) {
    WARN(playbook << " needs another debugger than gdb: not swept");
    return 0;
  }
  const auto o = sweep_one_fault(target, playbook, 1'000'000, kSweepActions[0]);
  REQUIRE(o.past_end);
  return o.exchanges;
}

} // namespace

TEST_CASE("fault sweep (short form): every built-in playbook, three points, each fault kind") {
  SpinTarget target;
  std::size_t runs = 0;
  for (const auto& playbook : kSweepPlaybooks) {
    const std::uint64_t n = sweep_exchange_count(target, playbook);
    if (n == 0) {
      continue;
    }
    REQUIRE(n > 4);
    // Early (before or at the attach), mid-playbook, and at the detach end.
    const std::uint64_t points[] = {n / 4, n / 2, n - 2};
    for (std::size_t i = 0; i < kSweepActions.size(); ++i) {
      sweep_one_fault(target, playbook, points[i], kSweepActions[i]);
      ++runs;
    }
  }
  CHECK(runs >= 2 * kSweepActions.size()); // hang-triage and host-stacks run under gdb
}

TEST_CASE("fault sweep (full): every built-in playbook x every exchange x every fault kind",
          "[.fault-sweep]") {
  SpinTarget target;
  std::size_t runs = 0;
  // ROCPLAY_SWEEP_PLAYBOOK=NAME sweeps that one playbook only.
  const char* only = std::getenv("ROCPLAY_SWEEP_PLAYBOOK");
  for (const auto& playbook : kSweepPlaybooks) {
    if (only != nullptr && *only != '\0' && playbook != only) {
      continue;
    }
    const std::uint64_t n = sweep_exchange_count(target, playbook);
    for (std::uint64_t k = 0; k < n; ++k) {
      for (const auto& action : kSweepActions) {
        sweep_one_fault(target, playbook, k, action);
        ++runs;
      }
    }
    WARN(playbook << ": " << n << " exchanges, " << n * kSweepActions.size() << " faults");
  }
  WARN("fault sweep: " << runs << " faults injected");
}
