// `rocplay launch [PLAYBOOK] -- COMMAND ARGS...`: run a program under the debugger; at its first
// fault run the playbook (fault-triage), report, then kill it (or detach). Options to
// drivers::launch (src/drivers/launch.cpp), the incident to report::write.
#include "cli/commands.hpp"
#include "cli/launch_common.hpp"
#include "cli/output.hpp"
#include "cli/run_common.hpp"
#include "rocplay/drivers/drivers.hpp"
#include "rocplay/playbook/playbook.hpp"
#include "rocplay/report/incident.hpp"
#include "rocplay/report/report.hpp"
#include "rocplay/session/launch.hpp"

#include <fmt/format.h>

#include <unistd.h>

#include <filesystem>
#include <memory>

namespace rocplay::cli {

std::vector<std::string>& launch_command_words() {
  static std::vector<std::string> words;
  return words;
}

bool& launch_separator_seen() {
  static bool seen = false;
  return seen;
}

int write_stopped_program(const Incident& incident, const std::string& format,
                          const std::string& output, const std::string& color, bool wide) {
  OutputFile file(output);
  const bool to_terminal = output.empty() || output == "-";
  report::TextOptions to;
  to.color = use_color(color, to_terminal ? STDOUT_FILENO : -1);
  to.wide = wide;
  to.width = report::text_width(to_terminal ? 1 : -1);
  report::write(file.stream(), incident, report::parse_format(format), to, ROCPLAY_VERSION);
  file.stream().flush();
  file.commit();
  const Case& c = incident.cases.front();
  if (c.run && c.run->fatal) {
    print_error(c.run->fatal->what(), c.run->fatal->hint());
  }
  return static_cast<int>(incident.exit_code());
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
  bool verify = false;
  unsigned repeats = 2;
  std::vector<std::string> experiments;
};

int run_launch(const Options& o) {
  if (!launch_separator_seen() || launch_command_words().empty()) {
    throw Error(ExitCode::Usage, "no program to launch",
                "name it after `--`: rocplay launch [PLAYBOOK] -- ./app ARGS");
  }
  // Everything that can fail is checked before the program starts.
  (void)report::parse_format(o.format);
  playbook::LoadOptions load;
  load.allow_unsafe_commands = o.allow_unsafe;
  drivers::StopRequest rq;
  rq.playbook = playbook::find_playbook(o.playbook, load);
  for (const auto& v : o.vars) {
    rq.vars.push_back(playbook::parse_var_assignment(v));
  }
  session::LaunchSpec spec;
  spec.argv = launch_command_words();
  (void)session::resolve_program(spec.argv.front());
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
    rq.timeout_seconds = static_cast<double>(spec.timeout->count()) / 1000.0;
  }
  spec.stop_timeout = duration_option(o.stop_timeout, "--stop-timeout");
  session::Options so;
  so.command_timeout = duration_option(o.command_timeout, "--command-timeout");
  so.record_path = o.record;
  rq.session = session::launch_options(so);
  if (!o.quiet && stderr_is_tty()) {
    rq.progress = [](const playbook::StepRecord& rec, bool done) {
      if (done && rec.depth == 0 && rec.status != playbook::StepStatus::Skipped) {
        std::fprintf(stderr, "rocplay: %-9s %s\n",
                     std::string(playbook::to_string(rec.status)).c_str(), rec.name.c_str());
      }
    };
  }
  rq.debugger = session::find_debugger(o.debugger);
  if (!o.verify) {
    if (!o.experiments.empty()) {
      throw Error(ExitCode::Usage, "--experiment is for --verify",
                  "add --verify to run the program again under the experiment");
    }
    return write_stopped_program(drivers::launch(rq, spec), o.format, o.output, o.color, o.wide);
  }
  drivers::VerifyPlan plan;
  plan.experiments = drivers::verify_experiments(rq.debugger.kind, o.experiments);
  if (o.repeats == 0 || o.repeats > 20) {
    throw Error(ExitCode::Usage, fmt::format("--repeats {}: out of range", o.repeats),
                "give 1 to 20 runs per experiment");
  }
  plan.repeats = o.repeats;
  plan.record_dir = o.record;
  if (!o.record.empty()) {
    rq.session.record_path.clear();
    std::error_code ec;
    std::filesystem::create_directories(o.record, ec);
    if (ec) {
      throw Error(
          ExitCode::NoInput,
          fmt::format("cannot create {} for the runs' recordings: {}", o.record, ec.message()),
          "with --verify, --record names a directory; pick one you can write");
    }
  }
  if (!o.quiet && stderr_is_tty()) {
    rq.progress = {}; // one line per run, not per step
    plan.progress = [](const std::string& line) {
      std::fprintf(stderr, "rocplay: %s\n", line.c_str());
    };
  }
  const Incident incident = drivers::launch_verify(rq, spec, plan);
  return write_stopped_program(incident, o.format, o.output, o.color, o.wide);
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
  sub->add_option("--record", o->record,
                  "Save the whole debugger transcript to FILE (with --verify: one per run in this "
                  "directory, which `rocplay postmortem DIR` compares again)");
  sub->add_flag("--verify", o->verify,
                "Culprit or victim? After the fault, run the program again (it RUNS SEVERAL "
                "TIMES: its side effects are yours) as given and with blocking launches "
                "(CUDA_LAUNCH_BLOCKING=1, HIP_LAUNCH_BLOCKING=1; with rocgdb also serialised "
                "kernels, AMD_SERIALIZE_KERNEL=3), each under the debugger, and compare where "
                "each run faulted: static fault, asynchronous race, or a fault that moves. Runs "
                "after the first end at --timeout, else at 3x the first run's time to its fault "
                "(10 s at least)");
  sub->add_option("--repeats", o->repeats,
                  "With --verify: runs as given and under each experiment (1-20)")
      ->capture_default_str();
  sub->add_option("--experiment", o->experiments,
                  "With --verify: one more experiment, NAME=VALUE set in the program's "
                  "environment (repeatable; each is its own experiment), e.g. OMP_NUM_THREADS=1")
      ->allow_extra_args(false)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  sub->add_option("--format", o->format,
                  "Report format: text, json, jsonl, sarif or html (one self-contained page)")
      ->capture_default_str();
  sub->add_option("--output,-o", o->output, "Write the report to FILE instead of stdout");
  add_var_option(*sub, o->vars);
  sub->add_flag("--allow-unsafe-commands", o->allow_unsafe,
                "Let a playbook from outside the built-ins run commands that run code or write "
                "files");
  add_color_option(*sub, o->color);
  add_wide_option(*sub, o->wide);
  sub->add_flag("--quiet,-q", o->quiet, "No progress lines on stderr");
  sub->footer(std::string(kLaunchExitCodes) + " With --verify: the first run's code.");
  return [o] { return run_launch(*o); };
}

const bool kRegistered = register_command({"launch", 12, &add_launch});

} // namespace
} // namespace launch_command
} // namespace rocplay::cli
