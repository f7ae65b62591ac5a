// A collective kernel waiting for its peers, seen from one rank (docs/heuristics.md,
// collective-wait).
//
// NCCL/RCCL device kernels (`ncclDevKernel_*`, `ncclKernel_*`), custom all-reduce
// (`cross_device_reduce_*`), aiter's allgather/reduce-scatter and the other collective families
// wait for their peers in protocol loops (LL/LL128 flag reads, `waitPeer`, barrier flags). When
// every wave of such a dispatch sits in a few such loops, this rank is waiting for the others:
// the cause is on another rank. The sync-lane finding covers the `start_sync`/`end_sync` shape
// of custom all-reduce; this one covers the rest, with or without line information.
#include "heuristics/analysis.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <set>

namespace rocplay::heuristics {
namespace {

// Words of the protocol wait routines as they appear in function or inline-function names.
bool names_a_wait(std::string_view name) {
  std::string lower(name);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  for (std::string_view w : {"wait", "barrier", "sync", "spin", "poll", "flag", "readll", "recv",
                             "send", "peer", "signal"}) {
    if (lower.find(w) != std::string::npos) {
      return true;
    }
  }
  return false;
}

// The function a class is in: its frame's (or inline) function, else its PC's `info line`.
std::string class_function(const snapshot::WaveClass& c, const Snapshot& s) {
  if (!c.inline_function.empty()) {
    return c.inline_function;
  }
  if (!c.function.empty()) {
    return c.function;
  }
  const SourceLine* sl = c.pc ? s.source_line(*c.pc) : nullptr;
  return sl ? sl->function : std::string();
}

bool has_line(const snapshot::WaveClass& c, const Snapshot& s) {
  if (c.line) {
    return true;
  }
  const SourceLine* sl = c.pc ? s.source_line(*c.pc) : nullptr;
  return sl && sl->line;
}

// The loops the classes sit in: PCs within kLoopWindow of each other (or on one source line)
// are one loop.
std::size_t loops_of(const std::vector<snapshot::WaveClass>& cs) {
  std::vector<std::uint64_t> pcs;
  for (const auto& c : cs) {
    if (c.pc) {
      pcs.push_back(*c.pc);
    }
  }
  std::sort(pcs.begin(), pcs.end());
  std::size_t loops = 0;
  for (std::size_t i = 0; i < pcs.size(); ++i) {
    if (i == 0 || pcs[i] - pcs[i - 1] > detail::kLoopWindow) {
      ++loops;
    }
  }
  return loops;
}

} // namespace

std::vector<Finding> collective_wait(const Snapshot& s) {
  detail::Analysis analysis(s);
  return collective_wait(analysis);
}

std::vector<Finding> collective_wait(detail::Analysis& analysis,
                                     const std::set<std::string>& explained) {
  const Snapshot& s = analysis.snapshot();
  std::vector<Finding> out;
  std::vector<const Dispatch*> collectives;
  for (const auto& d : s.dispatches) {
    if (!explained.count(d.id) && detail::is_collective(d)) {
      collectives.push_back(&d);
    }
  }
  if (collectives.empty() || s.waves.empty()) {
    return out;
  }
  const auto& classes = analysis.classes();
  detail::Kernels& kernels = analysis.kernels();
  for (const Dispatch* d : collectives) {
    auto cs = detail::classes_of(classes, *d);
    if (cs.empty() || std::any_of(cs.begin(), cs.end(), [](const auto& c) { return !c.pc; })) {
      continue;
    }
    const std::size_t loops = loops_of(cs);
    // Protocol waits are a handful of loops (one per role: senders, receivers, the barrier);
    // a kernel spread over many places is computing, not waiting.
    constexpr std::size_t kMaxLoops = 4;
    if (loops > kMaxLoops) {
      continue;
    }
    std::uint64_t threads = 0;
    bool line_info = false;
    bool wait_names = false;
    for (const auto& c : cs) {
      threads += c.threads;
      line_info |= has_line(c, s);
      wait_names |= names_a_wait(class_function(c, s));
    }
    const std::string name = short_function_name(d->kernel_name);
    Finding f;
    f.id = std::string(kCollectiveWait);
    f.severity = Severity::Error;
    // One snapshot shows where the waves are, not that they stay there: the wait routine's name
    // makes "waiting" likely; without line information the kernel's name is all there is.
    f.confidence = wait_names ? 0.7 : line_info ? 0.55 : 0.5;
    f.title = fmt::format("collective {} is waiting for its peers{}", name,
                          s.rank ? fmt::format(" (rank {})", *s.rank) : std::string());
    f.summary = fmt::format(
        "{} ({}) is in flight with all {} of its {} in {} polling loop{}{}: a collective only "
        "completes when every rank joins, so this rank waits for a peer that has not arrived "
        "(or arrived in a different collective, or with a different size). The cause is on "
        "another rank; one rank's snapshot cannot say which.",
        d->kernel_name, detail::dispatch_label(*d), threads,
        threads == cs.front().waves ? "waves" : "threads", loops, loops == 1 ? "" : "s",
        line_info ? "" : " (no line information: the kernel's name says it is a collective)");
    f.evidence.push_back(fmt::format("{}: {}", detail::dispatch_label(*d), d->kernel_name));
    if (auto k = detail::kernel_line(*d, kernels); !k.empty()) {
      f.evidence.push_back(k);
    }
    nlohmann::json cj = nlohmann::json::array();
    // `Where:` is the PC most of its threads wait at.
    const auto most = std::max_element(
        cs.begin(), cs.end(), [](const auto& a, const auto& b) { return a.threads < b.threads; });
    f.locations.push_back(detail::location_of(*most, s));
    for (const auto& c : cs) {
      f.evidence.push_back(detail::describe(c, s));
      if (kernels.details) {
        cj.push_back(detail::class_json(c, s));
      }
      if (f.locations.size() < 4 && &c != &*most) {
        f.locations.push_back(detail::location_of(c, s));
      }
    }
    if (s.rank) {
      f.evidence.push_back(fmt::format("rank {} (from {})", *s.rank,
                                       s.label.empty() ? std::string("the snapshot") : s.label));
    }
    nlohmann::json dj = detail::dispatch_json(*d, kernels);
    if (kernels.details) {
      dj["wave_classes"] = std::move(cj);
    }
    f.dispatches = {{d->id, detail::kernel_label(*d)}};
    f.details = {{"dispatch", std::move(dj)},
                 {"loops", loops},
                 {"line_info", line_info},
                 {"wait_routine", wait_names}};
    f.next_step = fmt::format(
        "Snapshot every rank at once: `rocplay run hang-triage --workers-of <server PID>` (or "
        "`--pids A,B,...`); missing-rank then names the rank that never entered {} (or entered "
        "it with a different grid). Then look at that rank's host stack and what it has in "
        "flight. Set NCCL_DEBUG=INFO (RCCL too) to see each rank's collective sequence. This "
        "rank is a victim: do not edit the collective or add synchronize() calls.",
        name);
    out.push_back(std::move(f));
  }
  return out;
}

} // namespace rocplay::heuristics
