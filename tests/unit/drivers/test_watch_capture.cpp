// drivers::capture, the watch capture once `rocplay watch` has seen a hang: every target examined
// at once (the fan-out, samples in lockstep), the incident written through the report hook, the
// summary line beside it, and the user's --on-capture command run (a real /bin/sh) with the
// report's path and the capture's exit code. The examination itself is replaced through
// TargetsOptions::examine: by replays of eight recorded ranks (fixtures/rocgdb/tp8-missing-rank)
// or by stand-ins that attach and see nothing or fail. The pids are above any kernel's pid_max,
// so nothing on this machine is read, stopped or sent SIGCONT.
#include "../playbook/replay_driver.hpp"
#include "rocplay/drivers/drivers.hpp"
#include "rocplay/report/incident.hpp"

#include <catch2/catch.hpp>

#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

using namespace rocplay;

namespace {

namespace fs = std::filesystem;

constexpr std::int64_t kFirstPid = 999'999'001; // above pid_max (at most 2^22 on Linux)

std::vector<std::int64_t> pids_of(std::size_t n) {
  std::vector<std::int64_t> out;
  for (std::size_t i = 0; i < n; ++i) {
    out.push_back(kFirstPid + static_cast<std::int64_t>(i));
  }
  return out;
}

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A fresh directory for one test's files, removed at scope exit.
class TempDir {
public:
  TempDir() {
    path_ = fs::temp_directory_path() /
            ("rocplay-capture-test-" + std::to_string(::getpid()) + "-" + std::to_string(next_++));
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const fs::path& path() const { return path_; }

private:
  fs::path path_;
  static inline int next_ = 0;
};

// What the stand-ins saw, noted on the pool's threads and checked after.
struct Seen {
  std::mutex mutex;
  std::map<int, std::string> record_paths; // by rank
  std::vector<std::uint32_t> samples;
};

// A capture request as `rocplay watch` makes it, writing JSON through report::write and noting
// what was said.
struct Fixture {
  TempDir dir;
  drivers::CaptureRequest rq;
  std::vector<std::string> said;
  std::vector<std::string> errors;

  Fixture() {
    rq.playbook = playbook::find_playbook("hang-triage");
    rq.out_dir = dir.path().string();
    rq.host = "node7";
    rq.when = std::chrono::system_clock::from_time_t(1'764'200'000); // 2025-11-26T23:33:20Z
    rq.why = "log quiet 62.0s, GPU busy 100% (renderD128)";
    rq.report_extension = "json";
    rq.write_report = [](const Incident& incident, const std::string& path) {
      std::ofstream out(path, std::ios::binary);
      report::write(out, incident, report::Format::Json, {}, "test");
    };
    rq.say = [this](const std::string& line) { said.push_back(line); };
    rq.error = [this](const std::string& message, const std::string&) {
      errors.push_back(message);
    };
  }
  std::string base() const {
    return (dir.path() / ("rocplay-node7-" + watch::utc_stamp(rq.when))).string();
  }
};

bool contains(const std::string& s, std::string_view part) {
  return s.find(part) != std::string::npos;
}

} // namespace

TEST_CASE("capture: eight replayed ranks, their report, summary line and on-capture hook") {
  Fixture f;
  Seen seen;
  f.rq.examination.run.samples = 1; // the recordings hold one stop
  f.rq.examination.examine = [&seen](const session::Debugger&, const session::Options& so,
                                     const playbook::Playbook& pb, const playbook::RunOptions& ro) {
    {
      std::lock_guard lock(seen.mutex);
      seen.record_paths[*so.rank] = so.record_path;
    }
    playbook::test::ReplayDriver driver(playbook::test::read_fixture(
        "fixtures/rocgdb/tp8-missing-rank/rank" + std::to_string(*so.rank) + ".mi"));
    return playbook::run(pb, driver, ro);
  };
  f.rq.on_capture = "printf '%s %s %s' \"$1\" \"$ROCPLAY_CAPTURE_EXIT\" \"$ROCPLAY_SUMMARY_FILE\" "
                    "> \"$ROCPLAY_OUT_DIR/hook.txt\"";
  const drivers::CaptureResult r = drivers::capture(f.rq, pids_of(8));

  INFO("errors: " << f.errors.size());
  CHECK(f.errors.empty());
  CHECK(r.code == 1); // a hang seen is 1
  CHECK_FALSE(r.interrupted);
  CHECK(r.left_stopped.empty());
  CHECK(r.report_path == f.base() + ".report.json");
  CHECK(r.summary_path == f.base() + ".summary.txt");
  REQUIRE(r.incident.cases.size() == 8);
  CHECK(r.incident.several);
  REQUIRE_FALSE(r.incident.cross_rank.empty());
  CHECK(r.incident.cross_rank.front().id == "missing-rank");
  CHECK(r.incident.cross_rank.front().rank == 5);

  // Each target recorded under the capture's name, its rank and pid in the file name.
  REQUIRE(seen.record_paths.size() == 8);
  CHECK(seen.record_paths[3] ==
        f.base() + "-rank3-pid" + std::to_string(kFirstPid + 3) + ".rocplay");

  // The report: the incident first, rank 5 standing apart.
  const auto report = nlohmann::json::parse(read_file(r.report_path));
  REQUIRE(report.contains("incident"));
  CHECK(report["incident"]["cases"] == 8);
  CHECK(report["incident"]["verdict"]["id"] == "missing-rank");

  // The summary line, on disk and returned.
  CHECK(read_file(r.summary_path) == r.summary + "\n");
  CHECK(contains(r.summary, "rocplay watch: node7 2025-11-26T23:33:20"));
  CHECK(contains(r.summary, "8/8 targets examined"));
  CHECK(contains(r.summary, "missing-rank"));
  CHECK(contains(r.summary, "report: " + r.report_path));

  // The hook ran after the report was written, with its path and the capture's code.
  CHECK(read_file(f.dir.path() / "hook.txt") == r.report_path + " 1 " + r.summary_path);
  CHECK(std::find(f.said.begin(), f.said.end(), "--on-capture finished (exit 0)") != f.said.end());
  REQUIRE_FALSE(f.said.empty());
  CHECK(contains(f.said.front(), "HANG (log quiet 62.0s"));
  CHECK(contains(f.said.front(), "8 target(s) at once"));
}

TEST_CASE("capture: three samples unless --samples says otherwise, every target at once") {
  Fixture f;
  Seen seen;
  f.rq.examination.examine = [&seen](const session::Debugger&, const session::Options&,
                                     const playbook::Playbook&, const playbook::RunOptions& ro) {
    {
      std::lock_guard lock(seen.mutex);
      seen.samples.push_back(ro.samples.value_or(0));
    }
    playbook::RunResult r;
    r.pid = ro.pid;
    r.attached = true;
    return r;
  };
  SECTION("unset: three (hang-triage's own is two)") {
    const auto r = drivers::capture(f.rq, pids_of(2));
    CHECK(r.code == 1); // captured: a hang was seen even with no finding
    CHECK(seen.samples == std::vector<std::uint32_t>{3, 3});
    CHECK(contains(f.said.front(), "3 samples"));
  }
  SECTION("--samples 2 wins") {
    f.rq.examination.run.samples = 2;
    drivers::capture(f.rq, pids_of(2));
    CHECK(seen.samples == std::vector<std::uint32_t>{2, 2});
  }
  CHECK(f.rq.on_capture.empty()); // no hook: nothing said of one
  for (const auto& line : f.said) {
    CHECK_FALSE(contains(line, "--on-capture"));
  }
}

TEST_CASE("capture: a target that cannot be examined makes it partial (2), and the hook hears so") {
  Fixture f;
  f.rq.examination.examine = [](const session::Debugger&, const session::Options& so,
                                const playbook::Playbook&,
                                const playbook::RunOptions& ro) -> playbook::RunResult {
    if (so.rank == 1) {
      throw Error(ExitCode::PtraceDenied, "ptrace: Operation not permitted",
                  "another tracer holds it");
    }
    playbook::RunResult r;
    r.pid = ro.pid;
    r.attached = true;
    return r;
  };
  f.rq.on_capture = "echo \"$ROCPLAY_CAPTURE_EXIT\" > \"$ROCPLAY_OUT_DIR/hook.txt\"";
  const auto r = drivers::capture(f.rq, pids_of(3));
  CHECK(r.code == 2);
  CHECK(r.incident.exit_code() == ExitCode::PartialInput);
  CHECK(contains(r.summary, "2/3 targets examined"));
  CHECK(contains(r.summary, "not examined (ptrace: Operation not permitted)"));
  CHECK(read_file(f.dir.path() / "hook.txt") == "2\n");
  REQUIRE(f.errors.size() == 1);
  CHECK(f.errors.front() == "1 of 3 targets could not be examined");
}

TEST_CASE("capture: no target examined: the first one's code, the summary says why") {
  Fixture f;
  f.rq.examination.examine = [](const session::Debugger&, const session::Options&,
                                const playbook::Playbook&,
                                const playbook::RunOptions&) -> playbook::RunResult {
    throw Error(ExitCode::NoSuchProcess, "no such process", "");
  };
  const auto r = drivers::capture(f.rq, pids_of(2));
  CHECK(r.code == static_cast<int>(ExitCode::NoSuchProcess));
  CHECK(contains(r.summary, "0/2 targets examined"));
  CHECK(fs::exists(r.report_path)); // the report says why each was not examined
  REQUIRE_FALSE(f.errors.empty());
  CHECK(f.errors.back() == "no such process");
}

TEST_CASE("capture: a report that cannot be written is the capture's code, the summary and the "
          "hook still come") {
  Fixture f;
  f.rq.examination.examine = [](const session::Debugger&, const session::Options&,
                                const playbook::Playbook&, const playbook::RunOptions& ro) {
    playbook::RunResult r;
    r.pid = ro.pid;
    r.attached = true;
    return r;
  };
  f.rq.write_report = [](const Incident&, const std::string& path) {
    throw Error(ExitCode::NoInput, "cannot write " + path, "check the space left in --out");
  };
  f.rq.on_capture = "true";
  const auto r = drivers::capture(f.rq, pids_of(1));
  CHECK(r.code == static_cast<int>(ExitCode::NoInput)); // not 1: 1 says the report is written
  REQUIRE_FALSE(f.errors.empty());
  CHECK(contains(f.errors.front(), "cannot write " + r.report_path));
  CHECK(fs::exists(r.summary_path));
}

TEST_CASE("run_on_capture: a hook past its timeout is killed with its process group and said") {
  TempDir dir;
  std::vector<std::string> errors;
  const auto start = std::chrono::steady_clock::now();
  const int rc = drivers::run_on_capture(
      "sleep 30 & sleep 30", "r.txt", "s.txt", dir.path().string(), 1,
      std::chrono::milliseconds(200), {},
      [&](const std::string& message, const std::string&) { errors.push_back(message); });
  CHECK(rc == -1);
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(10));
  REQUIRE(errors.size() == 1);
  CHECK(errors.front() == "--on-capture ran past 200 ms and was killed");
}

TEST_CASE(
    "run_on_capture: a failing hook is said with its status, rocplay's ROCPLAY_* are replaced") {
  TempDir dir;
  ::setenv("ROCPLAY_REPORT", "stale", 1);
  std::vector<std::string> errors;
  const int rc = drivers::run_on_capture(
      "test \"$ROCPLAY_REPORT\" = new.txt && exit 7", "new.txt", "s.txt", dir.path().string(), 1,
      std::chrono::seconds(10), {},
      [&](const std::string& message, const std::string&) { errors.push_back(message); });
  ::unsetenv("ROCPLAY_REPORT");
  CHECK(rc == 7);
  REQUIRE(errors.size() == 1);
  CHECK(errors.front() == "--on-capture failed (exit 7)");
}
