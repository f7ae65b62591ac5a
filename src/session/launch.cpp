// `rocplay launch` and `run --wait-for-fault`: the program runs under the debugger until it
// faults; the session then owns a stopped program for the playbook, and ends it on every path.
//
// How the program is started (docs/launch.md): the debugger is told to run rocplay itself as
// `rocplay __launch-exec FD FD FD ... -- xHEX...` with `startup-with-shell off`, so no shell ever
// sees the arguments. The helper puts back the program's stdin, stdout and stderr (the debugger's
// own are rocplay's pipes; rocplay's originals reach it as inherited descriptors), undoes what
// the debugger changed in the environment (LC_ALL=C, LINES, COLUMNS), and execs the program with
// its arguments byte for byte. The debugger follows the exec as it follows any.
#include "rocplay/session/launch.hpp"

#include "rocplay/core/debugger.hpp"
#include "rocplay/core/fault.hpp"
#include "rocplay/core/names.hpp"
#include "rocplay/session/helper_program.hpp"
#include "rocplay/session/process.hpp"

#include <fmt/format.h>

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace rocplay::session {

namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// What the debugger's environment changes and the program must not inherit.
constexpr std::array<const char*, 4> kRestoredEnv = {"LC_ALL", "LANGUAGE", "LINES", "COLUMNS"};

std::string hex_encode(std::string_view bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (const char c : bytes) {
    const auto u = static_cast<unsigned char>(c);
    out += kDigits[u >> 4];
    out += kDigits[u & 15];
  }
  return out;
}

int hex_digit(char c) {
  if (c >= '0' && c <= '9') {
    return c - '0';
  }
  if (c >= 'a' && c <= 'f') {
    return c - 'a' + 10;
  }
  return -1;
}

bool hex_decode(std::string_view text, std::string& out) {
  if (text.size() % 2 != 0) {
    return false;
  }
  out.clear();
  for (std::size_t i = 0; i < text.size(); i += 2) {
    const int hi = hex_digit(text[i]);
    const int lo = hex_digit(text[i + 1]);
    if (hi < 0 || lo < 0) {
      return false;
    }
    out += static_cast<char>(hi * 16 + lo);
  }
  return true;
}

// An MI c-string: quotes, backslashes and control bytes escaped.
std::string mi_quote(std::string_view text) {
  std::string out = "\"";
  for (const char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (u < 0x20 || u == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\%03o", u);
      out += buf;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

} // namespace

bool valid_env_name(std::string_view name) {
  if (name.empty() || (name.front() >= '0' && name.front() <= '9')) {
    return false;
  }
  return std::all_of(name.begin(), name.end(), [](char c) {
    return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
  });
}

namespace {

std::string self_exe() {
  std::array<char, 4096> buf{};
  const ssize_t n = ::readlink("/proc/self/exe", buf.data(), buf.size() - 1);
  if (n <= 0) {
    throw Error(ExitCode::Internal, "cannot read /proc/self/exe to start the program",
                "rocplay needs /proc mounted to launch a program");
  }
  return std::string(buf.data(), static_cast<std::size_t>(n));
}

struct StopInfo {
  std::string reason;
  std::string signal;
  std::string meaning;
  std::string breakpoint; // bkptno of a breakpoint-hit
};

// The last `*stopped` the session saw.
StopInfo last_stop(const Session& session) {
  const auto& exchanges = session.exchanges();
  for (auto it = exchanges.rbegin(); it != exchanges.rend(); ++it) {
    for (auto r = it->records.rbegin(); r != it->records.rend(); ++r) {
      if (r->kind() == mi::RecordKind::Exec && r->klass() == "stopped") {
        const auto v = r->results();
        return StopInfo{std::string(v["reason"].str_or()), std::string(v["signal-name"].str_or()),
                        std::string(v["signal-meaning"].str_or()),
                        std::string(v["bkptno"].str_or())};
      }
    }
  }
  return {};
}

void set_exit(const Session& session, LaunchResult& r) {
  r.exit_code = session.exit_code();
  r.exit_signal = session.exit_signal();
  r.outcome = r.exit_signal.empty() ? LaunchOutcome::Exited : LaunchOutcome::Signalled;
}

void resume(Session& session) {
  const auto ex = session.lifecycle_command("-exec-continue", milliseconds(30'000));
  if (const auto msg = ex.error_message()) {
    throw Error(ExitCode::StepFailed, "the debugger could not resume the program: " + *msg,
                "run the program under the debugger by hand to see why");
  }
}

// The breakpoints of LaunchSpec::trace_launches, and how many launches they may trace.
struct LaunchTrace {
  std::vector<std::string> breakpoints;
  std::size_t most = 0;
};

// `cudaLaunchKernel`, or an instance of a template of one of kLaunchCalls' names.
bool is_launch_call(std::string_view function) {
  return std::any_of(std::begin(kLaunchCalls), std::end(kLaunchCalls), [&](std::string_view call) {
    return function.starts_with(call) &&
           (function.size() == call.size() || function[call.size()] == '<');
  });
}

// A stop at one of the traced launch calls: keeps the launching thread's stack; false for any
// other stop. The caller resumes the program after one.
bool traced_launch(Session& session, const StopInfo& stop, LaunchTrace& trace, LaunchResult& r) {
  if (stop.reason != "breakpoint-hit" ||
      std::find(trace.breakpoints.begin(), trace.breakpoints.end(), stop.breakpoint) ==
          trace.breakpoints.end()) {
    return false;
  }
  auto ex = session.execute("-stack-list-frames 0 24", milliseconds(30'000));
  if (const auto* result = ex.result(); result != nullptr && !ex.error_message()) {
    // One launch can pass two of the calls (cudaLaunchKernel<char> calls cudaLaunchKernel,
    // static cudart's cudaLaunchKernel calls cuLaunchKernel): only the outermost counts.
    bool inner = false;
    bool innermost = true;
    for (const auto f : result->results()["stack"]) {
      inner = inner || (!innermost && is_launch_call(f["func"].str_or()));
      innermost = false;
    }
    // The snapshot builder forgets these frames: they are not where the program will be.
    session.note(std::string(kLaunchTracedNote) +
                 std::to_string(r.traced_launches + (inner ? 0 : 1)));
    if (inner) {
      return true;
    }
    if (r.launch_stacks.size() == LaunchResult::kMaxLaunchStacks) {
      r.launch_stacks.erase(r.launch_stacks.begin());
    }
    r.launch_stacks.push_back(std::move(ex));
  }
  if (++r.traced_launches >= trace.most) {
    std::string ids;
    for (const auto& b : trace.breakpoints) {
      ids += " " + b;
    }
    session.execute("-break-delete" + ids, milliseconds(30'000));
    session.note(fmt::format("traced {} kernel launches; the later ones are not", trace.most));
    trace.breakpoints.clear();
  }
  return true;
}

// Runs the program until a stop worth reporting, the deadline, a signal to rocplay, or its end.
// `interrupt_on_end`: at the deadline or a signal, stop the program (launch) rather than
// leave it running for the caller to detach (wait-for-fault). `trace`: the launches to trace.
LaunchResult run_until_fault(Session& session, Clock::time_point deadline,
                             milliseconds stop_timeout, std::size_t max_passed,
                             bool interrupt_on_end, LaunchTrace trace = {}) {
  LaunchResult r;
  r.pid = session.pid().value_or(0);
  const double started = session.now();
  for (;;) {
    const RunEnd end = session.wait_while_running(deadline);
    r.ran_seconds = session.now() - started;
    if (end == RunEnd::Exited) {
      set_exit(session, r);
      return r;
    }
    if (end == RunEnd::Deadline || end == RunEnd::Signal) {
      r.outcome = end == RunEnd::Deadline ? LaunchOutcome::TimedOut : LaunchOutcome::Interrupted;
      if (end == RunEnd::Signal) {
        r.user_signal = caught_signal();
      }
      if (!interrupt_on_end) {
        return r;
      }
      if (end == RunEnd::Signal) {
        // The first signal is reported like a fault; a second one ends the session.
        session.acknowledge_signal();
      }
      session.interrupt_target(stop_timeout);
      if (session.target_exited()) {
        set_exit(session, r);
        return r;
      }
      const auto stop = last_stop(session);
      r.stop_reason = stop.reason;
      r.stop_signal = stop.signal;
      r.stopped_now = true;
      return r;
    }
    const auto stop = last_stop(session);
    if (traced_launch(session, stop, trace, r)) {
      resume(session);
      continue;
    }
    r.stop_reason = stop.reason;
    r.stop_signal = stop.signal;
    const bool fault = stop.reason == "signal-received"
                           ? fault_kind_of_signal(stop.signal, stop.meaning).has_value()
                           : stop.reason == "breakpoint-hit";
    if (fault) {
      r.outcome = LaunchOutcome::Faulted;
      r.stopped_now = true;
      return r;
    }
    if (stop.reason.empty() && program_lost(session.exchanges())) {
      session.note("the debugger has no thread of the program left and no exit status");
      r.outcome = LaunchOutcome::Lost;
      return r;
    }
    if (r.passed_signals >= max_passed) {
      session.note("stopped " + std::to_string(r.passed_signals) +
                   " times on signals that are no fault; reporting this stop");
      r.outcome = LaunchOutcome::Faulted;
      r.stopped_now = true;
      return r;
    }
    // SIGUSR1, SIGPIPE, SIGCHLD ...: the debugger passes it on as it resumes (its `pass`).
    ++r.passed_signals;
    session.note("passing " + (stop.signal.empty() ? stop.reason : stop.signal) +
                 " on to the program");
    resume(session);
  }
}

} // namespace

constexpr NameTable<LaunchOutcome, 7> kLaunchOutcomeNames{{
    {LaunchOutcome::Faulted, "faulted"},
    {LaunchOutcome::Exited, "exited"},
    {LaunchOutcome::Signalled, "killed-by-signal"},
    {LaunchOutcome::TimedOut, "timed-out"},
    {LaunchOutcome::Interrupted, "interrupted"},
    {LaunchOutcome::NotStarted, "not-started"},
    {LaunchOutcome::Lost, "lost"},
}};
static_assert(names_cover(kLaunchOutcomeNames, LaunchOutcome::Lost));

std::string_view to_string(LaunchOutcome outcome) {
  return name_of(kLaunchOutcomeNames, outcome, "?");
}

std::string resolve_program(const std::string& command) {
  if (command.empty()) {
    throw Error(ExitCode::Usage, "no program to launch",
                "name it after `--`: rocplay launch -- ./app ARGS");
  }
  if (command.find('/') != std::string::npos) {
    if (!is_executable_file(command)) {
      throw Error(
          ExitCode::NoInput,
          "cannot launch " + command + ": " +
              (::access(command.c_str(), F_OK) != 0 ? "no such file" : "not an executable file"),
          "check the path and its execute permission");
    }
    return command;
  }
  // execvp's default search path when $PATH is unset.
  const auto fallback = std::getenv("PATH") != nullptr
                            ? std::vector<std::string>{}
                            : split_path_var("/usr/local/bin:/usr/bin:/bin");
  if (auto found = find_program(command, fallback)) {
    return *found;
  }
  throw Error(ExitCode::NoInput, "cannot launch " + command + ": not found in $PATH",
              "give its path (./" + command + ") or add its directory to PATH");
}

Options launch_options(Options base) {
  // rocplay's own stdin, stdout and stderr, kept for the program (the debugger's are pipes).
  static const std::array<int, 3> kSaved = [] {
    std::array<int, 3> fds{};
    for (int i = 0; i < 3; ++i) {
      fds[static_cast<std::size_t>(i)] = ::fcntl(i, F_DUPFD_CLOEXEC, 10);
    }
    return fds;
  }();
  base.inherit_fds.clear();
  for (const int fd : kSaved) {
    if (fd >= 0) {
      base.inherit_fds.push_back(fd);
    }
  }
  base.check_preconditions = false;
  base.preload_symbols = false;
  return base;
}

LaunchResult launch(Session& session, const LaunchSpec& spec) {
  if (spec.argv.empty()) {
    throw Error(ExitCode::Usage, "no program to launch",
                "name it after `--`: rocplay launch -- ./app ARGS");
  }
  const std::string program = resolve_program(spec.argv.front());
  const Options probe = launch_options({});
  if (probe.inherit_fds.size() != 3) {
    throw Error(ExitCode::Internal,
                "cannot keep rocplay's stdin, stdout and stderr for the program",
                "run rocplay with its standard descriptors open");
  }
  const auto timeout = milliseconds(30'000);
  // Through lifecycle_command: `-file-exec-file` is refused to playbooks.
  auto must = [&](const std::string& cmd) {
    const auto ex = session.lifecycle_command(cmd, timeout);
    if (const auto msg = ex.error_message()) {
      throw Error(ExitCode::StepFailed, "the debugger refused `" + cmd + "`: " + *msg,
                  "this debugger may be too old to launch programs; try gdb 12 or later");
    }
  };
  // No shell between the debugger and the program: the helper gets its arguments as words.
  must("-gdb-set startup-with-shell off");
  must("-file-exec-file " + mi_quote(self_exe()));
  for (const auto& setting : spec.settings) {
    const auto ex = session.console("set " + setting, timeout);
    if (const auto msg = ex.error_message()) {
      throw Error(ExitCode::Usage, "the debugger refused `set " + setting + "`: " + *msg,
                  "check the setting's spelling with the debugger's `help set`");
    }
  }
  if (spec.catch_throw) {
    const auto ex = session.console("catch throw", timeout);
    if (const auto msg = ex.error_message()) {
      throw Error(ExitCode::StepFailed, "the debugger could not catch C++ exceptions: " + *msg,
                  "drop --catch throw, or use a debugger with C++ support");
    }
  }
  LaunchTrace trace;
  if (spec.trace_launches) {
    trace.most = std::max<std::size_t>(1, spec.max_traced_launches);
    for (const auto call : kLaunchCalls) {
      // Pending (-f): the program is exec'ed by rocplay's helper, and its runtime loads later.
      const auto ex = session.execute("-break-insert -f " + std::string(call), timeout);
      if (const auto* result = ex.result(); result != nullptr && !ex.error_message()) {
        if (auto number = result->results()["bkpt"]["number"].str_or(); !number.empty()) {
          trace.breakpoints.emplace_back(number);
        }
      }
    }
  }
  std::string args = std::string(kExecHelperWord);
  for (const int fd : probe.inherit_fds) {
    args += " " + std::to_string(fd);
  }
  args += spec.end == TargetEnd::Kill ? " k" : " d";
  for (const char* name : kRestoredEnv) {
    const char* v = std::getenv(name);
    args += std::string(" e:") + name + (v != nullptr ? "=" + hex_encode(v) : "");
  }
  for (const auto& [name, value] : spec.environment) {
    if (!valid_env_name(name)) {
      throw Error(ExitCode::Usage, "`" + name + "` is not an environment variable's name",
                  "a name is letters, digits and `_`, not starting with a digit");
    }
    args += " e:" + name + "=" + hex_encode(value);
  }
  args += " " + hex_encode(program) + " --";
  for (const auto& a : spec.argv) {
    args += " x" + hex_encode(a);
  }
  must("-exec-arguments " + args);
  const auto ex = session.lifecycle_command("-exec-run", timeout);
  if (const auto msg = ex.error_message()) {
    throw Error(ExitCode::StepFailed, "the debugger could not start " + program + ": " + *msg,
                "run it under the debugger by hand to see why");
  }
  const auto pid = session.started_pid();
  if (!pid) {
    throw Error(ExitCode::DebuggerCrashed,
                "the debugger said it started the program but named no process",
                "rerun with --record FILE and report the transcript");
  }
  // The kernel's comm: the file name, 15 bytes at most.
  session.adopt_target(*pid, spec.end, program.substr(program.rfind('/') + 1).substr(0, 15));
  session.note("launched " + program + " (pid " + std::to_string(*pid) + ")");
  // No --timeout: a year stands for "no limit" (a deadline of time_point::max() overflows in
  // the event loop's arithmetic).
  const auto deadline = Clock::now() + spec.timeout.value_or(std::chrono::hours(24 * 365));
  return run_until_fault(session, deadline, spec.stop_timeout, spec.max_passed_signals, true,
                         std::move(trace));
}

LaunchResult wait_for_fault(Session& session, std::chrono::milliseconds timeout,
                            std::size_t max_passed_signals) {
  resume(session);
  return run_until_fault(session, Clock::now() + timeout, milliseconds(30'000), max_passed_signals,
                         false);
}

bool program_lost(const std::vector<mi::Exchange>& exchanges) {
  for (auto it = exchanges.rbegin(); it != exchanges.rend(); ++it) {
    for (auto r = it->records.rbegin(); r != it->records.rend(); ++r) {
      if (r->kind() == mi::RecordKind::Exec && r->klass() == "stopped") {
        // cuda-gdb's bare stop once a CUDA error ended the program's main thread.
        return r->results()["reason"].str_or().empty() &&
               mi::console_text(it->records).find("No unwaited-for children left") !=
                   std::string::npos;
      }
    }
  }
  return false;
}

[[noreturn]] void exec_helper_main(int argc, char** argv) {
  // rocplay __launch-exec IN OUT ERR k|d e:NAME[=HEX]... PROGRAMHEX -- xHEX...
  auto die = [](const char* what, const char* detail) {
    std::fprintf(stderr, "rocplay: cannot start the program: %s%s%s\n", what,
                 detail != nullptr ? ": " : "", detail != nullptr ? detail : "");
    std::_Exit(127);
  };
  if (argc < 8) {
    die("the exec helper is rocplay's own (`rocplay launch` runs it)", nullptr);
  }
  int fds[3];
  for (int i = 0; i < 3; ++i) {
    fds[i] = std::atoi(argv[2 + i]);
  }
  for (int i = 0; i < 3; ++i) {
    if (fds[i] > 2 && ::dup2(fds[i], i) < 0) {
      die("could not restore its standard descriptors", std::strerror(errno));
    }
  }
  for (int i = 0; i < 3; ++i) {
    if (fds[i] > 2) {
      ::close(fds[i]);
    }
  }
  const bool kill_with_debugger = std::strcmp(argv[5], "k") == 0;
  int i = 6;
  std::string value;
  for (; i < argc && std::strncmp(argv[i], "e:", 2) == 0; ++i) {
    const std::string_view spec(argv[i] + 2);
    const auto eq = spec.find('=');
    const std::string name(spec.substr(0, eq));
    if (eq == std::string_view::npos) {
      ::unsetenv(name.c_str());
    } else if (hex_decode(spec.substr(eq + 1), value)) {
      ::setenv(name.c_str(), value.c_str(), 1);
    }
  }
  std::string program;
  if (i >= argc || !hex_decode(argv[i], program)) {
    die("the exec helper's arguments are malformed", nullptr);
  }
  ++i;
  if (i >= argc || std::strcmp(argv[i], "--") != 0) {
    die("the exec helper's arguments are malformed", nullptr);
  }
  ++i;
  std::vector<std::string> words;
  for (; i < argc; ++i) {
    if (argv[i][0] != 'x' || !hex_decode(argv[i] + 1, value)) {
      die("the exec helper's arguments are malformed", nullptr);
    }
    words.push_back(value);
  }
  if (words.empty()) {
    die("no program named", nullptr);
  }
  std::vector<char*> args;
  for (auto& w : words) {
    args.push_back(w.data());
  }
  args.push_back(nullptr);
  // Default dispositions and no blocked signals, as a shell would start it.
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  for (int sig = 1; sig < NSIG; ++sig) {
    if (sig != SIGKILL && sig != SIGSTOP) {
      ::signal(sig, SIG_DFL);
    }
  }
  if (kill_with_debugger) {
    // The program belongs to this run: if the debugger dies, so does it, rather than running on
    // untraced after rocplay has reported.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  }
  ::execv(program.c_str(), args.data());
  die(program.c_str(), std::strerror(errno));
  std::_Exit(127);
}

} // namespace rocplay::session
