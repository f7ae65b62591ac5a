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
#include <sstream>

namespace rocplay::cli {

namespace {

// Skipped steps waiting to be printed as one line (a run under plain gdb skips a dozen GPU steps).
struct SkippedRun {
  std::size_t count = 0;
  std::string first;
  std::string reason; // the first step's; the count says how many share the line
};
SkippedRun g_skipped;

void flush_skipped() {
  if (g_skipped.count == 0) {
    return;
  }
  if (g_skipped.count == 1) {
    std::fprintf(stderr, "rocplay: skipped   %s: %s\n", g_skipped.first.c_str(),
                 g_skipped.reason.c_str());
  } else {
    std::fprintf(stderr, "rocplay: skipped   %zu steps (%s ...; first: %s)\n", g_skipped.count,
                 g_skipped.first.c_str(), g_skipped.reason.c_str());
  }
  g_skipped = {};
}

// One line per finished top-level step, on a terminal only; skipped steps in a row share a line.
void progress_line(const playbook::StepRecord& rec, bool done) {
  if (done && rec.status == playbook::StepStatus::Skipped) {
    if (g_skipped.count++ == 0) {
      g_skipped.first = rec.name;
      g_skipped.reason = rec.message;
    }
    return;
  }
  const bool prints =
      done ? !(rec.depth > 0 && rec.status == playbook::StepStatus::Ok) : rec.depth == 0;
  if (!prints) {
    return;
  }
  flush_skipped();
  if (!done) {
    std::fprintf(stderr, "rocplay: %s ...\n", rec.name.c_str());
    return;
  }
  std::string line = fmt::format("rocplay: {:<9} {}", playbook::to_string(rec.status), rec.name);
  if (rec.status != playbook::StepStatus::NotRun) {
    line += fmt::format(" ({:.3f}s)", rec.seconds);
  }
  if (!rec.message.empty()) {
    line += ": " + rec.message;
  }
  std::fprintf(stderr, "%s\n", line.c_str());
}

} // namespace

int run_playbook_command(const RunCommandOptions& o) {
  if (o.wait_for_fault) {
    return run_wait_for_fault(o);
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
  const Incident incident = drivers::examine_one(pb, target, examination);
  flush_skipped();
  const playbook::RunResult& result = *incident.cases.front().run;
  report::write(file.stream(), incident, format, report_text_options(o), ROCPLAY_VERSION);
  file.commit();
  if (!report::has_text_report(result) && format == report::Format::Text &&
      !report::attach_refused(result)) {
    // Nothing was seen; a report would only say "nothing found". The steps say why (when it
    // was the attach itself, the error below says it all).
    std::ostringstream steps;
    report::write_run_section_text(steps, result);
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
