// Heuristic 1: sync-lane barrier spin (docs/heuristics.md).
//
// A collective kernel's start_sync/end_sync has the first ngpus work-items of each work-group
// poll one flag per peer GPU; the rest of the group waits at the barrier after it. When a peer
// never writes its flag, the waves (AMD) or thread ranges (cuda-gdb) holding those work-items
// all sit in the poll loop (one PC, or a few PCs of that loop when it was caught mid-iteration),
// and every other wave of the dispatch sits elsewhere.
// Works on Wave fields only: wave_in_group 0 for AMD waves, first_work_item 0 for cuda ranges.
#include "heuristics/analysis.hpp"

#include <fmt/format.h>

#include <map>
#include <set>

namespace rocplay::heuristics {
namespace {

using snapshot::WaveClass;

// Which sync routine the spin sits in: `start_sync`, `end_sync`, or empty.
std::string sync_routine(const std::vector<const WaveClass*>& spin, const Snapshot& s) {
  std::vector<std::string_view> names;
  for (const auto* c : spin) {
    names.push_back(c->inline_function);
    names.push_back(c->function);
    if (const SourceLine* sl = c->pc ? s.source_line(*c->pc) : nullptr) {
      names.push_back(sl->inlined_from);
      names.push_back(sl->function);
    }
  }
  for (std::string_view routine : {"start_sync", "end_sync"}) {
    for (auto n : names) {
      if (detail::contains(n, routine)) {
        return std::string(routine);
      }
    }
  }
  return {};
}

// cuda-gdb gives every lane its own PC: the sync lanes of a collective's barrier are the lanes
// of the first warp still in the polling loop, wherever the other lanes of that warp went (a lane
// whose peer wrote its flag has left the loop for the __syncthreads behind it). Lane k polls the
// flag of peer slot k, so each polling lane names a peer whose flag is missing, and the highest
// polling lane bounds ngpus from below.
struct PollingLanes {
  std::vector<const Wave*> ranges;   // the polling ranges, all blocks
  std::set<std::uint64_t> pcs;       // the loop's PCs they were caught at
  std::set<std::uint32_t> lanes;     // work-item indices polling, over every block
  std::set<std::int64_t> workgroups; // blocks (x) with a polling lane
  std::uint64_t threads = 0;         // polling threads in all
  std::uint64_t barrier_pc = 0;      // where most threads of the dispatch wait
  std::uint64_t barrier_threads = 0;
  std::uint64_t total_threads = 0;
};

// NCCL/RCCL kernels poll from every warp with their own protocol: collective-wait reads them.
bool is_nccl_kernel(const Dispatch& d) {
  return detail::contains(d.kernel_name, "nccl") || detail::contains(d.kernel_name, "rccl");
}

std::optional<PollingLanes> polling_lanes(const Dispatch& d, const Snapshot& s) {
  constexpr std::uint32_t kWarp = 32;
  PollingLanes out;
  std::map<std::uint64_t, std::uint64_t> by_pc;
  std::vector<const Wave*> mine;
  for (const auto& w : s.waves) {
    if (w.dispatch != d.dispatch_no || (w.agent && d.agent && w.agent != d.agent) || !w.pc) {
      continue;
    }
    if (!w.first_work_item) {
      return std::nullopt; // not lane-level ranges
    }
    mine.push_back(&w);
    by_pc[*w.pc] += w.count;
    out.total_threads += w.count;
  }
  if (by_pc.size() < 2) {
    return std::nullopt;
  }
  for (const auto& [pc, n] : by_pc) {
    if (n > out.barrier_threads) {
      out.barrier_pc = pc;
      out.barrier_threads = n;
    }
  }
  // Candidates: ranges inside the first warp, away from the barrier's PC.
  std::set<std::uint64_t> outside_warp_pcs;
  for (const auto* w : mine) {
    const std::uint32_t last = w->last_work_item.value_or(*w->first_work_item);
    if (*w->pc == out.barrier_pc) {
      continue;
    }
    if (last < kWarp) {
      out.ranges.push_back(w);
      out.pcs.insert(*w->pc);
    } else {
      outside_warp_pcs.insert(*w->pc);
    }
  }
  if (out.ranges.empty()) {
    return std::nullopt;
  }
  // Lanes of the first warp past the loop wait at the barrier's PC for their warp (another PC
  // than the other warps' barrier): the loop comes first in the code, so the polling lanes are
  // those on the source line (or, without lines, within a loop's reach) of the lowest such PC.
  const std::uint64_t lowest = *out.pcs.begin();
  const SourceLine* lowest_line = s.source_line(lowest);
  auto in_loop = [&](std::uint64_t pc) {
    const SourceLine* sl = s.source_line(pc);
    if (lowest_line != nullptr && lowest_line->line && sl != nullptr && sl->line) {
      return sl->file == lowest_line->file && sl->line == lowest_line->line;
    }
    return pc - lowest <= detail::kLoopWindow;
  };
  std::erase_if(out.ranges, [&](const Wave* w) { return !in_loop(*w->pc); });
  std::erase_if(out.pcs, [&](std::uint64_t pc) { return !in_loop(pc); });
  if (out.ranges.empty() || out.pcs.size() > 4 ||
      *out.pcs.rbegin() - *out.pcs.begin() > detail::kLoopWindow) {
    return std::nullopt;
  }
  // The loop holds sync lanes only: no thread beyond the first warp polls there.
  for (std::uint64_t pc : outside_warp_pcs) {
    if (pc + detail::kLoopWindow >= *out.pcs.begin() &&
        pc <= *out.pcs.rbegin() + detail::kLoopWindow) {
      return std::nullopt;
    }
  }
  for (const auto* w : out.ranges) {
    const std::uint32_t last = w->last_work_item.value_or(*w->first_work_item);
    for (std::uint32_t l = *w->first_work_item; l <= last; ++l) {
      out.lanes.insert(l);
    }
    out.threads += w->count;
    if (w->workgroup[0]) {
      for (std::int64_t x = *w->workgroup[0];
           x <= w->workgroup_last[0].value_or(*w->workgroup[0]) && out.workgroups.size() < 65536;
           ++x) {
        out.workgroups.insert(x);
      }
    }
  }
  return out;
}

std::string lane_list(const std::set<std::uint32_t>& lanes) {
  std::vector<snapshot::Range> ranges;
  for (std::uint32_t l : lanes) {
    if (!ranges.empty() && ranges.back().last + 1 == l) {
      ranges.back().last = l;
    } else {
      ranges.push_back({l, l});
    }
  }
  return snapshot::format_ranges(ranges);
}

Finding lane_finding(const Dispatch& d, const PollingLanes& pl, const Snapshot& s,
                     detail::Kernels& kernels, const Context& ctx) {
  const std::string kernel = detail::kernel_label(d);
  const std::uint64_t loop_pc = *pl.pcs.begin();
  const SourceLine* sl = s.source_line(loop_pc);
  const SourceLine* bl = s.source_line(pl.barrier_pc);
  auto place = [](const SourceLine* l, std::uint64_t pc) {
    if (l != nullptr && !l->file.empty() && l->line) {
      return fmt::format("{}:{}", l->file, *l->line);
    }
    if (l != nullptr && !l->function.empty()) {
      return l->offset ? fmt::format("{}+{}", short_function_name(l->function), *l->offset)
                       : short_function_name(l->function);
    }
    return detail::hex(pc);
  };
  const std::uint32_t bound = *pl.lanes.rbegin() + 1;
  const std::string lanes = lane_list(pl.lanes);
  Finding f;
  f.id = std::string(kSyncLaneBarrierSpin);
  f.confidence = detail::is_collective(d) ? 0.85 : 0.7;
  f.severity = f.confidence >= 0.8 ? Severity::Critical : Severity::Error;
  f.title = fmt::format("{} waits at its cross-rank barrier: lane(s) {} still poll the flag of "
                        "peer slot(s) {}, which never came",
                        short_function_name(kernel), lanes, lanes);
  f.summary = fmt::format(
      "{} ({}): in {} block(s) the lanes {} of the first warp still sit in the flag-polling loop "
      "at {}, while {} of the dispatch's {} threads have passed it and wait behind it (most at "
      "{}, the __syncthreads). Lane k polls the flag peer k writes, so the peer(s) in slot(s) "
      "{} never wrote theirs for this call: a rank that skipped or has not reached the "
      "collective, or ran one call fewer.",
      kernel, detail::dispatch_label(d), pl.workgroups.size(), lanes, place(sl, loop_pc),
      pl.total_threads - pl.threads, pl.total_threads, place(bl, pl.barrier_pc), lanes);
  f.evidence.push_back(fmt::format("{}: {}", detail::dispatch_label(d), kernel));
  if (auto k = detail::kernel_line(d, kernels); !k.empty()) {
    f.evidence.push_back(k);
  }
  f.evidence.push_back(fmt::format("sync lanes: {} thread(s), lane(s) {} of {} block(s), at {} "
                                   "PC(s) of the polling loop ({})",
                                   pl.threads, lanes, pl.workgroups.size(), pl.pcs.size(),
                                   place(sl, loop_pc)));
  f.evidence.push_back(fmt::format(
      "past the loop: {} of {} threads, {} of them at {} ({})", pl.total_threads - pl.threads,
      pl.total_threads, pl.barrier_threads, detail::hex(pl.barrier_pc), place(bl, pl.barrier_pc)));
  for (std::uint32_t l : pl.lanes) {
    f.evidence.push_back(fmt::format("lane {} polls the flag of peer slot {}: missing", l, l));
  }
  const int ngpus = ctx.ngpus.value_or(static_cast<int>(bound));
  f.evidence.push_back(ctx.ngpus
                           ? fmt::format("ngpus = {} (given)", *ctx.ngpus)
                           : fmt::format("ngpus >= {} (the highest polling lane + 1)", bound));
  f.dispatches = {{d.id, detail::kernel_label(d)}};
  f.details = {{"dispatch", detail::dispatch_json(d, kernels)},
               {"routine", ""},
               {"collective", detail::is_collective(d)},
               {"lane_level", true},
               {"polling_lanes", pl.lanes},
               {"missing_peer_slots", pl.lanes},
               {"spin_threads", pl.threads},
               {"barrier_pc", detail::hex(pl.barrier_pc)},
               {"ngpus", ngpus},
               {"ngpus_source", ctx.ngpus ? "given" : "at least: the highest polling lane + 1"}};
  nlohmann::json spin_pcs = nlohmann::json::array();
  for (std::uint64_t pc : pl.pcs) {
    spin_pcs.push_back(detail::hex(pc));
  }
  f.details["spin_pcs"] = std::move(spin_pcs);
  Location l;
  l.pc = loop_pc;
  if (sl != nullptr) {
    l.file = sl->file;
    l.line = sl->line;
    l.function = sl->function;
    if ((l.file.empty() || !l.line) && sl->offset) {
      l.function = fmt::format("{}+{}", sl->function, *sl->offset);
    }
  }
  const Wave* first = pl.ranges.front();
  if (l.function.empty()) {
    l.function = std::string(first->function.view());
  }
  f.locations.push_back(std::move(l));
  f.next_step = fmt::format(
      "Find the rank in slot(s) {} and what it is doing instead (take the same snapshot of "
      "every rank): it skipped this call or is behind by one; unequal call counts desynchronise "
      "the flag epochs. Read the polling loop at {}. Do not add synchronize() calls.",
      lanes, place(sl, loop_pc));
  return f;
}

} // namespace

std::vector<Finding> sync_lane_barrier_spin(const Snapshot& s, const Context& ctx) {
  detail::Analysis analysis(s);
  return sync_lane_barrier_spin(analysis, ctx);
}

std::vector<Finding> sync_lane_barrier_spin(detail::Analysis& analysis, const Context& ctx) {
  const Snapshot& s = analysis.snapshot();
  std::vector<Finding> out;
  if (s.waves.empty()) {
    return out;
  }
  const auto& classes = analysis.classes();
  detail::Kernels& kernels = analysis.kernels();
  for (const auto& d : s.dispatches) {
    auto cs = detail::classes_of(classes, d);
    if (cs.empty()) {
      continue;
    }
    // The sync lanes in one polling loop, holding nothing else; the rest elsewhere.
    auto pattern = detail::leader_spin(cs, s);
    // cuda-gdb: lane by lane, when the warp-level pattern misses them or anchors on the barrier.
    if (s.debugger == DebuggerKind::CudaGdb && !is_nccl_kernel(d)) {
      if (auto pl = polling_lanes(d, s)) {
        // The warp-level pattern stands when it found this loop; the lanes replace it when it
        // found nothing or anchored elsewhere (the barrier behind the loop).
        const bool same =
            pattern && pattern->spin.front()->pc && pl->pcs.count(*pattern->spin.front()->pc) != 0;
        if (!same && detail::is_collective(d)) {
          out.push_back(lane_finding(d, *pl, s, kernels, ctx));
          continue;
        }
      }
    }
    if (!pattern) {
      continue;
    }
    const WaveClass& spin = *pattern->spin.front();
    const auto& others = pattern->rest;
    const std::size_t unknown = pattern->unknown;
    std::string routine = sync_routine(pattern->spin, s);
    bool collective = detail::is_collective(d);
    if (routine.empty() && (!collective || others.empty())) {
      continue;
    }

    std::optional<int> ngpus = ctx.ngpus;
    std::string ngpus_source = "given";
    if (!ngpus && pattern->work_items) {
      ngpus = static_cast<int>(pattern->work_items->last - pattern->work_items->first + 1);
      ngpus_source = "work-items of the spinning range";
    }
    if (!ngpus && s.agents.size() > 1) {
      ngpus = static_cast<int>(s.agents.size());
      ngpus_source = "agents visible to the process";
    }

    const std::string kernel = detail::kernel_label(d);
    const std::string at = detail::where(spin, s);
    std::uint64_t rest_waves = 0;
    for (const auto* c : others) {
      rest_waves += c->threads;
    }
    std::string rest =
        others.empty() ? std::string()
                       : fmt::format("; the other {} {} of the dispatch wait at {} other PC(s) "
                                     "(the work-group barrier behind it)",
                                     rest_waves, spin.threads != spin.waves ? "threads" : "waves",
                                     others.size());
    Finding f;
    f.id = std::string(kSyncLaneBarrierSpin);
    f.confidence = !routine.empty() && collective ? 0.9 : !routine.empty() ? 0.8 : 0.6;
    if (unknown) {
      f.confidence -= 0.1; // waves with `?` slots might be sync lanes elsewhere
    }
    f.severity = f.confidence >= 0.8 ? Severity::Critical : Severity::Error;
    std::string lanes =
        ngpus ? fmt::format("work-items 0-{}", *ngpus - 1) : std::string("the first work-items");
    std::string routine_name = routine.empty() ? std::string("a flag-polling loop") : routine;
    f.title = fmt::format("{} spins in {}: a peer rank never wrote its flag",
                          short_function_name(kernel), routine_name);
    std::string after;
    if (routine == "start_sync") {
      after = " start_sync runs first, so end_sync and everything after it never ran: they are "
              "off the deadlock path.";
    } else if (routine == "end_sync") {
      after = " This rank finished its exchange; a peer never reached end_sync with the same "
              "flag value.";
    }
    f.summary = fmt::format(
        "{} ({}) is stuck in a cross-rank barrier: every wave holding {} (the sync lanes, one "
        "per peer GPU) sits in one polling loop in {} ({}{}), polling a flag that some rank never "
        "wrote{}.{}",
        kernel, detail::dispatch_label(d), lanes, routine_name, at,
        pattern->spin.size() > 1
            ? fmt::format("; sampled at {} PCs of the loop", pattern->spin.size())
            : std::string(),
        rest, after);
    f.evidence.push_back(fmt::format("{}: {}", detail::dispatch_label(d), kernel));
    if (auto k = detail::kernel_line(d, kernels); !k.empty()) {
      f.evidence.push_back(k);
    }
    for (const auto* c : pattern->spin) {
      f.evidence.push_back(fmt::format("sync lanes: {}", detail::describe(*c, s)));
    }
    for (const auto* c : others) {
      f.evidence.push_back(fmt::format("rest: {}", detail::describe(*c, s)));
    }
    if (ngpus) {
      f.evidence.push_back(fmt::format("ngpus = {} ({})", *ngpus, ngpus_source));
    }
    if (unknown) {
      f.evidence.push_back(
          fmt::format("{} wave(s) of the dispatch have unknown (`?`) coordinates", unknown));
    }
    f.dispatches = {{d.id, detail::kernel_label(d)}};
    f.details = {{"dispatch", detail::dispatch_json(d, kernels)},
                 {"routine", routine},
                 {"collective", collective}};
    if (kernels.details) {
      f.details["spin"] = detail::class_json(spin, s);
    }
    nlohmann::json spin_pcs = nlohmann::json::array();
    for (const auto* c : pattern->spin) {
      spin_pcs.push_back(detail::hex(c->pc));
    }
    f.details["spin_pcs"] = std::move(spin_pcs);
    f.details["spin_threads"] = pattern->spin_threads;
    if (kernels.details) {
      nlohmann::json rest_json = nlohmann::json::array();
      for (const auto* c : others) {
        rest_json.push_back(detail::class_json(*c, s));
      }
      f.details["rest"] = std::move(rest_json);
    }
    if (ngpus) {
      f.details["ngpus"] = *ngpus;
      f.details["ngpus_source"] = ngpus_source;
    }
    f.locations.push_back(detail::location_of(spin, s));
    f.next_step = fmt::format(
        "Anchor on {} at PC {} ({}) and read that {} loop: it waits for one flag per peer. Take "
        "the same snapshot on every rank (one worker PID each) and find the rank that is not in "
        "{}: a different grid size or a flag counter desynchronised by unequal call counts (e.g. "
        "uneven TBO micro-batch splits) makes one rank skip or repeat the collective.{} Do not "
        "add synchronize() calls.",
        short_function_name(kernel), detail::hex(spin.pc), at, routine_name,
        short_function_name(kernel),
        routine == "start_sync" ? " Do not edit end_sync: it is not on the path." : "");
    out.push_back(std::move(f));
  }
  return out;
}

} // namespace rocplay::heuristics
