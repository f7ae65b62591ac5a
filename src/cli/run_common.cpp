// What `run` and `record` share: their options and the text report's options.
#include "cli/run_common.hpp"
#include "core/text_scan.hpp"

#include "cli/output.hpp"
#include "rocplay/playbook/playbook.hpp"
#include "rocplay/report/progress.hpp"
#include "rocplay/report/report.hpp"
#include "rocplay/session/session.hpp"

#include <fmt/format.h>

#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <iostream>
#include <memory>
#include <sstream>

namespace rocplay::cli {

std::chrono::milliseconds duration_option(std::string_view text, std::string_view flag) {
  const std::string hint = "give seconds (`30`, `2.5`) or a number with a unit: `500ms`, `30s`, "
                           "`2m`; at least 1ms and at most a day";
  const auto parsed = text_scan::parse_duration(text);
  if (!parsed.ms) {
    throw Error(ExitCode::Usage,
                parsed.unit.empty()
                    ? fmt::format("{} {}: not a duration", flag, text)
                    : fmt::format("{} {}: unknown unit `{}`", flag, text, parsed.unit),
                hint);
  }
  const double ms = *parsed.ms;
  if (!(ms >= 1) || ms > 24.0 * 3600 * 1000) {
    throw Error(ExitCode::Usage,
                fmt::format("{} {}: out of range ({})", flag, text,
                            ms < 1 ? "less than a millisecond" : "more than a day"),
                hint);
  }
  return std::chrono::milliseconds(static_cast<std::int64_t>(std::llround(ms)));
}

void add_run_options(CLI::App& sub, RunCommandOptions& o, bool report_output) {
  auto* pid = sub.add_option("--pid,-p", o.pid, "The process to attach to");
  add_debugger_option(sub, o.debugger);
  sub.add_option("--timeout", o.timeout,
                 "Deadline of each debugger command: seconds, or 500ms, 30s, 2m (a step's "
                 "`timeout:` wins)")
      ->capture_default_str();
  sub.add_option("--attach-timeout", o.attach_timeout,
                 "Deadline of the attach: seconds, or 500ms, 30s, 2m")
      ->capture_default_str();
  sub.add_option("--format", o.format,
                 "Report format: text, json, jsonl, sarif or html (one self-contained page)")
      ->capture_default_str();
  if (report_output) {
    sub.add_option("--output,-o", o.output,
                   "Write the report to FILE instead of stdout (%h: this host's name)");
  }
  sub.add_flag("--fast", o.fast,
               "Attach without loading shared-library symbols (shorter stop, fewer names)");
  sub.add_flag("--full-symbols", o.full_symbols,
               "Read every symbol of huge libraries (libtorch: 10 s more with cuda-gdb); by "
               "default those above 50,000 symbols are read by their exported ones only");
  sub.add_flag("--allow-unsafe-commands", o.allow_unsafe,
               "Let a playbook from outside the built-ins run shell, python, source, define, "
               "make, pipe and other commands that run code or write files");
  add_var_option(sub, o.vars);
  sub.add_option("--samples", o.samples,
                 "Snapshots to take, the target running between them (default: the playbook's; "
                 "hang-triage 2; 1 = one snapshot)")
      ->check(CLI::Range(1u, playbook::kMaxSamples));
  sub.add_option("--interval", o.interval,
                 "How long the target runs between two samples: seconds, or with ms/s/m "
                 "(default: the playbook's, else 2s)");
  sub.add_option("--stop", o.stop,
                 "How a sample stops the target: `copy` (plain gdb: rocplay holds the threads "
                 "only while it copies their registers and stacks, and gdb reads the copy as a "
                 "core file) or `attach` (the debugger holds it for the whole sample). Default: "
                 "the playbook's (hang-triage: copy); rocgdb and cuda-gdb always attach")
      ->check(CLI::IsMember({"attach", "copy"}));
  add_color_option(sub, o.color);
  add_wide_option(sub, o.wide);
  sub.add_flag("--quiet,-q", o.quiet, "No progress lines on stderr");
  auto* pids = sub.add_option("--pids", o.pids,
                              "Several processes at once (comma-separated): one debugger each, "
                              "one combined report with cross-rank findings");
  auto* workers = sub.add_option("--workers-of", o.workers_of,
                                 "Every GPU worker of this server process (see `rocplay ps`)");
  sub.add_option("--jobs,-j", o.jobs, "With --pids/--workers-of: targets examined at once (8)");
  sub.add_flag("--no-ras", o.no_ras,
               "With --pids/--workers-of: do not ask the node's NCCL RAS service (NCCL 2.24+, "
               "no ptrace; at NCCL_RAS_ADDR, else localhost:28028) for every communicator's "
               "collective counts while the debuggers attach");
  auto* slurm = sub.add_option(
      "--slurm-job", o.slurm_job,
      "Every rank of this running Slurm job: one rocplay per node through `srun --overlap`, "
      "each node's ranks from Slurm, the reports sent back on srun's output and joined into one "
      "incident (host and rank on every line); --timeout bounds the wait past the sampling "
      "window, and a node that does not answer is named (docs/multi-node.md)");
  // One node's side of --slurm-job (started by the front end through srun; not for people).
  sub.add_option("--slurm-node-agent", o.slurm_node_agent)->group("")->needs(slurm);
  sub.add_option("--slurm-node-end", o.slurm_node_end)->group("")->needs(slurm);
  pid->excludes(pids)->excludes(workers)->excludes(slurm);
  pids->excludes(workers)->excludes(slurm);
  workers->excludes(slurm);
  sub.callback([pid, pids, workers, slurm] {
    if (pid->count() + pids->count() + workers->count() + slurm->count() == 0) {
      throw CLI::RequiredError("--pid, --pids, --workers-of or --slurm-job");
    }
  });
}

void apply_sampling_options(const RunCommandOptions& o, playbook::RunOptions& ro) {
  if (o.samples > playbook::kMaxSamples) {
    throw Error(ExitCode::Usage,
                fmt::format("--samples {}: at most {}", o.samples, playbook::kMaxSamples),
                "two or three samples tell stuck from slow; more only lengthen the run");
  }
  if (o.samples > 0) {
    ro.samples = o.samples;
  }
  if (!o.interval.empty()) {
    ro.interval = duration_option(o.interval, "--interval");
  }
  if (!o.stop.empty()) {
    ro.stop = playbook::stop_mode_of(o.stop);
  }
  // The stop for a later sample gets the command deadline.
  ro.stop_timeout = duration_option(o.timeout, "--timeout");
}

session::Options session_options_of(const RunCommandOptions& o) {
  session::Options so;
  so.command_timeout = duration_option(o.timeout, "--timeout");
  so.attach_timeout = duration_option(o.attach_timeout, "--attach-timeout");
  so.fast_attach = o.fast;
  if (o.full_symbols) {
    so.light_symbols_above = 0;
  }
  return so;
}

playbook::Playbook run_playbook_of(const RunCommandOptions& o) {
  playbook::LoadOptions lo;
  lo.allow_unsafe_commands = o.allow_unsafe;
  return playbook::find_playbook(o.playbook, lo);
}

playbook::TargetsOptions targets_options_of(const RunCommandOptions& o) {
  playbook::TargetsOptions examination;
  for (const auto& v : o.vars) {
    examination.run.vars.push_back(playbook::parse_var_assignment(v));
  }
  apply_sampling_options(o, examination.run);
  examination.session = session_options_of(o);
  return examination;
}

report::TextOptions report_text_options(const RunCommandOptions& o) {
  const bool to_file = !o.output.empty() && o.output != "-";
  report::TextOptions to;
  to.color = use_color(o.color, to_file ? -1 : STDOUT_FILENO);
  to.wide = o.wide;
  to.width = report::text_width(to_file ? -1 : 1);
  return to;
}

std::string run_exit_codes() {
  return "Exit codes: " +
         finding_exit_codes("incident.exit_code, and each target's run.exit_code") +
         "; 3 a step failed or an expect did not hold, 64 bad "
         "command line, 66 a file cannot be read or written, 67 no such process, 68 HSA_TOOLS_LIB "
         "in "
         "the target (the debug agent holds the debugger hook), 69 no debugger found, 70 internal "
         "error, 75 a debugger step ran past its deadline, 76 the debugger crashed, 77 ptrace not "
         "permitted (another tracer, a kernel thread, Yama, capabilities), 78 bad playbook or an "
         "unsafe command refused, 79 the target was still stopped after detach (rocplay sent "
         "SIGCONT), 130/143/129 interrupted by SIGINT/SIGTERM/SIGHUP (after detaching; the report "
         "is "
         "marked partial).";
}

} // namespace rocplay::cli
