// The incident model, where the layers meet (docs/architecture.md, "The incident model"): a Case
// per examined process or offline input, and an Incident over the cases. Every driver (a live run
// of one target or several, launch, wait-for-fault, a watch capture, a post-mortem, an agent-log
// read) fills them; the report writers read them. A Case is a plain aggregate of the types the
// layers below already make (Snapshot, Sample, Finding, crash::Evidence, agentlog::Report), with
// optional sections, not a new vocabulary.
//
//   Incident inc;
//   inc.cases.push_back(std::move(rank0));            // each with source.rank / source.pid
//   inc.cross_rank = heuristics::run_ranks(...);
//   for (const auto& g : incident::rank_groups(inc))   // `ranks 0,2-7: KERNEL at f.cu:12 ...`
//     ...;
//   return inc.exit_code();                            // the one exit-code rule
//
// Layer: src/case/ (library rocplay_case; above heuristics, crash and agentlog, below report).
#pragma once

#include "rocplay/core/error.hpp"
#include "rocplay/core/finding.hpp"
#include "rocplay/core/source.hpp"
#include "rocplay/graph/graph.hpp"
#include "rocplay/heuristics/launch_verify.hpp"
#include "rocplay/heuristics/progress.hpp"
#include "rocplay/snapshot/grouping.hpp"
#include "rocplay/snapshot/sampling.hpp"
#include "rocplay/snapshot/snapshot.hpp"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace rocplay {

namespace playbook {
struct RunResult; // rocplay/case/run_result.hpp: the steps, the target account
}
namespace crash {
struct Evidence; // rocplay/crash/crash.hpp
}
namespace agentlog {
struct Report; // rocplay/agentlog/agentlog.hpp
}

namespace incident {
// Where one case stands, for the incident's line per rank: its verdict's title (or what kept it
// from being examined), and the place: the stuck kernel and its line, or, with the GPU idle, the
// innermost host frame of the user's own code.
struct Whereabouts {
  std::string verdict; // `no known stuck-kernel pattern` when there is no finding
  std::string where; // `ncclDevKernel_AllReduce at all_reduce.cu:52`, `GPU idle, wait_for_batch at
                     // worker.py:88`
  std::string key;   // cases with equal keys are grouped
  // The debugger's attach to the GPU side failed inside the driver (Snapshot::gpu_attach_error):
  // kept here for drivers that keep only the whereabouts (incident::harm reads it).
  std::string gpu_attach_error;
};
} // namespace incident

enum class CaseStatus : std::uint8_t {
  Examined,    // live: attached and the playbook ran; offline: read whole
  Partial,     // examined, but the run ended early or lines were skipped
  NotExamined, // live: never attached (no such process, refused, ...); `error` says why
  Unreadable,  // offline: missing, unreadable or of no known format; `error` says why
};
std::string_view to_string(CaseStatus status);

// What `rocplay launch` started (or `run --wait-for-fault` waited on) and what became of it.
struct LaunchInfo {
  std::vector<std::string> argv; // as the program got them (empty for --wait-for-fault)
  std::int64_t pid = 0;
  std::string outcome; // session::to_string(LaunchOutcome): faulted, exited, ...
  std::optional<int> exit_code;
  std::string exit_signal;
  std::string stop_signal; // SIGSEGV, CUDA_EXCEPTION_14, SIGINT
  std::string stop_reason;
  std::string user_signal; // SIGINT when rocplay was interrupted
  double ran_seconds = 0;
  std::optional<double> timeout_seconds;
  std::size_t passed_signals = 0;
  std::vector<std::string> api_errors; // CUDA calls that failed, as cuda-gdb printed them
  // What happened to the program after the report: `killed after the report`, `detached; it keeps
  // running`, ...
  std::string after;
};

// One examined process or offline input.
struct Case {
  source::Source source;
  CaseStatus status = CaseStatus::Examined;
  std::string error; // why it was not examined or not read
  std::string error_hint;
  ExitCode exit_code = ExitCode::Ok; // this case alone (a run's RunResult::exit_code, an error's)
  double seconds = 0;                // wall time spent on it
  std::vector<std::string> warnings;

  std::vector<Sample> samples; // several samples: each one (the first is `snapshot`)
  Snapshot snapshot;           // the last or only one
  // The snapshot's waves grouped once, for every writer and heuristic that reads classes; empty
  // until incident::group(…) or a driver fills it.
  std::vector<snapshot::WaveClass> classes;
  std::vector<Finding> findings; // the verdict first
  SampleProgress progress;
  // Who waits for whom (heuristics::wait_graph over the above): its roots are the `Cause:` lines.
  graph::Graph graph;

  std::shared_ptr<const playbook::RunResult> run; // live: the steps and the target account
  std::optional<LaunchInfo> launch;               // launch / wait-for-fault
  std::shared_ptr<const crash::Evidence> crash;   // crash evidence read for this process
  std::shared_ptr<const agentlog::Report> faults; // rocm-debug-agent faults
  // Where it stands, when the driver settled it without keeping the snapshot (a post-mortem batch
  // keeps no snapshot per input); else incident::whereabouts computes it from the snapshot.
  std::optional<incident::Whereabouts> at;

  bool examined() const { return status == CaseStatus::Examined || status == CaseStatus::Partial; }
  // The finding the case's report leads with; nullptr when there is none.
  const Finding* verdict() const { return findings.empty() ? nullptr : &findings.front(); }
};

// Several cases seen together: one event.
struct Incident {
  std::string title; // the playbook's name (live), `postmortem`, `watch capture`
  std::vector<Case> cases;
  std::vector<Finding> cross_rank; // heuristics::run_ranks over the examined cases
  // Per sample index: how far apart the cases' stops began, in seconds (live, several samples).
  std::vector<std::pair<std::uint32_t, double>> sample_skew;
  std::vector<Finding> crash_verdict; // crash evidence joined over every case
  // Recordings of one process compared in time (a post-mortem's series): what they say.
  std::vector<Finding> series;
  std::vector<std::string> notes; // said once, after the cases
  // `launch --verify`: each run of the program under its experiment, and the verdict over them
  // (heuristics::compare_verify_runs), which the incident leads with.
  std::vector<heuristics::VerifyRun> verify_runs;
  std::optional<Finding> verification;
  bool lockstep = false; // samples were taken on every case at the same instant
  // Several targets or inputs were asked for (--pids, --workers-of, a watch capture): the report
  // is the one over several cases even when there is one.
  bool several = false;

  // The one exit-code rule. No case: Ok. One case: its own code. No case examined: the first case's
  // code. Some not examined (or unreadable): PartialInput. Else Findings when a cross-rank or
  // crash-verdict finding, a series finding at warning or above, any case's warning-or-above
  // finding, or a case whose own code says Findings; a case's StepFailed or TargetLeftStopped
  // wins over Findings; else Ok.
  ExitCode exit_code() const;
  // The finding the incident leads with: `launch --verify`'s, else the first cross-rank one, else
  // the crash verdict's.
  const Finding* verdict() const;
};

namespace incident {

// From the case's findings and snapshot, or `Case::at` when the driver kept only that.
Whereabouts whereabouts(const Case& c);
// From a snapshot and its findings (a driver that does not keep the snapshot in its Case).
Whereabouts whereabouts(const Snapshot& snapshot, const std::vector<Finding>& findings);

// Cases grouped by where they stand, STAT-style, in order of their first case.
struct RankGroup {
  std::vector<std::size_t> cases; // indexes into Incident::cases
  Whereabouts at;
};
std::vector<RankGroup> rank_groups(const Incident& incident);

// What the look itself may have done to the job: one line per case whose debugger's attach to the
// GPU side failed inside the driver (cuda-gdb's "internal error while attaching"), a rank that did
// not recover in any run measured (docs/hardware-validation.md, "Do no harm"). Empty: no sign of
// harm. The report leads with these, before any verdict.
std::vector<std::string> harm(const Incident& incident);

// `0,2-7`: sorted, runs of consecutive numbers as ranges; duplicates said once.
std::string format_numbers(std::vector<std::int64_t> numbers);
// `ranks 0,2-7 (pids 11,13-18)`, `rank 1 (pid 12)`, `pid 4301`, `hang_rank3.mi`: who is in a group.
std::string who(const Incident& incident, const RankGroup& group);

// The innermost frame of the user's own code in a host thread: the first frame with a source
// file that is not in the C library, the C++ runtime, the dynamic loader, the GPU runtimes or the
// Python interpreter; nullptr when there is none.
const Frame* user_frame(const HostThread& thread);

// Fills each case's `classes` from its snapshot (snapshot::group_waves), once.
void group(Incident& incident);

// The incident's wait-for graph: each examined case's graph joined by rank (or pid), with the
// cross-rank producers over `cross_rank` (heuristics::incident_graph). Empty under two cases.
graph::Graph wait_graph(const Incident& incident);

} // namespace incident
} // namespace rocplay
