// The drivers: what runs an examination end to end and returns its Incident
// (rocplay/case/case.hpp). `cli/` parses options, calls one of these, writes the incident with
// report::write and returns Incident::exit_code (docs/architecture.md, "The incident model").
//
//   playbook::TargetsOptions o;                        // debugger, session options, sampling
//   Incident inc = drivers::examine(pb, playbook::ranked_targets({4301, 4302}), o);
//   report::write(std::cout, inc, report::Format::Text, {}, ROCPLAY_VERSION);
//   return static_cast<int>(inc.exit_code());
//
//   - live: one target (`run --pid`) or several (`--pids`, `--workers-of`): examine / examine_one
//   - launch and wait-for-fault: a program stopped at its fault, the playbook at the stop: launch,
//     wait_for_fault
//   - the watch capture and its on-capture hook: capture; the watch loop around it: watch
//   - offline: a post-mortem batch (read_inputs), rocm-debug-agent logs (read_agent_logs)
//
// Layer: src/drivers/ (library rocplay_drivers; above case, playbook, session, watch and
// postmortem, below cli).
#pragma once

#include "rocplay/case/case.hpp"
#include "rocplay/collectives/collectives.hpp"
#include "rocplay/playbook/playbook.hpp"
#include "rocplay/playbook/run_targets.hpp"
#include "rocplay/postmortem/postmortem.hpp"
#include "rocplay/session/launch.hpp"
#include "rocplay/session/session.hpp"
#include "rocplay/watch/watch.hpp"

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace rocplay::drivers {

// Where a driver says what went wrong with one part (a file, a target) while it goes on: the
// message and a hint; the cli prints them as `rocplay: error: ...`.
using ErrorSink = std::function<void(const std::string& message, const std::string& hint)>;

// --- paths ---------------------------------------------------------------------------------------

// `%h` in a file name becomes this host's name, `%p` the pid and `%r` the rank where known (`x`
// when not), so one command line under srun/pdsh writes one file per node and target.
std::string expand_path_pattern(const std::string& pattern, std::optional<std::int64_t> pid,
                                std::optional<int> rank);
// A recording's path for one of several targets: `%p` and `%r` expanded; without either, `.PID`
// goes before the extension. Empty pattern: not recorded.
std::string record_path_for(const std::string& pattern, std::int64_t pid, std::optional<int> rank);
// The GPU workers of a server process (process::workers_of). Throws Error(NoSuchProcess).
std::vector<std::int64_t> resolve_workers(std::int64_t server_pid);

// --- live ----------------------------------------------------------------------------------------

// What else a look at several ranks asks, with no ptrace: the node's NCCL RAS service (NCCL 2.24
// and later), at the address the targets' NCCL_RAS_ADDR names (else localhost:28028), unless
// their NCCL_RAS_ENABLE is 0. Asked while the debuggers attach; a port that does not answer costs
// at most 1 s, one that refuses nothing.
struct NodeRecords {
  bool ask_ras = true;
  // Where RAS's answer is kept (`rocplay postmortem` reads it beside the recordings); empty: not.
  std::string ras_path;
};
// The RAS query for these targets: host and port from the first readable NCCL_RAS_ADDR; nullopt
// when a target's NCCL_RAS_ENABLE says 0.
std::optional<collectives::RasQueryOptions> ras_query_for(const std::vector<std::int64_t>& pids);
// The answer into the incident: its collective findings (collectives::match over it) among the
// cross-rank findings, a note saying what RAS answered (or why it did not, unless nothing
// listened), and the text written to `ras_path`.
void add_ras_answer(Incident& incident, const collectives::RasAnswer& answer,
                    const collectives::RasQueryOptions& query, const std::string& ras_path);

// Runs the playbook against every target (playbook::run_targets: the worker pool, samples in
// lockstep, every target detached on every path, the cross-rank heuristics) and returns the
// incident: a case per target, in the order given. Nothing is thrown for one target. With two
// targets or more, NCCL RAS is asked at the same time (NodeRecords).
Incident examine(const playbook::Playbook& playbook, const std::vector<playbook::Target>& targets,
                 const playbook::TargetsOptions& options, const NodeRecords& node = {});
// One target (`run --pid`): the same examination; what was thrown before the playbook ran (the
// debugger did not start, ...) is thrown again.
Incident examine_one(const playbook::Playbook& playbook, const playbook::Target& target,
                     const playbook::TargetsOptions& options);
// What a person must hear about an examination of several targets, worst last: each target left
// stopped after its detach (SIGCONT sent), then "K of N targets could not be examined" or, when
// none was, the first one's reason (its code).
std::vector<Error> target_problems(const Incident& incident);

// --- launch and wait-for-fault -------------------------------------------------------------------

struct StopRequest {
  playbook::Playbook playbook;
  std::vector<std::pair<std::string, std::string>> vars;
  session::Debugger debugger;
  session::Options session;
  std::optional<double> timeout_seconds; // for the report: the limit the program ran under
  std::function<void(const playbook::StepRecord&, bool)> progress;
};

// `rocplay launch`: starts spec.argv under the debugger and lets it run to its fault, its exit,
// the timeout or a signal; when it is stopped, runs the playbook at the stop; then kills it (or
// detaches, spec.end). One case: its `launch` section, and with the playbook run its snapshot,
// findings and `run`. The case's exit code: the program's (exit_code_for_launch), or an interrupt's
// (>= 128) when the playbook was cut short by one.
Incident launch(const StopRequest& request, const session::LaunchSpec& spec);

// `launch --verify`: the program run again under experiments, compared by where it faults.
struct Experiment {
  std::string name; // `blocking launches`, `serialised kernels`, `NAME=VALUE`
  std::vector<std::pair<std::string, std::string>> env;
};
// The built-in experiments for a debugger (blocking launches; serialised kernels where the
// platform has them: rocgdb), then one per `NAME=VALUE` the user gave.
std::vector<Experiment> verify_experiments(DebuggerKind debugger,
                                           const std::vector<std::string>& user);
struct VerifyPlan {
  std::vector<Experiment> experiments;
  unsigned repeats = 2; // runs as given and under each experiment
  // Each run's recording: DIR/run1-as-given.mi ...; empty: not recorded.
  std::string record_dir;
  // Said after each run: `run 2 of 6 (blocking launches): faulted: SIGSEGV in reader at x.cpp:9`.
  std::function<void(const std::string&)> progress;
};
// Runs spec.argv as `launch` does (report at the fault from the playbook), then again repeats
// times as given and under each experiment, each under the debugger with the playbook at its
// fault, and compares where each run faulted (heuristics::compare_verify_runs). The incident is
// the first run's case, with Incident::verify_runs and the verification it leads with. Runs
// after the first end at spec.timeout, else at 3x the first run's time to its fault (10 s at
// least). Without a fault in the first run nothing else runs; an interrupt ends the runs there.
Incident launch_verify(const StopRequest& request, const session::LaunchSpec& spec,
                       const VerifyPlan& plan);

// `rocplay run --wait-for-fault`: attaches to `pid`, lets it run until it faults, exits or `wait`
// passes, and runs the playbook at a fault stop. `attached` is called once the attach held.
// Interrupted while waiting: detaches and throws Error(130/143/129) saying the process keeps
// running.
Incident wait_for_fault(const StopRequest& request, std::int64_t pid,
                        std::chrono::milliseconds wait, const std::function<void()>& attached = {});

// 0 exited with 0, 80 another status or lost, 81 faulted, 82 killed by a signal, 83 timed out,
// 128+N interrupted (README.md, "Exit codes" of `launch`).
ExitCode exit_code_for_launch(const session::LaunchResult& result);

// --- agent-log -----------------------------------------------------------------------------------

struct AgentLogRequest {
  std::vector<std::string> files; // `-`: standard input
  std::optional<int> rank;        // the rank of every dump (one file per rank)
  std::string code_objects;       // --save-code-objects' directory: each fault's object read
  std::string objdump = "/opt/rocm/llvm/bin/llvm-objdump"; // put in the commands
  ErrorSink error; // a file that cannot be read (the others still are)
};
// `rocplay agent-log`: every file read and parsed, the dumps grouped and explained. One case: its
// `faults` and their findings; exit code 2 when a file could not be read, else 1 with a fault,
// else 0. Throws Error(NoInput) when none could be read.
Incident read_agent_logs(const AgentLogRequest& request);

// --- offline -------------------------------------------------------------------------------------

struct OfflineResult {
  Incident incident;           // a light case per input, in input order; events, crash, series
  postmortem::Summary summary; // the batch: counts, signatures, events, series, warnings
};
// `rocplay postmortem`: every input read (postmortem::run: expanded, sniffed, read on the worker
// pool, ranked by the one rule), each passed to `on_input` in input order as it is read (the
// writer streams it), then the incident over them. Never starts a debugger.
OfflineResult read_inputs(const postmortem::Options& options,
                          const std::function<void(const postmortem::InputResult&)>& on_input,
                          const std::function<void(const postmortem::Progress&)>& on_progress);

// --- watch ---------------------------------------------------------------------------------------

// One capture of a watched server: every target examined at once (the fan-out with its samples in
// lockstep), the report written through `write_report`, the summary line beside it, and the
// on-capture hook run once every target runs again.
struct CaptureRequest {
  playbook::Playbook playbook;
  playbook::TargetsOptions examination; // debugger, session options, samples (3 when unset);
                                        // jobs: every target at once
  std::string out_dir;
  std::string host;                           // in the file names and the summary line
  std::chrono::system_clock::time_point when; // in the file names and the summary line
  std::string why;                            // the signs that started it (CheckResult::reason)
  std::string report_extension = "txt";       // the report's format: txt, json, jsonl, sarif
  // Writes the incident to the report's path (cli: OutputFile + report::write). Throws Error.
  std::function<void(const Incident&, const std::string& path)> write_report;
  // The user's command (/bin/sh -c), run after the capture with the report's path as $1; empty:
  // none.
  std::string on_capture;
  std::chrono::milliseconds on_capture_timeout{60'000};
  // Status lines (`rocplay watch: ...` on stderr in the cli); unset: none.
  std::function<void(const std::string&)> say;
  // Errors that reach a person (message, hint); unset: none.
  std::function<void(const std::string&, const std::string&)> error;
};

struct CaptureResult {
  Incident incident;
  std::string report_path;  // OUT/rocplay-HOST-STAMP.report.EXT
  std::string record_path;  // the recordings' pattern: OUT/rocplay-HOST-STAMP-rank%r-pid%p.rocplay
  std::string summary_path; // OUT/rocplay-HOST-STAMP.summary.txt
  std::string summary;      // the summary line (report::capture_summary_line)
  // 1 when a target was examined and all were, 2 when some were not, else the first target's
  // code; what write_report threw wins (1 says the report is written).
  int code = 0;
  bool interrupted = false;               // a signal came during the capture: the hook did not run
  std::vector<std::int64_t> left_stopped; // targets found stopped afterwards (sent SIGCONT)
};

CaptureResult capture(const CaptureRequest& request, const std::vector<std::int64_t>& pids);

// Runs `command` through /bin/sh -c with the report's path as $1 and ROCPLAY_REPORT,
// ROCPLAY_SUMMARY_FILE, ROCPLAY_OUT_DIR, ROCPLAY_CAPTURE_EXIT in its environment; stdin
// /dev/null, stdout to stderr, its own process group, killed past `timeout`. Returns its exit
// status (-1: not started or killed).
int run_on_capture(const std::string& command, const std::string& report,
                   const std::string& summary, const std::string& out_dir, int code,
                   std::chrono::milliseconds timeout,
                   const std::function<void(const std::string&)>& say = {},
                   const std::function<void(const std::string&, const std::string&)>& error = {});

// The watch loop around the capture (`rocplay watch`): checks the signs every `check_every`;
// on a hang, captures every target (`capture`); exits after the first capture unless
// `keep_watching` (then a back-off), when the server is gone, or after `watch_for`.
struct WatchRequest {
  CaptureRequest capture; // host, when and why are filled per capture
  watch::Config config;
  std::chrono::milliseconds check_every{5'000};
  std::chrono::milliseconds status_every{600'000};
  std::chrono::milliseconds backoff{900'000};
  std::chrono::milliseconds backoff_max{14'400'000};
  std::chrono::milliseconds watch_for{0}; // 0: no end
  std::string watch_for_text;             // as given, for the last status line
  bool keep_watching = false;
  bool status_lines = true; // the periodic status line (changes are said at once)
};
// Returns the command's exit code: 0 nothing captured, the last capture's code, 67 the server
// is gone, 128+N interrupted during a capture.
int watch(const WatchRequest& request, watch::Targets targets);

} // namespace rocplay::drivers
