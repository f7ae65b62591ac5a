// Heuristic 1 when positions are unknown (docs/heuristics.md, "sync-lane barrier spin").
//
// A process not started with HSA_ENABLE_DEBUG=1 leaves unset the registers from which the debugger
// reads a wave's dispatch and position, so after an attach the waves launched before it read
// `AMDGPU Wave 1:2:?:1 (?,?,?)/?` (ROCgdb's gcore-after-attach test). sync_lane.cpp needs the
// slot in the work-group to tell the sync lanes from the rest; here the waves are tied to their
// dispatch by code address instead (the PC inside the dispatch's kernel, or its name), and what
// still holds without positions is said: every such wave of a collective sits at one polling PC
// in start_sync / end_sync. Kept apart from sync_lane.cpp so each can change on its own.
#include "heuristics/analysis.hpp"
#include "rocplay/kernels/kernel_names.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <set>

namespace rocplay::heuristics {
namespace {

using snapshot::WaveClass;

constexpr std::string_view kNextTime =
    "start the process with HSA_ENABLE_DEBUG=1 (it costs nothing measurable) so waves launched "
    "before an attach carry their dispatch, work-group and slot; or take the snapshot again: "
    "waves launched after the attach have them";

bool in_sync_routine(const WaveClass& c, const Snapshot& s, std::string& routine) {
  std::vector<std::string_view> names = {c.inline_function, c.function};
  if (const SourceLine* sl = c.pc ? s.source_line(*c.pc) : nullptr) {
    names.push_back(sl->inlined_from);
    names.push_back(sl->function);
  }
  for (std::string_view r : {"start_sync", "end_sync"}) {
    for (auto n : names) {
      if (n.find(r) != std::string_view::npos) {
        routine = std::string(r);
        return true;
      }
    }
  }
  return false;
}

// What ties a class of loose waves to a dispatch, or empty: the PC past the kernel's entry and
// before any other kernel's (the code address), the function being the kernel, or, where the text
// gave no kernel address, the queue when the dispatch is the only one of it in flight.
std::string tie(const WaveClass& c, const Dispatch& d, const Snapshot& s) {
  if ((c.agent && d.agent && *c.agent != *d.agent) ||
      (c.queue && d.queue && *c.queue != *d.queue)) {
    return {};
  }
  if (c.pc && d.kernel_address && *c.pc >= *d.kernel_address &&
      *c.pc - *d.kernel_address < (std::uint64_t{1} << 24)) {
    bool other_between = false;
    for (const auto& other : s.dispatches) {
      other_between =
          other_between || (other.kernel_address && *other.kernel_address > *d.kernel_address &&
                            *other.kernel_address <= *c.pc);
    }
    if (!other_between) {
      return "code address";
    }
  }
  if (!d.kernel_name.empty() && !c.function.empty() &&
      short_function_name(c.function) == short_function_name(d.kernel_name)) {
    return "kernel name";
  }
  if (!d.kernel_address && c.agent && c.queue && d.agent && d.queue) {
    std::size_t same_queue = 0;
    for (const auto& other : s.dispatches) {
      same_queue += (other.agent == d.agent && other.queue == d.queue) ? 1 : 0;
    }
    if (same_queue == 1) {
      return "queue (the only dispatch of it in flight)";
    }
  }
  return {};
}

} // namespace

std::vector<Finding> sync_lane_spin_unknown_positions(detail::Analysis& analysis,
                                                      const std::set<std::string>& already) {
  const Snapshot& s = analysis.snapshot();
  std::vector<Finding> out;
  const auto& classes = analysis.classes();
  std::vector<const WaveClass*> loose; // waves with no dispatch of the snapshot
  for (const auto& c : classes) {
    if ((!c.dispatch || c.unattributed > 0) && c.pc) {
      loose.push_back(&c);
    }
  }
  if (loose.empty()) {
    return out;
  }
  detail::Kernels& kernels = analysis.kernels();
  for (const auto& d : s.dispatches) {
    if (already.count(d.id)) {
      continue;
    }
    std::vector<const WaveClass*> tied;
    std::string tied_by;
    for (const auto* c : loose) {
      if (std::string how = tie(*c, d, s); !how.empty()) {
        tied.push_back(c);
        tied_by = tied_by.empty() ? how : tied_by;
      }
    }
    if (tied.empty()) {
      continue;
    }
    std::vector<const WaveClass*> spin;
    std::vector<const WaveClass*> rest;
    std::string routine;
    for (const auto* c : tied) {
      std::string r;
      if (in_sync_routine(*c, s, r)) {
        spin.push_back(c);
        routine = routine.empty() ? r : routine;
      } else {
        rest.push_back(c);
      }
    }
    // One polling loop: a few PCs at most, all in one sync routine.
    if (spin.empty() || spin.size() > 3) {
      continue;
    }
    std::sort(spin.begin(), spin.end(),
              [](const WaveClass* a, const WaveClass* b) { return a->waves > b->waves; });
    const bool collective = detail::is_collective(d);
    std::size_t spin_waves = 0;
    for (const auto* c : spin) {
      spin_waves += c->waves;
    }
    std::size_t rest_waves = 0;
    for (const auto* c : rest) {
      rest_waves += c->waves;
    }
    const WaveClass& head = *spin.front();
    const std::string kernel = detail::kernel_label(d);
    const std::string at = detail::where(head, s);
    Finding f;
    f.id = std::string(kSyncLaneBarrierSpin);
    f.confidence = collective ? 0.8 : 0.7;
    f.severity = collective ? Severity::Critical : Severity::Error;
    f.title = fmt::format("{} spins in {}: a peer rank never wrote its flag (wave positions "
                          "unknown)",
                          short_function_name(kernel), routine);
    f.summary = fmt::format(
        "{} ({}) is stuck in a cross-rank barrier: {} of its waves sit in one polling loop in {} "
        "({}){}. The debugger could not read these waves' dispatch or position (`?` in their "
        "ids: attached to a process not started with HSA_ENABLE_DEBUG=1), so they are tied to "
        "the dispatch by {}, and which of them hold the sync lanes (the first work-items of each "
        "work-group) is unknown.{}",
        kernel, detail::dispatch_label(d), spin_waves, routine, at,
        rest.empty() ? std::string()
                     : fmt::format("; {} other wave(s) of the kernel sit at {} other PC(s)",
                                   rest_waves, rest.size()),
        tied_by,
        routine == "start_sync" ? " start_sync runs first: end_sync and everything after it are "
                                  "off the deadlock path."
                                : std::string());
    f.evidence.push_back(fmt::format("{}: {}", detail::dispatch_label(d), kernel));
    if (auto k = detail::kernel_line(d, kernels); !k.empty()) {
      f.evidence.push_back(k);
    }
    for (const auto* c : spin) {
      f.evidence.push_back(fmt::format("polling: {}", detail::describe(*c, s)));
    }
    for (const auto* c : rest) {
      f.evidence.push_back(fmt::format("rest: {}", detail::describe(*c, s)));
    }
    f.evidence.push_back(
        fmt::format("unknown: the waves' dispatch, work-group and slot (tied by {}); next time: {}",
                    tied_by, kNextTime));
    f.dispatches = {{d.id, detail::kernel_label(d)}};
    f.details = {{"dispatch", detail::dispatch_json(d, kernels)},
                 {"routine", routine},
                 {"collective", collective},
                 {"positions", "unknown"},
                 {"tied_by", tied_by},
                 {"spin", detail::class_json(head, s)},
                 {"spin_waves", spin_waves},
                 {"rest_waves", rest_waves}};
    f.locations.push_back(detail::location_of(head, s));
    f.next_step = fmt::format(
        "Anchor on {} at PC {} ({}) and read that {} loop: it waits for one flag per peer. Take "
        "the same snapshot on every rank and find the rank that is not in {}. To see which waves "
        "are the sync lanes, {}.",
        short_function_name(kernel), detail::hex(head.pc), at, routine, short_function_name(kernel),
        kNextTime);
    out.push_back(std::move(f));
  }
  return out;
}

} // namespace rocplay::heuristics
