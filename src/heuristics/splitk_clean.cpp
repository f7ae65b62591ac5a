// Heuristic 2: concurrent split-K `_clean` dispatches (docs/heuristics.md).
//
// Split-K GEMMs finish with a reduction that atomically counts arriving blocks in a workspace.
// When that workspace is a per-process singleton (cached per device only) and two `_clean`
// kernels run at once on different queues of one device, their counters interleave and neither
// reaches its expected count.
#include "heuristics/analysis.hpp"

#include <fmt/format.h>

#include <map>
#include <optional>

namespace rocplay::heuristics {
namespace {

// One `_clean` kernel left in flight, its reduction leaders (work-item 0 of each work-group)
// polling the workspace counter while the rest wait at the barrier: the counter never reached
// its count. Its sibling on the other stream may already have finished (real cuda-gdb recording
// fixtures/cuda-gdb/splitk-clean-h200.mi), so this is the race's aftermath, said with less
// confidence.
std::optional<Finding> single_clean(const Snapshot& s, const Dispatch& d,
                                    const std::vector<snapshot::WaveClass>& classes,
                                    detail::Kernels& kernels) {
  auto cs = detail::classes_of(classes, d);
  auto pattern = detail::leader_spin(cs, s);
  if (!pattern || pattern->rest.empty()) {
    return std::nullopt;
  }
  const auto& spin = *pattern->spin.front();
  const std::string name = short_function_name(d.kernel_name);
  Finding f;
  f.id = std::string(kSplitKCleanRace);
  f.severity = Severity::Error;
  f.confidence = 0.45;
  f.title = fmt::format("split-K `_clean` kernel {} waits on its workspace counter", name);
  f.summary = fmt::format(
      "{} ({}) is in flight with its reduction leaders (work-item 0 of {} work-group(s)) polling "
      "one loop in {} while the rest wait behind it: the split-K workspace counter never reached "
      "its expected count. Only this `_clean` kernel is in flight now; if another ran "
      "concurrently on another stream of this device, its increments landed in the same "
      "per-process workspace counter and it finished, leaving this one to spin.",
      d.kernel_name, detail::dispatch_label(d), pattern->spin_workgroups, detail::where(spin, s));
  f.evidence.push_back(fmt::format("{}: {}", detail::dispatch_label(d), d.kernel_name));
  if (auto k = detail::kernel_line(d, kernels); !k.empty()) {
    f.evidence.push_back(k);
  }
  for (const auto* c : pattern->spin) {
    f.evidence.push_back(fmt::format("leaders: {}", detail::describe(*c, s)));
  }
  for (const auto* c : pattern->rest) {
    f.evidence.push_back(fmt::format("rest: {}", detail::describe(*c, s)));
  }
  f.evidence.push_back("only one `_clean` kernel in flight on this device");
  nlohmann::json dj = detail::dispatch_json(d, kernels);
  nlohmann::json cj = nlohmann::json::array();
  for (const auto& c : cs) {
    cj.push_back(detail::class_json(c, s));
  }
  dj["wave_classes"] = std::move(cj);
  f.kernel = detail::kernel_label(d);
  f.dispatches = {{d.id, f.kernel}};
  f.details = {{"dispatches", nlohmann::json::array({std::move(dj)})},
               {"single", true},
               {"queues_known", d.queue.has_value()},
               {"fences_known", !d.fence_text.empty()}};
  f.locations.push_back(detail::location_of(spin, s));
  f.next_step = fmt::format(
      "Anchor on {} at PC {} ({}): read the loop that waits for the counter. Then find which "
      "other split-K `_clean` kernel shares its workspace (grep the kernel names in the library's "
      "Python wrapper, e.g. aiter/ops/): if the workspace is cached per device only, key it by "
      "(device, stream). A hang that disappears with HIP_LAUNCH_BLOCKING=1 (or "
      "CUDA_LAUNCH_BLOCKING=1) points the same way. Serialising the streams or adding "
      "synchronize() only hides the race.",
      name, detail::hex(spin.pc), detail::where(spin, s));
  return f;
}

} // namespace

std::vector<Finding> splitk_clean_race(const Snapshot& s) {
  detail::Analysis analysis(s);
  return splitk_clean_race(analysis);
}

std::vector<Finding> splitk_clean_race(detail::Analysis& analysis) {
  const Snapshot& s = analysis.snapshot();
  std::vector<Finding> out;
  // In-flight `_clean` dispatches, by agent (unknown agent: one bucket).
  std::map<std::optional<std::uint32_t>, std::vector<const Dispatch*>> by_agent;
  for (const auto& d : s.dispatches) {
    if (d.kernel_name.empty() || !detail::ends_with(short_function_name(d.kernel_name), "_clean")) {
      continue;
    }
    by_agent[d.agent].push_back(&d);
  }
  // Grouping thousands of waves is this check's expensive part: not without a _clean kernel.
  if (by_agent.empty()) {
    return out;
  }
  const auto& classes = analysis.classes();
  detail::Kernels& kernels = analysis.kernels();
  for (const auto& [agent, ds] : by_agent) {
    if (ds.size() == 1) {
      if (auto f = single_clean(s, *ds.front(), classes, kernels)) {
        out.push_back(std::move(*f));
      }
      continue;
    }
    // Different queues (streams); with every fence known, each must be full (B|Aa|Ra).
    std::map<std::optional<std::uint32_t>, int> queues;
    bool fences_known = true;
    bool all_full = true;
    for (const auto* d : ds) {
      queues[d->queue] += 1;
      if (d->fence_text.empty()) {
        fences_known = false;
      } else if (!d->fence.full()) {
        all_full = false;
      }
    }
    bool queues_known = !queues.count(std::nullopt);
    if (queues_known && queues.size() < 2) {
      continue; // one stream: the kernels are ordered, no race
    }
    if (fences_known && !all_full) {
      continue;
    }
    Finding f;
    f.id = std::string(kSplitKCleanRace);
    f.confidence = queues_known && fences_known ? 0.85 : 0.5;
    f.severity = Severity::Error;
    std::vector<std::string> names;
    nlohmann::json dj = nlohmann::json::array();
    for (const auto* d : ds) {
      names.push_back(short_function_name(d->kernel_name));
      nlohmann::json j = detail::dispatch_json(*d, kernels);
      nlohmann::json cj = nlohmann::json::array();
      for (const auto& c : detail::classes_of(classes, *d)) {
        cj.push_back(detail::class_json(c, s));
      }
      j["wave_classes"] = std::move(cj);
      dj.push_back(std::move(j));
      f.dispatches.push_back({d->id, detail::kernel_label(*d)});
      f.evidence.push_back(fmt::format("{}: {} queue {} fence {} grid [{}] workgroup [{}]",
                                       detail::dispatch_label(*d), d->kernel_name,
                                       d->queue ? fmt::format("{}", *d->queue) : "?",
                                       d->fence_text.empty() ? "?" : d->fence_text,
                                       fmt::join(d->grid, ","), fmt::join(d->workgroup, ",")));
      if (auto k = detail::kernel_line(*d, kernels); !k.empty()) {
        f.evidence.push_back("  " + k);
      }
      for (const auto& c : detail::classes_of(classes, *d)) {
        f.evidence.push_back(fmt::format("  {}", detail::describe(c, s)));
        if (f.locations.size() < 8) {
          f.locations.push_back(detail::location_of(c, s));
        }
      }
    }
    // The title names every `_clean` kernel involved: they are what to grep for.
    f.title = fmt::format("{} split-K `_clean` kernels in flight on different queues ({}): shared "
                          "workspace counter race",
                          ds.size(), fmt::join(names, ", "));
    if (!ds.empty()) {
      f.kernel = detail::kernel_label(*ds.front());
    }
    f.details = {{"dispatches", std::move(dj)},
                 {"queues_known", queues_known},
                 {"fences_known", fences_known}};
    if (agent) {
      f.details["agent"] = *agent;
    }
    f.summary = fmt::format(
        "{} run concurrently on {} queues of {}, each with a full fence{}. Split-K reductions "
        "count arriving blocks in a workspace counter; if that workspace is shared per process "
        "(cached per device only), the two kernels' increments interleave and neither reaches "
        "its expected count, so both spin forever.",
        fmt::join(names, " and "), queues_known ? fmt::format("{}", queues.size()) : "unknown",
        agent ? fmt::format("agent {}", *agent) : std::string("one device"),
        fences_known ? " (B|Aa|Ra)" : " (fences not shown by this debugger)");
    f.next_step = fmt::format(
        "Find where {} gets its split-K workspace/semaphore (grep the kernel name in the "
        "library's Python wrapper, e.g. aiter/ops/). If it is cached per device only (e.g. "
        "@functools.lru_cache(maxsize=1) over the device), key it by (device, stream) so each "
        "stream gets its own counter. Serialising the streams (wait_stream) or adding "
        "synchronize() only hides the race for this workload; it comes back on a larger one.",
        names.front());
    out.push_back(std::move(f));
  }
  return out;
}

} // namespace rocplay::heuristics
