// The processes of a machine as `rocplay ps` shows them: each one's command, state, CPU% and the
// GPU devices it holds open, the tree they form, and the dispatcher -> GPU worker rule over it.
// The model only: reading it from /proc is `process::scan()` (process.hpp, src/session/); the
// report renders it (report_ps.hpp). Implemented in src/core/ (library rocplay_core), so every
// layer that names a process can use it.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace rocplay::process {

// Whether the process has a GPU device open, from the links in /proc/PID/fd.
struct GpuOpen {
  bool known = false;               // /proc/PID/fd could be read
  bool kfd = false;                 // /dev/kfd (ROCm)
  bool nvidia = false;              // /dev/nvidia* (CUDA)
  bool dri = false;                 // /dev/dri/renderD* (ROCm opens it beside /dev/kfd)
  std::vector<std::string> devices; // the distinct device paths seen
  bool any() const { return kfd || nvidia; }
};

// All processes of the machine, or a subtree.
struct ProcessInfo {
  std::int64_t pid = 0;
  std::int64_t ppid = 0;
  std::string comm;
  std::string cmdline;
  char state = '?';
  std::int64_t threads = 0;
  std::optional<double> cpu_percent; // over the sampling interval; nullopt when not sampled
  std::optional<std::int64_t> uid;
  GpuOpen gpu;
  bool holds_gpu() const { return gpu.any(); }
};

class ProcessTree {
public:
  ProcessTree() = default;
  explicit ProcessTree(std::vector<ProcessInfo> processes);

  const std::vector<ProcessInfo>& processes() const { return processes_; }
  const ProcessInfo* find(std::int64_t pid) const;
  std::vector<const ProcessInfo*> children(std::int64_t pid) const;
  // Depth-first, children sorted by pid.
  std::vector<const ProcessInfo*> descendants(std::int64_t pid) const;
  // Processes whose parent is not in the tree, sorted by pid.
  std::vector<const ProcessInfo*> roots() const;
  // The GPU holders, their ancestors and descendants: what `rocplay ps` shows by default.
  ProcessTree candidates() const;
  // `keep` with their ancestors (the tree's shape), leaving out pid 1, kernel threads and `self`
  // (rocplay's own pid).
  ProcessTree with_ancestors(const std::set<std::int64_t>& keep, std::int64_t self) const;
  // Every process but kernel threads and `self`: `rocplay ps --all`.
  ProcessTree without_kernel_threads(std::int64_t self) const;

private:
  std::vector<ProcessInfo> processes_; // sorted by pid
  std::multimap<std::int64_t, std::size_t> by_parent_;
};

// A kernel thread: kthreadd (pid 2) and its children. They have no command line and no user
// code; no debugger can attach to one.
bool is_kernel_thread(const ProcessInfo& p);

// A user process that holds no GPU but may be the hung one, and why, as `KIND: detail`:
// `busy: 97% CPU` (spinning), `blocked: futex_wait_queue` (a thread waits on a lock, a condition
// variable or a join, and none waits for input, a child or time), `D wait: WCHAN` (an
// uninterruptible wait), `stopped`; empty when it is idle or a kernel thread. `wchans`: its
// threads' kernel waits (/proc/PID/task/TID/wchan), the main thread's first.
std::string worth_a_look(const ProcessInfo& p, const std::vector<std::string>& wchans);
inline constexpr double kBusyCpuPercent = 20.0;

// A server's GPU workers, by the rule from the field: the dispatcher (an API server, a launcher)
// has no GPU queues; its descendants that have the GPU device open are the workers. The nearest
// such descendants are returned (a worker's own GPU-holding children are not listed separately),
// sorted by pid. Empty when `pid` is not in the tree.
std::vector<ProcessInfo> workers_of(const ProcessTree& tree, std::int64_t pid);

} // namespace rocplay::process
