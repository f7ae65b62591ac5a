// The narrow interface each debugger dialect implements (one file per debugger).
#pragma once

#include "rocplay/snapshot.hpp"

#include <memory>
#include <string_view>

namespace rocplay::snapshot {

// State shared by the dialects while one snapshot is built.
struct BuildState {
  Snapshot snapshot;
};

class Dialect {
public:
  virtual ~Dialect() = default;
  virtual std::string_view name() const = 0;
  // True when the records look like this debugger's (`AMDGPU Wave`, `CudaFocus`, ...), so a raw
  // log with no banner can still be told apart.
  virtual bool recognises(const mi::Exchange& exchange) const = 0;
  // Takes what it understands from the exchange into `state`; returns whether it claimed it.
  virtual bool consume(const mi::Exchange& exchange, BuildState& state) = 0;
  // Called once after the last exchange (resolve names, cross-link waves and dispatches).
  virtual void finish(BuildState& /*state*/) {}
};

std::unique_ptr<Dialect> make_gdb_dialect();      // host threads, frames, info line
std::unique_ptr<Dialect> make_rocgdb_dialect();   // agents, queues, dispatches, waves
std::unique_ptr<Dialect> make_cuda_gdb_dialect(); // devices, kernels, warps, thread ranges

} // namespace rocplay::snapshot
