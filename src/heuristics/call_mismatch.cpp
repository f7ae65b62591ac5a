// Heuristic: ranks stuck in collectives they reached by different paths (docs/heuristics.md,
// "collective-call-mismatch").
//
// One snapshot per rank, each with a collective launch that was already in flight at the rank's
// first sample. NCCL matches calls by their order within each communicator, not by line: when
// the ranks' own code reached those calls by different Python lines (two process groups entered
// in different orders, a branch taken on one rank only), each waits for peers that are in a
// different call. The lines where the paths part are the finding.
#include "heuristics/common.hpp"

#include "rocplay/snapshot/frames.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>

namespace rocplay::heuristics {
namespace {

// The main thread's user Python frames, outermost first: the path by which the rank made its
// call. Empty when the rank has no Python frames (a C++ program: lines are compared by the graph).
std::vector<const Frame*> user_path(const Snapshot& s) {
  for (const auto& t : s.host_threads) {
    if (s.pid && t.lwp && static_cast<std::int64_t>(*t.lwp) == *s.pid) {
      auto path = user_python_frames(t);
      std::reverse(path.begin(), path.end());
      return path;
    }
  }
  return {};
}

bool same_line(const Frame* a, const Frame* b) {
  return a->file == b->file && a->line == b->line && a->function == b->function;
}

// The collective launch of this rank that waited: in flight at its first sample and now.
const Dispatch* waited_collective(const Snapshot& s, const RankHistory& h) {
  for (const auto& d : s.dispatches) {
    const auto& first = h.launches_at_first;
    if (detail::is_collective(d) &&
        std::find(first.begin(), first.end(), detail::launch_key(d)) != first.end()) {
      return &d;
    }
  }
  return nullptr;
}

} // namespace

std::vector<Finding> collective_call_mismatch(const std::vector<Snapshot>& ranks,
                                              const std::vector<RankHistory>& history) {
  std::vector<Finding> out;
  if (ranks.size() < 2 || history.size() != ranks.size()) {
    return out;
  }
  std::vector<const Dispatch*> calls;
  std::vector<std::vector<const Frame*>> paths;
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    const Dispatch* d = history[i].samples >= 2 ? waited_collective(ranks[i], history[i]) : nullptr;
    auto path = user_path(ranks[i]);
    if (d == nullptr || path.empty()) {
      return out; // every rank stuck in a collective, each with its Python path, or nothing said
    }
    calls.push_back(d);
    paths.push_back(std::move(path));
  }
  // Where each rank's path parts from rank 0's, outermost frames first.
  std::map<std::size_t, std::pair<const Frame*, const Frame*>> parts;
  for (std::size_t i = 1; i < ranks.size(); ++i) {
    for (std::size_t k = 0; k < paths[0].size() && k < paths[i].size(); ++k) {
      if (!same_line(paths[0][k], paths[i][k])) {
        parts[i] = {paths[0][k], paths[i][k]};
        break;
      }
    }
  }
  if (parts.empty()) {
    return out;
  }
  const auto rank_of = [&](std::size_t i) { return ranks[i].rank ? *ranks[i].rank : int(i); };
  Finding f;
  f.id = std::string(kCollectiveCallMismatch);
  f.severity = Severity::Error;
  f.confidence = 0.7;
  const auto& [first, other] = parts.begin()->second;
  const std::size_t odd = parts.begin()->first;
  f.title = fmt::format("ranks wait in collectives reached by different lines: rank {} from {}, "
                        "rank {} from {}",
                        rank_of(0), frame_where(*first), rank_of(odd), frame_where(*other));
  f.summary =
      "Every rank waits in a collective kernel that was already in flight at its first sample, "
      "but the ranks' own code reached those calls by different lines. NCCL matches calls by "
      "their order within each communicator, not by line: each rank waits for peers that are in "
      "a different call (process groups entered in different orders, or a branch taken on some "
      "ranks only).";
  f.next_step = "Read the lines named: every rank must issue the same collectives in the same "
                "order per process group. PyTorch's Flight Recorder (TORCH_NCCL_TRACE_BUFFER_SIZE, "
                "TORCH_NCCL_DUMP_ON_TIMEOUT=1) names each call's group and sequence number; "
                "`rocplay postmortem` reads its dumps beside these recordings.";
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    std::vector<std::string> lines;
    for (auto it = paths[i].rbegin(); it != paths[i].rend(); ++it) {
      lines.push_back(frame_where(**it));
    }
    f.evidence.push_back(fmt::format("rank {}: {} in flight since its first sample, called by {}",
                                     rank_of(i), short_function_name(calls[i]->kernel_name),
                                     fmt::join(lines, " <- ")));
  }
  for (const Frame* at : {first, other}) {
    Location loc;
    loc.file = at->file;
    loc.line = at->line;
    loc.function = at->function;
    f.locations.push_back(std::move(loc));
  }
  nlohmann::json ranks_json = nlohmann::json::array();
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    ranks_json.push_back(rank_of(i));
  }
  f.details = {{"ranks", ranks_json}, {"kernel", short_function_name(calls[0]->kernel_name)}};
  out.push_back(std::move(f));
  return out;
}

} // namespace rocplay::heuristics
