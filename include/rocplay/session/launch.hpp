// Running a program under the debugger until it faults (`rocplay launch`), and waiting for a
// running process's first fault (`rocplay run --wait-for-fault`). docs/launch.md.
//
// The program is started by the debugger through rocplay's own exec helper (`rocplay
// __launch-exec ...`): the debugger runs the helper with no shell, the helper puts the program's
// stdin, stdout and stderr back (the debugger's own are rocplay's pipes) and execs the program
// with its arguments exactly as given. Only this file runs a program; playbook steps never can.
#pragma once

#include "rocplay/session/session.hpp"

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace rocplay::session {

// The first argument that makes rocplay the exec helper.
inline constexpr const char* kExecHelperWord = "__launch-exec";
// The helper's main(): restores the descriptors and environment, execs the program. Never
// returns; a program that cannot be executed ends the helper with 127 and a message on stderr.
[[noreturn]] void exec_helper_main(int argc, char** argv);

struct LaunchSpec {
  std::vector<std::string> argv; // COMMAND ARGS..., passed as they are
  bool catch_throw = false;      // stop at the first C++ exception thrown
  // `set ...` settings the debugger gets before the run (`cuda api_failures stop`).
  std::vector<std::string> settings;
  TargetEnd end = TargetEnd::Kill; // after the report: kill (default) or detach
  // Set in the program's environment on top of rocplay's own (`launch --verify`'s experiments).
  std::vector<std::pair<std::string, std::string>> environment;
  // The program's whole run; unset: no limit.
  std::optional<std::chrono::milliseconds> timeout;
  // How long the debugger may take to stop the program after an interrupt.
  std::chrono::milliseconds stop_timeout{30'000};
  // A stop on a signal that is no fault (SIGUSR1, SIGPIPE, SIGCHLD ...) is passed on and the
  // program goes on; at most this many, so a signal storm cannot keep rocplay busy forever.
  std::size_t max_passed_signals = 10'000;
  // Stop at every kernel launch (a breakpoint on the runtimes' launch calls, kLaunchCalls) and
  // keep the launching thread's stack, so that a report can say where each kernel was launched
  // (`launch --verify`). Each launch then stops the program for a moment: at most
  // max_traced_launches are traced, after that the breakpoints go.
  bool trace_launches = false;
  std::size_t max_traced_launches = 1'000;
};

// The runtimes' calls a kernel launch goes through: the CUDA runtime (nvcc's launch stubs call
// cudaLaunchKernel), the driver API (Triton, CuPy), HIP.
inline constexpr std::string_view kLaunchCalls[] = {
    "cudaLaunchKernel",      "cudaLaunchKernelExC",     "cudaLaunchCooperativeKernel",
    "cuLaunchKernel",        "cuLaunchKernelEx",        "hipLaunchKernel",
    "hipModuleLaunchKernel", "hipExtModuleLaunchKernel"};

enum class LaunchOutcome : std::uint8_t {
  Faulted,     // stopped on a fault (or a `--catch throw` exception): report at the stop
  Exited,      // exited by itself (exit_code)
  Signalled,   // killed by a signal it was not stopped for (exit_signal)
  TimedOut,    // still running at the deadline: stopped by an interrupt, reported
  Interrupted, // rocplay got SIGINT/SIGTERM/SIGHUP: stopped by an interrupt, reported
  NotStarted,  // the program never ran (the helper could not exec it)
  Lost,        // its threads were gone with no exit status: cuda-gdb's bare stop after a
               // CUDA error ended the program's main thread ("No unwaited-for children left")
};
std::string_view to_string(LaunchOutcome outcome);

struct LaunchResult {
  LaunchOutcome outcome = LaunchOutcome::NotStarted;
  std::int64_t pid = 0;
  std::optional<int> exit_code;
  std::string exit_signal;        // Signalled
  std::string stop_signal;        // the signal of the stop (SIGSEGV, CUDA_EXCEPTION_14, SIGINT)
  std::string stop_reason;        // the `*stopped` reason
  std::optional<int> user_signal; // Interrupted: which signal rocplay got
  std::size_t passed_signals = 0;
  double ran_seconds = 0; // from the run to the stop or exit
  // LaunchSpec::trace_launches: the launching thread's `-stack-list-frames` at each traced
  // launch, the last kMaxLaunchStacks of them, oldest first, and how many launches were traced.
  static constexpr std::size_t kMaxLaunchStacks = 256;
  std::vector<mi::Exchange> launch_stacks;
  std::size_t traced_launches = 0;
  // The program is stopped under the debugger (at a fault, or by the interrupt at the timeout or
  // a signal): a playbook can run now.
  bool stopped_now = false;
  bool stopped() const { return stopped_now; }
};

// The last `*stopped` in these exchanges is a bare one after the debugger found no thread of the
// program left ("No unwaited-for children left"): nothing to resume, no exit status (Lost).
bool program_lost(const std::vector<mi::Exchange>& exchanges);

// Letters, digits and `_`, not starting with a digit: what LaunchSpec::environment accepts.
bool valid_env_name(std::string_view name);

// COMMAND as execvp would find it: a path with a `/` as it is, else the first executable in
// $PATH. Throws Error(NoInput) naming where it looked.
std::string resolve_program(const std::string& command);

// Starts spec.argv under the session's debugger (which must have been created with
// launch_options()) and lets it run until it faults, exits, or the timeout or a signal to rocplay
// stops it. From the start the session owns the program: every way out kills it (or detaches,
// TargetEnd::Detach). Throws Error like Session::execute.
LaunchResult launch(Session& session, const LaunchSpec& spec);

// Session options for a launch: rocplay's stdin, stdout and stderr passed to the debugger (and
// so to the program), no attach preconditions.
Options launch_options(Options base);

// `run --wait-for-fault`: the attached, stopped target runs until it stops on a fault or the
// deadline passes. On the deadline the target is detached, running, and the result is Exited
// = false, outcome TimedOut (no report needed). Signals the target gets that are no fault are
// passed on.
LaunchResult wait_for_fault(Session& session, std::chrono::milliseconds timeout,
                            std::size_t max_passed_signals = 10'000);

} // namespace rocplay::session
