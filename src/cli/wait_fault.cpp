// `rocplay run PLAYBOOK --pid PID --wait-for-fault [--timeout S]`: attach, let the process run,
// and run the playbook at its first fault stop; at the deadline, detach with it running.
#include "cli/launch_common.hpp"
#include "cli/run_common.hpp"
#include "rocplay/launch.hpp"
#include "rocplay/session.hpp"

#include <fmt/format.h>

#include <unistd.h>

namespace rocplay::cli {

int run_wait_for_fault(const RunCommandOptions& o) {
  if (!o.pids.empty() || o.workers_of > 0) {
    throw Error(ExitCode::Usage, "--wait-for-fault takes one --pid",
                "wait for one process's fault at a time");
  }
  if (o.pid <= 0) {
    throw Error(ExitCode::Usage, fmt::format("--pid {}: not a process id", o.pid),
                "`rocplay ps` lists the processes that hold a GPU");
  }
  LaunchReportOptions ro;
  ro.playbook = o.playbook;
  ro.load.allow_unsafe_commands = o.allow_unsafe;
  for (const auto& v : o.vars) {
    ro.vars.push_back(playbook::parse_var_assignment(v));
  }
  (void)playbook::find_playbook(ro.playbook, ro.load);
  ro.format = report::parse_format(o.format);
  ro.output = o.output;
  ro.color = o.color;
  ro.wide = o.wide;
  std::chrono::milliseconds wait = std::chrono::hours(24);
  if (!o.fault_timeout.empty()) {
    wait = duration_option(o.fault_timeout, "--timeout");
    ro.timeout_seconds = static_cast<double>(wait.count()) / 1000.0;
  }
  session::Options so = session_options_of(o);
  so.record_path = expand_path_pattern(o.record, o.pid, std::nullopt);

  const session::Debugger debugger = session::find_debugger(o.debugger);
  session::Session session(debugger, so);
  session.attach(o.pid);
  if (!o.quiet && stderr_is_tty()) {
    std::fprintf(stderr, "rocplay: attached to pid %lld; waiting for a fault%s\n",
                 static_cast<long long>(o.pid),
                 o.fault_timeout.empty() ? "" : fmt::format(" for {}", o.fault_timeout).c_str());
  }
  const session::LaunchResult lr = session::wait_for_fault(session, wait);
  if (lr.outcome == session::LaunchOutcome::Interrupted) {
    session.detach(); // stops it, detaches, then the pending signal ends rocplay
    const int code = static_cast<int>(session::exit_code_for_signal(lr.user_signal.value_or(2)));
    print_error(fmt::format("interrupted while waiting for a fault; pid {} was detached and keeps "
                            "running",
                            o.pid));
    return code;
  }
  return report_stopped_program(session, lr, ro);
}

} // namespace rocplay::cli
