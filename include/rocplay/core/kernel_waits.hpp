// What the kernel says a process's threads wait in, read from /proc while the target runs (no
// stop, no ptrace): each thread's system call and its arguments (/proc/PID/task/TID/syscall),
// the file behind a read's fd (/proc/PID/fd/N, /proc/PID/fdinfo/N), the child a wait4 waits for,
// and which processes hold each end of a pipe a thread blocks on. The session writes these as
// `kernel waits:` notes into the recording (docs/transcript-format.md, "Kernel waits"); the
// snapshot builder reads them back, so a post-mortem sees what the live run saw.
//
//   auto facts = process::read_kernel_waits(pid);   // the target, its children, the pipes
//   for (auto& note : kernel_wait_notes(facts)) session.note(note);
//   ... later, per note: read_kernel_wait_note(note, facts)  // bounded, never throws
//
// Layer: src/core/ (library rocplay_core).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace rocplay {

// One thread's system call as /proc/PID/task/TID/syscall showed it.
struct KernelWait {
  std::int64_t tid = 0;
  std::string call;                   // `read`, `wait4`, `futex`, `poll`, ...; `running`
  std::optional<std::int64_t> fd;     // read/write/recv... : the fd
  std::string file;                   // the fd's link: `pipe:[4242]`, `socket:[7]`, `/dev/pts/1`
  std::string access;                 // the fd's open mode: `r`, `w`, `rw`
  std::optional<std::int64_t> child;  // wait4/waitid: the pid waited for (-1 or 0: any child)
  std::optional<std::uint64_t> futex; // the futex word's address
  bool timed = false;                 // a timeout will wake it (a sleep, a poll with a timeout)
  bool shared = false;                // a futex not private to the process
  bool operator==(const KernelWait&) const = default;
};

// A process and its threads' waits: the target, a child it waits for, a pipe's other holder.
struct ProcessWaits {
  std::int64_t pid = 0;
  std::int64_t ppid = 0;
  std::string comm;
  std::string cmdline; // at most 200 bytes
  std::string state;   // /proc/PID/stat's: `S`, `R`, `Z` ...
  std::string role;    // `target`, `child`
  std::vector<KernelWait> threads;
  bool operator==(const ProcessWaits&) const = default;
};

// Which processes hold each end of a pipe some thread blocks on.
struct PipeHolders {
  std::uint64_t inode = 0;
  std::vector<std::int64_t> writers; // pids with its write end open
  std::vector<std::int64_t> readers;
  bool complete = false; // every process this user may read was looked at
  bool operator==(const PipeHolders&) const = default;
};

struct KernelWaits {
  std::vector<ProcessWaits> processes; // the target first
  std::vector<PipeHolders> pipes;
  bool empty() const { return processes.empty() && pipes.empty(); }
  const ProcessWaits* process(std::int64_t pid) const;
  const PipeHolders* pipe(std::uint64_t inode) const;
  bool operator==(const KernelWaits&) const = default;
};

// Bounds on what is read and what a recording's notes may claim.
inline constexpr std::size_t kMaxWaitThreads = 4096; // threads of one process
inline constexpr std::size_t kMaxWaitProcesses = 32; // the target and its children
inline constexpr std::size_t kMaxPipeScan = 4096;    // processes scanned for a pipe's holders
inline constexpr std::size_t kMaxWaitPipes = 64;     // pipes whose holders are looked up

// `pipe:[4242]` -> 4242; nullopt for anything else.
std::optional<std::uint64_t> pipe_inode(std::string_view file);

// True when a thread in this wait can be woken by nothing but a thread of its own process: an
// untimed private futex wait, or a read of a pipe whose write end no other process holds.
// (`pipes` answers the latter; an unknown holder counts as an outside waker.)
bool only_own_waker(const KernelWait& w, std::int64_t pid, const KernelWaits& all);

// The notes that carry `waits` (each at most ~3,600 bytes), and one note read back into `into`
// (false when it is not a `kernel waits:` note). Bounded: a note never adds past the limits above.
std::vector<std::string> kernel_wait_notes(const KernelWaits& waits);
bool read_kernel_wait_note(std::string_view note, KernelWaits& into);

namespace process {

// One thread's wait: /proc/PID/task/TID/syscall decoded (x86-64 and aarch64 numbers), with the
// fd's link and mode read from /proc/PID/fd and fdinfo. nullopt when the file cannot be read.
std::optional<KernelWait> read_kernel_wait(std::int64_t pid, std::int64_t tid);

// The target's threads' waits; for each wait4/waitid, the children it waits for (and theirs);
// for each blocked read or write on a pipe, the processes holding its ends (a bounded scan of
// /proc/*/fd). Nothing is stopped. Empty when /proc/PID/task cannot be read.
KernelWaits read_kernel_waits(std::int64_t pid);

} // namespace process

} // namespace rocplay
