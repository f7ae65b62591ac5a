// rocplay's own stop of a host process: every thread held with ptrace for as long as it takes to
// copy its registers and the live part of its stack, then let go, and the copy written as an ELF
// core file that the debugger reads afterwards (`-target-select core`). The target is stopped for
// the copy only, not for the debugger's attach and unwinding (docs/benchmarks.md, "The floor a
// gdb attach sets"): that is what lets a plain-gdb run stop a 1,000-thread process for a tenth of
// the time raw gdb does.
//
// PTRACE_SEIZE + PTRACE_INTERRUPT, never PTRACE_ATTACH: no SIGSTOP is queued, so a thread let go
// (or a tracer that dies, which the kernel detaches for it) simply runs on. Linux x86-64 only;
// elsewhere supported() is false and the session attaches the debugger as before.
// Layer: src/capture/ (library rocplay_capture): /proc and ptrace, no debugger, no GPU.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace rocplay::capture {

// Whether this build can take a capture at all (Linux x86-64).
bool supported();

// A copy of target memory: `bytes` read from `address`.
struct Region {
  std::uint64_t address = 0;
  std::string bytes;
};

// One thread as it was held.
struct Thread {
  std::int64_t tid = 0;
  std::string name;          // /proc/PID/task/TID/comm, without the newline
  std::string prstatus_regs; // struct user_regs_struct, as PTRACE_GETREGSET NT_PRSTATUS gave it
  std::string fp_regs;       // struct user_fpregs_struct (NT_PRFPREG); empty when unreadable
  int pending_signal = 0; // a signal-delivery-stop met instead of the interrupt; re-sent on detach
  // false: in an uninterruptible wait (state D) past a grace of 100 ms, so not held; its registers
  // are the PC, stack pointer and system-call arguments of /proc/PID/task/TID/syscall, and
  // fp_regs is empty.
  bool held = true;
};

// A file-backed mapping, for the core's NT_FILE note: the debugger reads the code of every mapped
// file from the file itself, so none of it is copied.
struct FileMapping {
  std::uint64_t start = 0;
  std::uint64_t end = 0;
  std::uint64_t offset = 0; // bytes into the file
  std::string path;
};

struct Options {
  // The most of one thread's stack copied, from its stack pointer (less the 128-byte red zone)
  // up to the end of the mapping holding it.
  std::uint64_t stack_bytes_per_thread = 1 << 20;
  // Called once while every thread is held (after the copies, before the detach): the runner reads
  // a CPython target's frames here. Whatever it throws is caught; the threads are let go anyway.
  // It runs on the capturing thread (the tracer), not the caller's: PTRACE_PEEKDATA works there.
  std::function<void()> while_stopped;
  // The longest the whole stop may take before the capture gives up (threads let go, Error).
  std::chrono::milliseconds timeout{10'000};
};

struct Capture {
  std::int64_t pid = 0;
  std::string command_name;       // /proc/PID/comm
  std::string command_line;       // /proc/PID/cmdline, arguments joined by blanks (may be cut)
  std::string executable;         // /proc/PID/exe: the debugger's `file` before `core-file`
  std::vector<Thread> threads;    // the thread-group leader first, when it was held
  std::vector<Region> memory;     // disjoint, ascending: stacks, futex words, ... (take, below)
  std::vector<FileMapping> files; // every file-backed mapping
  std::string auxv;               // /proc/PID/auxv, as read
  // Timings: from the first PTRACE_SEIZE to the last detach, and from the first PTRACE_SEIZE until
  // every thread was held (seized, interrupted and seen stopped).
  double stop_seconds = 0;
  double seize_seconds = 0;
  std::vector<std::string> warnings; // threads that exited meanwhile, unreadable stacks, ...
};

// Holds every thread of `pid` (threads created meanwhile too: /proc/PID/task is read again until
// no new one appears), copies each one's registers, the live part of its stack and the 64 bytes at
// the address a thread blocked in futex(2) waits on, lets every thread go (re-sending any
// signal met), and returns the copy. The dynamic linker's list of loaded objects (r_debug, each
// link_map's first five fields and its name, the executable's dynamic section) and the vDSO (a
// thread stopped in clock_gettime unwinds through its tables) are copied before the stop, while
// the target runs: the debugger finds the shared libraries through the list. In the stop, with the
// stacks, it also copies the C runtime's writable data (libc's and the dynamic linker's, 16 KB with
// glibc 2.36) and each thread's control block at its thread pointer: with them the debugger's
// libthread_db lists the core's threads as `Thread 0x... (LWP n)`, like a live attach.
// A thread that does not stop because it is in an uninterruptible wait (state D, a driver call)
// is given up after 100 ms: the others are copied as held, and it is copied unheld
// (Thread::held false) from /proc/PID/task/TID/syscall, with a warning naming its kernel
// function. Every path out lets every thread go, exceptions included: the stop runs in a thread
// of its own, so a thread that never stops (PTRACE_DETACH needs a stopped tracee) is let go by the
// kernel when that thread ends, before take() returns or throws Error(Timeout) (the whole stop
// past options.timeout) naming the threads that never stopped and their states.
// Throws Error(NoSuchProcess) when `pid` is gone, Error(PtraceDenied) when it cannot be traced
// (another tracer, Yama ptrace_scope, permissions), each with a hint.
Capture take(std::int64_t pid, const Options& options = {});

// A hash of `thread`'s registers and of its stack as copied (from the stack pointer less the red
// zone to the end of the region holding it, or to the thread pointer when that lies between: the
// thread's control block, whose rseq area the kernel rewrites on every move between CPUs). Equal in
// two captures of one process, the debugger unwinds the thread to the same frames, the code being
// the same: a later sample need not ask again. The time left that an interrupted timed sleep
// (nanosleep, clock_nanosleep, select, pselect6, ppoll) writes back is left out: a thread napping
// in a loop differs only there. 0 when the stack pointer is in no copied region (or off Linux
// x86-64).
std::uint64_t stack_fingerprint(const Capture& capture, const Thread& thread);

// Writes `capture` as an ELF core file (ET_CORE, EM_X86_64): NT_PRSTATUS (+ NT_PRFPREG) per
// thread, NT_PRPSINFO, NT_AUXV, NT_FILE, and one PT_LOAD per memory region. Throws Error on a
// write failure, naming the path.
void write_core(const Capture& capture, const std::string& path);

} // namespace rocplay::capture
