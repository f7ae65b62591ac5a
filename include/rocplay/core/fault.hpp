// The fault a debugger stopped a program on: a wave's memory violation or device assert (rocgdb),
// a CUDA exception (cuda-gdb), a host signal (gdb), a C++ exception under `--catch throw`.
//
// The kinds and their signals are core vocabulary (src/core/fault.cpp); the Fault itself is built
// by the snapshot layer from the `*stopped` record that reported it (src/snapshot/fault.cpp)
// and carried in Snapshot::fault; the gpu-fault / host-fault finding reads it
// (src/heuristics/fault.cpp). docs/launch.md says how each debugger reports each kind.
#pragma once

#include "rocplay/core/frame.hpp"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace rocplay {

enum class FaultKind : std::uint8_t {
  MemoryViolation, // SIGSEGV; rocgdb: a wave's memory or aperture violation; CUDA illegal address
  Assert,          // SIGABRT (abort, assert); rocgdb: a device assert's trap; CUDA warp assert
  IllegalInstruction, // SIGILL; CUDA illegal instruction
  Arithmetic,         // SIGFPE: integer divide by zero, an enabled float exception
  BusError,           // SIGBUS: misaligned or unbacked address
  Trap,               // SIGTRAP outside a breakpoint: a compiled-in trap
  Exception,          // a C++ exception thrown (`--catch throw`), another CUDA exception
  Signal,             // any other signal the debugger stopped on
};
// `memory-violation`, `assert`, `illegal-instruction`, `arithmetic`, `bus-error`, `trap`,
// `exception`, `signal`: stable ids for JSON.
std::string_view to_string(FaultKind kind);
std::optional<FaultKind> fault_kind_from_string(std::string_view id);

// The kind a stop signal stands for; nullopt for a signal that is not a fault (SIGINT, SIGCHLD,
// SIGUSR1, ...). Takes GDB's names (`SIGSEGV`) and cuda-gdb's (`CUDA_EXCEPTION_14`).
std::optional<FaultKind> fault_kind_of_signal(std::string_view signal_name,
                                              std::string_view meaning = {});

inline constexpr std::size_t kMaxFaultFrames = 64;

struct Fault {
  FaultKind kind = FaultKind::Signal;
  std::string signal;    // `SIGSEGV`, `CUDA_EXCEPTION_14`; empty for a catchpoint
  std::string meaning;   // `Segmentation fault`, `Warp Illegal Address`, `exception throw`
  std::string thread_id; // the debugger's thread that stopped (a wave on a GPU)
  bool on_gpu = false;   // that thread is a wave (rocgdb) or the CUDA focus (cuda-gdb)
  std::optional<std::uint32_t> lane; // rocgdb `lane-id`, cuda-gdb focus lane
  std::optional<std::uint64_t> pc;
  std::string function;
  std::string file;
  std::optional<std::uint32_t> line;
  // The faulting data address, where the debugger gives one ($_siginfo on a host fault).
  std::optional<std::uint64_t> address;
  // Who raised a host signal ($_siginfo, gdb): si_code above 0 is the kernel's, for an
  // instruction that faulted; 0 and below a process's kill(), tgkill() or sigqueue(), and then
  // sender_pid is that process (the program itself for abort() and raise()).
  std::optional<std::int32_t> signal_code;
  std::optional<std::int64_t> sender_pid;
  bool sent_by_process() const { return signal_code && *signal_code <= 0; }
  // cuda-gdb's focus at the stop: kernel id, block and thread (`(0,0,0)`).
  std::optional<std::uint64_t> kernel;
  std::string block;
  std::string thread;
  // What the debugger printed about it (`CUDA Exception: Warp Illegal Address`, rocgdb's
  // "precise memory violation reporting is not enabled"), a few lines at most.
  std::string detail;
  // The faulting wave's or CUDA thread's stack at the stop, innermost first, where a playbook
  // listed it (fault-triage's `-stack-list-frames`): a device assert stops in the runtime's
  // `__assert_fail`, and the frame that called it holds the source line. Empty for a host fault
  // (its thread's frames are in Snapshot::host_threads). At most kMaxFaultFrames.
  std::vector<Frame> frames;
  bool operator==(const Fault&) const = default;
};

} // namespace rocplay
