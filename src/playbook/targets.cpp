// Live targets, one or several at once: see rocplay/playbook/run_targets.hpp.
#include "rocplay/core/source.hpp"
#include "rocplay/playbook/run_targets.hpp"

#include "playbook/deferred_code.hpp"
#include "playbook/internal.hpp"
#include "rocplay/core/worker_pool.hpp"
#include "rocplay/heuristics/heuristics.hpp"
#include "rocplay/session/process.hpp"

#include <fmt/format.h>

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <chrono>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

namespace rocplay::playbook {

namespace {

// Keeps every target's samples at the same instants. Each target resumes its target for sample k
// and, with it running, arrives here; the interval begins for all at the instant the last target
// still sampling arrives (or, for a target that has waited `wait`, at once), so all are stopped
// together after the same interval. No target is held stopped while another one is slow (a slow
// attach, a slow stop).
class Lockstep {
public:
  using TimePoint = std::chrono::steady_clock::time_point;

  Lockstep(std::size_t participants, std::chrono::milliseconds wait)
      : active_(participants), wait_(wait) {}

  // One target's seat for one sample: arrives on the first call, then answers when the
  // interval began.
  std::optional<TimePoint> interval_start(std::uint32_t sample, std::optional<TimePoint>& arrived) {
    const auto now = std::chrono::steady_clock::now();
    std::lock_guard lock(mutex_);
    if (!arrived) {
      arrived = now;
      ++arrived_[sample];
      settle(now);
    }
    if (const auto it = start_.find(sample); it != start_.end()) {
      return it->second;
    }
    if (now >= *arrived + wait_) {
      // Late targets are waited for no longer; the report says which sample went on without
      // how many.
      late_.try_emplace(sample, active_ - std::min(active_, arrived_[sample]));
      return now;
    }
    return std::nullopt;
  }

  // Per sample that some target gave up waiting for: how many had not reached it then.
  std::map<std::uint32_t, std::size_t> late() const {
    std::lock_guard lock(mutex_);
    return late_;
  }

  // A target takes no more samples (it ended, or failed before its first).
  void leave() {
    std::lock_guard lock(mutex_);
    if (active_ > 0) {
      --active_;
    }
    settle(std::chrono::steady_clock::now());
  }

private:
  // Every sample that all targets still sampling have reached begins now.
  void settle(TimePoint now) {
    for (const auto& [sample, n] : arrived_) {
      if (n >= active_) {
        start_.try_emplace(sample, now);
      }
    }
  }

  mutable std::mutex mutex_;
  std::size_t active_;
  std::chrono::milliseconds wait_;
  std::map<std::uint32_t, std::size_t> arrived_;
  std::map<std::uint32_t, TimePoint> start_;
  std::map<std::uint32_t, std::size_t> late_;
};

// Leaves the lockstep once, whichever comes first: the runner saying sampling is done, or the
// target's examination ending on any path (a throw included), so no target waits for it.
class LockstepSeat {
public:
  explicit LockstepSeat(Lockstep* step) : step_(step) {}
  LockstepSeat(const LockstepSeat&) = delete;
  LockstepSeat& operator=(const LockstepSeat&) = delete;
  ~LockstepSeat() { leave(); }
  void leave() {
    if (step_ != nullptr && !left_) {
      left_ = true;
      step_->leave();
    }
  }

private:
  Lockstep* step_;
  bool left_ = false;
};

// Per sample index: the spread of the instants at which the targets' stops began.
std::vector<std::pair<std::uint32_t, double>> sample_skew(const std::vector<TargetRun>& targets) {
  std::vector<const std::vector<Sample>*> processes;
  for (const auto& t : targets) {
    if (const RunResult* r = t.reported()) {
      processes.push_back(&r->samples);
    }
  }
  return snapshot::sample_skew(processes);
}

// After a harmful look, what /proc says of each target once every debugger has gone: its state and
// the CPU its threads used in one second. A frozen rank mostly sleeps (or spins in one collective);
// only the job's own progress (its log, a step counter) proves it still steps.
std::vector<std::string> progress_after(const std::vector<TargetRun>& targets) {
  const long ticks_per_second = ::sysconf(_SC_CLK_TCK);
  std::vector<std::optional<process::Stat>> before;
  before.reserve(targets.size());
  for (const auto& t : targets) {
    before.push_back(process::read_stat(t.target.pid));
  }
  std::this_thread::sleep_for(std::chrono::seconds(1));
  std::vector<std::string> out;
  for (std::size_t i = 0; i < targets.size(); ++i) {
    const auto& t = targets[i];
    const std::string who = t.target.rank
                                ? fmt::format("rank {} (pid {})", *t.target.rank, t.target.pid)
                                : fmt::format("pid {}", t.target.pid);
    const auto after = process::read_stat(t.target.pid);
    if (!after) {
      out.push_back(fmt::format("after the look: {} is gone", who));
      continue;
    }
    std::string cpu = "CPU not known";
    if (before[i] && ticks_per_second > 0) {
      const auto used = (after->utime + after->stime) - (before[i]->utime + before[i]->stime);
      cpu = fmt::format("{:.2f} s of CPU in 1 s",
                        static_cast<double>(used) / static_cast<double>(ticks_per_second));
    }
    out.push_back(fmt::format("after the look: {} is in state {}, {}", who, after->state, cpu));
  }
  return out;
}

// RANK (torchrun, vLLM), then LOCAL_RANK, ..., from the target's environment (the one rule:
// source::rank_from_env).
std::optional<int> rank_of(std::int64_t pid) {
  const auto env = process::read_environ(pid);
  if (!env) {
    return std::nullopt;
  }
  return source::rank_from_env(*env);
}

// One target end to end, on a pool thread: never throws. Once any target's GPU attach has failed
// (`harmed`), targets not yet attached are left alone and the others take no further sample.
void examine_one(TargetRun& t, const Playbook& playbook, const TargetsOptions& options,
                 Lockstep* step, std::atomic<bool>& harmed) {
  const auto t0 = std::chrono::steady_clock::now();
  LockstepSeat seat(step);
  if (harmed) {
    t.error = Error(ExitCode::StepFailed,
                    "not attached: another target's GPU attach had failed inside the driver, "
                    "so rocplay touched the job no more",
                    "check the job's own progress first (see the report's HARM lines)");
    return;
  }
  try {
    session::Options so = options.session;
    so.record_path = t.target.record_path;
    so.rank = t.target.rank;
    RunOptions ro = options.run;
    ro.pid = t.target.pid;
    ro.context.worker_pids = other_workers_of(t.target.pid); // as a single-target run names them
    so.worker_pids = ro.context.worker_pids;
    so.samples = std::clamp<std::uint32_t>(ro.samples.value_or(playbook.samples.value_or(1)), 1,
                                           kMaxSamples);
    if (step != nullptr) {
      ro.interval_start = [step, arrived = std::optional<Lockstep::TimePoint>(),
                           sample = std::uint32_t{0}](std::uint32_t k) mutable {
        if (k != sample) {
          sample = k;
          arrived.reset();
        }
        return step->interval_start(k, arrived);
      };
      ro.sampling_done = [&seat] { seat.leave(); };
    }
    ro.gpu_attach_failed = [&harmed] { harmed = true; };
    ro.halt = [&harmed] { return harmed.load(); };
    RunResult result = options.examine ? options.examine(options.debugger, so, playbook, ro)
                                       : examine_target(options.debugger, so, playbook, ro);
    if (result.fatal && !result.attached) {
      t.error = *result.fatal; // never examined: its report would be empty
    }
    t.result = std::move(result);
  } catch (const Error& e) {
    t.error = e;
  } catch (const std::exception& e) {
    t.error = Error(ExitCode::Internal, e.what(), "this is a bug in rocplay; please report it");
  }
  t.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

bool may_be_cuda_gdb(const session::Debugger& debugger) {
  // A debugger named on the command line is known by its banner only once it runs.
  return debugger.kind == DebuggerKind::CudaGdb ||
         (debugger.kind == DebuggerKind::Unknown &&
          std::filesystem::path(debugger.path).filename().string().find("cuda-gdb") !=
              std::string::npos);
}

bool has_step(const std::vector<Step>& steps, StepKind kind) {
  return std::any_of(steps.begin(), steps.end(),
                     [kind](const Step& s) { return s.kind == kind || has_step(s.body, kind); });
}
bool has_step(const Playbook& playbook, StepKind kind) {
  return has_step(playbook.steps, kind) || has_step(playbook.always, kind);
}

} // namespace

std::vector<Target> ranked_targets(const std::vector<std::int64_t>& pids) {
  std::vector<Target> targets;
  bool all_ranked = true;
  for (const auto pid : pids) {
    Target t;
    t.pid = pid;
    t.rank = rank_of(pid);
    t.rank_rule = t.rank ? source::RankRule::Environment : source::RankRule::None;
    targets.push_back(std::move(t));
    all_ranked = all_ranked && targets.back().rank.has_value();
  }
  // Without RANK in every environment, the order given is the rank order.
  if (!all_ranked) {
    for (std::size_t i = 0; i < targets.size(); ++i) {
      targets[i].rank = static_cast<int>(i);
      targets[i].rank_rule = source::RankRule::Order;
    }
  }
  return targets;
}

std::vector<std::int64_t> other_workers_of(std::int64_t pid) {
  std::vector<std::int64_t> out;
  try {
    process::ScanOptions scan;
    scan.sample = std::chrono::milliseconds(0);
    for (const auto& w : process::workers_of(pid, scan)) {
      if (w.pid != pid) {
        out.push_back(w.pid);
      }
    }
  } catch (const std::exception&) {
    // attach() reports a missing process with its own message and hint
  }
  return out;
}

RunResult examine_target(const session::Debugger& debugger, const session::Options& session_options,
                         const Playbook& playbook, const RunOptions& run_options) {
  // cuda-gdb's windows are decoded by nvdisasm, whose start-up (0.5 s) is paid beside the
  // debugger's start and attach for the device code the target's own files hold.
  std::unique_ptr<detail::DeferredCode> code;
  if (may_be_cuda_gdb(debugger) && has_step(playbook, StepKind::Disassemble)) {
    code = detail::DeferredCode::for_debugger(debugger);
    if (code) {
      code->start_early(run_options.pid);
    }
  }
  session::Session session(debugger, session_options);
  auto driver = make_driver(session);
  // run() has detached (on every path) and taken the session's times and warnings.
  RunResult result = detail::run_with_code(playbook, *driver, run_options, std::move(code));
  if (result.times.state_after == '?') {
    // Never attached, so the session never looked: the report still says how the target is.
    const auto st = process::read_stat(run_options.pid);
    result.times.state_after = st ? st->state : 'X';
  }
  if (session_options.rank) {
    // On every sample too, as a post-mortem of the recording (whose meta holds the rank) has it.
    result.snapshot.rank = session_options.rank;
    for (auto& sample : result.samples) {
      sample.snapshot.rank = session_options.rank;
    }
    for (auto& f : result.findings) {
      f.rank = session_options.rank;
    }
  }
  return result;
}

ExitCode TargetRun::exit_code() const {
  if (error) {
    return error->code();
  }
  return result ? result->exit_code() : ExitCode::Internal;
}

ExitCode TargetsResult::exit_code() const {
  if (targets.empty()) {
    return ExitCode::Ok;
  }
  if (examined == 0) {
    return targets.front().exit_code(); // nothing was examined: the first one's reason
  }
  if (examined < targets.size()) {
    return ExitCode::PartialInput;
  }
  bool findings = !cross_rank.empty();
  for (const auto& t : targets) {
    findings = findings || (t.result && t.result->exit_code() == ExitCode::Findings);
  }
  return findings ? ExitCode::Findings : ExitCode::Ok;
}

TargetsResult run_targets(const Playbook& playbook, const std::vector<Target>& targets,
                          const TargetsOptions& options) {
  TargetsResult out;
  out.targets.resize(targets.size());
  for (std::size_t i = 0; i < targets.size(); ++i) {
    out.targets[i].target = targets[i];
  }
  const std::size_t at_once = std::min<std::size_t>(
      targets.size(), options.jobs ? options.jobs : std::min<std::size_t>(targets.size(), 8));
  // Samples in lockstep need every target under a debugger at once: the pool then has one
  // thread per target, and a thread takes a second target only after its first has left.
  out.lockstep = at_once == targets.size();
  if (!out.lockstep && options.run.samples.value_or(playbook.samples.value_or(1)) > 1) {
    out.notes.push_back(fmt::format("samples not in lockstep: {} targets, {} at a time (--jobs {} "
                                    "keeps them in step)",
                                    targets.size(), at_once, targets.size()));
  }
  Lockstep step(targets.size(), options.lockstep_wait);
  std::mutex done_mutex;
  std::atomic<bool> harmed{false};
  {
    WorkerPool pool(targets.size(), static_cast<unsigned>(at_once), [&](std::size_t i) {
      // One target alone has no one to wait for.
      examine_one(out.targets[i], playbook, options,
                  out.lockstep && targets.size() > 1 ? &step : nullptr, harmed);
      if (options.target_done) {
        std::lock_guard lock(done_mutex);
        options.target_done(out.targets[i]);
      }
    });
    pool.join();
  }
  if (harmed) {
    out.notes.push_back("a GPU attach failed inside the driver: rocplay attached no further "
                        "target and took no further sample (targets already waiting for a sample "
                        "took that one)");
    for (auto& line : progress_after(out.targets)) {
      out.notes.push_back(std::move(line));
    }
  }
  for (const auto& [sample, missing] : step.late()) {
    out.notes.push_back(fmt::format(
        "sample {}: {} target(s) had not reached it after {:.3g} s; the others were sampled "
        "without waiting longer (sample_skew says how far apart)",
        sample, missing, std::chrono::duration<double>(options.lockstep_wait).count()));
  }

  std::vector<Snapshot> ranked;
  std::vector<heuristics::RankHistory> history;
  for (const auto& t : out.targets) {
    if (t.examined()) {
      // The last sample: with several, those were taken in lockstep (one moment on every rank).
      const auto& samples = t.result->samples;
      ranked.push_back(samples.size() > 1 ? samples.back().snapshot : t.result->snapshot);
      ranked.back().rank = t.target.rank;
      history.push_back(heuristics::rank_history(samples));
    }
  }
  out.examined = ranked.size();
  if (ranked.size() >= 2) {
    try {
      out.cross_rank = heuristics::run_ranks(ranked, history);
    } catch (const std::exception& e) {
      // Every target is detached by now: a bug of ours must not cost the report.
      out.notes.push_back(fmt::format("the cross-rank analysis failed ({}): a bug in rocplay, "
                                      "please report it with the recordings (--record); each "
                                      "target's own findings still stand",
                                      e.what()));
    }
  }
  out.sample_skew = sample_skew(out.targets);
  return out;
}

Incident incident_of(const std::string& playbook, TargetsResult&& result) {
  Incident inc;
  inc.title = playbook;
  inc.cases.reserve(result.targets.size());
  for (auto& t : result.targets) {
    Case c;
    c.source.pid = t.target.pid;
    c.source.rank = t.target.rank;
    c.source.rank_rule = t.target.rank_rule;
    c.exit_code = t.exit_code();
    c.seconds = t.seconds;
    if (t.error) {
      c.status = CaseStatus::NotExamined;
      c.error = t.error->what();
      c.error_hint = t.error->hint();
    } else if (!t.result || !t.result->attached) {
      c.status = CaseStatus::NotExamined;
      c.error = t.result && t.result->fatal ? t.result->fatal->what() : "never attached";
    } else if (t.result->fatal || t.result->aborted) {
      c.status = CaseStatus::Partial;
    }
    if (t.result) {
      RunResult& run = *t.result;
      c.snapshot = std::move(run.snapshot);
      // Copied, not moved: the run keeps its findings, so its own exit code (the JSON's
      // `run.exit_code`) is the case's, not "nothing found".
      c.findings = run.findings;
      c.progress = std::move(run.progress);
      c.graph = std::move(run.graph);
      c.warnings = run.warnings;
      // The samples move to the case; the run keeps each one's times (its report says when each
      // stop began), not a second copy of its snapshot.
      c.samples = std::move(run.samples);
      run.samples.clear();
      for (const auto& sm : c.samples) {
        Sample times;
        times.index = sm.index;
        times.at = sm.at;
        times.stop_seconds = sm.stop_seconds;
        times.wall_time = sm.wall_time;
        run.samples.push_back(std::move(times));
      }
      c.run = std::make_shared<const RunResult>(std::move(run));
    }
    inc.cases.push_back(std::move(c));
  }
  inc.cross_rank = std::move(result.cross_rank);
  inc.sample_skew = std::move(result.sample_skew);
  inc.notes = std::move(result.notes);
  inc.lockstep = result.lockstep;
  result.targets.clear();
  result.examined = 0;
  return inc;
}

} // namespace rocplay::playbook
