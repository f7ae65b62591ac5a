// The heuristic registry: which heuristics run on one snapshot, a pair, or a set of ranks.
#include "heuristics/analysis.hpp"
#include "rocplay/heuristics/heuristics.hpp"

#include <algorithm>
#include <set>

namespace rocplay::heuristics {
namespace {

// Most severe and most certain first, so a report's verdict is the first finding.
void order(std::vector<Finding>& findings) {
  std::stable_sort(findings.begin(), findings.end(), [](const Finding& a, const Finding& b) {
    if (a.severity != b.severity) {
      return a.severity > b.severity;
    }
    return a.confidence > b.confidence;
  });
}

void append(std::vector<Finding>& out, std::vector<Finding> more) {
  for (auto& f : more) {
    out.push_back(std::move(f));
  }
}

} // namespace

namespace {

std::vector<Finding> run_over(detail::Analysis& analysis, const Context& context) {
  const Snapshot& snapshot = analysis.snapshot();
  analysis.kernels().details = context.details;
  std::vector<Finding> out = program_fault(analysis);
  append(out, sync_lane_barrier_spin(analysis, context));
  // The sync-lane finding already says "waiting for peers" for its dispatches, more precisely.
  std::set<std::string> spinning;
  for (const auto& f : out) {
    if (!f.dispatches.empty()) {
      spinning.insert(f.dispatches.front().id);
    }
  }
  for (auto& f : sync_lane_spin_unknown_positions(analysis, spinning)) {
    if (!f.dispatches.empty()) {
      spinning.insert(f.dispatches.front().id);
    }
    out.push_back(std::move(f));
  }
  // Its dispatches are skipped before their finding is built, not dropped after.
  append(out, collective_wait(analysis, spinning));
  append(out, splitk_clean_race(analysis));
  append(out, nothing_visible(snapshot, context));
  append(out, host_blocked_on_gpu(analysis));
  append(out, queue_packets_pending(snapshot));
  append(out, host_deadlock(snapshot));
  append(out, cuda_api_error(snapshot));
  append(out, python_gil_held(snapshot));
  for (auto& f : out) {
    if (!f.rank && snapshot.rank) {
      f.rank = snapshot.rank;
    }
  }
  order(out);
  return out;
}

} // namespace

std::vector<Finding> run(const Snapshot& snapshot, const Context& context) {
  // Shared by the heuristics below: each would group the waves and classify the kernels again.
  detail::Analysis analysis(snapshot);
  return run_over(analysis, context);
}

std::vector<Finding> run(const Snapshot& snapshot, const std::vector<snapshot::WaveClass>& classes,
                         const Context& context) {
  detail::Analysis analysis(snapshot, classes);
  return run_over(analysis, context);
}

std::vector<Finding> run_pair(const Snapshot& earlier, const Snapshot& later) {
  std::vector<Finding> out = queue_stall(earlier, later);
  for (auto& f : out) {
    if (!f.rank && later.rank) {
      f.rank = later.rank;
    }
  }
  order(out);
  return out;
}

void judge_one_moment(std::vector<Finding>& findings) {
  for (auto& f : findings) {
    if ((f.id != kCollectiveWait && f.id != kSyncLaneBarrierSpin) ||
        f.severity <= Severity::Warning) {
      continue;
    }
    f.severity = Severity::Warning;
    f.confidence *= 0.5;
    f.evidence.push_back("one sample: the lanes of a healthy collective wait for their peers for a "
                         "moment too; a second sample tells stuck from slow (the default takes "
                         "two)");
  }
  order(findings);
}

std::vector<Finding> run_ranks(const std::vector<Snapshot>& ranks,
                               const std::vector<RankHistory>& history) {
  std::vector<Finding> out = missing_rank(ranks, history);
  if (out.empty()) {
    out = collective_call_mismatch(ranks, history);
  }
  order(out);
  return out;
}

Context context_from_meta(std::string_view meta_json) {
  return context_from_parsed_meta(
      nlohmann::json::parse(meta_json, nullptr, /*allow_exceptions=*/false));
}

Context context_from_parsed_meta(const nlohmann::json& j) {
  Context ctx;
  if (j.is_discarded() || !j.is_object()) {
    return ctx;
  }
  if (auto it = j.find("worker_pids"); it != j.end() && it->is_array()) {
    for (const auto& p : *it) {
      if (p.is_number_integer()) {
        ctx.worker_pids.push_back(p.get<std::int64_t>());
      }
    }
  }
  if (auto it = j.find("samples"); it != j.end() && it->is_number_unsigned()) {
    if (const auto n = it->get<std::uint64_t>(); n >= 1 && n <= 1000) {
      ctx.samples_asked = static_cast<std::uint32_t>(n);
    }
  }
  if (auto it = j.find("ngpus"); it != j.end() && it->is_number_integer()) {
    auto n = it->get<std::int64_t>();
    if (n > 0 && n <= 4096) {
      ctx.ngpus = static_cast<int>(n);
    }
  }
  return ctx;
}

const std::vector<HeuristicInfo>& catalogue() {
  static const std::vector<HeuristicInfo> kAll = {
      {kSyncLaneBarrierSpin, "sync-lane barrier spin in a collective kernel",
       "waves with work-group slots (or cuda-gdb thread ranges) and PCs of an in-flight "
       "dispatch; its kernel name or a start_sync/end_sync frame or source line"},
      {kSplitKCleanRace, "concurrent split-K `_clean` kernels on different queues",
       "two or more in-flight dispatches with kernel names, queues and fences"},
      {kQueueStall, "queue stall across two snapshots",
       "two snapshots of one process: queue read/write indices, the head dispatch, wave PCs"},
      {kNothingVisible, "nothing visible: dispatcher, or the debug agent holds the hook",
       "the agent/queue/dispatch lists as asked (coverage), the target's HSA_TOOLS_LIB, worker "
       "PIDs"},
      {kHostBlockedOnGpu, "host thread blocked on the GPU",
       "host thread stacks (bt / -stack-list-frames) and the in-flight dispatches"},
      {kMissingRank, "missing rank across per-rank snapshots",
       "one snapshot per rank with dispatches (kernel names, grids)"},
      {kCollectiveCallMismatch, "ranks stuck in collectives reached by different lines",
       "one snapshot per rank over two samples: a collective launch in flight at both, the main "
       "thread's Python frames"},
      {kCollectiveWait, "collective kernel waiting for its peers (one rank)",
       "an in-flight collective dispatch (by kernel name) and its waves' PCs; line information "
       "optional"},
      {kHostDeadlock, "host threads deadlocked on mutexes",
       "host stacks in pthread_mutex_lock and each mutex's owner (glibc's owner field, read by "
       "an expression on the innermost frame)"},
      {kHostWaits, "host threads waiting (mutex, condition variable, semaphore, GPU driver)",
       "host thread stacks"},
      {kGpuFault,
       "the program stopped on a GPU fault (wave memory violation, device assert, "
       "CUDA exception)",
       "the fault stop (`*stopped` with a fault signal or CUDA exception) on a wave or the CUDA "
       "focus; waves and dispatches name its kernel"},
      {kHostFault,
       "the program stopped on a host fault (SIGSEGV, SIGABRT, SIGFPE, SIGILL, "
       "SIGBUS, a C++ exception under --catch throw)",
       "the fault stop on a host thread; its backtrace names the user's frame"},
      {kCudaApiError, "CUDA calls of the program failed (a kernel faulted before them)",
       "cuda-gdb's `Cuda Runtime API error detected` / `Cuda Driver error detected` warnings"},
      {kPythonGilHeld, "a CPython thread holds the GIL while it blocks",
       "host stacks with Python frames and the GIL's holder, read from the interpreter's "
       "memory in the stop"},
  };
  return kAll;
}

} // namespace rocplay::heuristics
