// The scan of every process in /proc that fills the process tree `rocplay ps` prints (its model:
// process_tree.hpp), with the per-process readers it is built on (rocplay/core/procfs.hpp). Linux
// only. Nothing here runs a program or stops one. A process that vanishes mid-scan is left out;
// nothing throws except where a function says it does.
// Layer: src/session/ (library rocplay_session; docs/architecture.md).
#pragma once

#include "rocplay/core/mapped_objects.hpp"
#include "rocplay/core/process_tree.hpp"
#include "rocplay/core/procfs.hpp"

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace rocplay::process {

struct ScanOptions {
  // CPU% is the difference of utime+stime over this interval; 0 skips sampling.
  std::chrono::milliseconds sample{200};
  std::vector<std::string> device_prefixes; // empty: /dev/kfd and /dev/nvidia*
  // Only this process and those below it, read whole (the others' stat only, for the parents):
  // the open files of every process on a busy node cost more than the rest of a look's start.
  std::optional<std::int64_t> subtree;
};

// Reads every process in /proc (sampling CPU% over options.sample).
ProcessTree scan(const ScanOptions& options = {});

// workers_of() over a fresh scan. Throws Error(NoSuchProcess) when `pid` does not exist.
std::vector<ProcessInfo> workers_of(std::int64_t pid, const ScanOptions& options = {});

} // namespace rocplay::process
