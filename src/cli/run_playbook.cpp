// `rocplay run` and `rocplay record`: one target (drivers::examine_one, then report::write), or
// every rank at once through the fan-out (src/cli/fanout.cpp).
#include "cli/fanout.hpp"
#include "cli/output.hpp"
#include "cli/run_common.hpp"
#include "rocplay/drivers/drivers.hpp"
#include "rocplay/playbook/playbook.hpp"
#include "rocplay/playbook/run_targets.hpp"
#include "rocplay/report/incident.hpp"
#include "rocplay/report/report.hpp"
#include "rocplay/report/run.hpp"
#include "rocplay/session/session.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <optional>
#include <sstream>

#include <unistd.h>

namespace rocplay::cli {

namespace {

// Progress on a terminal: one line, rewritten in place as the steps go (`\r` and erase to the
// end of the line), cut to the terminal's width so it never wraps into a second line. A step that
// failed or ran past its deadline gets a line of its own that stays; the rest leave nothing once
// the report comes.
struct ProgressLine {
  bool shown = false;      // a line is on the terminal now, without its newline
  std::size_t steps = 0;   // top-level steps begun
  std::size_t skipped = 0; // steps skipped so far (a run under plain gdb skips the GPU ones)
};
ProgressLine g_progress;

void clear_progress() {
  if (g_progress.shown) {
    std::fputs("\r\x1b[K", stderr);
    std::fflush(stderr);
    g_progress.shown = false;
  }
}

void show_progress(const std::string& text) {
  const std::size_t width = report::text_width(STDERR_FILENO);
  std::string line = text;
  if (report::text_columns(line) >= width) { // the last column would wrap on some terminals
    std::size_t keep = width > 4 ? width - 4 : 1;
    std::size_t cols = 0;
    std::size_t i = 0;
    for (; i < line.size(); ++i) {
      if ((static_cast<unsigned char>(line[i]) & 0xc0) != 0x80 && cols++ == keep) {
        break;
      }
    }
    line = line.substr(0, i) + "...";
  }
  std::fprintf(stderr, "\r\x1b[K%s", line.c_str());
  std::fflush(stderr);
  g_progress.shown = true;
}

void progress_line(const playbook::StepRecord& rec, bool done) {
  if (done && rec.status == playbook::StepStatus::Skipped) {
    ++g_progress.skipped;
    return;
  }
  if (done && (rec.status == playbook::StepStatus::Failed ||
               rec.status == playbook::StepStatus::TimedOut)) {
    clear_progress();
    std::string line = fmt::format("rocplay: {:<9} {} ({:.3f}s)", playbook::to_string(rec.status),
                                   rec.name, rec.seconds);
    if (!rec.message.empty()) {
      line += ": " + rec.message;
    }
    std::fprintf(stderr, "%s\n", line.c_str());
    return;
  }
  if (done || rec.depth > 0) {
    return; // the next step's line replaces this one
  }
  ++g_progress.steps;
  show_progress(fmt::format(
      "rocplay: step {}: {} ...{}", g_progress.steps, rec.name,
      g_progress.skipped > 0 ? fmt::format(" ({} skipped)", g_progress.skipped) : std::string()));
}

} // namespace

int run_playbook_command(const RunCommandOptions& o) {
  if (o.wait_for_fault) {
    return run_wait_for_fault(o);
  }
  if (!o.slurm_job.empty()) {
    return o.slurm_node_agent > 0 ? run_slurm_node_agent(o) : run_slurm(o);
  }
  if (!o.pids.empty()) {
    return run_fanout(o, parse_pid_list(o.pids), o.jobs);
  }
  if (o.workers_of > 0) {
    return run_fanout(o, drivers::resolve_workers(o.workers_of), o.jobs);
  }
  session::install_signal_guard();

  // Everything that can be checked is checked before a debugger starts or the target stops.
  const playbook::Playbook pb = run_playbook_of(o);
  playbook::TargetsOptions examination = targets_options_of(o);
  const report::Format format = report::parse_format(o.format);
  if (o.pid <= 0) {
    throw Error(ExitCode::Usage, fmt::format("--pid {}: not a process id", o.pid),
                "`rocplay ps` lists the processes that hold a GPU");
  }
  // A lone target has no rank: its report and recording say none.
  const playbook::Target target{o.pid, std::nullopt,
                                drivers::expand_path_pattern(o.record, o.pid, std::nullopt),
                                source::RankRule::None};
  // Opened before the target stops, so an unwritable path costs nothing; written whole at the end.
  const bool to_file = !o.output.empty() && o.output != "-";
  OutputFile file(to_file ? drivers::expand_path_pattern(o.output, o.pid, std::nullopt)
                          : std::string());
  if (!o.quiet && stderr_is_tty()) {
    examination.run.progress = &progress_line;
  }

  // The banner comes from the debugger's MI session, not a `--version` process first, unless a
  // search must choose between candidates.
  session::SearchEnv search;
  search.defer_banner = true;
  examination.debugger = session::find_debugger(o.debugger, search);
  struct ClearProgress { // also when the run throws: its error starts a line of its own
    ~ClearProgress() { clear_progress(); }
  };
  std::optional<Incident> examined;
  {
    ClearProgress guard;
    examined = drivers::examine_one(pb, target, examination);
  }
  const Incident& incident = *examined;
  const playbook::RunResult& result = *incident.cases.front().run;
  report::write(file.stream(), incident, format, report_text_options(o), ROCPLAY_VERSION);
  file.commit();
  if (!report::has_text_report(result) && format == report::Format::Text &&
      !report::attach_refused(result)) {
    // Nothing was seen; a report would only say "nothing found". The steps say why (when it
    // was the attach itself, the error below says it all).
    std::ostringstream steps;
    report::write_run_section_text(steps, result, report::text_width(2));
    std::fputs(steps.str().c_str(), stderr);
  }
  const std::string failure = report::failure_text(result);
  if (result.times.left_stopped) {
    print_error(fmt::format("pid {} was still stopped after detach; rocplay sent it SIGCONT ({})",
                            o.pid, report::target_account(result)),
                report::left_stopped_hint(result));
  }
  if (!failure.empty()) {
    print_error(failure, result.fatal ? result.fatal->hint()
                                      : fmt::format("see {}; `on_error: continue` lets a step "
                                                    "fail without stopping the playbook",
                                                    report::failed_step_position(result)));
  }
  if (const auto sig = session::caught_signal(); sig && !result.fatal) {
    // It came after the last command: the report above is whole, the target already let go.
    const auto code = session::exit_code_for_signal(*sig);
    print_error(fmt::format("interrupted by {} after the run had finished; the report is "
                            "complete and the target was already detached",
                            *sig == SIGINT    ? "SIGINT"
                            : *sig == SIGTERM ? "SIGTERM"
                                              : "SIGHUP"));
    return static_cast<int>(code);
  }
  return static_cast<int>(incident.exit_code());
}

} // namespace rocplay::cli
