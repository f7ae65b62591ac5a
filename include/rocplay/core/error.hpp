// The one exception type above mi/, and the exit codes it maps to.
//
// Session, playbook and snapshot code throw rocplay::Error; only the CLI catches it (after the
// session has detached). Every error that reaches a person says what happened, why, and what to
// do next: `message` holds the first two, `hint` the third.
#pragma once

#include <stdexcept>
#include <string>

namespace rocplay {

// Documented in README.md ("Exit codes"). Findings are not failures: they get their own code.
enum class ExitCode : int {
  Ok = 0,                 // ran, nothing found
  Findings = 1,           // ran, at least one finding at warning or above
  PartialInput = 2,       // postmortem: some inputs could not be read
  StepFailed = 3,         // a playbook step failed (on_error: abort) or an expect did not hold
  Usage = 64,             // bad command line
  DataError = 65,         // malformed input with --strict
  NoInput = 66,           // a file cannot be read, or a report cannot be written
  NoSuchProcess = 67,     // --pid names no live process
  HookHeld = 68,          // HSA_TOOLS_LIB in the target: the debug agent holds the debugger hook
  DebuggerNotFound = 69,  // no rocgdb/cuda-gdb/gdb found
  Internal = 70,          // a bug in rocplay
  Timeout = 75,           // a debugger step ran past its deadline
  DebuggerCrashed = 76,   // the debugger exited or was killed mid-playbook
  PtraceDenied = 77,      // ptrace not permitted (Yama, capabilities, another tracer)
  BadPlaybook = 78,       // playbook failed validation, or an unsafe command was refused
  TargetLeftStopped = 79, // after detach the target was stopped; rocplay sent SIGCONT
  // `launch` (and `run --wait-for-fault`): how the program ended.
  ProgramFailed = 80,   // it exited by itself with a non-zero status
  ProgramFaulted = 81,  // it stopped on a fault; the report is the fault's
  ProgramKilled = 82,   // a signal the debugger did not stop it for killed it
  ProgramTimedOut = 83, // it ran past --timeout without a fault
  Interrupted = 130,    // SIGINT/SIGTERM/SIGHUP to rocplay (after detaching)
};

class Error : public std::runtime_error {
public:
  Error(ExitCode code, std::string message, std::string hint = {})
      : std::runtime_error(message), code_(code), hint_(std::move(hint)) {}
  ExitCode code() const { return code_; }
  const std::string& hint() const { return hint_; }

private:
  ExitCode code_;
  std::string hint_;
};

} // namespace rocplay
