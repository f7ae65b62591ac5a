// Stuck-kernel heuristics: pure functions of snapshots that return findings.
#pragma once

#include "rocplay/core/finding.hpp"
#include "rocplay/snapshot/grouping.hpp"
#include "rocplay/snapshot/sampling.hpp"
#include "rocplay/snapshot/snapshot.hpp"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace rocplay::heuristics {

struct Context {
  // Worker PIDs of this process tree, for the "nothing visible" finding.
  std::vector<std::int64_t> worker_pids;
  // Ranks in the collective (TP size), when the caller knows it. Otherwise the sync-lane
  // heuristic infers it: the work-items of a spinning cuda-gdb range, else the agent count.
  std::optional<int> ngpus;
  // The samples a live look asked for (a recording's meta `samples`); unset: not known.
  std::optional<std::uint32_t> samples_asked;
  // Findings carry their full structured details (the wave classes, every field of the
  // dispatch). Off, they keep only what the text report and the later steps read (the dispatch's
  // id and kernel, the scalars): a post-mortem writing text never prints the rest, and building
  // it was a fifth of a small input's analysis.
  bool details = true;
};

// A recording's `# meta` may carry the process tree rocplay saw when it recorded:
// `"worker_pids":[4301,...]` and `"ngpus":8`. Anything else is ignored.
Context context_from_meta(std::string_view meta_json);
// The same from the meta already parsed (a post-mortem parses each recording's meta once).
Context context_from_parsed_meta(const nlohmann::json& meta);

// Stable ids of the heuristics (docs/heuristics.md), one SARIF rule each.
inline constexpr std::string_view kSyncLaneBarrierSpin = "sync-lane-barrier-spin";
inline constexpr std::string_view kSplitKCleanRace = "splitk-clean-race";
inline constexpr std::string_view kQueueStall = "queue-stall";
inline constexpr std::string_view kNothingVisible = "nothing-visible";
inline constexpr std::string_view kHostBlockedOnGpu = "host-blocked-on-gpu";
inline constexpr std::string_view kMissingRank = "missing-rank";
inline constexpr std::string_view kHostDeadlock = "host-deadlock";
inline constexpr std::string_view kCollectiveWait = "collective-wait";
inline constexpr std::string_view kHostWaits = "host-waits";
inline constexpr std::string_view kQueuePacketsPending = "queue-packets-pending";
inline constexpr std::string_view kWedgedRank = "wedged-rank";
// A host thread that never returns from one call, the root of the case's wait-for graph.
inline constexpr std::string_view kHostCallNeverReturns = "host-call-never-returns";
// Ranks stuck in collectives their code reached by different lines (an order mismatch).
inline constexpr std::string_view kCollectiveCallMismatch = "collective-call-mismatch";
// The program was stopped on a fault (`rocplay launch`, `run --wait-for-fault`): a wave or CUDA
// thread (gpu-fault), or a host thread (host-fault).
inline constexpr std::string_view kGpuFault = "gpu-fault";
inline constexpr std::string_view kHostFault = "host-fault";
// CUDA calls of the program failed, as cuda-gdb warned (Snapshot::api_errors).
inline constexpr std::string_view kCudaApiError = "cuda-api-error";
// A CPython thread holds the GIL while it blocks in a wait or a GPU call
// (rocplay/snapshot/python_stacks.hpp).
inline constexpr std::string_view kPythonGilHeld = "python-gil-held";

// Each heuristic on its own (pure functions; run() and friends call them in this order).
// The fault the snapshot was stopped on (Snapshot::fault): gpu-fault or host-fault, ranked first.
std::vector<Finding> program_fault(const Snapshot& snapshot);
std::vector<Finding> sync_lane_barrier_spin(const Snapshot& snapshot, const Context& context);
std::vector<Finding> splitk_clean_race(const Snapshot& snapshot);
// A collective kernel whose waves all sit in a few polling loops: this rank waits for its peers.
std::vector<Finding> collective_wait(const Snapshot& snapshot);
std::vector<Finding> nothing_visible(const Snapshot& snapshot, const Context& context);
std::vector<Finding> host_blocked_on_gpu(const Snapshot& snapshot);
// The CUDA calls cuda-gdb reported failed (Snapshot::api_errors): critical without a fault stop.
std::vector<Finding> cuda_api_error(const Snapshot& snapshot);
// Lock-order loops between host threads (host-deadlock) and every other host wait (host-waits):
// mutexes, condition variables, semaphores, polls on the GPU driver.
std::vector<Finding> host_deadlock(const Snapshot& snapshot);
// The thread holding the GIL blocks in a wait or a GPU call while other Python threads exist.
std::vector<Finding> python_gil_held(const Snapshot& snapshot);
std::vector<Finding> queue_stall(const Snapshot& earlier, const Snapshot& later);
// What a rank's first sample adds to the cross-rank rules, which judge one moment (each rank's
// last sample): a rank caught in a collective that it launched since its first sample may just be
// ahead of the others in a job that keeps completing collectives.
struct RankHistory {
  std::size_t samples = 0;                    // the rank's samples; 0 when not known
  std::vector<std::string> launches_at_first; // the collective launches in flight at sample 1
};
// A live look's samples (one or more): the first one's collective launches, or one sample.
RankHistory rank_history(const std::vector<Sample>& samples);
// `history`: one per rank, or none (not known, as for a snapshot without its samples).
std::vector<Finding> missing_rank(const std::vector<Snapshot>& ranks,
                                  const std::vector<RankHistory>& history = {});

// Every rank stuck in a collective (in flight since its first sample), reached by different
// Python lines on different ranks: each waits for peers in another call.
std::vector<Finding> collective_call_mismatch(const std::vector<Snapshot>& ranks,
                                              const std::vector<RankHistory>& history);

// One line per heuristic: id, title, the evidence it needs (SARIF rules, docs/heuristics.md).
struct HeuristicInfo {
  std::string_view id;
  std::string_view title;
  std::string_view needs;
};
const std::vector<HeuristicInfo>& catalogue();

// Every single-snapshot heuristic.
std::vector<Finding> run(const Snapshot& snapshot, const Context& context = {});
// The same over waves already grouped (snapshot::group_waves of `snapshot`), so a caller that keeps
// the classes groups them once.
std::vector<Finding> run(const Snapshot& snapshot, const std::vector<snapshot::WaveClass>& classes,
                         const Context& context = {});
// Heuristics over two snapshots of one process taken some time apart (queue stall, progress).
std::vector<Finding> run_pair(const Snapshot& earlier, const Snapshot& later);
// A live look that took one sample: a collective kernel whose lanes wait for their peers is what a
// healthy job shows for a moment too, so those findings are lowered to warnings, with the reason.
void judge_one_moment(std::vector<Finding>& findings);
// Heuristics across ranks (one snapshot per rank of one event): missing rank, unequal grids.
std::vector<Finding> run_ranks(const std::vector<Snapshot>& ranks,
                               const std::vector<RankHistory>& history = {});

} // namespace rocplay::heuristics
