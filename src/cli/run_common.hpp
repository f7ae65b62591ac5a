// What `rocplay run` and `rocplay record` share: options, and running a playbook end to end
// (one target: src/cli/run_playbook.cpp; several: src/cli/fanout.cpp).
#pragma once

#include "cli/commands.hpp"
#include "rocplay/playbook/playbook.hpp"
#include "rocplay/playbook/run_targets.hpp"
#include "rocplay/report/run.hpp"
#include "rocplay/session/session.hpp"

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace rocplay::cli {

// `run` and `record`: every exit code they can end with (README.md, "Exit codes").
// `run` and `record`'s exit codes, for their --help.
std::string run_exit_codes();

struct RunCommandOptions {
  std::string playbook;
  std::int64_t pid = 0;
  std::string debugger;
  std::string timeout = "30s";        // --timeout: seconds, or a number with ms, s, m
  std::string attach_timeout = "90s"; // --attach-timeout, the same
  std::string format = "text";
  std::string output;
  std::string record;
  bool no_ras = false; // --no-ras: NCCL RAS is not asked (several targets)
  bool fast = false;
  bool full_symbols = false;
  bool allow_unsafe = false;
  std::string color = "auto"; // --color: auto, always, never
  bool wide = false;          // text report: nothing cut
  bool quiet = false;
  std::vector<std::string> vars;
  // Every rank at once (src/cli/fanout.hpp): --pids A,B,... or --workers-of SERVER.
  std::string pids;
  std::int64_t workers_of = 0;
  unsigned jobs = 0;
  // Every rank of a Slurm job, one rocplay per node through srun (src/cli/fanout.hpp).
  std::string slurm_job;
  // Hidden: this rocplay is one node's agent of a --slurm-job run; the agreed window opens at
  // this UNIX time in milliseconds. 0: not an agent.
  std::int64_t slurm_node_agent = 0;
  std::int64_t slurm_node_end = 0; // hidden: the node's bound (UNIX ms)
  // --samples / --interval: 0 takes the playbook's (`samples:`, `interval:`; else 1 and 2 s).
  unsigned samples = 0;
  std::string interval; // --interval: a duration as --timeout takes; empty: the playbook's
  std::string stop;     // --stop attach|copy; empty: the playbook's `stop:`
  // --wait-for-fault: let the target run and report at its first fault; --timeout then bounds
  // the wait (fault_timeout; empty: no limit) and commands keep the default deadline.
  bool wait_for_fault = false;
  std::string fault_timeout;
};
// `run --wait-for-fault` (src/cli/wait_fault.cpp).
int run_wait_for_fault(const RunCommandOptions& o);
// Applies --samples/--interval to the runner's options. Throws Error(Usage).
void apply_sampling_options(const RunCommandOptions& o, playbook::RunOptions& ro);
// The session options of the flags: --timeout, --attach-timeout, --fast, --full-symbols.
session::Options session_options_of(const RunCommandOptions& o);
// The playbook a run names (--allow-unsafe-commands applied), loaded and checked.
playbook::Playbook run_playbook_of(const RunCommandOptions& o);
// The examination's options of the flags: --var, the sampling and the session options.
playbook::TargetsOptions targets_options_of(const RunCommandOptions& o);
// Text report options from --color and --wide, the width of the terminal the report goes to.
report::TextOptions report_text_options(const RunCommandOptions& o);

// Adds the options both commands take (all but PLAYBOOK and --record); `--output,-o` for the
// report only when `report_output`.
void add_run_options(CLI::App& sub, RunCommandOptions& o, bool report_output = true);
// Validates the playbook and options, attaches, runs, detaches, prints the report. Returns the
// exit code. Throws rocplay::Error for problems found before attaching.
int run_playbook_command(const RunCommandOptions& o);
// --timeout and friends: `30` (seconds) or a number with a unit as in playbooks, `500ms`, `30s`,
// `2m`; at least 1 ms and at most a day. Throws Error(Usage) saying which flag and why.
std::chrono::milliseconds duration_option(std::string_view text, std::string_view flag);

} // namespace rocplay::cli
