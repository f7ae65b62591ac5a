// What `run` and `record` share: their options, and one target's attach, playbook, detach, report.
#include "cli/run_common.hpp"

#include "cli/fanout.hpp"
#include "cli/output.hpp"
#include "rocplay/playbook.hpp"
#include "rocplay/process.hpp"
#include "rocplay/report.hpp"
#include "rocplay/session.hpp"

#include <fmt/format.h>

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
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

std::chrono::milliseconds seconds_to_ms(double seconds, std::string_view flag) {
  if (!(seconds > 0) || seconds > 24 * 3600) {
    throw Error(ExitCode::Usage, fmt::format("{} {}: out of range", flag, seconds),
                "give seconds, more than 0 and at most a day");
  }
  return std::chrono::milliseconds(static_cast<std::int64_t>(seconds * 1000));
}

namespace {

// One line per finished top-level step, on a terminal only.
void progress_line(const playbook::StepRecord& rec, bool done) {
  if (!done) {
    if (rec.depth == 0) {
      std::fprintf(stderr, "rocplay: %s ...\n", rec.name.c_str());
    }
    return;
  }
  if (rec.depth > 0 && rec.status == playbook::StepStatus::Ok) {
    return;
  }
  std::string line = fmt::format("rocplay: {:<9} {}", playbook::to_string(rec.status), rec.name);
  if (rec.status != playbook::StepStatus::Skipped && rec.status != playbook::StepStatus::NotRun) {
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

} // namespace

void add_run_options(CLI::App& sub, RunCommandOptions& o, bool report_output) {
  auto* pid = sub.add_option("--pid,-p", o.pid, "The process to attach to");
  sub.add_option("--debugger", o.debugger,
                 "rocgdb, cuda-gdb, gdb or a path (default: $ROCPLAY_DEBUGGER, then the first "
                 "found of rocgdb, cuda-gdb, gdb)");
  sub.add_option("--timeout", o.timeout_seconds,
                 "Deadline of each debugger command, in seconds (a step's `timeout:` wins)")
      ->capture_default_str();
  sub.add_option("--attach-timeout", o.attach_timeout_seconds, "Deadline of the attach, seconds")
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
  sub.add_option("--var", o.vars, "Set a playbook variable: --var NAME=VALUE (repeatable)");
  sub.add_flag("--color", o.color, "Colour the text report");
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

int run_playbook_command(const RunCommandOptions& o) {
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
  const report::Format format = report::parse_format(o.format);
  session::Options so;
  so.command_timeout = seconds_to_ms(o.timeout_seconds, "--timeout");
  so.attach_timeout = seconds_to_ms(o.attach_timeout_seconds, "--attach-timeout");
  so.fast_attach = o.fast;
  so.record_path = expand_path_pattern(o.record, o.pid, std::nullopt);
  if (o.pid <= 0) {
    throw Error(ExitCode::Usage, fmt::format("--pid {}: not a process id", o.pid),
                "`rocplay ps` lists the processes that hold a GPU");
  }
  std::unique_ptr<std::ofstream> file;
  if (!o.output.empty()) {
    const std::string output = expand_path_pattern(o.output, o.pid, std::nullopt);
    file = std::make_unique<std::ofstream>(output, std::ios::binary | std::ios::trunc);
    if (!*file) {
      throw Error(ExitCode::Usage, fmt::format("cannot write {}", output),
                  "check the directory exists and is writable");
    }
  }
  // The "nothing visible" heuristic names a server's workers; a process scan, no ptrace.
  try {
    process::ScanOptions scan;
    scan.sample = std::chrono::milliseconds(0);
    for (const auto& w : process::workers_of(o.pid, scan)) {
      if (w.pid != o.pid) {
        ro.context.worker_pids.push_back(w.pid);
      }
    }
  } catch (const std::exception&) {
    // attach() reports a missing process with its own message and hint
  }
  so.worker_pids = ro.context.worker_pids;
  if (!o.quiet && stderr_is_tty()) {
    ro.progress = &progress_line;
  }

  const session::Debugger debugger = session::find_debugger(o.debugger);
  session::Session session(debugger, so);
  auto driver = playbook::make_driver(session);
  playbook::RunResult result = playbook::run(pb, *driver, ro);
  session.detach(); // before anything is printed; idempotent
  result.times = session.times();
  for (const auto& w : session.warnings()) {
    if (std::find(result.warnings.begin(), result.warnings.end(), w) == result.warnings.end()) {
      result.warnings.push_back(w);
    }
  }

  std::ostream& out = file ? static_cast<std::ostream&>(*file) : std::cout;
  const bool attached = result.attached;
  switch (format) {
  case report::Format::Text:
    if (attached) {
      report::TextOptions to;
      to.color = o.color;
      to.wide = o.wide;
      to.width = report::text_width(file ? -1 : 1);
      report::write_text(out, result.snapshot, result.findings, to);
      out << '\n';
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
    j["run"] = playbook::run_to_json(result);
    out << json_text(j, 2) << '\n';
    break;
  }
  case report::Format::Jsonl:
    report::write_jsonl(out, result.findings);
    out << json_text(nlohmann::json{{"type", "run"}, {"run", playbook::run_to_json(result)}})
        << '\n';
    break;
  case report::Format::Sarif:
    out << json_text(report::to_sarif(result.findings, ROCPLAY_VERSION), 2) << '\n';
    break;
  }
  out.flush();
  if (result.times.left_stopped) {
    print_error(fmt::format("pid {} was left stopped after detach; rocplay sent it SIGCONT", o.pid),
                "check that it runs (`ps -o stat -p PID`); something else may be tracing it");
  }
  if (result.fatal) {
    print_error(result.fatal->what(), result.fatal->hint());
  } else if (result.aborted) {
    for (const auto& s : result.steps) {
      if (s.status == playbook::StepStatus::Failed || s.status == playbook::StepStatus::TimedOut) {
        print_error(
            fmt::format("step `{}` {}: {}", s.name, playbook::to_string(s.status), s.message),
            fmt::format("see {}; `on_error: continue` lets a step fail without stopping "
                        "the playbook",
                        s.position.str()));
        break;
      }
    }
  }
  return static_cast<int>(result.exit_code());
}

} // namespace rocplay::cli
