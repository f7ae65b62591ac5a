// The live session's state (session.cpp holds the public Session and its commands; session_io.cpp
// the pipes and the event loop; session_startup.cpp spawning and start-up; session_detach.cpp
// the detach on every path). Internal to src/session.
#pragma once

// Boost.Process v2 on std::filesystem (no Boost.Filesystem library to link). Boost 1.81 forgets
// a few includes in that mode; they come first.
#define BOOST_PROCESS_USE_STD_FS 1
#include <boost/optional.hpp>
#include <boost/type_traits/decay.hpp>
#include <boost/type_traits/is_convertible.hpp>

#include "rocplay/capture/capture.hpp"
#include "rocplay/core/clock.hpp"
#include "rocplay/core/kernel_waits.hpp"
#include "rocplay/session/process.hpp"
#include "rocplay/session/session.hpp"
#include "session/internal.hpp"
#include "session/light_sysroot.hpp"
#include "session/recorder.hpp"
#include "session/signal_guard.hpp"
#include "session/stop_meter.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/readable_pipe.hpp>
#include <boost/asio/writable_pipe.hpp>
#include <boost/asio/write.hpp>
#include <boost/process/v2/process.hpp>
#include <boost/process/v2/stdio.hpp>

#include <nlohmann/json.hpp>

#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <limits>
#include <set>
#include <thread>

#include <array>
#include <chrono>
#include <deque>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace rocplay::session {

namespace asio = boost::asio;
namespace bp2 = boost::process::v2;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

namespace detail {

// Writes to a pipe whose reader died raise SIGPIPE; keep it away from the process while this
// thread writes, and swallow it if it came: the write then fails with EPIPE, which we handle.
class SigpipeBlock {
public:
  SigpipeBlock() {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGPIPE);
    ::pthread_sigmask(SIG_BLOCK, &set, &old_);
  }
  ~SigpipeBlock() {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGPIPE);
    timespec zero{0, 0};
    while (::sigtimedwait(&set, nullptr, &zero) > 0) {
    }
    ::pthread_sigmask(SIG_SETMASK, &old_, nullptr);
  }
  SigpipeBlock(const SigpipeBlock&) = delete;
  SigpipeBlock& operator=(const SigpipeBlock&) = delete;

private:
  sigset_t old_{};
};

inline std::string seconds_text(milliseconds ms) {
  char buf[32];
  if (ms.count() < 1000) {
    std::snprintf(buf, sizeof buf, "%lld ms", static_cast<long long>(ms.count()));
  } else {
    std::snprintf(buf, sizeof buf, "%.3g s", static_cast<double>(ms.count()) / 1000.0);
  }
  return buf;
}

// Notes must stay one printable line in the recording and compare equal after a replay.
inline std::string flatten(std::string_view text) {
  std::string out(text.substr(0, 4096));
  for (char& c : out) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) {
      c = ' ';
    }
  }
  return out;
}

inline std::string signal_name(int sig) {
  switch (sig) {
  case SIGINT:
    return "SIGINT";
  case SIGTERM:
    return "SIGTERM";
  case SIGHUP:
    return "SIGHUP";
  case SIGKILL:
    return "SIGKILL";
  case SIGSEGV:
    return "SIGSEGV";
  case SIGABRT:
    return "SIGABRT";
  default:
    return "signal " + std::to_string(sig);
  }
}

} // namespace detail

using detail::flatten;
using detail::seconds_text;
using detail::signal_name;
using detail::SigpipeBlock;

struct Session::Impl {
  enum class Wait { Done, Deadline, Dead, Signal };

  Debugger debugger;
  Options options;
  Clock::time_point t0 = Clock::now();

  asio::io_context ioc;
  std::unique_ptr<asio::writable_pipe> in;
  std::unique_ptr<asio::readable_pipe> out;
  std::unique_ptr<asio::readable_pipe> err;
  std::unique_ptr<asio::posix::stream_descriptor> sig;
  std::unique_ptr<bp2::process> proc;
  std::int64_t gdb_pid = -1;
  int mi = 3;

  // Reading.
  std::unique_ptr<mi::Parser> parser;
  std::vector<char> out_buf = std::vector<char>(1 << 16);
  std::vector<char> err_buf = std::vector<char>(1 << 14);
  std::string err_carry;
  std::string stderr_all;
  bool out_open = false;
  bool err_open = false;
  bool signal_seen = false;
  bool reaped = false;
  int generation = 0; // bumped per spawn: handlers of an earlier debugger's pipes are ignored
  std::optional<int> wait_status;

  // Exchanges, grouped by the rule mi::TranscriptReader applies to a recording (mi/exchange.hpp).
  mi::ExchangeAssembler assembler;
  const std::vector<mi::Exchange>& exchanges = assembler.exchanges();
  std::optional<std::size_t> closed_by_result; // index of the last exchange a result closed
  std::uint64_t next_token = 1;
  // The fault sweep's hook (ROCPLAY_FAULT_INJECT=K:ACTION, docs/session.md): right after the
  // result of the K-th command (0-based, start-up commands included) arrives, SIGKILL the
  // debugger or send rocplay itself SIGINT or SIGTERM. Tests use it to hit every exchange.
  struct FaultPoint {
    std::uint64_t after = 0;
    int action = 0; // SIGKILL/SIGSTOP: to the debugger; SIGINT/SIGTERM: to rocplay
    bool fired = false;
  };
  std::optional<FaultPoint> fault;
  std::uint64_t results_seen = 0;
  std::size_t pending = 0; // index of the command being waited for (valid while waiting)
  bool waiting = false;
  // command_all: commands written ahead, whose exchanges begin as the answers before them come.
  std::deque<std::pair<std::uint64_t, std::string>> queued;
  std::vector<std::size_t> batch_exchanges; // their exchanges' indices, as they begin
  // Options::end_by has come: a deadline hit now is the look's bound, not a command's timeout.
  // (The time left to a deadline is rounded up to whole milliseconds, so a wait that ends at a
  // deadline taken from end_by ends at or after it.)
  bool past_end() const { return options.end_by && Clock::now() >= *options.end_by; }

  // Target state.
  bool target_running = false;
  std::uint64_t stops_seen = 0;
  bool attach_sent = false;
  std::uint64_t attach_stops_before = 0; // stops_seen when -target-attach was sent
  bool gdb_attached = false;             // attach succeeded and no detach/exit since
  bool target_gone = false;              // the debugger reported the target exited
  TargetEnd target_end = TargetEnd::Detach;
  std::optional<std::int64_t> started_pid; // =thread-group-started
  std::optional<int> exit_code;            // =thread-group-exited / *stopped exited
  std::string exit_signal;                 // *stopped,reason="exited-signalled"
  double attach_sent_at = 0;
  // When the debugger resumed every thread during the attach (`*running,thread-id="all"` before
  // the attach's stop); 0 when it has not.
  double attach_run_began = 0;
  std::optional<double> attach_run_cpu; // the process's CPU seconds then
  // When the debugger last resumed every thread after the attach; 0 while it is stopped.
  double run_began = 0;
  std::optional<std::int64_t> pid;
  TargetInfo target;
  TargetTimes times;
  // From -target-attach to the detach: how long the target really is stopped (cuda-gdb stops it
  // inside its attach and detach without saying so); none for a target stopped before.
  std::unique_ptr<detail::StopMeter> stop_meter;
  std::optional<Error> closed; // the session can run no more commands, and why
  // While the attach is in progress: looks every ~200 ms for a reason it can never finish (another
  // tracer on a thread, a thread in an uninterruptible wait); a stall ends the wait at once and is
  // kept in `stall`.
  struct Stall {
    std::string reason; // why the attach cannot finish
    std::string hint;   // what to do about it
    ExitCode code = ExitCode::PtraceDenied;
  };
  std::function<std::optional<Stall>()> stall_check;
  std::optional<Stall> stall;

  // Reporting.
  std::vector<std::string> warnings;
  std::set<std::string> warning_set;
  std::set<std::string> known_diagnostics; // dbgapi diagnostics already explained
  std::optional<std::size_t> noise_line;   // index in warnings of the noise summary
  detail::NoiseFilter noise;
  std::vector<std::string> features;
  std::set<std::string> mi_commands;
  bool output_buffered = false; // buffer_output() succeeded
  // The preload's symbol-light copies (session/light_symbols.hpp), held until the debugger that
  // read them has quit.
  std::vector<std::shared_ptr<const std::string>> light_files;
  bool light_failure_noted = false;
  // cuda-gdb's sysroot, through which its own library load reads the light copies.
  std::optional<LightSysroot> light_sysroot;
  // The mapped files the preload read (their /proc/PID/maps paths, the executable's too), and
  // whether the attach then ran with `auto-solib-add off` (load_unpreloaded_libraries).
  std::set<std::string> preloaded_paths;
  bool solib_add_off = false;

  detail::Recorder recorder;
  bool registered = false;

  // Stops by copy (Session::stop_by_copy): the debugger reads core files, never the process.
  bool copy_stop = false;
  std::function<void()> copy_while_stopped;
  std::string copy_dir;    // private temp directory of the core files
  std::string core_loaded; // the core file the debugger has open
  std::uint32_t copies = 0;
  // How long the last copy took from being asked for to its hold (its /proc reads while the
  // target runs): a later sample asks that much early, so the holds are the interval apart.
  double copy_prep_seconds = 0;
  // Each thread's stack fingerprint in the last copy (capture::stack_fingerprint), and the threads
  // whose fingerprint the copy before had too: their frames cannot have changed.
  std::map<std::int64_t, std::uint64_t> fingerprints;
  std::vector<std::int64_t> unchanged_stacks;

  Impl(const Debugger& d, const Options& o) : debugger(d), options(o) {}

  void flush_recording() { recorder.flush(); }

  double now() const;

  void warn(std::string text);

  void update_noise_summary();

  // ---- recording ----------------------------------------------------------------------------

  void record(char dir, double at, std::uint64_t token, std::string_view text);

  std::string meta_json() const;
  std::string start_iso = iso_now();

  void open_recording();

  void close_recording();

  // ---- exchanges --------------------------------------------------------------------------------

  void on_sent(std::uint64_t token, const std::string& command, double at);

  void on_note(std::string_view text);
  // What /proc says the target's threads wait in (rocplay/core/kernel_waits.hpp), as notes of
  // the sample about to be taken: read while the target runs, so it adds nothing to the stop.
  void note_kernel_waits(std::int64_t target_pid);
  void note_kernel_waits(const KernelWaits& waits);

  void classify_stream_text(const std::string& text, bool console);

  void on_line(const mi::RecordView& rec);

  // ---- I/O ------------------------------------------------------------------------------------

  void start_read_out();

  void on_stderr_line(std::string_view line);

  void start_read_err();

  void start_signal_watch();

  void watch_signal_pipe();

  bool signalled() const { return signal_seen || detail::pending_signal() != 0; }

  Wait pump(const std::function<bool()>& done, Clock::time_point deadline, bool watch_signal);

  // Handles what has already arrived, so it lands in the exchange it belongs to.
  void drain();

  bool gdb_alive();

  // Waits up to `grace` for the debugger to exit; true when it has (and was reaped).
  bool reap(milliseconds grace);

  // Once reaped, the pid may be reused; Boost's destructor would waitpid() and SIGKILL it
  // (possibly another session's debugger). Take the handle away from it.
  void forget_child();

  std::string exit_description() const;

  void kill_debugger(const std::string& why);

  // ---- spawning and start-up -------------------------------------------------------------------

  void spawn(int mi_version);

  void read_fault_point();

  void startup();

  // GDB writes MI to an unbuffered stdout, and a notification or console line goes out one byte
  // per write(): about 40 writes for one `=thread-created`, 83,000 for an attach to, a
  // -thread-info of and a detach from 1,000 threads, each one waking rocplay's reader. GDB's
  // logging stream is a buffered FILE flushed at the end of every record; redirected to GDB's own
  // stdout (the same pipe, reopened through /proc) it turns each record into one write, inside the
  // stop and out. Best effort: a GDB that cannot do it keeps writing to stdout as before. The
  // result of the command that turns it on already comes through the new stream.
  void buffer_output(milliseconds timeout);

  // Reads the symbols of what the target has mapped while it still runs. GDB shares the symbol
  // tables of one file between the objfiles that load it, so the attach that follows finds
  // them read: the work moves out of the stop. Best effort: a file GDB cannot read is skipped.
  // Returns how many files were read.
  std::size_t preload_symbols(std::int64_t target_pid, Clock::time_point deadline);
  // The light copy of `library` when its .symtab is over the bound (held in light_files, named
  // in `light_names`); nullopt when it is read whole.
  std::optional<std::string> light_copy_for(const std::string& library,
                                            std::vector<std::string>& light_names);
  void note_light_libraries(const std::vector<std::string>& light_names);
  // For cuda-gdb, which takes no preload: `set sysroot` to a LightSysroot of the target's huge
  // libraries, so that the attach reads their light copies.
  void use_light_sysroot(std::int64_t target_pid, milliseconds timeout);
  // After an attach with `auto-solib-add off`, and after each later stop: `sharedlibrary` for
  // each shared library the target maps now that the preload did not read (mapped since, or a
  // path it skipped), so none is left without symbols. Returns how many were asked for.
  std::size_t load_unpreloaded_libraries(std::int64_t target_pid, milliseconds timeout);

  // A start-up command: an ^error is a warning, not a failure.
  mi::Exchange start_command(const std::string& cmd, milliseconds timeout);

  // ---- commands ---------------------------------------------------------------------------------

  void ensure_open();

  // Writes `line` to the debugger's stdin; false when the deadline passed or the pipe broke.
  Wait write_line(const std::string& line, Clock::time_point deadline, bool watch_signal);

  // Sends one command and waits for its result. `cleanup` commands (detach, exit) do not watch
  // the signal pipe and never recurse into shutdown().
  std::pair<Wait, std::size_t> send_and_wait(const std::string& cmd, milliseconds timeout,
                                             bool cleanup);

  mi::Exchange command(const std::string& cmd, milliseconds timeout);
  // The commands in order, each with `timeout`. While the debugger reads a copy (a core file:
  // no live target waits), several are written ahead of their answers, saving a round trip
  // each; otherwise one at a time, as command() sends them. Fails as command() does.
  std::vector<mi::Exchange> command_all(const std::vector<std::string>& cmds, milliseconds timeout);
  // Ends the session on a command `cmd` left unanswered (w: not Done), with the error that says
  // why, and what became of the target.
  [[noreturn]] void no_answer(Wait w, const std::string& cmd, milliseconds timeout,
                              std::string_view target_after);

  void inject_fault();

  Error stall_error() const;

  [[noreturn]] void debugger_died(const std::string& when);

  [[noreturn]] void interrupted();

  // Ends the session for `error`: detaches (interrupting first when `interrupt`), notes why, and
  // throws the error. Later calls rethrow it.
  [[noreturn]] void fail(Error error, bool interrupt);

  // ---- detach ---------------------------------------------------------------------------------

  bool pending_answered() const;
  bool in_attach() const { return attach_sent && stops_seen == attach_stops_before; }
  // The debugger was killed while its attach was in progress (check_target_state).
  bool killed_in_attach = false;

  // Brings the debugger to a state where it reads -target-detach: the pending command answered
  // and the target stopped. Kills the debugger when that does not happen in time.
  void settle(bool interrupt);

  // Detach on every path. Never throws. Afterwards the debugger may still be alive (normal detach)
  // or dead (killed because it did not answer).
  void shutdown(bool interrupt) noexcept;

  // After `kill`, or when the debugger died: the program must be gone. A program still there
  // (the debugger was killed, and the kernel let go of it) gets SIGKILL.
  void end_program();

  void check_target_state();
  void restore_stopped(process::Stat st_after_detach);

  // ---- stops by copy (session_copy.cpp) --------------------------------------------------------

  // Holds and copies `pid` (capture::take), lets it go, writes the copy as a core file and has the
  // debugger read it. Returns when the hold began, on the session's clock. Throws Error; the
  // target is never left held.
  double take_copy(std::int64_t target_pid, milliseconds timeout);
  // take_copy in two halves, so that the debugger can read symbols while the copy is taken: the
  // capture runs on a thread of its own from start_copy() (which sets nothing but the copy's
  // directory); finish_copy() waits for it, accounts for the stop and loads the copy. The
  // capture's timeout counts from start_copy().
  struct TakenCopy {
    std::optional<KernelWaits> waits; // read first, when asked
    capture::Capture capture;
    // On the copy's thread: when the capture was asked for (after the walk; what its own reads
    // take before the hold is what a later sample asks that much early) and when it let go.
    double asked_at = 0;
    double released_at = 0;
  };
  struct PendingCopy {
    std::future<TakenCopy> capture;
    double asked_at = 0; // when start_copy() was called
  };
  std::optional<PendingCopy> copy_in_flight; // start_copy() to finish_copy()
  capture::Capture last_capture;             // account_copy() to finish_copy(), which writes it
  // Starts copy_in_flight; `walk_kernel_waits`: the /proc walk of the threads' waits first, on
  // the same thread (a held thread's wait reads as the ptrace stop).
  void start_copy(std::int64_t target_pid, milliseconds timeout, bool walk_kernel_waits);
  // Waits for copy_in_flight, notes its kernel waits, accounts for its stop and loads it.
  double finish_copy(std::int64_t target_pid);
  // The first half of finish_copy: the capture's outcome in the target's account and notes.
  // Throws what the capture threw (the target never left held).
  double account_copy(std::int64_t target_pid);
  // Every way out of a session waits for a copy in flight first: the target's account stays
  // exact, and nothing looks at a target its copy still holds.
  void settle_copy() noexcept;
  ResumeResult run_by_copy(milliseconds interval, const IntervalStart& interval_start);
  // Has the debugger let go of the copy it reads (`core-file`), and removes the file. GDB takes
  // 15-20 ms to let go of 1,000 threads: run_by_copy does it while the target runs.
  void close_core();
  void remove_copies() noexcept;

  void quit() noexcept;
};

} // namespace rocplay::session
