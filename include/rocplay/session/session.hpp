// A live debugger session: one GDB-family debugger in MI mode, attached to one process.
//
// The contract the playbook runner relies on:
//  * every command carries a token and has a deadline; execute() never waits forever;
//  * records are grouped into exchanges by mi::ExchangeAssembler, the rule mi::TranscriptReader
//    applies to a recording of the session (mi/exchange.hpp): a command's exchange holds what the
//    debugger wrote up to and including its result; records that arrive after a result and before
//    the next command (the `*stopped` that follows `-target-attach`'s `^done`, late
//    `=library-loaded`) form an exchange of their own with an empty command. So a recording
//    replays into the same exchanges;
//  * once attach() was sent, the target is detached on every path: detach(), the destructor,
//    a timeout, the debugger dying, and SIGINT/SIGTERM/SIGHUP to rocplay (see
//    install_signal_guard);
//  * after detaching, /proc/PID/stat is read; a stopped target gets SIGCONT and a loud warning.
//
// A Session is used from one thread, and destroyed on the thread that created it: the debugger
// gets SIGTERM (and quits, detaching) when that thread exits (PR_SET_PDEATHSIG), so a crashed
// rocplay never leaves a debugger holding the target. Several sessions (one per rank, one per
// thread) may live in one process.
#pragma once

#include "rocplay/core/debugger.hpp"
#include "rocplay/core/error.hpp"
#include "rocplay/mi/transcript.hpp"

#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace rocplay::session {

struct DebuggerChoice {
  std::string
      requested; // --debugger: rocgdb|cuda-gdb|gdb|PATH; empty: $ROCPLAY_DEBUGGER, then search
  std::vector<std::string> tried; // filled by find_debugger: names and paths looked at
};

using Debugger = DebuggerIdentity; // rocplay/core/debugger.hpp

// Where find_debugger looks; the defaults read the real environment.
struct SearchEnv {
  std::optional<std::string> path_var;                  // $PATH; nullopt: getenv("PATH")
  std::optional<std::string> rocplay_debugger;          // $ROCPLAY_DEBUGGER; nullopt: getenv
  std::vector<std::string> extra_dirs{"/opt/rocm/bin"}; // searched for rocgdb after $PATH
  std::chrono::milliseconds version_timeout{10'000};
  // A debugger named by --debugger or $ROCPLAY_DEBUGGER is returned without running `--version`
  // (a whole GDB start-up, 0.4-1.5 s on the 2-core builder): kind Unknown and an empty version,
  // which the Session fills from `-gdb-version` before anything uses them, and a program that
  // does not run as a GDB fails there with DebuggerNotFound. A search (nothing named) defers it
  // only when one candidate is executable; with several it runs each one's `--version`, so one
  // that fails is passed over for the next.
  bool defer_banner = false;
};

// `--debugger rocgdb|cuda-gdb|gdb|PATH`, else $ROCPLAY_DEBUGGER (same forms), else the first found
// of rocgdb ($PATH, then /opt/rocm/bin), cuda-gdb, gdb. Runs `DEBUGGER --version` for the banner
// (not for a named debugger with SearchEnv::defer_banner).
// Throws Error(DebuggerNotFound) naming what was tried.
Debugger find_debugger(const std::string& requested);
Debugger find_debugger(const std::string& requested, const SearchEnv& env,
                       DebuggerChoice* choice = nullptr);

// The banner line of `DEBUGGER --version` output: the first non-empty line, skipping the
// `exec: ...` line that CUDA 13's cuda-gdb wrapper script prints first.
std::string banner_line(std::string_view version_output);
// `15.2` from `GNU gdb (rocm-rel-6.4) 15.2.50.20241010-git`; empty when there is none.
std::string version_number(std::string_view banner);

struct Options {
  std::chrono::milliseconds attach_timeout{90'000};
  std::chrono::milliseconds command_timeout{30'000};
  std::chrono::milliseconds detach_timeout{20'000};
  std::chrono::milliseconds startup_timeout{30'000}; // spawn + start-up commands
  // After a timeout or a signal: how long to wait for an attach in progress to finish, or for
  // the debugger to answer SIGINT (quitting a command, stopping a running target), before
  // killing it (the kernel then detaches the target).
  std::chrono::milliseconds interrupt_grace{5'000};
  // The whole look's bound (a node's share of a `--slurm-job` run): no command or attach waits
  // past it, so the node still sends what it has before the front end gives up on it. The detach
  // and quit after it keep their own timeouts. Unset: each command has its timeout only.
  std::optional<std::chrono::steady_clock::time_point> end_by;
  bool fast_attach = false; // skip host symbol loading (auto-solib-add off)
  // Read the executable's and the mapped shared libraries' symbols before attaching, while the
  // target still runs (from /proc/PID/maps); the attach then finds them read and the target
  // stops for less time. Ignored with fast_attach.
  bool preload_symbols = true;
  // With gdb and cuda-gdb, a library whose .symtab holds more entries than this is preloaded from
  // a copy with only its exported symbols and unwind tables (src/session/light_symbols.hpp): a
  // PC in a function it does not export then reads `??`. 0 reads every library whole.
  std::uint64_t light_symbols_above = 50'000;
  // Have the debugger write MI through its buffered logging stream, redirected to its own
  // stdout, instead of the unbuffered stdout that sends a notification one byte per write()
  // (GDB 13: about 40 writes for one `=thread-created`). Shortens an attach to many threads.
  bool buffered_output = true;
  // Print argument values in frames (-thread-info, the attach's stop, console backtraces).
  // Off: `print frame-arguments none`, names only; the values cost GDB a DWARF evaluation per
  // frame inside the stop. A playbook can still `set print frame-arguments scalars`.
  bool frame_argument_values = false;
  // Plain gdb only: `maint set target-non-stop off`, so the attach stops the threads all-stop
  // style instead of one by one through GDB 13's default non-stop target (shorter with many
  // threads). Not sent to rocgdb or cuda-gdb.
  bool all_stop_target = true;
  std::string record_path; // --record FILE; empty: no recording
  std::optional<int> rank; // written into the recording's metadata
  // The server's GPU workers as rocplay saw them, written into the recording's metadata so a
  // post-mortem's "nothing visible" finding names them as the live report did.
  std::vector<std::int64_t> worker_pids;
  // The samples the run asked for, written into the recording's metadata: a post-mortem of a
  // recording holding one sample then knows it judges one moment of a live look.
  std::optional<std::uint32_t> samples;
  bool allow_hook_held = false;    // attach even when HSA_TOOLS_LIB is set in the target (rocgdb)
  bool check_preconditions = true; // attach(): check_attach() first
  // Descriptors the debugger inherits as they are, and with it a program it starts: the
  // launcher hands rocplay's own stdin, stdout and stderr to the program through them.
  std::vector<int> inherit_fds;
};

using TargetTimes = rocplay::TargetTimes; // rocplay/core/debugger.hpp

// What the session does with its target on every way out (detach(), the destructor, a timeout,
// a signal): detach from an attached process; kill a program the launcher started.
enum class TargetEnd : std::uint8_t { Detach, Kill };

// How a wait for the running target ended (Session::wait_while_running).
enum class RunEnd : std::uint8_t { Stopped, Exited, Deadline, Signal };

// What attach() learnt about the target before attaching.
struct TargetInfo {
  std::int64_t pid = 0;
  std::string comm;
  std::string cmdline;
  char state_before = '?';
  std::map<std::string, std::string> env; // process::relevant_env(); copy into Snapshot::env
  bool env_readable = false;
};

// The attach preconditions, checked without spawning anything: the process exists and is not a
// zombie; ptrace is permitted (Yama ptrace_scope, CAP_SYS_PTRACE, uids, no other tracer, named
// from TracerPid); for rocgdb, HSA_TOOLS_LIB is not set in the target (the debug agent holds the
// debugger hook and rocgdb would see no dispatches) unless options.allow_hook_held. Throws
// Error(NoSuchProcess|PtraceDenied|HookHeld|Usage); warnings (unreadable environment, hook held
// under another debugger) are appended to `warnings`.
TargetInfo check_attach(std::int64_t pid, const Debugger& debugger, const Options& options,
                        std::vector<std::string>* warnings = nullptr);

// Checks an MI command or console text for what must never reach the debugger's input: empty
// text, newlines and other control bytes, over-long lines. Throws Error(Usage).
void validate_command_text(std::string_view text, std::string_view what = "command");
// `-interpreter-exec console "TEXT"` with TEXT quoted by MI c-string rules (after validation).
std::string console_command(std::string_view text);

// The session owns the target's lifecycle: attach, detach, and never kill, run or quit. What
// execute() and console() do with a command (the playbook loader can refuse these up front).
enum class CommandRole : std::uint8_t {
  Ordinary, // sent as is
  Detach,   // -target-detach / `detach`: becomes Session::detach() (the always-safe path)
  Refused,  // kill, run, start, attach, quit ...: Error(BadPlaybook) with `reason`
};
struct CommandCheck {
  CommandRole role = CommandRole::Ordinary;
  std::string reason;
};
CommandCheck classify_mi_command(std::string_view command);
CommandCheck classify_console_command(std::string_view text);

// The commands that belong to the session (attach, detach, the debugger's exit) or would end or
// replace the target: the one list behind classify_*_command above and the playbook loader's
// check (which also refuses GDB's unique prefixes of them, `qui`, `det`).
struct LifecycleCommand {
  std::string_view name;                   // console word (`kill`) or MI command without `-`
  std::array<std::string_view, 2> aliases; // exact console spellings besides name (`k`)
  CommandRole role = CommandRole::Refused; // Detach: becomes Session::detach()
  std::string_view reason;                 // why a playbook may not send it
  // The shortest prefix GDB resolves to this command (`tar` is target; `dis` is disable).
  std::size_t min_prefix = 2;
};
std::span<const LifecycleCommand> lifecycle_console_commands();
std::span<const LifecycleCommand> lifecycle_mi_commands();

// How the target came back from Session::run_for(). Times are session seconds (now()).
struct ResumeResult {
  double resumed_at = 0;     // `-exec-continue` answered `^running`: the target runs
  double interrupted_at = 0; // SIGINT sent to the debugger; 0 when the target stopped by itself
  double stopped_at = 0;     // the `*stopped` that ended the run
  std::string stop_reason;   // its `reason` (`signal-received`, `exited`, ...)
  std::string signal_name;   // its `signal-name`, when there is one
  bool exited = false;       // the target exited while it ran: there is nothing left to sample
};

// When the interval of a run_for() begins; nothing while still waiting (see run_for).
using IntervalStart = std::function<std::optional<std::chrono::steady_clock::time_point>()>;

class Session {
public:
  // Spawns the debugger (`-nx -q --interpreter=mi3`, falling back to mi2), reads its version and
  // -list-features, and probes the rocgdb MI commands. Throws Error.
  Session(const Debugger& debugger, const Options& options);
  ~Session(); // detaches if attached, then ends the debugger
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // Checks preconditions (process exists, ptrace allowed, HSA_TOOLS_LIB) and attaches; returns
  // once the target is stopped. Throws Error(NoSuchProcess|PtraceDenied|HookHeld|Timeout|...).
  void attach(std::int64_t pid);
  // Takes every stop by copy instead of attaching the debugger (rocplay/capture/capture.hpp):
  // rocplay holds the target's threads only while it copies their registers and stacks, lets them
  // go, and the debugger reads the copy as a core file while the target runs. Plain gdb on Linux
  // x86-64 only: false (the session attaches as before) for rocgdb and cuda-gdb, whose GPU state is
  // not in a copy, elsewhere, and once attach() was called. `while_stopped` runs inside each
  // copy's stop (the runner reads a CPython target's frames there).
  bool stop_by_copy(std::function<void()> while_stopped);
  // Stops by copy: the threads (LWPs) whose registers and stack bytes in the last copy were the
  // same as in the copy before (capture::stack_fingerprint). Their frames are the same too.
  const std::vector<std::int64_t>& unchanged_stacks() const;
  // Sends one MI command (starts with `-`; no token, no newline; validated) and waits for its
  // result record. Lifecycle commands follow classify_mi_command(). A `^error` result is returned,
  // not thrown. Throws Error(Timeout) when the deadline passes (the session then detaches and ends:
  // later calls throw the same error), Error(DebuggerCrashed) if the debugger dies,
  // Error(Interrupted-style code) after a signal.
  mi::Exchange execute(const std::string& command,
                       std::optional<std::chrono::milliseconds> timeout = std::nullopt);
  // Plain MI commands (no lifecycle command), in order, each with `timeout`; their exchanges in
  // the same order. While the debugger reads a copy (stops by copy: no live target waits on it),
  // up to 64 are written ahead of their answers, which saves a round trip each (1,000 stacks:
  // about 35 ms); otherwise one at a time. Throws like execute().
  std::vector<mi::Exchange>
  execute_all(const std::vector<std::string>& commands,
              std::optional<std::chrono::milliseconds> timeout = std::nullopt);
  // A console command through -interpreter-exec console, quoted by MI c-string rules.
  // Lifecycle commands follow classify_console_command().
  mi::Exchange console(const std::string& command,
                       std::optional<std::chrono::milliseconds> timeout = std::nullopt);
  // Idempotent. Never throws; problems become warnings().
  void detach();
  // Detaches, then ends the debugger (`-gdb-exit`, its exit waited for), so that its exit
  // overlaps what comes next rather than the end of the session; the recording stays open for
  // notes. Idempotent. Never throws; problems become warnings().
  void end();
  // Lets the attached, stopped target run for `interval` inside this session, then stops it
  // again: `-exec-continue`, a wait, SIGINT to the debugger, the `*stopped` (all-stop: every
  // thread). Returns early when the target stops or exits by itself. Throws like execute(), and
  // on every throw the target is detached and running: Timeout when the stop does not come
  // within `stop_timeout`, DebuggerCrashed, or the signal's code when rocplay is signalled during
  // the interval or the stop (docs/session.md, "Several samples").
  //
  // `interval_start`, when given, is asked about every 20 ms from the moment the target runs until
  // it returns the instant the interval began: a lockstep over several targets waits here with
  // this target running (never stopped), and every target is then stopped at the same instant.
  ResumeResult run_for(std::chrono::milliseconds interval, std::chrono::milliseconds stop_timeout,
                       const IntervalStart& interval_start = {});
  // Writes a note (`! TEXT`) into the recording and the current exchange.
  void note(std::string_view text);

  // The launcher's own (src/session/launch.cpp); playbook steps never reach these.
  // Sends a command execute() refuses (`-exec-run`, `kill`) and waits for its result.
  mi::Exchange lifecycle_command(const std::string& command, std::chrono::milliseconds timeout);
  // Takes `pid`, a process this debugger started or attached outside attach(), as the session's
  // target: from now on every way out ends it as `end` says. `comm`: its name, when /proc would
  // still show the exec helper's.
  void adopt_target(std::int64_t pid, TargetEnd end, const std::string& comm = {});
  void set_target_end(TargetEnd end);
  // Waits while the target runs, until it stops, exits, the deadline passes or rocplay is
  // signalled (the signal is left pending: acknowledge_signal() or a later call acts on it).
  // Throws Error(DebuggerCrashed) if the debugger dies.
  RunEnd wait_while_running(std::chrono::steady_clock::time_point deadline);
  // SIGINT to the debugger, which stops the running target; waits up to `timeout` for the
  // `*stopped`. False when it did not come (the session is then ended, target detached or
  // killed). Throws Error(DebuggerCrashed) if the debugger dies, and the interrupted error
  // (128 + the signal) when rocplay is signalled meanwhile: the session is then ended too.
  bool interrupt_target(std::chrono::milliseconds timeout);
  // Forgets a caught signal, so the session goes on (a launched program's first SIGINT is
  // reported, not fatal); the next signal is caught afresh.
  void acknowledge_signal();
  // The pid of the last `=thread-group-started`; the exit code of `=thread-group-exited`.
  std::optional<std::int64_t> started_pid() const;
  std::optional<int> exit_code() const;
  std::string exit_signal() const; // `SIGKILL` of `*stopped,reason="exited-signalled"`
  bool target_exited() const;

  bool has_mi_command(const std::string& name) const; // from the probes, e.g. "agent-info"
  const Debugger& debugger() const;
  const TargetTimes& times() const;
  const std::vector<std::string>& warnings() const;
  const std::vector<mi::Exchange>& exchanges() const; // everything so far, for snapshots
  std::optional<std::int64_t> pid() const;

  // Additions beyond the first contract.
  const TargetInfo& target() const;                 // valid after attach()
  const std::vector<std::string>& features() const; // -list-features
  int mi_version() const;                           // 3, or 2 after the fallback
  bool attached() const;                            // attach sent and not yet detached
  std::int64_t debugger_pid() const;                // for diagnostics and fault tests
  std::string stderr_text() const;                  // what the debugger wrote to stderr (bounded)
  // The debugger writes MI through its buffered logging stream (Options::buffered_output).
  bool output_buffered() const;
  // Seconds since the session started (the time base of the recording).
  double now() const;

private:
  mi::Exchange lifecycle_detach(const std::string& command);

  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Installs SIGINT/SIGTERM/SIGHUP handlers (once; later calls do nothing). While a Session is
// alive, a signal is noticed by its I/O loop: it detaches (interrupting the target or the command
// first), then the pending call throws Error(exit_code_for_signal(sig)). With no Session alive,
// the signal takes its default action at once. The debugger itself runs in its own process group,
// so a terminal's Ctrl-C reaches rocplay only, never the debugger or the target.
void install_signal_guard();
// 128 + signal: 130 for SIGINT, 143 for SIGTERM, 129 for SIGHUP (ExitCode::Interrupted is 130).
ExitCode exit_code_for_signal(int signo);
// The first signal the guard caught, if any.
std::optional<int> caught_signal();

} // namespace rocplay::session
