// The processes of a machine as `rocplay ps` shows them: each one's command, state, CPU% and the
// GPU devices it holds open, the tree they form, and the dispatcher -> GPU worker rule over it.
// The model only: reading it from /proc is `process::scan()` (process.hpp, src/session/); the
// report renders it (report_ps.hpp). Implemented in src/core/ (library rocplay_core), so every
// layer that names a process can use it.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
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

private:
  std::vector<ProcessInfo> processes_; // sorted by pid
  std::multimap<std::int64_t, std::size_t> by_parent_;
};

// A server's GPU workers, by the rule from the field: the dispatcher (an API server, a launcher)
// has no GPU queues; its descendants that have the GPU device open are the workers. The nearest
// such descendants are returned (a worker's own GPU-holding children are not listed separately),
// sorted by pid. Empty when `pid` is not in the tree.
std::vector<ProcessInfo> workers_of(const ProcessTree& tree, std::int64_t pid);

} // namespace rocplay::process
