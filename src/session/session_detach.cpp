// Detach on every path: settling the debugger, the detach itself, ending a launched program
// and checking the target was not left stopped (see session/session_impl.hpp).
#include "session/session_impl.hpp"

namespace rocplay::session {

bool Session::Impl::pending_answered() const {
  return !waiting || (closed_by_result && *closed_by_result >= pending);
}

void Session::Impl::settle(bool interrupt) {
  const auto grace = options.interrupt_grace;
  if (in_attach() && stall) {
    // It can never finish (another tracer holds a thread): waiting would only keep the target
    // stopped longer. The kernel detaches the threads the debugger holds when it dies.
    waiting = false;
    kill_debugger("the attach cannot finish: " + stall->reason);
    return;
  }
  if (in_attach()) {
    // Never SIGINT the debugger mid-attach: GDB passes the SIGINT on to a target it does not
    // fully trace yet, and the target dies of it at detach. Let the attach finish instead.
    if (waiting || interrupt) {
      on_note("waiting up to " + seconds_text(grace) + " for the attach to finish");
    }
    pump([&] { return pending_answered() && !in_attach(); }, Clock::now() + grace, false);
    if (!pending_answered() || (in_attach() && waiting)) {
      waiting = false;
      kill_debugger("the attach did not finish within " + seconds_text(grace));
      return;
    }
    if (in_attach()) {
      // ^done came but the stop did not: SIGINT is still unsafe, so give up on the debugger.
      waiting = false;
      kill_debugger("the attached target was not reported stopped within " + seconds_text(grace));
      return;
    }
  }
  if (waiting || target_running) {
    // The debugger is busy with a command, or the target runs and synchronous MI reads no
    // command until it stops. SIGINT makes GDB quit the command or stop the target (it
    // catches the SIGINT it forwards to the target and does not pass it on).
    on_note("interrupting: SIGINT to the debugger (pid " + std::to_string(gdb_pid) + ")");
    ::kill(static_cast<pid_t>(gdb_pid), SIGINT);
    pump([&] { return pending_answered() && !target_running; }, Clock::now() + grace, false);
    if (!pending_answered()) {
      // One more: the first may have been taken as the Quit of something inner.
      ::kill(static_cast<pid_t>(gdb_pid), SIGINT);
      pump([&] { return pending_answered() && !target_running; }, Clock::now() + grace, false);
    }
  }
  if (!pending_answered()) {
    waiting = false;
    kill_debugger("it did not answer an interrupt within " + seconds_text(grace));
    return;
  }
  waiting = false;
  if (target_running) {
    kill_debugger("the target did not stop for detach within " + seconds_text(grace));
  }
}

void Session::Impl::shutdown(bool interrupt) noexcept {
  settle_copy();
  try {
    if (!attach_sent || times.detached) {
      return;
    }
    const bool alive = out_open && gdb_alive();
    if (alive) {
      settle(interrupt);
      if (out_open && !reaped && !target_gone && target_end == TargetEnd::Kill) {
        // A program the launcher started: `kill` (confirm is off); end_program() below makes
        // sure of it.
        auto [w, idx] = send_and_wait(console_command("kill"), options.detach_timeout, true);
        if (w == Wait::Deadline) {
          waiting = false;
          kill_debugger("kill timed out");
        }
      } else if (out_open && !reaped && !target_gone) {
        auto [w, idx] = send_and_wait("-target-detach", options.detach_timeout, true);
        if (w == Wait::Done) {
          if (const auto msg = exchanges[idx].error_message()) {
            warn("detach reported: " + *msg);
          }
        } else if (w == Wait::Deadline) {
          waiting = false;
          warn("the debugger did not detach within " + seconds_text(options.detach_timeout) +
               "; killed it so the kernel detaches the target");
          kill_debugger("detach timed out");
        }
      }
    }
    if (!out_open || reaped) {
      // The tracer is gone; the kernel detaches the target once it has exited.
      reap(milliseconds(5000));
      if (!reaped) {
        kill_debugger("it closed its output but did not exit");
      }
    }
    times.detached = true;
    gdb_attached = false;
    if (run_began > 0) { // running when the debugger let go of it
      times.run_windows.emplace_back(run_began, now());
      run_began = 0;
    }
    if (const auto stops = stop_meter ? stop_meter->finish() : std::nullopt) {
      times.stop_seconds = stopped_within(*stops, 0, now());
      for (auto& note : target_stops_notes(*stops)) {
        on_note(std::move(note));
      }
    } else { // what the debugger said: the attach to the detach, less the runs it reported
      times.stop_seconds = now() - attach_sent_at;
      for (const auto* windows : {&times.attach_run_windows, &times.run_windows}) {
        for (const auto& [from, to] : *windows) {
          *times.stop_seconds -= to - from; // it ran then
        }
      }
    }
    stop_meter.reset();
    times.total_seconds = now();
    if (target_end == TargetEnd::Kill) {
      end_program();
    } else {
      on_note("detached from pid " + std::to_string(pid.value_or(0)));
      check_target_state();
    }
  } catch (...) {
    times.detached = true;
  }
}

void Session::Impl::end_program() {
  if (!pid) {
    return;
  }
  auto st = process::read_stat(*pid);
  for (int i = 0; i < 50 && st && st->state != 'Z' && st->state != 'X'; ++i) {
    if (i == 0 && !target_gone) {
      ::kill(static_cast<pid_t>(*pid), SIGKILL);
      on_note("sent SIGKILL to the program (pid " + std::to_string(*pid) + ")");
    }
    std::this_thread::sleep_for(milliseconds(20));
    st = process::read_stat(*pid);
  }
  times.state_after = st ? st->state : 'X';
  times.killed = true;
  if (st && st->state != 'Z' && st->state != 'X') {
    warn("the program (pid " + std::to_string(*pid) + ") is still there after SIGKILL (state " +
         std::string(1, st->state) + ")");
  } else {
    on_note("the program (pid " + std::to_string(*pid) + ") was ended");
  }
}

void Session::Impl::check_target_state() {
  if (!pid) {
    return;
  }
  if (killed_in_attach && !process::is_stopped(target.state_before)) {
    // Every thread the debugger had stopped sits in a signal-delivery-stop for its attach's
    // SIGSTOP: as the kernel lets it go it delivers that SIGSTOP and stops the whole process, a
    // moment after any look. A SIGCONT cancels a stop signal dequeued before it and wakes a
    // process already stopped (the kernel's JOBCTL_STOP_DEQUEUED).
    killed_in_attach = false;
    bool seen_stopped = false;
    for (const auto& t : process::read_task_stats(*pid)) {
      seen_stopped = seen_stopped || process::is_stopped(t.state);
    }
    ::kill(static_cast<pid_t>(*pid), SIGCONT);
    times.stop_cancelled = true;
    on_note("sent SIGCONT to pid " + std::to_string(*pid) +
            ": the debugger was killed mid-attach, and its SIGSTOPs would stop the process" +
            (seen_stopped ? " (a thread was stopped already)" : ""));
  }
  auto st = process::read_stat(*pid);
  // A tracer-stop can outlive a killed tracer by a moment, longer on a busy machine or when the
  // tracer was a wrapper's child that dies after the wrapper: look again while the target is
  // stopped, for 0.2 s, and up to 2 s while it still has a tracer, before acting.
  for (int i = 0; i < 100 && st && process::is_stopped(st->state); ++i) {
    if (i >= 10) {
      const auto status = process::read_status(*pid);
      if (!status || status->tracer_pid.value_or(0) <= 0) {
        break;
      }
    }
    std::this_thread::sleep_for(milliseconds(20));
    st = process::read_stat(*pid);
  }
  if (!st || st->state == 'Z' || st->state == 'X') {
    times.state_after = 'X';
    warn("the target (pid " + std::to_string(*pid) + ") exited during the session");
    return;
  }
  if (process::is_stopped(target.state_before)) {
    restore_stopped(*st);
    return;
  }
  times.state_after = st->state;
  if (!process::is_stopped(st->state)) {
    return;
  }
  ::kill(static_cast<pid_t>(*pid), SIGCONT);
  times.left_stopped = true;
  auto after = process::read_stat(*pid);
  for (int i = 0; i < 10 && after && process::is_stopped(after->state); ++i) {
    std::this_thread::sleep_for(milliseconds(20));
    after = process::read_stat(*pid);
  }
  times.state_after = after ? after->state : 'X';
  std::string text = "TARGET LEFT STOPPED: pid " + std::to_string(*pid) + " was in state " +
                     std::string(1, st->state) + " after detach; rocplay sent it SIGCONT";
  if (after && process::is_stopped(after->state)) {
    text += ", but it is still stopped (state " + std::string(1, after->state) +
            "): check it with `grep State /proc/" + std::to_string(*pid) + "/status`";
  } else {
    text += " and it is running again";
  }
  on_note(text);
  warn(text);
}

void Session::Impl::quit() noexcept {
  try {
    if (gdb_pid <= 0 || reaped) {
      return;
    }
    if (out_open && !closed && !core_loaded.empty()) {
      // A copy's core file, closed first: GDB reports its threads gone and its libraries unloaded
      // in this exchange, not after -gdb-exit's ^exit, where a reader would take the recording
      // for one cut mid-exchange.
      send_and_wait(console_command("core-file"), milliseconds(2000), true);
      core_loaded.clear();
    }
    if (out_open && !closed) {
      send_and_wait("-gdb-exit", milliseconds(2000), true);
    } else if (out_open) {
      // After a failure the debugger may be mid-command; it still reads -gdb-exit next.
      send_and_wait("-gdb-exit", milliseconds(1000), true);
    }
    if (!reap(milliseconds(2000))) {
      kill_debugger("it did not exit after -gdb-exit");
    }
  } catch (...) {
  }
}

void Session::Impl::restore_stopped(process::Stat st) {
  // gdb wakes a job-control-stopped process to attach and detaches with the stop signal pending:
  // it runs for a moment before it stops again, longer on a busy machine.
  for (int i = 0; i < 50 && !process::is_stopped(st.state); ++i) {
    std::this_thread::sleep_for(milliseconds(20));
    const auto again = process::read_stat(*pid);
    if (!again || again->state == 'Z' || again->state == 'X') {
      times.state_after = 'X';
      warn("the target (pid " + std::to_string(*pid) + ") exited during the session");
      return;
    }
    st = *again;
  }
  const std::string before(1, target.state_before);
  if (process::is_stopped(st.state)) {
    times.state_after = st.state;
    warn("the target (pid " + std::to_string(*pid) +
         ") was already stopped before rocplay attached (state " + before + "); left as it was");
    return;
  }
  ::kill(static_cast<pid_t>(*pid), SIGSTOP);
  auto after = process::read_stat(*pid);
  for (int i = 0; i < 10 && after && !process::is_stopped(after->state); ++i) {
    std::this_thread::sleep_for(milliseconds(20));
    after = process::read_stat(*pid);
  }
  times.state_after = after ? after->state : 'X';
  warn("the target (pid " + std::to_string(*pid) +
       ") was already stopped before rocplay attached (state " + before +
       ") and ran after the detach; rocplay sent it SIGSTOP to leave it stopped as it was (`kill "
       "-CONT " +
       std::to_string(*pid) + "` resumes it)");
}

} // namespace rocplay::session
