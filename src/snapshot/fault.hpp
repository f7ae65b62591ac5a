// Reading the fault stop out of exchanges (used by the Builder; not a public interface).
#pragma once

#include "rocplay/fault.hpp"
#include "rocplay/snapshot.hpp"

#include <set>
#include <string>

namespace rocplay::snapshot {

// Watches every exchange for the first `*stopped` that reports a fault (a fault signal, a CUDA
// exception, a C++ exception catchpoint), what the debugger printed about it, and the faulting
// address where a playbook asked for $_siginfo.
class FaultReader {
public:
  void add(const mi::Exchange& exchange);
  // Fills snapshot.fault; links it to the faulting wave where the snapshot has it.
  void finish(Snapshot& snapshot);

private:
  void take_stop(const mi::Exchange& exchange);
  std::optional<Fault> fault_;
  std::set<std::string> catchpoints_; // breakpoint numbers of `catch throw`
  bool gpu_frame_ = false;
};

} // namespace rocplay::snapshot
