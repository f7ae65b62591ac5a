// Heuristic 6: missing rank across per-rank snapshots (docs/heuristics.md).
//
// One snapshot per rank of one hang. If most ranks have the same collective in flight and some
// have none, those are the ranks the others wait for. If every rank has it but with different
// grid sizes, the odd ones out are.
#include "heuristics/common.hpp"

#include "rocplay/snapshot/frames.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

namespace rocplay::heuristics {
namespace {

int rank_of(const Snapshot& s, std::size_t index) {
  return s.rank ? *s.rank : static_cast<int>(index);
}

std::string grid_text(const std::vector<std::uint64_t>& g) {
  return fmt::format("[{}]", fmt::join(g, ","));
}

// What a rank is doing instead, in one line.
std::string doing(const Snapshot& s) {
  std::vector<std::string> parts;
  for (const auto& d : s.dispatches) {
    parts.push_back(short_function_name(detail::kernel_label(d)));
  }
  std::string gpu = parts.empty() ? std::string("no dispatch in flight")
                                  : fmt::format("in flight: {}", fmt::join(parts, ", "));
  // The user's frame of the first thread that is not a runtime's own.
  for (const auto& t : s.host_threads) {
    if (!t.frames.empty() && !detail::is_runtime_helper_thread(t.name)) {
      return fmt::format("{}; host thread {} in {}", gpu, t.id, detail::thread_where(t));
    }
  }
  return gpu;
}

// What the first samples of the ranks in the collective say: whether one of them had this very
// launch in flight already (it waited), and whether one was sampled only once.
struct Seen {
  bool known = true; // every rank in it has a history
  bool waited = false;
  bool one_sample = false;
};

Seen seen_before(
    const std::vector<std::map<std::string, std::vector<const Dispatch*>>>& collectives,
    const std::string& kernel, const std::vector<RankHistory>& history) {
  Seen seen;
  seen.known = !history.empty();
  for (std::size_t i = 0; i < collectives.size() && seen.known; ++i) {
    const auto it = collectives[i].find(kernel);
    if (it == collectives[i].end()) {
      continue;
    }
    const RankHistory& h = history[i];
    if (h.samples == 0) {
      seen.known = false;
    } else if (h.samples == 1) {
      seen.one_sample = true;
    }
    for (const Dispatch* d : it->second) {
      const auto& first = h.launches_at_first;
      seen.waited = seen.waited ||
                    std::find(first.begin(), first.end(), detail::launch_key(*d)) != first.end();
    }
  }
  return seen;
}

} // namespace

RankHistory rank_history(const std::vector<Sample>& samples) {
  RankHistory h;
  h.samples = std::max<std::size_t>(samples.size(), 1);
  if (samples.size() < 2) {
    return h;
  }
  for (const auto& d : samples.front().snapshot.dispatches) {
    if (detail::is_collective(d)) {
      h.launches_at_first.push_back(detail::launch_key(d));
    }
  }
  return h;
}

std::vector<Finding> missing_rank(const std::vector<Snapshot>& ranks,
                                  const std::vector<RankHistory>& history) {
  std::vector<Finding> out;
  if (ranks.size() < 2 || (!history.empty() && history.size() != ranks.size())) {
    return out;
  }
  // Collective kernels in flight per rank (by base name), with their grids.
  std::vector<std::map<std::string, std::vector<const Dispatch*>>> collectives(ranks.size());
  std::map<std::string, std::size_t> ranks_having;
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    for (const auto& d : ranks[i].dispatches) {
      if (detail::is_collective(d)) {
        collectives[i][short_function_name(d.kernel_name)].push_back(&d);
      }
    }
    for (const auto& [name, ds] : collectives[i]) {
      ranks_having[name] += 1;
    }
  }
  if (ranks_having.empty()) {
    return out;
  }
  // The collective most ranks are in.
  auto best = ranks_having.begin();
  for (auto it = ranks_having.begin(); it != ranks_having.end(); ++it) {
    if (it->second > best->second) {
      best = it;
    }
  }
  const std::string& kernel = best->first;
  const std::size_t in = best->second;
  const std::size_t n = ranks.size();

  // A rank whose GPU side cuda-gdb could not attach to is unseen, not missing.
  const auto unseen = [&](std::size_t i) { return !ranks[i].gpu_attach_error.empty(); };
  std::vector<std::size_t> missing;
  for (std::size_t i = 0; i < n; ++i) {
    if (!collectives[i].count(kernel) && !unseen(i)) {
      missing.push_back(i);
    }
  }

  Finding f;
  f.id = std::string(kMissingRank);
  f.severity = Severity::Critical;
  nlohmann::json per_rank = nlohmann::json::array();

  const Seen seen = seen_before(collectives, kernel, history);
  if (seen.known && !seen.one_sample && !seen.waited) {
    // Every rank in it launched it since its first sample: a job that keeps completing its
    // collectives, caught with one rank a step ahead (a healthy job looked at, issue 40).
    return out;
  }
  if (!missing.empty()) {
    // The quorum: how many ranks vouch for "this collective is where everyone should be". With
    // TP=2 one rank is all there is (the lone rank may simply be early), so the finding stands but
    // says so with less certainty; from four ranks in it the quorum is solid.
    const double quorum = std::min(1.0, 0.55 + 0.15 * static_cast<double>(in - 1));
    f.confidence = (missing.size() == 1 ? 0.85 : 0.65) * quorum;
    f.severity = f.confidence >= 0.6 ? Severity::Critical : Severity::Error;
    if (seen.known && seen.one_sample) {
      // One moment cannot tell a rank that never arrives from one a few milliseconds late.
      f.confidence *= 0.5;
      f.severity = Severity::Warning;
    }
    std::vector<int> ids;
    for (auto i : missing) {
      ids.push_back(rank_of(ranks[i], i));
    }
    if (missing.size() == 1) {
      f.rank = ids.front();
    }
    f.title = fmt::format("rank{} {} never entered {}; {} for it", missing.size() == 1 ? "" : "s",
                          fmt::join(ids, ", "), kernel,
                          in == 1 ? std::string("the other rank waits")
                                  : fmt::format("the other {} ranks wait", in));
    f.summary = fmt::format(
        "{} of {} ranks {} {} in flight; rank{} {} {} not. A collective completes only when "
        "every rank joins, so {} waiting for the flag of the rank{} that never arrived.",
        in, n, in == 1 ? "has" : "have", kernel, missing.size() == 1 ? "" : "s",
        fmt::join(ids, ", "), missing.size() == 1 ? "does" : "do",
        in == 1 ? std::string("the rank inside it spins")
                : fmt::format("the {} ranks inside it spin", in),
        missing.size() == 1 ? "" : "s");
    for (std::size_t i = 0; i < n; ++i) {
      if (unseen(i)) {
        f.evidence.push_back(fmt::format("rank {}: GPU state unknown (cuda-gdb's attach to its GPU "
                                         "side failed)",
                                         rank_of(ranks[i], i)));
        per_rank.push_back({{"rank", rank_of(ranks[i], i)}, {"gpu_state", "unknown"}});
        continue;
      }
      bool is_missing = !collectives[i].count(kernel);
      std::string line = is_missing ? doing(ranks[i]) : fmt::format("in {}", kernel);
      if (!is_missing) {
        const Dispatch* d = collectives[i].at(kernel).front();
        line += fmt::format(" ({}, grid {})", detail::dispatch_label(*d), grid_text(d->grid));
      }
      f.evidence.push_back(
          fmt::format("rank {}{}: {}", rank_of(ranks[i], i), is_missing ? " (missing)" : "", line));
      nlohmann::json j = {{"rank", rank_of(ranks[i], i)}, {"in_collective", !is_missing}};
      if (ranks[i].pid) {
        j["pid"] = *ranks[i].pid;
      }
      if (is_missing) {
        j["doing"] = line;
      }
      per_rank.push_back(std::move(j));
    }
    const Snapshot& m = ranks[missing.front()];
    const bool python_read = detail::has_python_frames(m);
    f.next_step = fmt::format(
        "Look at rank {} first{}: find why it did not reach {}: a different batch shape or "
        "micro-batch split, an extra or missing call that desynchronised the collective's call "
        "count, or an earlier step still running (see what it has in flight). {} The ranks "
        "spinning in the collective are victims; do not edit their barrier code or add "
        "synchronize() calls.",
        ids.front(), m.pid ? fmt::format(" (PID {})", *m.pid) : std::string(), kernel,
        python_read ? std::string("Its Python stack is in its report (host threads, with "
                                  "the Python frames read from the interpreter).")
                    : fmt::format("`py-spy dump --pid {}` shows its Python stack.",
                                  m.pid ? fmt::format("{}", *m.pid) : std::string("<pid>")));
    if (seen.known && seen.one_sample) {
      f.evidence.push_back("one sample: a rank only late for the collective looks the same as one "
                           "that never arrives; a second sample tells them apart (the default "
                           "takes two)");
    } else if (seen.known && seen.waited) {
      f.evidence.push_back(fmt::format("{} was in flight already at the first sample", kernel));
    }
    f.evidence.push_back(fmt::format(
        "quorum: {} of {} ranks in {}{}", in, n, kernel,
        quorum < 1.0 ? "; with so few ranks in it, the missing rank may also just be late" : ""));
    f.kernel = kernel;
    f.details = {{"kernel", kernel},
                 {"ranks", per_rank},
                 {"missing", ids},
                 {"quorum", {{"in_collective", in}, {"ranks", n}, {"factor", quorum}}}};
    out.push_back(std::move(f));
    return out;
  }

  // Everyone seen is in it: a different grid size marks the odd rank(s). A rank whose GPU side
  // is unseen has no grid to compare.
  std::map<std::vector<std::uint64_t>, std::vector<std::size_t>> by_grid;
  for (std::size_t i = 0; i < n; ++i) {
    if (const auto it = collectives[i].find(kernel); it != collectives[i].end()) {
      by_grid[it->second.front()->grid].push_back(i);
    }
  }
  if (by_grid.size() < 2) {
    return out;
  }
  auto majority = by_grid.begin();
  for (auto it = by_grid.begin(); it != by_grid.end(); ++it) {
    if (it->second.size() > majority->second.size()) {
      majority = it;
    }
  }
  std::vector<int> odd;
  for (const auto& [grid, idx] : by_grid) {
    if (grid == majority->first) {
      continue;
    }
    for (auto i : idx) {
      odd.push_back(rank_of(ranks[i], i));
    }
  }
  f.confidence = odd.size() == 1 ? 0.75 : 0.55;
  if (odd.size() == 1) {
    f.rank = odd.front();
  }
  f.title = fmt::format("rank{} {} launched {} with a different grid than the other ranks",
                        odd.size() == 1 ? "" : "s", fmt::join(odd, ", "), kernel);
  f.summary = fmt::format(
      "Every rank is in {}, but not with the same grid: {} ranks use {}, rank{} {} a different "
      "one. The sync flags are laid out per block, so a rank with a different grid never writes "
      "(or waits for) the flags the others expect.",
      kernel, majority->second.size(), grid_text(majority->first), odd.size() == 1 ? "" : "s",
      fmt::join(odd, ", "));
  for (std::size_t i = 0; i < n; ++i) {
    const Dispatch* d = collectives[i].at(kernel).front();
    f.evidence.push_back(fmt::format("rank {}: {} grid {} workgroup {}", rank_of(ranks[i], i),
                                     detail::dispatch_label(*d), grid_text(d->grid),
                                     grid_text(d->workgroup)));
    per_rank.push_back({{"rank", rank_of(ranks[i], i)}, {"grid", d->grid}});
  }
  f.next_step = fmt::format(
      "Find why rank {} computed a different grid for {}: the grid comes from the input size, so "
      "compare the batch shapes each rank saw at this step. Do not add synchronize() calls.",
      odd.front(), kernel);
  f.kernel = kernel;
  f.details = {{"kernel", kernel}, {"ranks", per_rank}, {"odd", odd}};
  out.push_back(std::move(f));
  return out;
}

} // namespace rocplay::heuristics
