// `rocplay run PLAYBOOK --pid PID --wait-for-fault [--timeout S]`: attach, let the process run,
// and run the playbook at its first fault stop; at the deadline, detach with it running. Options
// to drivers::wait_for_fault (src/drivers/launch.cpp), the incident to report::write.
#include "cli/launch_common.hpp"
#include "cli/run_common.hpp"
#include "rocplay/drivers/drivers.hpp"
#include "rocplay/report/report.hpp"

#include <fmt/format.h>

namespace rocplay::cli {

int run_wait_for_fault(const RunCommandOptions& o) {
  if (!o.pids.empty() || o.workers_of > 0 || !o.slurm_job.empty()) {
    throw Error(ExitCode::Usage, "--wait-for-fault takes one --pid",
                "wait for one process's fault at a time");
  }
  if (o.pid <= 0) {
    throw Error(ExitCode::Usage, fmt::format("--pid {}: not a process id", o.pid),
                "`rocplay ps` lists the processes that hold a GPU");
  }
  drivers::StopRequest rq;
  rq.playbook = run_playbook_of(o);
  for (const auto& v : o.vars) {
    rq.vars.push_back(playbook::parse_var_assignment(v));
  }
  (void)report::parse_format(o.format);
  std::chrono::milliseconds wait = std::chrono::hours(24);
  if (!o.fault_timeout.empty()) {
    wait = duration_option(o.fault_timeout, "--timeout");
    rq.timeout_seconds = static_cast<double>(wait.count()) / 1000.0;
  }
  rq.session = session_options_of(o);
  rq.session.record_path = drivers::expand_path_pattern(o.record, o.pid, std::nullopt);
  rq.debugger = session::find_debugger(o.debugger);
  const auto attached = [&o] {
    if (!o.quiet && stderr_is_tty()) {
      std::fprintf(stderr, "rocplay: attached to pid %lld; waiting for a fault%s\n",
                   static_cast<long long>(o.pid),
                   o.fault_timeout.empty() ? "" : fmt::format(" for {}", o.fault_timeout).c_str());
    }
  };
  const Incident incident = drivers::wait_for_fault(rq, o.pid, wait, attached);
  return write_stopped_program(incident, o.format, o.output, o.color, o.wide);
}

} // namespace rocplay::cli
