// playbook::run_targets, the one driver of `run --pid`, `--pids` and `watch`: the playbook over
// each target on the worker pool, every target at once when the jobs allow (samples in lockstep,
// a target that ends early not waited for), errors kept per target, and the cross-rank findings
// over the examined ones. The examination is replaced by replays of recorded sessions
// (fixtures/rocgdb/tp8-missing-rank) or by stand-ins that only hold a seat in the lockstep. The
// stand-ins run on the pool's threads, where Catch's macros may not: they note what they saw and
// the test checks it after.
#include "replay_driver.hpp"
#include "rocplay/playbook/run_targets.hpp"
#include "rocplay/session/process.hpp"

#include <catch2/catch.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>

using namespace rocplay;
using namespace rocplay::playbook;

namespace {

using Clock = std::chrono::steady_clock;

std::vector<Target> targets_of(std::size_t n) {
  std::vector<Target> out;
  for (std::size_t i = 0; i < n; ++i) {
    out.push_back(
        {static_cast<std::int64_t>(4301 + i), static_cast<int>(i), {}, source::RankRule::Order});
  }
  return out;
}

// A run that attached and saw nothing.
RunResult attached_run(const RunOptions& ro) {
  RunResult r;
  r.pid = ro.pid;
  r.attached = true;
  return r;
}

// What a runner does while its target runs towards sample k: asks until the interval begins.
std::optional<Clock::time_point> wait_for_interval(const RunOptions& ro, std::uint32_t k) {
  const auto give_up = Clock::now() + std::chrono::seconds(30);
  while (Clock::now() < give_up) {
    if (const auto start = ro.interval_start(k)) {
      return start;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return std::nullopt;
}

// A real process whose environment is exactly `env` (`sleep`, killed and reaped at scope exit), for
// what ranked_targets reads from /proc/PID/environ.
class ProcessWithEnv {
public:
  explicit ProcessWithEnv(std::vector<std::string> env) {
    std::vector<char*> envp;
    for (auto& e : env) {
      envp.push_back(e.data());
    }
    envp.push_back(nullptr);
    std::string name = "sleep";
    std::string seconds = "60";
    char* argv[] = {name.data(), seconds.data(), nullptr};
    REQUIRE(::posix_spawnp(&pid_, "sleep", nullptr, nullptr, argv, envp.data()) == 0);
    // posix_spawnp may return while the exec is still laying out the new stack, when
    // /proc/PID/environ reads empty: wait until the environment is there.
    const auto deadline = Clock::now() + std::chrono::seconds(10);
    while (process::read_environ(pid_).value_or(std::map<std::string, std::string>{}).size() <
               env.size() &&
           Clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  ~ProcessWithEnv() {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
  ProcessWithEnv(const ProcessWithEnv&) = delete;
  ProcessWithEnv& operator=(const ProcessWithEnv&) = delete;
  std::int64_t pid() const { return pid_; }

private:
  pid_t pid_ = -1;
};

bool has(const std::vector<Finding>& fs, std::string_view id) {
  return std::any_of(fs.begin(), fs.end(), [&](const Finding& f) { return f.id == id; });
}

} // namespace

TEST_CASE("run_targets: eight replayed ranks, each one's findings, missing-rank across them") {
  TargetsOptions o;
  o.jobs = 8;
  o.examine = [](const session::Debugger&, const session::Options& so, const Playbook& pb,
                 const RunOptions& ro) {
    test::ReplayDriver driver(test::read_fixture("fixtures/rocgdb/tp8-missing-rank/rank" +
                                                 std::to_string(*so.rank) + ".mi"));
    return run(pb, driver, ro);
  };
  std::mutex mutex;
  std::vector<std::int64_t> done;
  o.target_done = [&](const TargetRun& t) {
    std::lock_guard lock(mutex);
    done.push_back(t.target.pid);
  };
  const TargetsResult r = run_targets(find_playbook("hang-triage"), targets_of(8), o);

  REQUIRE(r.targets.size() == 8);
  CHECK(r.examined == 8);
  CHECK(r.lockstep);
  CHECK(done.size() == 8);
  CHECK(std::set<std::int64_t>(done.begin(), done.end()).size() == 8); // each target once
  for (std::size_t i = 0; i < 8; ++i) {
    const TargetRun& t = r.targets[i];
    INFO("rank " << i);
    CHECK(t.target.pid == static_cast<std::int64_t>(4301 + i)); // the order given
    REQUIRE(t.reported() != nullptr);
    CHECK(t.examined());
    // The spin shows on every rank but the one that never entered the collective.
    CHECK(has(t.result->findings, "sync-lane-barrier-spin") == (i != 5));
  }
  REQUIRE(has(r.cross_rank, "missing-rank"));
  const auto missing = std::find_if(r.cross_rank.begin(), r.cross_rank.end(),
                                    [](const Finding& f) { return f.id == "missing-rank"; });
  CHECK(missing->rank == 5);
  CHECK(r.exit_code() == ExitCode::Findings);

  // The same fan-out as an incident (rocplay/case/case.hpp): a case per target, the run's snapshot
  // and findings moved into it, and rank 5 standing apart from the seven that spin.
  TargetsResult copy = r;
  const Incident inc = incident_of("hang-triage", std::move(copy));
  REQUIRE(inc.cases.size() == 8);
  CHECK(inc.exit_code() == ExitCode::Findings);
  REQUIRE(inc.verdict() != nullptr);
  CHECK(inc.verdict()->id == r.cross_rank.front().id);
  for (std::size_t i = 0; i < 8; ++i) {
    const Case& c = inc.cases[i];
    CHECK(c.source.pid == static_cast<std::int64_t>(4301 + i));
    CHECK(c.source.rank == static_cast<int>(i));
    CHECK(c.source.rank_rule == source::RankRule::Order);
    REQUIRE(c.findings.size() == r.targets[i].result->findings.size());
    for (std::size_t k = 0; k < c.findings.size(); ++k) {
      CHECK(c.findings[k].id == r.targets[i].result->findings[k].id);
    }
    REQUIRE(c.run != nullptr);
    // Copied, not moved: the run's exit code (`run.exit_code` in JSON) reads them too.
    CHECK(c.run->findings.size() == c.findings.size());
    CHECK(c.run->snapshot.waves.empty());
  }
  const auto groups = incident::rank_groups(inc);
  std::vector<std::string> who;
  for (const auto& g : groups) {
    who.push_back(incident::who(inc, g));
  }
  INFO(fmt::format("{}", fmt::join(who, " | ")));
  CHECK(std::find(who.begin(), who.end(), "rank 5 (pid 4306)") != who.end());
  CHECK(who.front() == "ranks 0-4,6-7 (pids 4301-4305,4307-4308)");
}

TEST_CASE("run_targets: with jobs = targets every target is under a debugger at once") {
  constexpr std::size_t kTargets = 5;
  std::mutex mutex;
  std::condition_variable cv;
  std::size_t inside = 0;
  std::size_t most_inside = 0;
  TargetsOptions o;
  o.jobs = kTargets;
  o.examine = [&](const session::Debugger&, const session::Options&, const Playbook&,
                  const RunOptions& ro) {
    std::unique_lock lock(mutex);
    ++inside;
    most_inside = std::max(most_inside, inside);
    cv.notify_all();
    // Holds its target until all are held (or 20 s pass: then the check below fails).
    cv.wait_for(lock, std::chrono::seconds(20), [&] { return most_inside == kTargets; });
    --inside;
    return attached_run(ro);
  };
  const TargetsResult r = run_targets(find_playbook("host-stacks"), targets_of(kTargets), o);
  CHECK(most_inside == kTargets);
  CHECK(r.lockstep);
  CHECK(r.examined == kTargets);
  CHECK(r.exit_code() == ExitCode::Ok);
}

TEST_CASE("run_targets: a target late for a sample is waited for up to lockstep_wait, and the "
          "report says so") {
  // Target 1 reaches sample 2 half a second after the others, which wait 100 ms for it.
  TargetsOptions o;
  o.run.samples = 2;
  o.lockstep_wait = std::chrono::milliseconds(100);
  std::atomic<int> resumed{0};
  o.examine = [&](const session::Debugger&, const session::Options&, const Playbook&,
                  const RunOptions& ro) {
    if (ro.pid == 4302) {
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
    }
    if (ro.interval_start && wait_for_interval(ro, 2)) {
      ++resumed;
    }
    if (ro.sampling_done) {
      ro.sampling_done();
    }
    return attached_run(ro);
  };
  const auto t0 = Clock::now();
  const TargetsResult r = run_targets(find_playbook("host-stacks"), targets_of(3), o);
  CHECK(Clock::now() - t0 < std::chrono::seconds(10));
  CHECK(resumed == 3);
  CHECK(r.examined == 3);
  REQUIRE(r.notes.size() == 1);
  CHECK(r.notes[0] == "sample 2: 1 target(s) had not reached it after 0.1 s; the others were "
                      "sampled without waiting longer (sample_skew says how far apart)");
}

TEST_CASE("run_targets: in lockstep the interval begins for every target when the last one "
          "arrives") {
  // Target 2 reaches sample 2 300 ms after the others, whose targets run meanwhile (the runner
  // asks while its target runs): all get the same instant, the slow one's arrival.
  TargetsOptions o;
  o.run.samples = 3;
  std::mutex mutex;
  std::map<std::int64_t, std::vector<Clock::time_point>> starts;
  std::map<std::int64_t, Clock::time_point> arrived;
  o.examine = [&](const session::Debugger&, const session::Options&, const Playbook&,
                  const RunOptions& ro) {
    for (std::uint32_t k = 2; k <= 3; ++k) {
      if (ro.pid == 4303 && k == 2) {
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
      }
      const auto at = Clock::now();
      const auto start = wait_for_interval(ro, k);
      std::lock_guard lock(mutex);
      if (k == 2) {
        arrived[ro.pid] = at;
      }
      if (start) {
        starts[ro.pid].push_back(*start);
      }
    }
    ro.sampling_done();
    return attached_run(ro);
  };
  const TargetsResult r = run_targets(find_playbook("host-stacks"), targets_of(3), o);
  CHECK(r.examined == 3);
  CHECK(r.notes.empty());
  REQUIRE(starts.size() == 3);
  for (const auto& [pid, s] : starts) {
    INFO("pid " << pid);
    REQUIRE(s.size() == 2);
    CHECK(s[0] == starts.at(4301)[0]);
    CHECK(s[1] == starts.at(4301)[1]);
  }
  CHECK(starts.at(4301)[0] >= arrived.at(4303));
  CHECK(starts.at(4301)[0] - arrived.at(4301) >= std::chrono::milliseconds(250));
}

TEST_CASE("run_targets: a target that fails before its first sample is not waited for") {
  // Targets 0 and 2 ask for sample 2; target 1 throws at once (no such process). Were target 1
  // still counted, the others would wait out the lockstep's 60 s deadline.
  TargetsOptions o;
  o.run.samples = 2;
  std::atomic<int> resumed{0};
  std::atomic<int> without_hooks{0};
  o.examine = [&](const session::Debugger&, const session::Options&, const Playbook&,
                  const RunOptions& ro) {
    if (ro.pid == 4302) {
      throw Error(ExitCode::NoSuchProcess, "no process 4302", "check the pid");
    }
    if (!ro.interval_start || !ro.sampling_done) {
      ++without_hooks;
      return attached_run(ro);
    }
    if (wait_for_interval(ro, 2)) {
      ++resumed;
    }
    ro.sampling_done();
    ro.sampling_done(); // twice is once
    return attached_run(ro);
  };
  const auto t0 = Clock::now();
  const TargetsResult r = run_targets(find_playbook("host-stacks"), targets_of(3), o);
  CHECK(Clock::now() - t0 < std::chrono::seconds(20));
  CHECK(without_hooks == 0);
  CHECK(resumed == 2);
  CHECK(r.lockstep);
  CHECK(r.examined == 2);
  const TargetRun& failed = r.targets[1];
  CHECK_FALSE(failed.examined());
  CHECK_FALSE(failed.result.has_value());
  REQUIRE(failed.error.has_value());
  CHECK(failed.exit_code() == ExitCode::NoSuchProcess);
  CHECK(failed.reported() == nullptr);
  CHECK(r.exit_code() == ExitCode::PartialInput);

  // As an incident: the target's case says why it was not examined, and holds no run.
  TargetsResult copy = r;
  const Incident inc = incident_of("host-stacks", std::move(copy));
  REQUIRE(inc.cases.size() == 3);
  CHECK(inc.cases[1].status == CaseStatus::NotExamined);
  CHECK(inc.cases[1].error == "no process 4302");
  CHECK(inc.cases[1].error_hint == "check the pid");
  CHECK(inc.cases[1].exit_code == ExitCode::NoSuchProcess);
  CHECK(inc.cases[1].run == nullptr);
}

TEST_CASE("run_targets: a run that never attached is kept, its fatal error is the reason") {
  TargetsOptions o;
  o.examine = [](const session::Debugger&, const session::Options&, const Playbook&,
                 const RunOptions& ro) {
    RunResult r;
    r.pid = ro.pid;
    r.fatal = Error(ExitCode::PtraceDenied, "ptrace not permitted", "check Yama");
    return r;
  };
  const TargetsResult r = run_targets(find_playbook("host-stacks"), targets_of(1), o);
  REQUIRE(r.targets.size() == 1);
  const TargetRun& t = r.targets.front();
  // A lone `run --pid` still reports the steps of a run that never attached.
  REQUIRE(t.result.has_value());
  REQUIRE(t.error.has_value());
  CHECK(t.reported() == nullptr);
  CHECK(t.exit_code() == ExitCode::PtraceDenied);
  CHECK(r.examined == 0);
  CHECK(r.exit_code() == ExitCode::PtraceDenied); // nothing examined: the first one's code
}

TEST_CASE(
    "run_targets: fewer jobs than targets takes turns, and says the samples are not in step") {
  std::atomic<int> inside{0};
  std::atomic<int> most_inside{0};
  std::atomic<int> with_hooks{0};
  std::atomic<int> wrong_rank{0};
  TargetsOptions o;
  o.jobs = 1;
  o.run.samples = 2;
  o.examine = [&](const session::Debugger&, const session::Options& so, const Playbook&,
                  const RunOptions& ro) {
    const int now = ++inside;
    most_inside = std::max(most_inside.load(), now);
    with_hooks += ro.interval_start ? 1 : 0; // no lockstep: nobody to wait for
    wrong_rank += so.rank == static_cast<int>(ro.pid - 4301) ? 0 : 1;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    --inside;
    return attached_run(ro);
  };
  const TargetsResult r = run_targets(find_playbook("host-stacks"), targets_of(3), o);
  CHECK(most_inside == 1);
  CHECK(with_hooks == 0);
  CHECK(wrong_rank == 0);
  CHECK_FALSE(r.lockstep);
  REQUIRE(r.notes.size() == 1);
  CHECK(r.notes[0] == "samples not in lockstep: 3 targets, 1 at a time (--jobs 3 keeps them in "
                      "step)");
  CHECK(r.examined == 3);
}

TEST_CASE("ranked_targets: a rank variable is a whole number or no rank, `RANK=3x` is not rank 3") {
  ProcessWithEnv trailing({"RANK=3x", "LOCAL_RANK=5"});
  ProcessWithEnv plain({"RANK=7"});
  ProcessWithEnv slurm({"RANK=", "SLURM_PROCID=2"});
  const auto ranked = ranked_targets({trailing.pid(), plain.pid(), slurm.pid()});
  REQUIRE(ranked.size() == 3);
  CHECK(ranked[0].pid == trailing.pid());
  CHECK(ranked[0].rank == 5); // RANK refused, LOCAL_RANK next
  CHECK(ranked[1].rank == 7);
  CHECK(ranked[2].rank == 2);

  // One target with no rank: the order given is the rank order, for every target.
  ProcessWithEnv only_trailing({"RANK=3x"});
  const auto ordered = ranked_targets({plain.pid(), only_trailing.pid()});
  REQUIRE(ordered.size() == 2);
  CHECK(ordered[0].rank == 0);
  CHECK(ordered[1].rank == 1);
}

TEST_CASE("after one target's GPU attach fails, no further target is attached and /proc is read "
          "for each",
          "[playbook][targets][harm]") {
  // One at a time (--jobs 1): the first target's runner reports a failed GPU attach; the second is
  // never examined. Real processes stand in for the ranks, so the look afterwards has /proc to
  // read.
  ProcessWithEnv first({"RANK=0"});
  ProcessWithEnv second({"RANK=1"});
  std::vector<Target> targets = targets_of(2);
  targets[0].pid = first.pid();
  targets[1].pid = second.pid();
  TargetsOptions o;
  o.jobs = 1;
  std::atomic<int> examined{0};
  o.examine = [&](const session::Debugger&, const session::Options&, const Playbook&,
                  const RunOptions& ro) {
    ++examined;
    if (ro.gpu_attach_failed) { // no Catch macro on the pool's threads
      ro.gpu_attach_failed();
    }
    return attached_run(ro);
  };
  Playbook pb;
  pb.name = "hang-triage";
  const TargetsResult r = run_targets(pb, targets, o);
  CHECK(examined == 1);
  REQUIRE(r.targets.size() == 2);
  CHECK(r.targets[0].examined());
  REQUIRE(r.targets[1].error);
  CHECK(std::string(r.targets[1].error->what()).find("not attached") != std::string::npos);
  CHECK(r.exit_code() == ExitCode::PartialInput);
  const auto note_with = [&](const std::string& text) {
    return std::count_if(r.notes.begin(), r.notes.end(),
                         [&](const std::string& n) { return n.find(text) != std::string::npos; });
  };
  CHECK(note_with("a GPU attach failed inside the driver") == 1);
  CHECK(note_with(fmt::format("rank 0 (pid {}) is in state S", first.pid())) == 1);
  CHECK(note_with(fmt::format("rank 1 (pid {}) is in state S", second.pid())) == 1);
}

TEST_CASE("a target whose halt is asked after another's GPU attach failed sees it",
          "[playbook][targets][harm]") {
  // All at once: the first reports the failure, the second (already attached) is told to halt.
  std::vector<Target> targets = targets_of(2);
  TargetsOptions o;
  std::mutex m;
  std::condition_variable reported;
  bool failed = false;
  std::atomic<bool> second_saw_halt{false};
  int entered = 0;
  o.examine = [&](const session::Debugger&, const session::Options&, const Playbook&,
                  const RunOptions& ro) {
    {
      // Both under their debuggers before the first one's attach fails.
      std::unique_lock lock(m);
      ++entered;
      reported.notify_all();
      reported.wait_for(lock, std::chrono::seconds(10), [&] { return entered == 2; });
    }
    if (ro.pid == 4301) {
      ro.gpu_attach_failed();
      std::lock_guard lock(m);
      failed = true;
      reported.notify_all();
    } else {
      std::unique_lock lock(m);
      reported.wait_for(lock, std::chrono::seconds(10), [&] { return failed; });
      second_saw_halt = ro.halt && ro.halt();
    }
    return attached_run(ro);
  };
  Playbook pb;
  pb.name = "hang-triage";
  const TargetsResult r = run_targets(pb, targets, o);
  CHECK(second_saw_halt);
  CHECK(r.examined == 2);
}
