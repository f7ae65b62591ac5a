// `rocplay watch --workers-of SERVER --log FILE`: watch a server without ptrace while it is
// healthy; when its log stops and its GPUs stay busy, capture every worker at once (hang-triage,
// several samples), write the report, the recordings and a summary line to --out, run
// --on-capture, and exit (or keep watching with a back-off). docs/watch.md. The options go to
// drivers::watch (src/drivers/watch_capture.cpp), each capture's incident to report::write.
#include "cli/commands.hpp"
#include "cli/fanout.hpp"
#include "cli/output.hpp"
#include "cli/run_common.hpp"
#include "rocplay/core/error.hpp"
#include "rocplay/drivers/drivers.hpp"
#include "rocplay/drivers/nodes.hpp"
#include "rocplay/playbook/playbook.hpp"
#include "rocplay/report/incident.hpp"
#include "rocplay/session/session.hpp"
#include "rocplay/watch/watch.hpp"

#include <fmt/format.h>

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>

namespace rocplay::cli::watch_command {
namespace {

inline constexpr const char* kWatchExitCodes =
    "Exit codes: 0 watched to the end of --watch-for and captured nothing, 1 a hang was captured "
    "(report written), 2 captured, but some targets could not be examined, 64 bad command line, "
    "66 --log or --out cannot be read or written, 67 the server (or every --pids process) "
    "exited, 69 no debugger found, 70 internal error, 75-77 and 79 a capture that examined no "
    "target ended so (as `run`), 130/143/129 SIGINT/SIGTERM/SIGHUP (every target detached "
    "first).";

struct WatchOptions {
  RunCommandOptions run;
  std::string playbook = "hang-triage";
  std::string log;
  std::string quiet_for = "60s";
  int gpu_busy = 90;
  std::string out = ".";
  bool keep_watching = false;
  std::string check_every = "5s";
  std::string status_every = "10m";
  std::string backoff = "15m";
  std::string backoff_max = "240m";
  std::string watch_for; // empty: until a capture (or forever with --keep-watching)
  std::string on_capture;
  std::string on_capture_timeout = "60s";
  std::vector<std::string> gpu_devices;
  std::string nvidia_smi;
};

void say(const std::string& line) {
  std::fprintf(stderr, "rocplay watch: %s\n", line.c_str());
  std::fflush(stderr);
}

// --out must take files now, not at the moment a hang needs them.
void check_out_dir(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  const std::string probe = dir + "/.rocplay-watch-probe." + std::to_string(::getpid());
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) {
    throw Error(ExitCode::NoInput,
                fmt::format("--out {}: cannot write there ({})", dir, std::strerror(errno)),
                "give a directory the watcher may create files in (reports, recordings)");
  }
  ::close(fd);
  ::unlink(probe.c_str());
}

int run_watch(const WatchOptions& w) {
  session::install_signal_guard();
  const auto quiet_for = duration_option(w.quiet_for, "--quiet-for");
  const auto check_every = duration_option(w.check_every, "--check-every");
  const auto status_every = duration_option(w.status_every, "--status-every");
  const auto backoff = duration_option(w.backoff, "--backoff");
  const auto backoff_max = duration_option(w.backoff_max, "--backoff-max");
  const auto on_capture_timeout = duration_option(w.on_capture_timeout, "--on-capture-timeout");
  // Zero: no end (GCC 12 warns of an optional<duration> it cannot see initialised).
  const std::chrono::milliseconds watch_for = w.watch_for.empty()
                                                  ? std::chrono::milliseconds(0)
                                                  : duration_option(w.watch_for, "--watch-for");
  if (w.gpu_busy < 0 || w.gpu_busy > 100) {
    throw Error(ExitCode::Usage, fmt::format("--gpu-busy {}: not a percentage", w.gpu_busy),
                "give 0 to 100 (0 turns the GPU sign off)");
  }
  // Everything a capture needs is checked now, not when a hang comes.
  RunCommandOptions run = w.run;
  run.playbook = w.playbook;
  const playbook::Playbook playbook = run_playbook_of(run);
  playbook::TargetsOptions examination = targets_options_of(run);
  (void)report::parse_format(w.run.format);
  examination.debugger = session::find_debugger(w.run.debugger);
  if (!w.run.quiet && stderr_is_tty()) {
    examination.target_done = [](const playbook::TargetRun& t) {
      std::fprintf(stderr, "rocplay: pid %lld %s (%.2fs)\n", static_cast<long long>(t.target.pid),
                   t.examined() ? "done" : "failed", t.seconds);
    };
  }
  check_out_dir(w.out);

  drivers::WatchRequest rq;
  rq.config.log = w.log;
  rq.config.quiet_for = quiet_for;
  rq.config.gpu_busy = w.gpu_busy;
  rq.config.gpu.nvidia_smi = w.nvidia_smi;
  rq.check_every = check_every;
  rq.status_every = status_every;
  rq.backoff = backoff;
  rq.backoff_max = backoff_max;
  rq.watch_for = watch_for;
  rq.watch_for_text = w.watch_for;
  rq.keep_watching = w.keep_watching;
  rq.status_lines = !w.run.quiet;
  drivers::CaptureRequest& capture = rq.capture;
  capture.playbook = playbook;
  capture.examination = examination;
  capture.out_dir = w.out;
  capture.report_extension = w.run.format == "text" ? "txt" : w.run.format;
  capture.on_capture = w.on_capture;
  capture.on_capture_timeout = on_capture_timeout;
  capture.say = &say;
  capture.error = [](const std::string& message, const std::string& hint) {
    print_error(message, hint);
  };
  const report::Format format = report::parse_format(w.run.format);
  capture.write_report = [format, &w](const Incident& incident, const std::string& path) {
    RunCommandOptions to_file = w.run;
    to_file.output = path;
    if (format == report::Format::Html) {
      // The page, and the text report beside it (`.report.txt`): what a terminal on the node,
      // `--on-capture` and a grep read.
      const std::string text_path = path.substr(0, path.size() - 4) + "txt";
      OutputFile text(text_path);
      report::write(text.stream(), incident, report::Format::Text, report_text_options(to_file),
                    ROCPLAY_VERSION);
      text.commit();
    }
    OutputFile out(path);
    report::write(out.stream(), incident, format, report_text_options(to_file), ROCPLAY_VERSION);
    out.commit();
  };
  if (!w.run.slurm_job.empty()) {
    // One watch per node (started with srun --overlap --ntasks-per-node=1): this node's tasks
    // of the job, from Slurm (scontrol listpids); their ranks from SLURM_PROCID.
    std::vector<std::int64_t> pids;
    for (const auto& t : drivers::slurm_local_tasks(w.run.slurm_job, std::chrono::seconds(10))) {
      pids.push_back(t.pid);
    }
    return drivers::watch(rq, watch::Targets::fixed(pids));
  }
  if (w.run.workers_of <= 0 && w.run.pids.empty() && w.run.pid <= 0) {
    throw Error(ExitCode::NoSuchProcess, "--workers-of/--pid 0: not a process id",
                "is the server running? (`systemctl show -p MainPID --value UNIT` prints 0 "
                "when it is not)");
  }
  watch::Targets targets = w.run.workers_of > 0
                               ? watch::Targets::workers_of(w.run.workers_of, w.gpu_devices)
                           : !w.run.pids.empty() ? watch::Targets::fixed(parse_pid_list(w.run.pids))
                                                 : watch::Targets::fixed({w.run.pid});
  return drivers::watch(rq, std::move(targets));
}

Action add_watch(CLI::App& app) {
  auto w = std::make_shared<WatchOptions>();
  auto* sub = app.add_subcommand(
      "watch", "Watch a server without stopping it; when its log goes quiet and its GPUs stay "
               "busy, capture every worker at once (hang-triage) and write the report to --out");
  add_run_options(*sub, w->run, false);
  sub->get_option("--slurm-job")
      ->description("This node's tasks of this running Slurm job (scontrol listpids), ranks "
                    "from Slurm: start one watch per node with srun --overlap "
                    "--ntasks-per-node=1 (docs/multi-node.md)");
  sub->add_option("--playbook", w->playbook, "The playbook a capture runs")->capture_default_str();
  sub->add_option("--log", w->log,
                  "The server's log file: a hang is this file not growing for --quiet-for "
                  "(rotation and truncation are followed)");
  sub->add_option("--quiet-for", w->quiet_for,
                  "How long the log must stay quiet (and a GPU busy) before a capture")
      ->capture_default_str();
  sub->add_option("--gpu-busy", w->gpu_busy,
                  "Percent at which a worker's GPU counts as busy (AMD sysfs gpu_busy_percent, "
                  "nvidia-smi); unreadable counters leave the log to decide; 0 turns it off")
      ->capture_default_str();
  sub->add_option("--out", w->out,
                  "Directory for the report, recordings and summary of each capture (file names "
                  "carry host, UTC time and rank); created if missing")
      ->capture_default_str();
  sub->add_flag_function(
      "--once", [w](std::int64_t) { w->keep_watching = false; },
      "Exit after the first capture (the default)");
  sub->add_flag("--keep-watching", w->keep_watching,
                "After a capture, go on watching; a hang that persists is captured again only "
                "after --backoff, doubling up to --backoff-max");
  sub->add_option("--check-every", w->check_every, "Time between two checks")
      ->capture_default_str();
  sub->add_option("--status-every", w->status_every,
                  "Time between two status lines on stderr (changes are said at once)")
      ->capture_default_str();
  sub->add_option("--backoff", w->backoff, "With --keep-watching: wait before a second capture")
      ->capture_default_str();
  sub->add_option("--backoff-max", w->backoff_max, "The longest back-off")->capture_default_str();
  sub->add_option("--watch-for", w->watch_for,
                  "Stop watching after this long (exit 0 when nothing was captured)");
  sub->add_option("--on-capture", w->on_capture,
                  "A command run by /bin/sh -c after every target is detached and running: $1 "
                  "and $ROCPLAY_REPORT are the report's path, $ROCPLAY_SUMMARY_FILE the summary "
                  "line's, $ROCPLAY_CAPTURE_EXIT the capture's exit code");
  sub->add_option("--on-capture-timeout", w->on_capture_timeout,
                  "Kill --on-capture (its process group) past this")
      ->capture_default_str();
  sub->add_option("--gpu-device", w->gpu_devices,
                  "A device path that marks a GPU worker besides /dev/kfd and /dev/nvidia* "
                  "(repeatable)")
      ->allow_extra_args(false)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  sub->add_option("--nvidia-smi", w->nvidia_smi,
                  "nvidia-smi to read NVIDIA GPU counters with (default: from PATH; `none`: "
                  "never run it)");
  sub->footer(kWatchExitCodes);
  return [w] { return run_watch(*w); };
}

const bool kRegistered = register_command({"watch", 12, &add_watch});

} // namespace
} // namespace rocplay::cli::watch_command
