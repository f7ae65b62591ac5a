// Helpers the heuristics share: naming kernels, describing wave classes, locations.
#pragma once

#include "rocplay/grouping.hpp"
#include "rocplay/heuristics.hpp"
#include "rocplay/kernel_names.hpp"

#include <string>
#include <string_view>

namespace rocplay::heuristics::detail {

bool ends_with(std::string_view s, std::string_view suffix);
bool contains(std::string_view s, std::string_view needle);

// The dispatch's kernel name, or `kernel at 0x...` / its target id when unresolved.
std::string kernel_label(const Dispatch& dispatch);
// A collective kernel (RCCL/NCCL, aiter allgather/all-reduce, custom all-reduce,
// reduce_scatter): kernel_names' classification, or the name patterns it is based on.
bool is_collective(const Dispatch& dispatch);
// The frame of a GPU fault's stack to read: the first with a source line that is not the device
// runtime's (`__`-prefixed: a device assert stops in `__assert_fail`, AMD's device libraries are
// `__ockl_*`; its caller holds the assert). nullptr when no listed frame has one.
const Frame* fault_source_frame(const Fault& fault);
// The dispatch the snapshot's GPU fault happened in: the CUDA focus's kernel, else the faulting
// wave's dispatch.
bool faulted_in(const Dispatch& dispatch, const Snapshot& snapshot);
// The source file the line information names for the dispatch's code: the faulting frame's
// (fault_source_frame) when the program faulted in it, else its waves' (their frame's file, else
// the `info line` of their PC); empty without line information.
std::string source_file_of(const Dispatch& dispatch, const Snapshot& snapshot);
// classify_kernel() of the dispatch's kernel, preferring its waves' source file to the name.
KernelInfo classify(const Dispatch& dispatch, const Snapshot* snapshot);
// `dispatch 1.1 (AMDGPU Dispatch 1:2:1 (PKID 0))`.
std::string dispatch_label(const Dispatch& dispatch);

// `0x7fffe0a01b3c` or `?`.
std::string hex(const std::optional<std::uint64_t>& pc);
// `start_sync<8> at custom_all_reduce.cuh:120` from the class and the snapshot's source lines.
std::string where(const snapshot::WaveClass& c, const Snapshot& snapshot);
// One human line for a wave class.
std::string describe(const snapshot::WaveClass& c, const Snapshot& snapshot);
nlohmann::json class_json(const snapshot::WaveClass& c, const Snapshot& snapshot);
Location location_of(const snapshot::WaveClass& c, const Snapshot& snapshot);
// Classes of one dispatch (matched on agent, queue, dispatch_no).
std::vector<snapshot::WaveClass> classes_of(const std::vector<snapshot::WaveClass>& classes,
                                            const Dispatch& dispatch);
// `kind`, `category`, `op`, `dtype` and `source` of the dispatch's kernel (classify_kernel).
nlohmann::json dispatch_json(const Dispatch& dispatch, const Snapshot* snapshot = nullptr);
// `kernel allgather_vec: collective (collective), bfloat16; source: aiter/csrc/ ...`; empty when
// the kernel has no name.
std::string kernel_line(const Dispatch& dispatch, const Snapshot* snapshot = nullptr);

// The "leader spin" shape of one dispatch's wave classes: the waves (AMD) or thread ranges
// (cuda-gdb) holding the first work-items of each work-group sit in one polling loop, holding
// nothing else, while the rest of the dispatch waits elsewhere (a barrier behind the loop).
// Sync-lane collectives (work-items 0..ngpus-1) and split-K reductions (work-item 0) look so.
struct LeaderSpin {
  std::vector<const snapshot::WaveClass*> spin; // largest first; more than one when the loop
                                                // was sampled at several of its PCs
  std::vector<const snapshot::WaveClass*> rest;
  std::optional<snapshot::Range> work_items; // union over cuda-gdb ranges
  std::uint64_t spin_threads = 0;            // Wave::count summed
  std::size_t spin_workgroups = 0;
  std::size_t unknown = 0; // waves with `?` slots in the dispatch
};
// A polling loop is a few instructions: two samples of it land at most this far apart.
inline constexpr std::uint64_t kLoopWindow = 128;
std::optional<LeaderSpin> leader_spin(const std::vector<snapshot::WaveClass>& dispatch_classes,
                                      const Snapshot& snapshot);

} // namespace rocplay::heuristics::detail
