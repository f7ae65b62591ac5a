// Reading the fault stop out of exchanges (used by the Builder; not a public interface).
#pragma once

#include "rocplay/core/fault.hpp"
#include "rocplay/snapshot/snapshot.hpp"

#include <map>
#include <set>
#include <string>
#include <vector>

namespace rocplay::snapshot {

// Watches every exchange for the first `*stopped` that reports a fault (a fault signal, a CUDA
// exception, a C++ exception catchpoint), what the debugger printed about it, and the faulting
// address where a playbook asked for $_siginfo.
class FaultReader {
public:
  void add(const mi::Exchange& exchange);
  // Keeps the stack the playbook listed for the faulting wave or CUDA focus thread (the builder's
  // stacks by thread id, before the dialects file them as host threads or drop them).
  void take_frames(const std::map<std::string, std::vector<Frame>>& stacks);
  // Fills snapshot.fault; links it to the faulting wave where the snapshot has it.
  void finish(Snapshot& snapshot);

private:
  void take_stop(const mi::Exchange& exchange);
  std::optional<Fault> fault_;
  std::set<std::string> catchpoints_; // breakpoint numbers of `catch throw`
  bool gpu_frame_ = false;
  bool cuda_focus_ = false; // the stop named a CudaFocus: its stack is filed apart
};

} // namespace rocplay::snapshot
