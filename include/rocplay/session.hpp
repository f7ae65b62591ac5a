// A live debugger session: one GDB-family debugger in MI mode, attached to one process.
//
// The contract the playbook runner relies on:
//  * every command carries a token and has a deadline; execute() never waits forever;
//  * records between commands are kept with the exchange of the command that caused them;
//  * once attach() succeeded, the target is detached on every path: detach(), the destructor,
//    a timeout, the debugger dying, and SIGINT/SIGTERM/SIGHUP to rocplay (see install_signal_guard);
//  * after detaching, /proc/PID/stat is read; a stopped target gets SIGCONT and a loud warning.
#pragma once

#include "rocplay/error.hpp"
#include "rocplay/mi/transcript.hpp"
#include "rocplay/snapshot.hpp"

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace rocplay::session {

struct DebuggerChoice {
  std::string requested;        // --debugger: rocgdb|cuda-gdb|gdb|PATH; empty: $ROCPLAY_DEBUGGER, then search
  std::vector<std::string> tried; // filled by find_debugger: names and paths looked at
};

struct Debugger {
  DebuggerKind kind = DebuggerKind::Unknown;
  std::string path;
  std::string version; // first line of --version
};

// Throws Error(DebuggerNotFound) naming what was tried.
Debugger find_debugger(const std::string& requested);

struct Options {
  std::chrono::milliseconds attach_timeout{90'000};
  std::chrono::milliseconds command_timeout{30'000};
  std::chrono::milliseconds detach_timeout{20'000};
  bool fast_attach = false;       // skip host symbol loading (auto-solib-add off)
  std::string record_path;        // --record FILE; empty: no recording
  std::optional<int> rank;        // written into the recording's metadata
};

// What happened to the target, for the report.
struct TargetTimes {
  std::optional<double> attach_seconds; // from -target-attach sent to its ^done
  std::optional<double> stop_seconds;   // from attach to detach's ^done
  std::optional<double> total_seconds;
  bool detached = false;
  bool left_stopped = false;            // it was stopped after detach and got SIGCONT
};

class Session {
public:
  // Spawns the debugger (`-nx -q --interpreter=mi3`, falling back to mi2), reads its version and
  // -list-features, and probes the rocgdb MI commands. Throws Error.
  Session(const Debugger& debugger, const Options& options);
  ~Session(); // detaches if attached, then ends the debugger
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // Checks preconditions (process exists, ptrace allowed, HSA_TOOLS_LIB) and attaches.
  // Throws Error(NoSuchProcess|PtraceDenied|HookHeld|Timeout|...).
  void attach(std::int64_t pid);
  // Sends one MI command (no token, no newline; validated) and waits for its result record.
  // Throws Error(Timeout) when the deadline passes and Error(DebuggerCrashed) if it dies.
  mi::Exchange execute(const std::string& command,
                       std::optional<std::chrono::milliseconds> timeout = std::nullopt);
  // A console command through -interpreter-exec console, quoted by MI c-string rules.
  mi::Exchange console(const std::string& command,
                       std::optional<std::chrono::milliseconds> timeout = std::nullopt);
  // Idempotent. Never throws; problems become warnings().
  void detach();

  bool has_mi_command(const std::string& name) const; // from the probes, e.g. "agent-info"
  const Debugger& debugger() const;
  const TargetTimes& times() const;
  const std::vector<std::string>& warnings() const;
  const std::vector<mi::Exchange>& exchanges() const; // everything so far, for snapshots
  std::optional<std::int64_t> pid() const;

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Installs SIGINT/SIGTERM/SIGHUP handlers that make every live Session detach and then re-raise.
void install_signal_guard();

} // namespace rocplay::session
