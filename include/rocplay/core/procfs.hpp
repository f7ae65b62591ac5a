// One process as /proc shows it: its stat, status, threads' figures, tracers, environment,
// command line, executable and open GPU devices. Linux only. Nothing here runs a program or stops
// one. The capture (src/capture/), the session's preconditions and `rocplay ps`'s scan
// (rocplay/session/process.hpp) read processes through these.
//
// Every reader tolerates processes that vanish mid-read and files it may not read (another
// user's /proc/PID/fd or environ): those come back as "unknown", never as an exception.
// Layer: src/core/ (library rocplay_core).
#pragma once

#include "rocplay/core/process_tree.hpp"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace rocplay::process {

// /proc/PID/stat, the fields rocplay uses.
struct Stat {
  std::int64_t pid = 0;
  std::string comm; // without the parentheses; may hold spaces and `)`
  char state = '?'; // R S D Z T t X I ...
  std::int64_t ppid = 0;
  std::int64_t pgrp = 0;
  std::uint64_t utime = 0; // clock ticks
  std::uint64_t stime = 0;
  std::int64_t num_threads = 0;
  std::uint64_t starttime = 0; // clock ticks after boot
  std::uint64_t flags = 0;     // PF_* (field 9)
};

// PF_KTHREAD in /proc/PID/stat's flags: a kernel thread, which ptrace can never attach to.
constexpr std::uint64_t kPfKthread = 0x00200000;
inline bool is_kernel_thread(const Stat& st) {
  return (st.flags & kPfKthread) != 0 || st.pid == 2 || st.ppid == 2;
}

// Parses the text of /proc/PID/stat. nullopt when it is not one.
std::optional<Stat> parse_stat(std::string_view text);
std::optional<Stat> read_stat(std::int64_t pid);

// T (stopped by a signal) or t (stopped by a tracer).
inline bool is_stopped(char state) {
  return state == 'T' || state == 't';
}

// /proc/PID/status, the fields rocplay uses.
struct Status {
  std::string name;
  std::optional<std::int64_t> tracer_pid;
  std::optional<std::uint64_t> cap_eff;
  std::optional<std::int64_t> uid_real;
  std::optional<std::int64_t> uid_effective;
  std::optional<std::int64_t> uid_saved;
};
Status parse_status(std::string_view text);
std::optional<Status> read_status(std::int64_t pid);

// A thread of the process that another process traces (TracerPid in /proc/PID/task/TID/status).
// A tracer may hold one thread only (`strace -p TID`); a debugger's attach then stalls on it.
struct ThreadTracer {
  std::int64_t tid = 0;
  std::int64_t tracer_pid = 0;
};
// Every traced thread of `pid`, except those traced by `ignore` (the debugger itself), at most
// `max_threads` threads read. Empty when none, or when /proc/PID/task cannot be read.
std::vector<ThreadTracer> traced_threads(std::int64_t pid, std::int64_t ignore = 0,
                                         std::size_t max_threads = 100000);

// One thread's figures from /proc/PID/task/TID/stat: its state and the CPU time it has used.
struct TaskStat {
  std::int64_t tid = 0;
  char state = '?';
  std::uint64_t cpu_ticks = 0; // utime + stime, clock ticks (sysconf(_SC_CLK_TCK) per second)
};
// Every thread of `pid` (at most `max_threads`, in tid order); empty when /proc/PID/task cannot
// be read. A thread that ends mid-scan is left out.
std::vector<TaskStat> read_task_stats(std::int64_t pid, std::size_t max_threads = 4096);
// sysconf(_SC_CLK_TCK), 100 when it cannot be read.
long clock_ticks_per_second();

// Whether the kernel's ptrace access check lets this process read `pid` (PTRACE_MODE_READ, as
// readlink /proc/PID/ns/pid does); an attach needs more, so false means an attach is refused too.
// nullopt when it cannot tell (the process is gone). Nothing is stopped or traced by the probe.
std::optional<bool> ptrace_read_allowed(std::int64_t pid);

constexpr int kCapSysPtrace = 19;
inline bool has_capability(std::uint64_t cap_eff, int cap) {
  return ((cap_eff >> cap) & 1u) != 0;
}

// /proc/sys/kernel/yama/ptrace_scope; nullopt when Yama is not in the kernel.
std::optional<int> read_ptrace_scope();

// Splits /proc/PID/environ (NUL-separated NAME=value) into a map; a name seen twice keeps the
// first value, as getenv does. Bounded: at most `max_entries` variables.
std::map<std::string, std::string> parse_environ(std::string_view raw,
                                                 std::size_t max_entries = 100000);
// nullopt when the file cannot be read (no such process, or not permitted).
std::optional<std::map<std::string, std::string>> read_environ(std::int64_t pid);

// The variables the report and the heuristics care about (HSA_TOOLS_LIB, *_VISIBLE_DEVICES,
// RANK, LOCAL_RANK, WORLD_SIZE ...), picked from a full environment.
std::map<std::string, std::string> relevant_env(const std::map<std::string, std::string>& env);
const std::vector<std::string_view>& relevant_env_names();

// The command line, NUL-separated arguments joined with spaces; empty for kernel threads.
std::string read_cmdline(std::int64_t pid, std::size_t max_bytes = 4096);

// The executable's path (readlink /proc/PID/exe); empty when it cannot be read.
std::string read_exe(std::int64_t pid);

// This machine's host name (gethostname); empty when it cannot be read.
std::string host_name();

// The kernel function thread `tid` of `pid` sleeps in (/proc/PID/task/TID/wchan: the driver call
// a thread in state D waits in); empty when it runs or the kernel hides it ("0").
std::string read_wchan(std::int64_t pid, std::int64_t tid);

// `device_prefixes` replaces the default {"/dev/kfd", "/dev/nvidia"} (tests use their own files);
// a match on anything but /dev/nvidia* counts as kfd.
GpuOpen read_gpu_open(std::int64_t pid, const std::vector<std::string>& device_prefixes = {});

} // namespace rocplay::process
