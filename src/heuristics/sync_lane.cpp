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
    f.details = {{"dispatch", detail::dispatch_json(d, kernels)},
                 {"routine", routine},
                 {"collective", collective},
                 {"spin", detail::class_json(spin, s)}};
    nlohmann::json spin_pcs = nlohmann::json::array();
    for (const auto* c : pattern->spin) {
      spin_pcs.push_back(detail::hex(c->pc));
    }
    f.details["spin_pcs"] = std::move(spin_pcs);
    f.details["spin_threads"] = pattern->spin_threads;
    nlohmann::json rest_json = nlohmann::json::array();
    for (const auto* c : others) {
      rest_json.push_back(detail::class_json(*c, s));
    }
    f.details["rest"] = std::move(rest_json);
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
