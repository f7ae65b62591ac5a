// The watch drivers (rocplay/drivers/drivers.hpp): a capture of every worker of a watched server at
// once (the fan-out with several samples), its report, recordings and summary line, the on-capture
// hook once every target runs again; and the watch loop around it (`rocplay watch`,
// docs/watch.md).
#include "rocplay/drivers/drivers.hpp"

#include "rocplay/core/clock.hpp"
#include "rocplay/report/watch.hpp"
#include "rocplay/session/process.hpp"

#include <fmt/format.h>

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>

extern char** environ;

namespace rocplay::drivers {

namespace {

void say_to(const std::function<void(const std::string&)>& say, const std::string& line) {
  if (say) {
    say(line);
  }
}

void error_to(const std::function<void(const std::string&, const std::string&)>& error,
              const std::string& message, const std::string& hint) {
  if (error) {
    error(message, hint);
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

std::string host_name() {
  const std::string host = process::host_name();
  return host.empty() ? "unknown-host" : host;
}

} // namespace

int run_on_capture(const std::string& command, const std::string& report,
                   const std::string& summary, const std::string& out_dir, int code,
                   std::chrono::milliseconds timeout,
                   const std::function<void(const std::string&)>& say,
                   const std::function<void(const std::string&, const std::string&)>& error) {
  // The command is the user's (pipes, redirections and variables as in a unit file's ExecStart).
  // Nothing from the target is spliced into it: the report's path is $1 and the paths and exit
  // code are in the environment.
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
  // The hook gets the report's path, not rocplay's open files (the watched log, the recordings).
  posix_spawn_file_actions_addclosefrom_np(&actions, STDERR_FILENO + 1);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attr, 0);
  pid_t pid = 0;
  const int rc = ::posix_spawn(&pid, "/bin/sh", &actions, &attr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) {
    error_to(error, fmt::format("--on-capture could not be started: {}", std::strerror(rc)),
             "the report is written; run the command by hand with its path");
    return -1;
  }
  say_to(say, fmt::format("--on-capture started (pid {}): {}", pid, command));
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  int status = 0;
  for (;;) {
    const pid_t w = ::waitpid(pid, &status, WNOHANG);
    if (w == pid) {
      break;
    }
    if (w < 0 && errno != EINTR) {
      return -1;
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      ::kill(-pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      error_to(error, fmt::format("--on-capture ran past {} ms and was killed", timeout.count()),
               "raise --on-capture-timeout, or make the command return sooner (run long "
               "uploads in the background)");
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
    say_to(say, "--on-capture finished (exit 0)");
    return 0;
  }
  error_to(error,
           fmt::format("--on-capture failed ({} {})", WIFEXITED(status) ? "exit" : "signal",
                       WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status)),
           "the capture's files are written; the watcher's exit code does not change");
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

CaptureResult capture(const CaptureRequest& rq, const std::vector<std::int64_t>& pids) {
  CaptureResult result;
  const std::string base =
      fmt::format("{}/rocplay-{}-{}", rq.out_dir, rq.host, watch::utc_stamp(rq.when));
  result.report_path = base + ".report." + rq.report_extension;
  result.record_path = base + "-rank%r-pid%p.rocplay";
  result.summary_path = base + ".summary.txt";
  playbook::TargetsOptions examination = rq.examination;
  if (!examination.run.samples) {
    examination.run.samples = 3; // stuck or slow needs several (--samples wins)
  }
  examination.jobs = static_cast<unsigned>(pids.size()); // every target at once: lockstep
  std::string list;
  for (const auto pid : pids) {
    list += (list.empty() ? "" : ",") + std::to_string(pid);
  }
  say_to(rq.say,
         fmt::format("HANG ({}): capturing {} target(s) at once: pids {}, playbook {}, {} "
                     "samples",
                     rq.why, pids.size(), list, rq.playbook.name, *examination.run.samples));
  try {
    std::vector<playbook::Target> targets = playbook::ranked_targets(pids);
    for (auto& t : targets) {
      t.record_path = record_path_for(result.record_path, t.pid, t.rank);
    }
    NodeRecords node;
    if (!targets.empty() && !targets.front().record_path.empty()) {
      node.ras_path =
          (std::filesystem::path(targets.front().record_path).parent_path() / "ncclras.txt")
              .string();
    }
    result.incident = examine(rq.playbook, targets, examination, node);
    for (const auto& e : target_problems(result.incident)) {
      error_to(rq.error, e.what(), e.hint());
    }
    result.code = static_cast<int>(result.incident.exit_code());
  } catch (const Error& e) {
    error_to(rq.error, e.what(), e.hint());
    result.code = static_cast<int>(e.code());
  }
  bool written = true;
  if (rq.write_report) {
    try {
      rq.write_report(result.incident, result.report_path);
    } catch (const Error& e) {
      error_to(rq.error, e.what(), e.hint());
      result.code = static_cast<int>(e.code());
      written = false;
    }
  }
  result.interrupted = session::caught_signal().has_value();
  // The fan-out detached every target; the hook may only run once they all run again.
  result.left_stopped = stopped_targets(pids);
  for (const auto pid : result.left_stopped) {
    error_to(rq.error, fmt::format("pid {} is stopped after the capture; sending SIGCONT", pid),
             "check it with `ps -o stat -p PID`; something else may be tracing it");
    ::kill(static_cast<pid_t>(pid), SIGCONT);
  }

  report::CaptureHeader c;
  c.host = rq.host;
  c.time = iso_time(std::chrono::duration<double>(rq.when.time_since_epoch()).count());
  c.why = rq.why;
  c.report_path = result.report_path;
  c.interrupted = result.interrupted;
  std::size_t examined = 0;
  for (const auto& k : result.incident.cases) {
    examined += k.examined() ? 1 : 0;
  }
  result.summary = report::capture_summary_line(c, result.incident);
  {
    std::ofstream s(result.summary_path, std::ios::binary | std::ios::trunc);
    s << result.summary << "\n";
    if (!s) {
      error_to(rq.error, fmt::format("cannot write {}", result.summary_path),
               "check the space left in --out");
    }
  }
  if (examined > 0 && written) {
    // A capture is a hang seen: 1 even when no heuristic named it, 2 when some were not examined.
    result.code = static_cast<int>(
        examined == result.incident.cases.size() ? ExitCode::Findings : ExitCode::PartialInput);
  }
  if (result.interrupted) {
    say_to(rq.say,
           "interrupted during the capture: every target was detached; --on-capture not run");
    return result;
  }
  if (!rq.on_capture.empty()) {
    run_on_capture(rq.on_capture, result.report_path, result.summary_path, rq.out_dir, result.code,
                   rq.on_capture_timeout, rq.say, rq.error);
  }
  return result;
}

int watch(const WatchRequest& w, watch::Targets targets) {
  const auto& say = w.capture.say;
  const auto& config = w.config;
  const auto start = watch::Clock::now();
  watch::Watcher watcher(config, std::move(targets), start);
  say_to(say, fmt::format(
                  "watching {}; log {}; capture when {}{} for {:.0f}s; a check every "
                  "{:.1f}s; captures to {}",
                  watcher.targets().describe(), config.log.empty() ? "none" : config.log,
                  config.log.empty() ? "a GPU is busy" : "the log is quiet",
                  config.gpu_busy > 0 && !config.log.empty()
                      ? fmt::format(" and a GPU is busy (>= {}%, where readable)", config.gpu_busy)
                      : std::string(),
                  std::chrono::duration<double>(config.quiet_for).count(),
                  std::chrono::duration<double>(w.check_every).count(), w.capture.out_dir));

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
      say_to(say, e);
    }
    switch (r.verdict) {
    case watch::Verdict::Gone:
      error_to(w.capture.error,
               fmt::format("stopped watching: {}{}", r.reason,
                           captures > 0 ? fmt::format(" ({} capture(s) written to {})", captures,
                                                      w.capture.out_dir)
                                        : std::string(" (nothing was captured)")),
               "restart the watcher with the new server's pid (a systemd unit restarts it)");
      return static_cast<int>(ExitCode::NoSuchProcess);
    case watch::Verdict::Hang: {
      CaptureRequest rq = w.capture;
      rq.host = host_name();
      rq.when = std::chrono::system_clock::now();
      rq.why = r.reason;
      const CaptureResult c = capture(rq, watcher.targets().pids());
      std::fprintf(stdout, "%s\n", c.summary.c_str());
      std::fflush(stdout);
      ++captures;
      last_code = c.code;
      if (c.interrupted) {
        const auto sig = session::caught_signal();
        return static_cast<int>(session::exit_code_for_signal(sig ? *sig : SIGINT));
      }
      if (!w.keep_watching) {
        return c.code;
      }
      watcher.captured(watch::Clock::now(), w.backoff, w.backoff_max);
      say_to(say, fmt::format("watching again; if the hang persists the next capture waits {:.0f}s",
                              std::chrono::duration<double>(watcher.backoff()->current()).count()));
      said_quiet = false;
      break;
    }
    case watch::Verdict::Quiet:
      if (!said_quiet && r.quiet * 2 >= config.quiet_for) {
        said_quiet = true;
        say_to(say, fmt::format("quiet: {} (a capture after {:.0f}s of this)", r.reason,
                                std::chrono::duration<double>(config.quiet_for).count()));
      }
      break;
    case watch::Verdict::Healthy:
      if (said_quiet) {
        said_quiet = false;
        say_to(say, fmt::format("healthy again: {}", r.reason));
      }
      break;
    case watch::Verdict::Waiting:
      if (last_verdict != watch::Verdict::Waiting) {
        say_to(say, fmt::format("waiting: {}", r.reason));
      }
      break;
    }
    last_verdict = r.verdict;
    const auto after = watch::Clock::now();
    if (w.status_lines && after - last_status >= w.status_every) {
      last_status = after;
      say_to(say,
             fmt::format("{}: {}; {}; {} checks, {:.3f} ms CPU per check, RSS {:.1f} MiB",
                         to_string(r.verdict), r.reason, watcher.targets().describe(), checks,
                         checks ? check_cpu * 1000 / static_cast<double>(checks) : 0.0, rss_mib()));
    }
    if (w.watch_for.count() > 0 && after - start >= w.watch_for) {
      say_to(say,
             fmt::format("--watch-for {} elapsed after {} checks ({:.3f} ms CPU per check); "
                         "{} capture(s)",
                         w.watch_for_text, checks,
                         checks ? check_cpu * 1000 / static_cast<double>(checks) : 0.0, captures));
      return captures == 0 ? 0 : last_code;
    }
    std::this_thread::sleep_for(w.check_every);
  }
}

} // namespace rocplay::drivers
