// `rocplay watch --workers-of SERVER --log FILE`: watch a server without ptrace while it is
// healthy; when its log stops and its GPUs stay busy, capture every worker at once through the
// fan-out path (hang-triage, several samples), write the report, the recordings and a summary
// line to --out, run --on-capture, and exit (or keep watching with a back-off). docs/watch.md.
#include "cli/commands.hpp"
#include "cli/fanout.hpp"
#include "cli/run_common.hpp"
#include "rocplay/clock.hpp"
#include "rocplay/error.hpp"
#include "rocplay/playbook.hpp"
#include "rocplay/process.hpp"
#include "rocplay/report_watch.hpp"
#include "rocplay/run_targets.hpp"
#include "rocplay/session.hpp"
#include "rocplay/watch.hpp"

#include <fmt/format.h>

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <thread>

extern char** environ;

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

std::string host_name() {
  char host[256] = {};
  return ::gethostname(host, sizeof host - 1) == 0 && host[0] != '\0' ? host : "unknown-host";
}

void say(const std::string& line) {
  std::fprintf(stderr, "rocplay watch: %s\n", line.c_str());
  std::fflush(stderr);
}

double cpu_seconds() {
  rusage ru{};
  ::getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

double rss_mib() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) {
      return std::atof(line.c_str() + 6) / 1024.0;
    }
  }
  return 0;
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

// Runs the user's --on-capture command through /bin/sh -c (it is theirs: pipes, redirections
// and variables as in a unit file's ExecStart). Nothing from the target is spliced into it: the
// report's path is $1 and the paths and exit code are in the environment. Its stdout goes to
// rocplay's stderr, stdin is /dev/null; it runs in its own process group, killed past `timeout`.
void run_on_capture(const std::string& command, const std::string& report,
                    const std::string& summary, const std::string& out_dir, int code,
                    std::chrono::milliseconds timeout) {
  std::vector<std::string> env_s;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string_view kv(*e);
    if (kv.rfind("ROCPLAY_REPORT=", 0) != 0 && kv.rfind("ROCPLAY_SUMMARY_FILE=", 0) != 0 &&
        kv.rfind("ROCPLAY_OUT_DIR=", 0) != 0 && kv.rfind("ROCPLAY_CAPTURE_EXIT=", 0) != 0) {
      env_s.emplace_back(kv);
    }
  }
  env_s.push_back("ROCPLAY_REPORT=" + report);
  env_s.push_back("ROCPLAY_SUMMARY_FILE=" + summary);
  env_s.push_back("ROCPLAY_OUT_DIR=" + out_dir);
  env_s.push_back("ROCPLAY_CAPTURE_EXIT=" + std::to_string(code));
  std::vector<char*> envp;
  for (auto& e : env_s) {
    envp.push_back(e.data());
  }
  envp.push_back(nullptr);
  std::vector<std::string> argv_s = {"/bin/sh", "-c", command, "rocplay-on-capture", report};
  std::vector<char*> argv;
  for (auto& a : argv_s) {
    argv.push_back(a.data());
  }
  argv.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, STDERR_FILENO, STDOUT_FILENO);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attr, 0);
  pid_t pid = 0;
  const int rc = ::posix_spawn(&pid, "/bin/sh", &actions, &attr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) {
    print_error(fmt::format("--on-capture could not be started: {}", std::strerror(rc)),
                "the report is written; run the command by hand with its path");
    return;
  }
  say(fmt::format("--on-capture started (pid {}): {}", pid, command));
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  int status = 0;
  for (;;) {
    const pid_t w = ::waitpid(pid, &status, WNOHANG);
    if (w == pid) {
      break;
    }
    if (w < 0 && errno != EINTR) {
      return;
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      ::kill(-pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      print_error(fmt::format("--on-capture ran past {} ms and was killed", timeout.count()),
                  "raise --on-capture-timeout, or make the command return sooner (run long "
                  "uploads in the background)");
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
    say("--on-capture finished (exit 0)");
  } else {
    print_error(fmt::format("--on-capture failed ({} {})", WIFEXITED(status) ? "exit" : "signal",
                            WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status)),
                "the capture's files are written; the watcher's exit code does not change");
  }
}

// Every target as `ps` would show it: not stopped by a signal or a tracer.
std::vector<std::int64_t> stopped_targets(const std::vector<std::int64_t>& pids) {
  std::vector<std::int64_t> stopped;
  for (const auto pid : pids) {
    const auto st = process::read_stat(pid);
    if (st && process::is_stopped(st->state)) {
      stopped.push_back(pid);
    }
  }
  return stopped;
}

struct CaptureResult {
  int code = 0;
  bool interrupted = false;
};

CaptureResult capture(const WatchOptions& w, const watch::CheckResult& check,
                      std::vector<std::int64_t> pids) {
  const auto wall = std::chrono::system_clock::now();
  const std::string host = host_name();
  const std::string base = fmt::format("{}/rocplay-{}-{}", w.out, host, watch::utc_stamp(wall));
  RunCommandOptions ro = w.run;
  ro.playbook = w.playbook;
  const std::string ext = ro.format == "text" ? "txt" : ro.format;
  ro.output = base + ".report." + ext;
  ro.record = base + "-rank%r-pid%p.rocplay";
  ro.pid = 0;
  ro.workers_of = 0;
  ro.pids.clear();
  if (ro.samples == 0) {
    ro.samples = 3;
  }
  std::string list;
  for (const auto pid : pids) {
    list += (list.empty() ? "" : ",") + std::to_string(pid);
  }
  say(fmt::format("HANG ({}): capturing {} target(s) at once: pids {}, playbook {}, {} samples",
                  check.reason, pids.size(), list, ro.playbook, ro.samples));
  Incident outcome;
  CaptureResult result;
  try {
    result.code = run_fanout(ro, pids, static_cast<unsigned>(pids.size()), &outcome);
  } catch (const Error& e) {
    print_error(e.what(), e.hint());
    result.code = static_cast<int>(e.code());
  }
  result.interrupted = session::caught_signal().has_value();
  // The fan-out detached every target; the hook may only run once they all run again.
  const auto stopped = stopped_targets(pids);
  for (const auto pid : stopped) {
    print_error(fmt::format("pid {} is stopped after the capture; sending SIGCONT", pid),
                "check it with `ps -o stat -p PID`; something else may be tracing it");
    ::kill(static_cast<pid_t>(pid), SIGCONT);
  }

  report::Capture c;
  c.host = host;
  c.time = iso_time(std::chrono::duration<double>(wall.time_since_epoch()).count());
  c.why = check.reason;
  c.report_path = ro.output;
  c.interrupted = result.interrupted;
  c.cross_rank = outcome.cross_rank;
  std::size_t examined = 0;
  for (const auto& k : outcome.cases) {
    report::CaptureTarget& ct = c.targets.emplace_back();
    ct.pid = k.source.pid.value_or(0);
    ct.rank = k.source.rank;
    ct.examined = k.examined();
    examined += ct.examined ? 1 : 0;
    ct.error = k.error;
    if (ct.examined) {
      ct.findings = k.findings;
      ct.progress = k.progress;
    }
  }
  const std::string line = report::capture_summary_line(c);
  const std::string summary = base + ".summary.txt";
  {
    std::ofstream s(summary, std::ios::binary | std::ios::trunc);
    s << line << "\n";
    if (!s) {
      print_error(fmt::format("cannot write {}", summary), "check the space left in --out");
    }
  }
  std::fprintf(stdout, "%s\n", line.c_str());
  std::fflush(stdout);
  if (examined > 0) {
    result.code = static_cast<int>(examined == outcome.cases.size() ? ExitCode::Findings
                                                                    : ExitCode::PartialInput);
  }
  if (result.interrupted) {
    say("interrupted during the capture: every target was detached; --on-capture not run");
    return result;
  }
  if (!w.on_capture.empty()) {
    run_on_capture(w.on_capture, ro.output, summary, w.out, result.code,
                   duration_option(w.on_capture_timeout, "--on-capture-timeout"));
  }
  return result;
}

int run_watch(const WatchOptions& w) {
  session::install_signal_guard();
  const auto quiet_for = duration_option(w.quiet_for, "--quiet-for");
  const auto check_every = duration_option(w.check_every, "--check-every");
  const auto status_every = duration_option(w.status_every, "--status-every");
  const auto backoff = duration_option(w.backoff, "--backoff");
  const auto backoff_max = duration_option(w.backoff_max, "--backoff-max");
  duration_option(w.on_capture_timeout, "--on-capture-timeout");
  // Zero: no end (GCC 12 warns of an optional<duration> it cannot see initialised).
  const std::chrono::milliseconds watch_for = w.watch_for.empty()
                                                  ? std::chrono::milliseconds(0)
                                                  : duration_option(w.watch_for, "--watch-for");
  if (w.gpu_busy < 0 || w.gpu_busy > 100) {
    throw Error(ExitCode::Usage, fmt::format("--gpu-busy {}: not a percentage", w.gpu_busy),
                "give 0 to 100 (0 turns the GPU sign off)");
  }
  // Everything a capture needs is checked now, not when a hang comes.
  {
    playbook::LoadOptions lo;
    lo.allow_unsafe_commands = w.run.allow_unsafe;
    playbook::find_playbook(w.playbook, lo);
    playbook::RunOptions sampling;
    apply_sampling_options(w.run, sampling);
    duration_option(w.run.timeout, "--timeout");
    duration_option(w.run.attach_timeout, "--attach-timeout");
    session::find_debugger(w.run.debugger);
  }
  check_out_dir(w.out);

  watch::Config config;
  config.log = w.log;
  config.quiet_for = quiet_for;
  config.gpu_busy = w.gpu_busy;
  config.gpu.nvidia_smi = w.nvidia_smi;
  if (w.run.workers_of <= 0 && w.run.pids.empty() && w.run.pid <= 0) {
    throw Error(ExitCode::NoSuchProcess, "--workers-of/--pid 0: not a process id",
                "is the server running? (`systemctl show -p MainPID --value UNIT` prints 0 "
                "when it is not)");
  }
  watch::Targets targets = w.run.workers_of > 0
                               ? watch::Targets::workers_of(w.run.workers_of, w.gpu_devices)
                           : !w.run.pids.empty() ? watch::Targets::fixed(parse_pid_list(w.run.pids))
                                                 : watch::Targets::fixed({w.run.pid});
  const auto start = watch::Clock::now();
  watch::Watcher watcher(config, std::move(targets), start);
  say(fmt::format("watching {}; log {}; capture when {}{} for {:.0f}s; a check every {:.1f}s; "
                  "captures to {}",
                  watcher.targets().describe(), w.log.empty() ? "none" : w.log,
                  w.log.empty() ? "a GPU is busy" : "the log is quiet",
                  w.gpu_busy > 0 && !w.log.empty()
                      ? fmt::format(" and a GPU is busy (>= {}%, where readable)", w.gpu_busy)
                      : std::string(),
                  std::chrono::duration<double>(quiet_for).count(),
                  std::chrono::duration<double>(check_every).count(), w.out));

  std::uint64_t checks = 0;
  double check_cpu = 0;
  unsigned captures = 0;
  int last_code = 0;
  bool said_quiet = false;
  auto last_status = start;
  watch::Verdict last_verdict = watch::Verdict::Healthy;
  for (;;) {
    const auto now = watch::Clock::now();
    const double cpu0 = cpu_seconds();
    watch::CheckResult r = watcher.check(now);
    check_cpu += cpu_seconds() - cpu0;
    ++checks;
    for (const auto& e : r.events) {
      say(e);
    }
    switch (r.verdict) {
    case watch::Verdict::Gone:
      print_error(fmt::format("stopped watching: {}{}", r.reason,
                              captures > 0
                                  ? fmt::format(" ({} capture(s) written to {})", captures, w.out)
                                  : std::string(" (nothing was captured)")),
                  "restart the watcher with the new server's pid (a systemd unit restarts it)");
      return static_cast<int>(ExitCode::NoSuchProcess);
    case watch::Verdict::Hang: {
      const CaptureResult c = capture(w, r, watcher.targets().pids());
      ++captures;
      last_code = c.code;
      if (c.interrupted) {
        const auto sig = session::caught_signal();
        return static_cast<int>(session::exit_code_for_signal(sig ? *sig : SIGINT));
      }
      if (!w.keep_watching) {
        return c.code;
      }
      watcher.captured(watch::Clock::now(), backoff, backoff_max);
      say(fmt::format("watching again; if the hang persists the next capture waits {:.0f}s",
                      std::chrono::duration<double>(watcher.backoff()->current()).count()));
      said_quiet = false;
      break;
    }
    case watch::Verdict::Quiet:
      if (!said_quiet && r.quiet * 2 >= quiet_for) {
        said_quiet = true;
        say(fmt::format("quiet: {} (a capture after {:.0f}s of this)", r.reason,
                        std::chrono::duration<double>(quiet_for).count()));
      }
      break;
    case watch::Verdict::Healthy:
      if (said_quiet) {
        said_quiet = false;
        say(fmt::format("healthy again: {}", r.reason));
      }
      break;
    case watch::Verdict::Waiting:
      if (last_verdict != watch::Verdict::Waiting) {
        say(fmt::format("waiting: {}", r.reason));
      }
      break;
    }
    last_verdict = r.verdict;
    const auto after = watch::Clock::now();
    if (!w.run.quiet && after - last_status >= status_every) {
      last_status = after;
      say(fmt::format("{}: {}; {}; {} checks, {:.3f} ms CPU per check, RSS {:.1f} MiB",
                      to_string(r.verdict), r.reason, watcher.targets().describe(), checks,
                      checks ? check_cpu * 1000 / static_cast<double>(checks) : 0.0, rss_mib()));
    }
    if (watch_for.count() > 0 && after - start >= watch_for) {
      say(fmt::format("--watch-for {} elapsed after {} checks ({:.3f} ms CPU per check); {} "
                      "capture(s)",
                      w.watch_for, checks,
                      checks ? check_cpu * 1000 / static_cast<double>(checks) : 0.0, captures));
      return captures == 0 ? 0 : last_code;
    }
    std::this_thread::sleep_for(check_every);
  }
}

Action add_watch(CLI::App& app) {
  auto w = std::make_shared<WatchOptions>();
  auto* sub = app.add_subcommand(
      "watch", "Watch a server without stopping it; when its log goes quiet and its GPUs stay "
               "busy, capture every worker at once (hang-triage) and write the report to --out");
  add_run_options(*sub, w->run, false);
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
