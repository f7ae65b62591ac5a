// Examining live targets: one process end to end (a debugger session, the playbook, detach), or
// several at once with their samples in lockstep and the cross-rank heuristics over them. `rocplay
// run --pid` is a run over one target, `--pids`/`--workers-of` and `rocplay watch` over several.
//
//   auto targets = playbook::ranked_targets({4301, 4302});   // ranks from RANK=, else the order
//   playbook::TargetsOptions o;
//   o.debugger = session::find_debugger("");
//   auto result = playbook::run_targets(pb, targets, o);     // every target detached
//   Incident inc = playbook::incident_of(pb.name, std::move(result));
//   report::write(out, inc, report::Format::Text, {}, ROCPLAY_VERSION);  // the one writer
//
// Layer: src/playbook/ (library rocplay_playbook; docs/architecture.md).
#pragma once

#include "rocplay/case/case.hpp"

#include "rocplay/case/run_result.hpp"
#include "rocplay/core/error.hpp"
#include "rocplay/playbook/playbook.hpp"
#include "rocplay/session/session.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace rocplay::playbook {

// One process to examine.
struct Target {
  std::int64_t pid = 0;
  std::optional<int> rank; // put on its snapshot, findings and recording; unset for a lone `--pid`
  std::string record_path; // where its debugger transcript goes; empty: not recorded
  source::RankRule rank_rule = source::RankRule::None; // how `rank` was told
};

// Targets for several pids, in the order given: each one's rank from its environment, the first of
// RANK, LOCAL_RANK, OMPI_COMM_WORLD_RANK, SLURM_PROCID that is a number from end to end (`3x` is
// none); when any target has none, the order given is the rank order. No record paths.
std::vector<Target> ranked_targets(const std::vector<std::int64_t>& pids);

// The GPU workers under `pid` other than itself, for the "nothing visible" finding and the
// recording's meta; empty when there are none or the scan fails (a process scan, no ptrace).
std::vector<std::int64_t> other_workers_of(std::int64_t pid);

// One target, end to end: a debugger session, the playbook, detach (on every path), then the
// session's account folded into the result: its times (the samples' stops added up), the target's
// state when the session never looked, its warnings, and `session_options.rank` on the snapshots
// (each sample's too) and findings. Throws what the session throws before the playbook runs (no
// debugger, ...).
RunResult examine_target(const session::Debugger& debugger, const session::Options& session_options,
                         const Playbook& playbook, const RunOptions& run_options);

// What happened to one target.
struct TargetRun {
  Target target;
  // The playbook's run; absent when something threw before it ran.
  std::optional<RunResult> result;
  // Why the target was not examined: what was thrown, or the run's fatal error when it never
  // attached (its report would be empty).
  std::optional<Error> error;
  double seconds = 0; // wall time, attach to detach

  ExitCode exit_code() const;
  bool examined() const { return !error && result && result->attached; }
  // The run to report: absent when the target was not examined for a reason before it attached.
  const RunResult* reported() const { return result && !error ? &*result : nullptr; }
};

struct TargetsOptions {
  session::Debugger debugger;
  // Timeouts and attach mode; record_path, rank and worker_pids are each target's.
  session::Options session;
  // Vars, samples, interval, stop timeout, step progress; pid, context.worker_pids and the
  // lockstep hooks are each target's.
  RunOptions run;
  // Targets examined at once; 0: all of them, at most 8. Samples are in lockstep only when every
  // target is under a debugger at once (jobs >= targets).
  unsigned jobs = 0;
  // How long a target waits at a sample for the others to reach it before it goes on alone (the
  // report then notes the sample; sample_skew says by how much the stops were apart).
  std::chrono::milliseconds lockstep_wait{60'000};
  // Called as each target ends, one call at a time, from the thread that examined it.
  std::function<void(const TargetRun&)> target_done;
  // How one target is examined; examine_target when unset (tests put a recording in its place).
  std::function<RunResult(const session::Debugger&, const session::Options&, const Playbook&,
                          const RunOptions&)>
      examine;
};

struct TargetsResult {
  std::vector<TargetRun> targets; // in the order given
  std::vector<Finding> cross_rank;
  // Per sample index: how far apart the targets' stops began, in seconds.
  std::vector<std::pair<std::uint32_t, double>> sample_skew;
  bool lockstep = false;
  std::vector<std::string> notes; // for the report, said once after the targets
  std::size_t examined = 0;

  // 0/1 (findings) when every target was examined, PartialInput when some were not, else the
  // first target's code.
  ExitCode exit_code() const;
};

// Examines every target on the worker pool (rocplay/core/worker_pool.hpp), each under its own
// debugger, detached on every path; with several samples and every target at once, sample k is
// taken on every target at the same instant (a target that ends early stops being waited for).
// Then the cross-rank heuristics over the examined targets' last samples. Nothing is thrown for
// one target: its error is in its TargetRun.
TargetsResult run_targets(const Playbook& playbook, const std::vector<Target>& targets,
                          const TargetsOptions& options);

// The incident of a fan-out: a Case per target (its source: pid and rank, the rank's rule; its
// snapshot, samples, findings and progress moved out of the run; the run's steps and target
// account kept as Case::run), the cross-rank findings, sample skew, notes and lockstep.
// report::write prints it; Incident::exit_code is the command's exit code.
Incident incident_of(const std::string& playbook, TargetsResult&& result);

} // namespace rocplay::playbook
