// Helpers the heuristics share: naming kernels, describing wave classes, locations.
#pragma once

#include "rocplay/graph/graph.hpp"
#include "rocplay/heuristics/heuristics.hpp"
#include "rocplay/kernels/kernel_names.hpp"
#include "rocplay/snapshot/grouping.hpp"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace rocplay::heuristics::detail {

bool ends_with(std::string_view s, std::string_view suffix);
bool contains(std::string_view s, std::string_view needle);

// The dispatch's kernel name, or `kernel at 0x...` / its target id when unresolved.
std::string kernel_label(const Dispatch& dispatch);
// A collective kernel (RCCL/NCCL, aiter allgather/all-reduce, custom all-reduce,
// reduce_scatter): kernel_names' classification, or the name patterns it is based on.
bool is_collective(const Dispatch& dispatch);
// agent:queue:number, `?` for a part not known: a dispatch, or the one a wave belongs to.
std::string dispatch_key(std::optional<std::uint32_t> agent, std::optional<std::uint32_t> queue,
                         std::optional<std::uint64_t> number);
// One launch of a kernel, the same in every sample of one process: its agent, queue and number,
// the packet (AMD) or grid (CUDA) id when known, and its kernel. cuda-gdb numbers the kernels in
// flight from 0 again, so a kernel launched again reads as new only by its grid id.
std::string launch_key(const Dispatch& dispatch);
// Whether any host thread carries Python frames read from the interpreter: the Python stack is
// then in the report already, and no next step needs py-spy.
bool has_python_frames(const Snapshot& snapshot);
// The frame of a GPU fault's stack to read: the first with a source line that is not the device
// runtime's (`__`-prefixed: a device assert stops in `__assert_fail`, AMD's device libraries are
// `__ockl_*`; its caller holds the assert). nullptr when no listed frame has one.
const Frame* fault_source_frame(const Fault& fault);
// Snapshot::dispatch_of for waves taken in order, reusing the last answer while the wave's
// (agent, queue, dispatch) stays the same: a dispatch's waves come together, and a walk over a
// full node's 78,000 waves then asks the dispatch list a few times instead of once per wave.
class WaveDispatches {
public:
  explicit WaveDispatches(const Snapshot& snapshot) : snapshot_(snapshot) {}
  const Dispatch* operator()(const Wave& wave);

private:
  const Snapshot& snapshot_;
  const Wave* last_wave_ = nullptr;
  const Dispatch* last_dispatch_ = nullptr;
};

// classify_kernel() of a snapshot's dispatches, preferring the source file their waves name to
// the kernel name. The file of a dispatch's code is the faulting frame's (fault_source_frame)
// when the program faulted in it, else its first wave's with one (the wave's frame file, else
// the `info line` of its PC), else none. The files of every dispatch are found together, in one
// walk over the waves on the first question: one walk per dispatch and per question made the
// heuristics quadratic on a full node. Built for one heuristic's look at one snapshot.
class Kernels {
public:
  explicit Kernels(const Snapshot& snapshot) : snapshot_(snapshot) {}
  // `dispatch` is one of the snapshot's dispatches (std::logic_error otherwise).
  const KernelInfo& of(const Dispatch& dispatch);
  const std::string& source_file(const Dispatch& dispatch);
  // Context::details of the run: off, dispatch_json gives the dispatch's id and kernel only, and
  // the heuristics leave the wave classes out of their details.
  bool details = true;

private:
  std::size_t index_of(const Dispatch& dispatch) const;
  void find_source_files();
  const Snapshot& snapshot_;
  std::vector<std::string> files_; // per dispatch, once found
  std::vector<std::optional<KernelInfo>> infos_;
  bool files_found_ = false;
};
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
// `kind`, `category`, `op`, `dtype` and `source` of the dispatch's kernel (classify_kernel); only
// `id` and `kernel` when kernels.details is off.
nlohmann::json dispatch_json(const Dispatch& dispatch, Kernels& kernels);
// `kernel allgather_vec: collective (collective), bfloat16; source: aiter/csrc/ ...`; empty when
// the kernel has no name.
std::string kernel_line(const Dispatch& dispatch, Kernels& kernels);

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

// A frame function that waits in the kernel or a runtime (futex, pthread_cond_*wait, poll,
// epoll_wait, nanosleep, read, sem_wait, select, accept, recv, ioctl ...), by its base name
// (`__GI___clock_nanosleep` -> `clock_nanosleep`).
bool is_wait_function(std::string_view function);
// The innermost frame of the stack inside a blocking call; nullptr when none is. Frame 0 is often
// an unsymbolised libc address with the wait one frame out, so every frame counts.
const Frame* blocking_frame(const HostThread& thread);
// Threads a runtime keeps for itself (PyTorch's `pt_nccl_watchdg`, `pt_nccl_heartbt`, CUDA's
// event handler): they poll or sleep on timers whatever the program does, so they are evidence at
// most, never a headline.
bool is_runtime_helper_thread(std::string_view name);
// Where a thread is, for a one-line summary: the user's frame (`wait_for_batch at worker.py:88`;
// innermost_user_frame: outside libc, the GPU runtimes and the Python interpreter), else the
// frame outside the blocking call (`pysleep from python3.12 (waits in clock_nanosleep)`).
std::string thread_where(const HostThread& thread);
// The target's own kernel waits (Snapshot::kernel_waits) when every thread of it sleeps in a wait
// only another of its own threads could end (no timer, no fd another process holds, no shared
// futex) and /proc covered every host thread of the snapshot: the process can never wake on its
// own. nullptr otherwise (not read, a thread running, a possible waker).
const ProcessWaits* asleep_without_waker(const Snapshot& snapshot);
// The thread's kernel wait in the target's /proc facts; nullptr when not read.
const KernelWait* kernel_wait_of(const Snapshot& snapshot, const HostThread& thread);
// A Python thread inside queue.Queue.get / SimpleQueue.get (its innermost standard-library
// frames): it waits for an item another thread puts.
bool in_queue_get(const HostThread& thread);
// The thread and frame whose `with` block holds a threading.Lock (Frame::held_locks), for the
// lock a thread sleeps on acquiring (HostThread::python_lock_wait); nullopt when none does.
struct PythonLockHolder {
  const HostThread* thread = nullptr;
  const Frame* frame = nullptr;
};
class PythonLockHolders {
public:
  explicit PythonLockHolders(const Snapshot& snapshot);
  std::optional<PythonLockHolder> of_waiter(const HostThread& waiter) const;

private:
  std::map<std::uint64_t, PythonLockHolder> by_lock_;
};

// A wait-for graph node as the producers make them (wait_graph*.cpp).
inline graph::Node graph_node(std::string id, std::string kind, std::string label,
                              graph::State state, std::string where = {}, std::string doing = {},
                              int weight = 0) {
  graph::Node n;
  n.id = std::move(id);
  n.kind = std::move(kind);
  n.label = std::move(label);
  n.state = state;
  n.where = std::move(where);
  n.doing = std::move(doing);
  n.weight = weight;
  return n;
}

} // namespace rocplay::heuristics::detail
