// `rocplay launch [PLAYBOOK] -- COMMAND ARGS...`: run a program under the debugger; at its first
// fault run the playbook (fault-triage), report, then kill it (or detach). And the shared end of
// `rocplay run --wait-for-fault`. The launcher itself is src/session/launch.cpp.
#include "cli/commands.hpp"
#include "cli/launch_common.hpp"
#include "cli/output.hpp"
#include "cli/run_common.hpp"
#include "rocplay/launch.hpp"
#include "rocplay/playbook.hpp"
#include "rocplay/report.hpp"
#include "rocplay/report_launch.hpp"
#include "rocplay/report_run.hpp"
#include "rocplay/snapshot.hpp"

#include <fmt/format.h>

#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <memory>
#include <sstream>

namespace rocplay::cli {

std::vector<std::string>& launch_command_words() {
  static std::vector<std::string> words;
  return words;
}

bool& launch_separator_seen() {
  static bool seen = false;
  return seen;
}

namespace {

// A driver for a session whose target is already stopped (at its fault): the playbook's attach
// is a no-op, everything else goes to the session.
class LaunchStoppedDriver final : public playbook::Driver {
public:
  explicit LaunchStoppedDriver(session::Session& s) : inner_(playbook::make_driver(s)) {}
  void attach(std::int64_t /*pid*/) override {}
  mi::Exchange execute(const std::string& command,
                       std::optional<std::chrono::milliseconds> timeout) override {
    return inner_->execute(command, timeout);
  }
  mi::Exchange console(const std::string& command,
                       std::optional<std::chrono::milliseconds> timeout) override {
    return inner_->console(command, timeout);
  }
  void detach() override { inner_->detach(); }
  bool has_mi_command(const std::string& name) const override {
    return inner_->has_mi_command(name);
  }
  const session::Debugger& debugger() const override { return inner_->debugger(); }
  const std::vector<mi::Exchange>& exchanges() const override { return inner_->exchanges(); }
  session::TargetTimes times() const override { return inner_->times(); }
  std::vector<std::string> warnings() const override { return inner_->warnings(); }
  void note(std::string_view text) override { inner_->note(text); }
  double now() const override { return inner_->now(); }

private:
  std::unique_ptr<playbook::Driver> inner_;
};

std::string launch_signal_word(std::optional<int> sig) {
  if (!sig) {
    return {};
  }
  return *sig == SIGINT    ? "SIGINT"
         : *sig == SIGTERM ? "SIGTERM"
         : *sig == SIGHUP  ? "SIGHUP"
                           : "a signal";
}

} // namespace

int exit_code_for_launch(const session::LaunchResult& r) {
  switch (r.outcome) {
  case session::LaunchOutcome::Faulted:
    return static_cast<int>(ExitCode::ProgramFaulted);
  case session::LaunchOutcome::Exited:
    return r.exit_code.value_or(0) == 0 ? 0 : static_cast<int>(ExitCode::ProgramFailed);
  case session::LaunchOutcome::Lost: // it ended, and not well: no status, no fault stop
    return static_cast<int>(ExitCode::ProgramFailed);
  case session::LaunchOutcome::Signalled:
    return static_cast<int>(ExitCode::ProgramKilled);
  case session::LaunchOutcome::TimedOut:
    return static_cast<int>(ExitCode::ProgramTimedOut);
  case session::LaunchOutcome::Interrupted:
    return static_cast<int>(session::exit_code_for_signal(r.user_signal.value_or(SIGINT)));
  case session::LaunchOutcome::NotStarted:
    break;
  }
  return static_cast<int>(ExitCode::Internal);
}

int report_stopped_program(session::Session& session, const session::LaunchResult& lr,
                           const LaunchReportOptions& o) {
  const playbook::Playbook pb = playbook::find_playbook(o.playbook, o.load);
  report::LaunchSummary summary;
  summary.argv = o.argv;
  summary.pid = lr.pid;
  summary.outcome = std::string(session::to_string(lr.outcome));
  summary.exit_code = lr.exit_code;
  summary.exit_signal = lr.exit_signal;
  summary.stop_signal = lr.stop_signal;
  summary.stop_reason = lr.stop_reason;
  summary.user_signal = launch_signal_word(lr.user_signal);
  summary.ran_seconds = lr.ran_seconds;
  summary.timeout_seconds = o.timeout_seconds;
  summary.passed_signals = lr.passed_signals;
  summary.api_errors = snapshot::cuda_api_errors(session.exchanges());

  playbook::RunResult result;
  bool ran_playbook = false;
  if (lr.stopped()) {
    LaunchStoppedDriver driver(session);
    playbook::RunOptions ro;
    ro.pid = lr.pid;
    ro.vars = o.vars;
    ro.samples = 1;
    if (o.progress) {
      ro.progress = o.progress;
    }
    result = playbook::run(pb, driver, ro);
    ran_playbook = true;
  }
  session.detach(); // kills or detaches: the session's TargetEnd
  const auto& times = session.times();
  if (lr.stopped()) {
    summary.after = times.killed ? "killed after the report"
                    : o.launched ? "detached after the report (it goes on with the signal)"
                                 : "detached after the report";
  } else if (lr.outcome == session::LaunchOutcome::TimedOut) {
    summary.after = "detached; it keeps running";
  } else if (lr.outcome == session::LaunchOutcome::Lost) {
    summary.after = times.killed ? "killed what was left of it" : "detached from what was left";
  }
  if (ran_playbook) {
    result.times = times;
    for (const auto& w : session.warnings()) {
      if (std::find(result.warnings.begin(), result.warnings.end(), w) == result.warnings.end()) {
        result.warnings.push_back(w);
      }
    }
  }

  OutputFile file(o.output);
  std::ostream& out = file.stream();
  const bool to_terminal = o.output.empty() || o.output == "-";
  switch (o.format) {
  case report::Format::Text: {
    report::TextOptions to;
    to.color = use_color(o.color, to_terminal ? STDOUT_FILENO : -1);
    to.wide = o.wide;
    to.width = report::text_width(to_terminal ? 1 : -1);
    report::write_launch_text(out, summary, to.width, to.color);
    out << '\n';
    if (ran_playbook) {
      if (result.fatal) {
        to.failure = result.fatal->what();
        to.failure_label =
            static_cast<int>(result.fatal->code()) >= 128 ? "RUN INTERRUPTED" : "RUN FAILED";
      }
      report::write_text(out, result.snapshot, result.findings, to);
      out << '\n';
      report::write_run_section_text(out, result);
    }
    break;
  }
  case report::Format::Json: {
    report::RunReport run;
    if (ran_playbook) {
      run.snapshot = &result.snapshot;
      run.findings = &result.findings;
      run.partial = result.fatal.has_value();
      run.run = report::run_section_to_json(result);
    }
    out << json_text(report::launch_report_to_json(summary, ran_playbook ? &run : nullptr), 2)
        << '\n';
    break;
  }
  case report::Format::Jsonl:
    if (ran_playbook) {
      report::write_jsonl(out, result.findings);
    }
    out << json_text(report::launch_jsonl_line(summary)) << '\n';
    break;
  case report::Format::Sarif:
    out << json_text(report::to_sarif(result.findings, ROCPLAY_VERSION), 2) << '\n';
    break;
  }
  out.flush();
  file.commit();
  if (ran_playbook && result.fatal) {
    print_error(result.fatal->what(), result.fatal->hint());
    if (static_cast<int>(result.fatal->code()) >= 128) {
      return static_cast<int>(result.fatal->code());
    }
  }
  return exit_code_for_launch(lr);
}

namespace launch_command {
namespace {

struct Options {
  std::string playbook = "fault-triage";
  std::string debugger;
  std::string timeout; // the program's whole run; empty: none
  std::string command_timeout = "30s";
  std::string stop_timeout = "30s";
  std::string catch_what;
  bool detach_on_fault = false;
  std::vector<std::string> settings;
  std::string record;
  std::string format = "text";
  std::string output;
  std::string color = "auto";
  bool wide = false;
  bool quiet = false;
  bool allow_unsafe = false;
  std::vector<std::string> vars;
};

int run_launch(const Options& o) {
  if (!launch_separator_seen() || launch_command_words().empty()) {
    throw Error(ExitCode::Usage, "no program to launch",
                "name it after `--`: rocplay launch [PLAYBOOK] -- ./app ARGS");
  }
  LaunchReportOptions ro;
  ro.playbook = o.playbook;
  ro.load.allow_unsafe_commands = o.allow_unsafe;
  ro.argv = launch_command_words();
  ro.format = report::parse_format(o.format);
  ro.output = o.output;
  ro.color = o.color;
  ro.wide = o.wide;
  ro.launched = true;
  for (const auto& v : o.vars) {
    ro.vars.push_back(playbook::parse_var_assignment(v));
  }
  // Everything that can fail is checked before the program starts.
  (void)playbook::find_playbook(ro.playbook, ro.load);
  (void)session::resolve_program(ro.argv.front());
  session::LaunchSpec spec;
  spec.argv = ro.argv;
  spec.end = o.detach_on_fault ? session::TargetEnd::Detach : session::TargetEnd::Kill;
  if (!o.catch_what.empty()) {
    if (o.catch_what != "throw") {
      throw Error(ExitCode::Usage,
                  fmt::format("--catch {}: only `throw` is supported", o.catch_what),
                  "--catch throw stops at the first C++ exception thrown");
    }
    spec.catch_throw = true;
  }
  for (const auto& s : o.settings) {
    session::validate_command_text(s, "--set");
    spec.settings.push_back(s);
  }
  if (!o.timeout.empty()) {
    spec.timeout = duration_option(o.timeout, "--timeout");
    ro.timeout_seconds = static_cast<double>(spec.timeout->count()) / 1000.0;
  }
  spec.stop_timeout = duration_option(o.stop_timeout, "--stop-timeout");
  session::Options so;
  so.command_timeout = duration_option(o.command_timeout, "--command-timeout");
  so.record_path = o.record;
  so = session::launch_options(so);
  if (!o.quiet && stderr_is_tty()) {
    ro.progress = [](const playbook::StepRecord& rec, bool done) {
      if (done && rec.depth == 0 && rec.status != playbook::StepStatus::Skipped) {
        std::fprintf(stderr, "rocplay: %-9s %s\n",
                     std::string(playbook::to_string(rec.status)).c_str(), rec.name.c_str());
      }
    };
  }

  const session::Debugger debugger = session::find_debugger(o.debugger);
  session::Session session(debugger, so);
  const session::LaunchResult lr = session::launch(session, spec);
  if (lr.outcome != session::LaunchOutcome::Faulted) {
    // The program is ours: a timeout or an interrupt ends it whatever --detach-on-fault says.
    session.set_target_end(session::TargetEnd::Kill);
  }
  return report_stopped_program(session, lr, ro);
}

Action add_launch(CLI::App& app) {
  auto o = std::make_shared<Options>();
  auto* sub = app.add_subcommand(
      "launch", "Run a program under the debugger; at its first fault, snapshot it and report "
                "(`rocplay launch [PLAYBOOK] -- COMMAND ARGS...`)");
  sub->add_option("playbook", o->playbook,
                  "The playbook to run at the fault (default: fault-triage)");
  add_debugger_option(*sub, o->debugger);
  sub->add_option("--timeout", o->timeout,
                  "Stop the program if it runs this long without a fault (seconds, or 500ms, 30s, "
                  "2m): snapshot, report, kill. Default: no limit");
  sub->add_option("--command-timeout", o->command_timeout,
                  "Deadline of each debugger command at the stop")
      ->capture_default_str();
  sub->add_option("--stop-timeout", o->stop_timeout,
                  "How long the debugger may take to stop the program after an interrupt")
      ->capture_default_str();
  sub->add_option("--catch", o->catch_what, "`throw`: stop at the first C++ exception thrown");
  sub->add_flag("--detach-on-fault", o->detach_on_fault,
                "After the report, detach and let the program go on with its fault (it usually "
                "dies of it, leaving a core) instead of killing it");
  sub->add_option("--set", o->settings,
                  "A debugger setting before the run, as `set SETTING` (repeatable), e.g. "
                  "--set 'cuda api_failures stop'")
      ->allow_extra_args(false)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  sub->add_option("--record", o->record, "Save the whole debugger transcript to FILE");
  sub->add_option("--format", o->format, "Report format: text, json, jsonl or sarif")
      ->capture_default_str();
  sub->add_option("--output,-o", o->output, "Write the report to FILE instead of stdout");
  add_var_option(*sub, o->vars);
  sub->add_flag("--allow-unsafe-commands", o->allow_unsafe,
                "Let a playbook from outside the built-ins run commands that run code or write "
                "files");
  add_color_option(*sub, o->color);
  add_wide_option(*sub, o->wide);
  sub->add_flag("--quiet,-q", o->quiet, "No progress lines on stderr");
  sub->footer(kLaunchExitCodes);
  return [o] { return run_launch(*o); };
}

const bool kRegistered = register_command({"launch", 12, &add_launch});

} // namespace
} // namespace launch_command
} // namespace rocplay::cli
