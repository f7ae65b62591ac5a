// Which debugger rocplay talks to: its kind, how a version banner names it, the identity a
// session found, and what happened to the target under it. Implemented in src/core/ (library
// rocplay_core): the session finds the debugger, the snapshot builder reads the banner of a
// recording, playbooks name the kinds they need, reports print them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace rocplay {

enum class DebuggerKind : std::uint8_t { Unknown, Gdb, RocGdb, CudaGdb };
// `gdb`, `rocgdb`, `cuda-gdb`, `unknown`: the names playbooks, recordings and reports use.
std::string_view to_string(DebuggerKind kind);
// The inverse of to_string for the three known kinds; Unknown otherwise.
DebuggerKind debugger_kind_from_string(std::string_view name);

// From a `--version` banner line (`GNU gdb (rocm-rel-6.4) 15.2`, `NVIDIA (R) cuda-gdb 13.0`,
// `NVIDIA (R) CUDA Debugger`), else from the executable's name (`/opt/rocm/bin/rocgdb`); Unknown
// when neither tells. The one place a banner becomes a kind: the session and the snapshot
// builder (replaying a recording's banner) both ask it.
DebuggerKind debugger_kind_from_banner(std::string_view banner, std::string_view path = {});

// The start of the session's note that it preloaded some libraries by their exported symbols
// only (session/light_symbols.hpp); a snapshot shows that note, since frames there may read ??.
inline constexpr std::string_view kLightSymbolsNote = "read only the exported symbols of ";

// The start of the session's note after it listed the launching thread's stack at a traced kernel
// launch (session::LaunchSpec::trace_launches): those frames are where a launch came from, not
// where the program is when it faults or ends, so a snapshot forgets the host threads it knew.
inline constexpr std::string_view kLaunchTracedNote = "traced kernel launch ";

// The name of the directories that serve cuda-gdb as its sysroot, in which huge libraries are
// symbol-light copies (session/light_sysroot.hpp): `$TMPDIR/rocplay-sysroot-PID-XXXXXX`. The
// debugger names a library it read there by its path inside that directory.
inline constexpr std::string_view kLightSysrootPrefix = "rocplay-sysroot";

// `path` without a light sysroot's directory in front (`/tmp/rocplay-sysroot-12-Ab3dE9/usr/lib/
// libtorch_cuda.so` is `/usr/lib/libtorch_cuda.so`): the library's path on the target's system.
// Any other path is returned as it is.
std::string_view without_light_sysroot(std::string_view path);

// The debugger a session runs.
struct DebuggerIdentity {
  DebuggerKind kind = DebuggerKind::Unknown;
  std::string path;
  std::string version; // first line of --version
};

// What happened to the target, for the report.
struct TargetTimes {
  std::optional<double> attach_seconds; // from -target-attach sent to the target reported stopped
  // From -target-attach sent to detach's ^done (or to the debugger's death): the target is
  // stopped from the ptrace attach, which the debugger does as soon as it reads the command.
  std::optional<double> stop_seconds;
  std::optional<double> total_seconds; // session start to detach (or to now, before detach)
  bool detached = false;
  bool left_stopped = false; // it was stopped after detach and got SIGCONT
  // The debugger was killed before its attach completed, and rocplay sent SIGCONT at once: each
  // thread it had stopped still carried its attach's SIGSTOP, which would stop the whole process
  // a moment after the kernel let it go; SIGCONT cancels that (left_stopped when it was seen).
  bool stop_cancelled = false;
  // -target-attach reached the debugger: from then on the target may have been stopped. With
  // attach_seconds unset, the attach did not complete (refused, stalled, timed out, interrupted).
  bool attach_sent = false;
  // /proc/PID/stat's state once the session let go of the target (after any SIGCONT): 'R', 'S',
  // 'T' ...; '?' when not read; 'X' when the process was gone.
  char state_after = '?';
  // Windows (session seconds, from, to) in which the debugger let the target run during its
  // attach: cuda-gdb resumes every thread (`*running,thread-id="all"`) while it loads the CUDA
  // state and stops them again. The target was not stopped then; stop_seconds leaves them out.
  std::vector<std::pair<double, double>> attach_run_windows;
  // Windows after the attach in which the debugger had every thread running, to a `*stopped` or
  // to the detach: the intervals between samples, and a resume whose result never came (cuda-gdb
  // after a failed GPU attach marks every thread running and then answers nothing until
  // interrupted). stop_seconds leaves them out too.
  std::vector<std::pair<double, double>> run_windows;
  // Every stop was rocplay's own copy (Session::stop_by_copy): the debugger read core files of
  // the copies and never attached; stop_seconds is the copies' holds added up.
  bool copied = false;
  // The launcher started the program (Session::adopt_target), and ended it with `kill`.
  bool launched = false;
  bool killed = false;
};

} // namespace rocplay
