// The narrow interface each debugger dialect implements (one file per debugger).
//
// How the Builder uses it (src/snapshot/builder.cpp):
//  1. The debugger kind comes from BuildOptions, the recording's meta, the version banner, or the
//     first exchange a GPU dialect recognises().
//  2. Each exchange goes to the GPU dialect of that kind (or, while the kind is unknown, to any
//     GPU dialect that recognises it), then always to the gdb dialect. GPU dialects take the GPU
//     content (agents, queues, dispatches, waves, lanes); the gdb dialect takes the host content
//     (host threads, stacks, `info line`, symbols, thread selection) and skips `AMDGPU` threads.
//  3. finish(): the gdb dialect first (source lines, symbols), then the GPU dialect (kernel names),
//     then the Builder's own checks (unattributed waves, unique ids).
#pragma once

#include "rocplay/snapshot/snapshot.hpp"

#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace rocplay::snapshot {

// An `info line` answer: the addresses [start, end) belong to `line`.
struct LineRange {
  std::uint64_t start = 0;
  std::uint64_t end = 0; // == start when the line "contains no code"
  SourceLine line;       // pc = start; function/offset describe `start`
};

// cuda-gdb lists its focus thread's GPU frames as the selected host thread's stack; they are filed
// under this id instead (src/snapshot/cuda_gdb.cpp) and read by the fault model.
inline constexpr std::string_view kCudaFocusThread = "cuda-focus";

// State shared by the dialects while one snapshot is built.
struct BuildState {
  Snapshot snapshot;
  // The selected thread (`-thread-select`, `*stopped`, `thread N`, current-thread-id), for
  // commands that act on it: -stack-list-frames, -lane-info, `info line *$pc`.
  std::string current_thread;
  std::optional<std::uint32_t> current_lane;
  // Linkage or print names of code addresses, from `<sym+off>` annotations, `info symbol`, and
  // `-data-evaluate-expression $pc`: symbol start address -> name as printed.
  std::map<std::uint64_t, std::string> symbols;
  // `info line` answers, in the order seen.
  std::vector<LineRange> line_ranges;
  // Full stacks by thread id (-stack-list-frames, bt, thread apply all bt), innermost first.
  std::map<std::string, std::vector<Frame>> stacks;
  // Thread id -> index into snapshot.waves, for dedupe when threads are listed twice. May lag
  // behind snapshot.waves (the rocgdb dialect builds it only when a second list arrives); a
  // dialect that relies on it keeps it in step itself.
  std::unordered_map<std::string, std::size_t> wave_index;
  // Waves' function names and files, one copy each.
  Interner strings;

  // The exchange's console text (text::console), made once per exchange for the primary dialect
  // and gdb's both.
  const std::string& console(const mi::Exchange& exchange);
  // Called when the exchange is done with (its address may be reused by the next one).
  void forget_console() { console_of_ = nullptr; }

private:
  const mi::Exchange* console_of_ = nullptr;
  std::string console_;
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

// What gives a dialect's records away in a raw MI log, which has no commands to tell it by:
// texts of its ^result records (and of its *exec records too when `in_exec` is set) and of its
// console lines.
struct Markers {
  std::span<const std::string_view> results;
  bool in_exec = false;
  std::span<const std::string_view> console;
};
// True when a record of the exchange holds one of the markers.
bool has_marker(const mi::Exchange& exchange, const Markers& markers);

std::unique_ptr<Dialect> make_gdb_dialect();      // host threads, frames, info line
std::unique_ptr<Dialect> make_rocgdb_dialect();   // agents, queues, dispatches, waves
std::unique_ptr<Dialect> make_cuda_gdb_dialect(); // devices, kernels, warps, thread ranges

} // namespace rocplay::snapshot
