// What `run` and `record` share: their options, and one target's attach, playbook, detach, report.
#include "cli/run_common.hpp"

#include "cli/fanout.hpp"
#include "cli/output.hpp"
#include "rocplay/playbook.hpp"
#include "rocplay/process.hpp"
#include "rocplay/report.hpp"
#include "rocplay/report_progress.hpp"
#include "rocplay/session.hpp"

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

std::string expand_path_pattern(const std::string& pattern, std::optional<std::int64_t> pid,
                                std::optional<int> rank) {
  std::string out;
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    const char next = i + 1 < pattern.size() ? pattern[i + 1] : '\0';
    if (pattern[i] != '%' || (next != 'h' && next != 'p' && next != 'r')) {
      out += pattern[i];
      continue;
    }
    ++i;
    if (next == 'h') {
      char host[256] = {};
      out += ::gethostname(host, sizeof host - 1) == 0 ? host : "unknown-host";
    } else if (next == 'p') {
      out += pid ? std::to_string(*pid) : "%p";
    } else {
      out += rank ? std::to_string(*rank) : "x";
    }
  }
  return out;
}

std::chrono::milliseconds duration_option(std::string_view text, std::string_view flag) {
  const std::string hint = "give seconds (`30`, `2.5`) or a number with a unit: `500ms`, `30s`, "
                           "`2m`; at least 1ms and at most a day";
  double value = 0;
  const char* begin = text.data();
  const char* end = text.data() + text.size();
  const auto [p, ec] = std::from_chars(begin, end, value);
  if (ec != std::errc() || p == begin) {
    throw Error(ExitCode::Usage, fmt::format("{} {}: not a duration", flag, text), hint);
  }
  const std::string_view unit(p, static_cast<std::size_t>(end - p));
  double ms = 0;
  if (unit.empty() || unit == "s") {
    ms = value * 1000;
  } else if (unit == "ms") {
    ms = value;
  } else if (unit == "m" || unit == "min") {
    ms = value * 60'000;
  } else {
    throw Error(ExitCode::Usage, fmt::format("{} {}: unknown unit `{}`", flag, text, unit), hint);
  }
  if (!(ms >= 1) || ms > 24.0 * 3600 * 1000) {
    throw Error(ExitCode::Usage,
                fmt::format("{} {}: out of range ({})", flag, text,
                            ms < 1 ? "less than a millisecond" : "more than a day"),
                hint);
  }
  return std::chrono::milliseconds(static_cast<std::int64_t>(std::llround(ms)));
}

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

bool attach_refused(const playbook::RunResult& r) {
  return std::any_of(r.steps.begin(), r.steps.end(), [](const playbook::StepRecord& s) {
    return s.kind == playbook::StepKind::Attach && s.status == playbook::StepStatus::Failed;
  });
}

// What ended the run early, in one sentence; empty when it ran to its end.
std::string failure_text(const playbook::RunResult& r) {
  if (r.fatal) {
    return r.fatal->what();
  }
  if (r.aborted) {
    for (const auto& s : r.steps) {
      if (s.status == playbook::StepStatus::Failed || s.status == playbook::StepStatus::TimedOut) {
        return fmt::format("step `{}` {}: {}", s.name, playbook::to_string(s.status), s.message);
      }
    }
    return "a step failed and the playbook stopped";
  }
  return {};
}

std::string failure_label(const playbook::RunResult& r) {
  if (r.fatal && static_cast<int>(r.fatal->code()) >= 128) {
    return "RUN INTERRUPTED";
  }
  return "RUN FAILED";
}

std::string failed_step_position(const playbook::RunResult& r) {
  for (const auto& s : r.steps) {
    if (s.status == playbook::StepStatus::Failed || s.status == playbook::StepStatus::TimedOut) {
      return s.position.str();
    }
  }
  return "the playbook";
}

} // namespace

void add_run_options(CLI::App& sub, RunCommandOptions& o, bool report_output) {
  auto* pid = sub.add_option("--pid,-p", o.pid, "The process to attach to");
  sub.add_option("--debugger", o.debugger,
                 "rocgdb, cuda-gdb, gdb or a path (default: $ROCPLAY_DEBUGGER, then the first "
                 "found of rocgdb, cuda-gdb, gdb)");
  sub.add_option("--timeout", o.timeout,
                 "Deadline of each debugger command: seconds, or 500ms, 30s, 2m (a step's "
                 "`timeout:` wins)")
      ->capture_default_str();
  sub.add_option("--attach-timeout", o.attach_timeout,
                 "Deadline of the attach: seconds, or 500ms, 30s, 2m")
      ->capture_default_str();
  sub.add_option("--format", o.format, "Report format: text, json, jsonl or sarif")
      ->capture_default_str();
  if (report_output) {
    sub.add_option("--output,-o", o.output,
                   "Write the report to FILE instead of stdout (%h: this host's name)");
  }
  sub.add_flag("--fast", o.fast,
               "Attach without loading shared-library symbols (shorter stop, fewer names)");
  sub.add_flag("--allow-unsafe-commands", o.allow_unsafe,
               "Let a playbook from outside the built-ins run shell, python, source, define, "
               "make, pipe and other commands that run code or write files");
  // One value per --var, so `--var depth=4 team.yaml` leaves team.yaml to PLAYBOOK.
  sub.add_option("--var", o.vars, "Set a playbook variable: --var NAME=VALUE (repeatable)")
      ->allow_extra_args(false)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  sub.add_option("--samples", o.samples,
                 "Snapshots to take, the target running between them (default: the playbook's; "
                 "hang-triage 2; 1 = one snapshot)")
      ->check(CLI::Range(1u, playbook::kMaxSamples));
  sub.add_option("--interval", o.interval,
                 "How long the target runs between two samples: seconds, or with ms/s/m "
                 "(default: the playbook's, else 2s)");
  add_color_option(sub, o.color);
  sub.add_flag("--wide", o.wide,
               "Text report: print every row, cell and stack frame whole (otherwise cut to the "
               "terminal's width: $COLUMNS, the terminal, else 100)");
  sub.add_flag("--quiet,-q", o.quiet, "No progress lines on stderr");
  auto* pids = sub.add_option("--pids", o.pids,
                              "Several processes at once (comma-separated): one debugger each, "
                              "one combined report with cross-rank findings");
  auto* workers = sub.add_option("--workers-of", o.workers_of,
                                 "Every GPU worker of this server process (see `rocplay ps`)");
  sub.add_option("--jobs,-j", o.jobs, "With --pids/--workers-of: targets examined at once (8)");
  pid->excludes(pids)->excludes(workers);
  pids->excludes(workers);
  sub.callback([pid, pids, workers] {
    if (pid->count() + pids->count() + workers->count() == 0) {
      throw CLI::RequiredError("--pid, --pids or --workers-of");
    }
  });
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
  // The stop for a later sample gets the command deadline.
  ro.stop_timeout = duration_option(o.timeout, "--timeout");
}

int run_playbook_command(const RunCommandOptions& o) {
  if (o.wait_for_fault) {
    return run_wait_for_fault(o);
  }
  if (!o.pids.empty()) {
    return run_fanout(o, parse_pid_list(o.pids), o.jobs);
  }
  if (o.workers_of > 0) {
    return run_fanout(o, resolve_workers(o.workers_of), o.jobs);
  }
  session::install_signal_guard();

  // Everything that can be checked is checked before a debugger starts or the target stops.
  playbook::LoadOptions lo;
  lo.allow_unsafe_commands = o.allow_unsafe;
  const playbook::Playbook pb = playbook::find_playbook(o.playbook, lo);
  playbook::RunOptions ro;
  ro.pid = o.pid;
  for (const auto& v : o.vars) {
    ro.vars.push_back(playbook::parse_var_assignment(v));
  }
  apply_sampling_options(o, ro);
  const report::Format format = report::parse_format(o.format);
  session::Options so;
  so.command_timeout = duration_option(o.timeout, "--timeout");
  so.attach_timeout = duration_option(o.attach_timeout, "--attach-timeout");
  so.fast_attach = o.fast;
  so.record_path = expand_path_pattern(o.record, o.pid, std::nullopt);
  if (o.pid <= 0) {
    throw Error(ExitCode::Usage, fmt::format("--pid {}: not a process id", o.pid),
                "`rocplay ps` lists the processes that hold a GPU");
  }
  // Opened before the target stops, so an unwritable path costs nothing; written whole at the end.
  const bool to_file = !o.output.empty() && o.output != "-";
  OutputFile file(to_file ? expand_path_pattern(o.output, o.pid, std::nullopt) : std::string());
  ro.context.worker_pids = other_workers_of(o.pid);
  so.worker_pids = ro.context.worker_pids;
  if (!o.quiet && stderr_is_tty()) {
    ro.progress = &progress_line;
  }

  const session::Debugger debugger = session::find_debugger(o.debugger);
  session::Session session(debugger, so);
  auto driver = playbook::make_driver(session);
  playbook::RunResult result = playbook::run(pb, *driver, ro);
  session.detach(); // before anything is printed; idempotent
  flush_skipped();
  result.times = session.times();
  if (result.times.state_after == '?') {
    // Never attached, so the session never looked: the report still says how the target is.
    const auto st = process::read_stat(o.pid);
    result.times.state_after = st ? st->state : 'X';
  }
  if (result.stopped_seconds) {
    result.times.stop_seconds = result.stopped_seconds; // the samples' stops, added up
  }
  for (const auto& w : session.warnings()) {
    if (std::find(result.warnings.begin(), result.warnings.end(), w) == result.warnings.end()) {
      result.warnings.push_back(w);
    }
  }

  std::ostream& out = file.stream();
  const bool attached = result.attached;
  const std::string failure = failure_text(result);
  switch (format) {
  case report::Format::Text:
    if (attached || (!failure.empty() && result.times.attach_sent)) {
      report::TextOptions to;
      to.color = use_color(o.color, to_file ? -1 : STDOUT_FILENO);
      to.wide = o.wide;
      to.width = report::text_width(to_file ? -1 : 1);
      if (!failure.empty()) {
        to.failure = failure;
        to.failure_label = failure_label(result);
        to.target = playbook::target_account(result);
      }
      report::write_text(out, result.snapshot, result.findings, to);
      out << '\n';
      if (result.samples_wanted > 1) {
        report::write_progress_text(out, result.progress, result.samples, to.width);
        out << '\n';
      }
      playbook::write_steps_text(out, result);
    } else if (!attach_refused(result)) {
      // Nothing was seen; a report would only say "nothing found". The steps say why (when it
      // was the attach itself, the error below says it all).
      std::ostringstream steps;
      playbook::write_steps_text(steps, result);
      std::fputs(steps.str().c_str(), stderr);
    }
    break;
  case report::Format::Json: {
    auto j = report::report_to_json(result.snapshot, result.findings);
    j["partial"] = !failure.empty();
    j["run"] = playbook::run_to_json(result);
    if (result.samples_wanted > 1) {
      auto pj = report::progress_to_json(result.progress, result.samples);
      j["progress"] = std::move(pj["progress"]);
      j["samples"] = std::move(pj["samples"]);
    }
    out << json_text(j, 2) << '\n';
    break;
  }
  case report::Format::Jsonl:
    report::write_jsonl(out, result.findings);
    out << json_text(nlohmann::json{{"type", "run"},
                                    {"partial", !failure.empty()},
                                    {"run", playbook::run_to_json(result)}})
        << '\n';
    break;
  case report::Format::Sarif:
    out << json_text(report::to_sarif(result.findings, ROCPLAY_VERSION), 2) << '\n';
    break;
  }
  file.commit();
  if (result.times.left_stopped) {
    print_error(fmt::format("pid {} was still stopped after detach; rocplay sent it SIGCONT ({})",
                            o.pid, playbook::target_account(result)),
                "check that it runs (`ps -o stat -p PID`); something else may be tracing it");
  }
  if (!failure.empty()) {
    print_error(failure, result.fatal ? result.fatal->hint()
                                      : fmt::format("see {}; `on_error: continue` lets a step "
                                                    "fail without stopping the playbook",
                                                    failed_step_position(result)));
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
  return static_cast<int>(result.exit_code());
}

} // namespace rocplay::cli
