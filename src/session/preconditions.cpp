// Checks made before anything attaches, and the text checks every command passes.
#include "rocplay/session/process.hpp"
#include "rocplay/session/session.hpp"
#include "session/internal.hpp"

#include "rocplay/mi/value.hpp"

#include <sys/types.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <csignal>

namespace rocplay::session {

namespace {

std::string pid_str(std::int64_t pid) {
  return std::to_string(pid);
}

std::string describe_pid(std::int64_t pid) {
  if (const auto st = process::read_stat(pid)) {
    return pid_str(pid) + " (" + st->comm + ")";
  }
  return pid_str(pid);
}

constexpr const char* kCapHint =
    "run rocplay as root or with CAP_SYS_PTRACE (containers: docker run --cap-add=SYS_PTRACE; "
    "Kubernetes: securityContext.capabilities.add: [SYS_PTRACE])";

} // namespace

namespace detail {

PtraceDiagnosis diagnose_ptrace(std::int64_t pid) {
  PtraceDiagnosis d;
  const auto target = process::read_status(pid);
  const auto self = process::read_status(::getpid());
  if (target && target->tracer_pid && *target->tracer_pid > 0) {
    d.reason = "pid " + pid_str(pid) + " is already traced by pid " +
               describe_pid(*target->tracer_pid) + "; a process can have only one tracer";
    d.hint = "detach or stop that tracer (another debugger, strace, py-spy) and try again";
    return d;
  }
  // A tracer may hold one thread only (`strace -p TID`): the debugger's attach would stop every
  // other thread and then wait for that one until its deadline.
  if (const auto traced = process::traced_threads(pid); !traced.empty()) {
    d.reason = "thread " + pid_str(traced.front().tid) + " of pid " + pid_str(pid) +
               " is already traced by pid " + describe_pid(traced.front().tracer_pid);
    if (traced.size() > 1) {
      d.reason += " (and " + std::to_string(traced.size() - 1) + " more traced thread(s))";
    }
    d.reason += "; a thread can have only one tracer, and attaching would stop the other "
                "threads and wait on that one";
    d.hint = "detach or stop that tracer (strace, another debugger, a profiler) and try again";
    return d;
  }
  const bool cap =
      self && self->cap_eff && process::has_capability(*self->cap_eff, process::kCapSysPtrace);
  const auto scope = process::read_ptrace_scope();
  if (scope && *scope >= 3) {
    d.reason = "Yama ptrace_scope is 3: ptrace attach is disabled on this machine until reboot";
    d.hint = "reboot with kernel.yama.ptrace_scope below 3 (it cannot be lowered at run time)";
    return d;
  }
  if (!cap) {
    if (scope && *scope == 2) {
      d.reason = "Yama ptrace_scope is 2: only processes with CAP_SYS_PTRACE may attach, and "
                 "rocplay has not got it";
      d.hint = kCapHint;
      return d;
    }
    const auto euid = static_cast<std::int64_t>(::geteuid());
    if (target && target->uid_real &&
        (*target->uid_real != euid || target->uid_effective.value_or(euid) != euid ||
         target->uid_saved.value_or(euid) != euid)) {
      d.reason = "pid " + pid_str(pid) + " runs as uid " + std::to_string(*target->uid_real) +
                 ", rocplay as uid " + std::to_string(euid) + " without CAP_SYS_PTRACE";
      d.hint = "run rocplay as the target's user, or as root / with CAP_SYS_PTRACE";
      return d;
    }
    if (scope && *scope == 1) {
      d.reason = "Yama ptrace_scope is 1 (restricted): a debugger may attach only to its own "
                 "descendants unless it has CAP_SYS_PTRACE";
      // append, not operator+: GCC 12's -Warray-bounds misfires on the latter here
      d.hint = "sudo sysctl kernel.yama.ptrace_scope=0, or ";
      d.hint += kCapHint;
      return d;
    }
  }
  return d;
}

} // namespace detail

void validate_command_text(std::string_view text, std::string_view what) {
  constexpr std::size_t kMaxBytes = std::size_t{1} << 20;
  if (text.empty()) {
    throw Error(ExitCode::Usage, std::string(what) + " is empty");
  }
  if (text.size() > kMaxBytes) {
    throw Error(ExitCode::Usage, std::string(what) + " is " + std::to_string(text.size()) +
                                     " bytes long (at most " + std::to_string(kMaxBytes) + ")");
  }
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x20 || c == 0x7f) {
      const char* name = c == '\n'   ? "a newline"
                         : c == '\r' ? "a carriage return"
                                     : "a control byte";
      throw Error(ExitCode::Usage,
                  std::string(what) + " contains " + name + " at byte " + std::to_string(i) +
                      ": one command per line, nothing may be smuggled after it",
                  "remove the line break; each command is sent on its own");
    }
  }
}

std::string console_command(std::string_view text) {
  validate_command_text(text, "console command");
  return "-interpreter-exec console \"" + mi::escape(text) + "\"";
}

namespace {

std::string first_word(std::string_view text) {
  std::size_t i = 0;
  while (i < text.size() && (text[i] == ' ' || text[i] == '\t')) {
    ++i;
  }
  std::size_t j = i;
  while (j < text.size() && text[j] != ' ' && text[j] != '\t') {
    ++j;
  }
  std::string w(text.substr(i, j - i));
  for (char& c : w) {
    if (c >= 'A' && c <= 'Z') {
      c = static_cast<char>(c - 'A' + 'a');
    }
  }
  return w;
}

constexpr std::array<LifecycleCommand, 9> kLifecycleConsole = {{
    {"quit", {"q", "exit"}, CommandRole::Refused, "rocplay detaches and ends the debugger itself"},
    {"detach",
     {},
     CommandRole::Detach,
     "use a `detach` step; rocplay must know the target is released"},
    {"attach", {}, CommandRole::Refused, "use an `attach` step; rocplay attaches to --pid"},
    {"kill", {"k"}, CommandRole::Refused, "rocplay never kills the target"},
    {"run", {"r"}, CommandRole::Refused, "rocplay never restarts the target"},
    {"start", {}, CommandRole::Refused, "rocplay never restarts the target"},
    {"starti", {}, CommandRole::Refused, "rocplay never restarts the target"},
    {"target", {}, CommandRole::Refused, "rocplay stays attached to --pid", 3},
    {"disconnect", {}, CommandRole::Refused, "rocplay stays attached to --pid", 4},
}};

constexpr std::array<LifecycleCommand, 9> kLifecycleMi = {{
    {"gdb-exit", {}, CommandRole::Refused, "rocplay detaches and ends the debugger itself"},
    {"target-detach",
     {},
     CommandRole::Detach,
     "use a `detach` step; rocplay must know the target is released"},
    {"target-attach", {}, CommandRole::Refused, "use an `attach` step; rocplay attaches to --pid"},
    {"target-select", {}, CommandRole::Refused, "rocplay stays attached to --pid"},
    {"target-disconnect", {}, CommandRole::Refused, "rocplay stays attached to --pid"},
    {"exec-run", {}, CommandRole::Refused, "rocplay never restarts the target"},
    {"exec-jump", {}, CommandRole::Refused, "rocplay never moves the target's PC"},
    {"file-exec-and-symbols",
     {},
     CommandRole::Refused,
     "rocplay never replaces the program the debugger holds"},
    {"file-exec-file",
     {},
     CommandRole::Refused,
     "rocplay never replaces the program the debugger holds"},
}};

CommandCheck check_of(const LifecycleCommand& command) {
  return {command.role,
          command.role == CommandRole::Refused ? std::string(command.reason) : std::string()};
}

} // namespace

std::span<const LifecycleCommand> lifecycle_console_commands() {
  return kLifecycleConsole;
}

std::span<const LifecycleCommand> lifecycle_mi_commands() {
  return kLifecycleMi;
}

CommandCheck classify_console_command(std::string_view text) {
  const std::string w = first_word(text);
  for (const LifecycleCommand& c : kLifecycleConsole) {
    if (!w.empty() &&
        (w == c.name || std::find(c.aliases.begin(), c.aliases.end(), w) != c.aliases.end())) {
      return check_of(c);
    }
  }
  return {};
}

CommandCheck classify_mi_command(std::string_view command) {
  std::string_view name = command.substr(0, command.find(' '));
  if (name.starts_with('-')) {
    for (const LifecycleCommand& c : kLifecycleMi) {
      if (name.substr(1) == c.name) {
        return check_of(c);
      }
    }
  }
  if (name == "-interpreter-exec") {
    // `-interpreter-exec console "TEXT"`: judge TEXT as a console command.
    const std::size_t open = command.find('"');
    const std::size_t close = command.rfind('"');
    if (open == std::string_view::npos || close <= open) {
      return {CommandRole::Refused, "`-interpreter-exec` without a quoted command"};
    }
    const std::string text = mi::unescape(command.substr(open + 1, close - open - 1));
    for (const char c : text) {
      const auto u = static_cast<unsigned char>(c);
      if (u < 0x20 || u == 0x7f) {
        return {CommandRole::Refused, "a control byte inside `-interpreter-exec`'s command"};
      }
    }
    return classify_console_command(text);
  }
  return {};
}

TargetInfo check_attach(std::int64_t pid, const Debugger& debugger, const Options& options,
                        std::vector<std::string>* warnings) {
  TargetInfo info;
  info.pid = pid;
  if (pid <= 0 || pid > (std::int64_t{1} << 32)) {
    throw Error(ExitCode::Usage, "invalid pid " + pid_str(pid), "give a positive process id");
  }
  if (pid == ::getpid()) {
    throw Error(ExitCode::Usage, "pid " + pid_str(pid) + " is rocplay itself",
                "give the pid of the process to inspect (`rocplay ps` lists candidates)");
  }
  const auto st = process::read_stat(pid);
  if (!st) {
    throw Error(ExitCode::NoSuchProcess, "no process with pid " + pid_str(pid),
                "it may have exited; `rocplay ps` lists the processes holding a GPU");
  }
  if (st->state == 'Z' || st->state == 'X') {
    throw Error(ExitCode::NoSuchProcess,
                "pid " + pid_str(pid) + " (" + st->comm + ") has exited (zombie, parent " +
                    pid_str(st->ppid) + " has not reaped it)",
                "nothing left to inspect; look for its restarted replacement with `rocplay ps`");
  }
  info.comm = st->comm;
  info.state_before = st->state;
  info.cmdline = process::read_cmdline(pid);

  if (process::is_kernel_thread(*st)) {
    throw Error(ExitCode::PtraceDenied,
                "pid " + pid_str(pid) + " (" + st->comm +
                    ") is a kernel thread: it runs no user code, and the kernel never lets "
                    "ptrace attach to one",
                "give the pid of a user process (`rocplay ps` lists the candidates)");
  }
  const auto diag = detail::diagnose_ptrace(pid);
  if (!diag.reason.empty()) {
    throw Error(ExitCode::PtraceDenied, "cannot attach to pid " + pid_str(pid) + ": " + diag.reason,
                diag.hint);
  }
  if (process::ptrace_read_allowed(pid) == false) {
    // Not ownership (checked above): the kernel's access check itself says no, before anything
    // is stopped. Reading /proc/PID/ns/pid takes the same check in its weaker read mode.
    const auto self = process::read_status(::getpid());
    const bool cap =
        self && self->cap_eff && process::has_capability(*self->cap_eff, process::kCapSysPtrace);
    std::string why = "the kernel's ptrace access check refuses pid " + describe_pid(pid) +
                      " (probe: readlink /proc/" + pid_str(pid) +
                      "/ns/pid fails with permission denied, although rocplay runs as uid " +
                      std::to_string(::geteuid()) + (cap ? " with CAP_SYS_PTRACE" : "") + ")";
    std::string hint;
    if (pid == 1) {
      why += ". pid 1 is the init process of this PID namespace (a container's or VM's entry "
             "point), and a security policy protects it: a Linux security module or the "
             "sandbox's kernel, not file ownership or capabilities";
      hint = "attach to the hung process itself, not to init (`rocplay ps` lists the candidates)";
    } else {
      why += cap ? ": a security policy (a Linux security module, or the process made itself "
                   "non-dumpable in another user namespace) protects it"
                 : ": the process is not dumpable (setuid, or prctl PR_SET_DUMPABLE 0)";
      hint = cap ? "check the security module's log (dmesg, audit.log) for the denial" : kCapHint;
    }
    throw Error(ExitCode::PtraceDenied, "cannot attach to pid " + pid_str(pid) + ": " + why, hint);
  }

  if (auto env = process::read_environ(pid)) {
    info.env_readable = true;
    info.env = process::relevant_env(*env);
    const auto hook = info.env.find("HSA_TOOLS_LIB");
    if (hook != info.env.end() && !hook->second.empty()) {
      const std::string what = "HSA_TOOLS_LIB=" + hook->second + " is set in pid " + pid_str(pid) +
                               ": an HSA tool (usually the ROCm debug agent) holds the "
                               "debugger hook, so rocgdb sees no queues or dispatches";
      if (debugger.kind == DebuggerKind::RocGdb && !options.allow_hook_held) {
        throw Error(ExitCode::HookHeld, what,
                    "restart the process without HSA_TOOLS_LIB (drop rocr-debug-agent), or "
                    "pass --allow-hook-held to attach anyway and see host threads only");
      }
      if (warnings != nullptr && debugger.kind == DebuggerKind::RocGdb) {
        warnings->push_back(what + " (attaching anyway: --allow-hook-held)");
      }
    }
  } else if (warnings != nullptr) {
    warnings->push_back("could not read /proc/" + pid_str(pid) +
                        "/environ: HSA_TOOLS_LIB and the rank variables were not checked");
  }
  return info;
}

} // namespace rocplay::session
