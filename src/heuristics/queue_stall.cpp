// Heuristic 3: queue stall across two snapshots (docs/heuristics.md).
//
// A queue with packets pending (write > read) whose read index did not move between two
// snapshots, whose head dispatch is the same one, and whose waves sit at the same places: the
// head kernel is not completing. A spin loop is a few instructions long, so "the same place"
// allows PCs a short distance apart (kSamePcWindow); a PC far away means progress.
#include "heuristics/common.hpp"

#include <fmt/format.h>

#include <cstdlib>
#include <set>

namespace rocplay::heuristics {
namespace {

constexpr std::uint64_t kSamePcWindow = 256;

const Queue* find_queue(const Snapshot& s, const Queue& q) {
  for (const auto& x : s.queues) {
    if (x.target_id == q.target_id && !q.target_id.empty()) {
      return &x;
    }
  }
  for (const auto& x : s.queues) {
    if (x.id == q.id) {
      return &x;
    }
  }
  return nullptr;
}

// The oldest in-flight dispatch of a queue: the lowest packet id (else dispatch number).
const Dispatch* head_dispatch(const Snapshot& s, const Queue& q) {
  const Dispatch* head = nullptr;
  auto order = [](const Dispatch& d) {
    return d.packet_id ? *d.packet_id : d.dispatch_no.value_or(0);
  };
  for (const auto& d : s.dispatches) {
    if (d.queue != q.queue_no || (d.agent && q.agent && *d.agent != *q.agent)) {
      continue;
    }
    if (!head || order(d) < order(*head)) {
      head = &d;
    }
  }
  return head;
}

bool same_dispatch(const Dispatch& a, const Dispatch& b) {
  return a.target_id == b.target_id && a.packet_id == b.packet_id &&
         a.kernel_address == b.kernel_address && a.kernel_name == b.kernel_name;
}

std::set<std::uint64_t> pcs_of(const Snapshot& s, const Dispatch& d) {
  std::set<std::uint64_t> out;
  detail::WaveDispatches dispatch_of(s);
  for (const auto& w : s.waves) {
    if (w.pc && dispatch_of(w) == &d) {
      out.insert(*w.pc);
    }
  }
  return out;
}

bool near_any(std::uint64_t pc, const std::set<std::uint64_t>& pcs) {
  auto it = pcs.lower_bound(pc >= kSamePcWindow ? pc - kSamePcWindow : 0);
  return it != pcs.end() && *it <= pc + kSamePcWindow;
}

} // namespace

std::vector<Finding> queue_stall(const Snapshot& earlier, const Snapshot& later) {
  std::vector<Finding> out;
  detail::Kernels kernels(later);
  for (const auto& q : later.queues) {
    if (!q.read || !q.write || *q.write <= *q.read) {
      continue;
    }
    const Queue* p = find_queue(earlier, q);
    if (!p || !p->read || !p->write || *p->read != *q.read || *p->write <= *p->read) {
      continue;
    }
    const Dispatch* head = head_dispatch(later, q);
    const Dispatch* prev = head_dispatch(earlier, *p);
    if (!head || !prev || !same_dispatch(*head, *prev)) {
      continue;
    }
    auto now = pcs_of(later, *head);
    auto before = pcs_of(earlier, *prev);
    bool pcs_compared = !now.empty() && !before.empty();
    bool moved = false;
    for (auto pc : now) {
      if (!near_any(pc, before)) {
        moved = true;
      }
    }
    if (pcs_compared && moved) {
      continue; // the waves progressed: slow, not stuck
    }
    Finding f;
    f.id = std::string(kQueueStall);
    f.severity = Severity::Error;
    f.confidence = pcs_compared ? 0.8 : 0.6;
    const std::string kernel = detail::kernel_label(*head);
    f.title = fmt::format("queue {} stalled: {} did not complete between two snapshots",
                          q.target_id.empty() ? q.id : q.target_id, short_function_name(kernel));
    std::string gap;
    if (!earlier.taken_at.empty() && !later.taken_at.empty()) {
      gap = fmt::format(" (taken {} and {})", earlier.taken_at, later.taken_at);
    }
    f.summary = fmt::format(
        "{} has {} packet(s) pending (read {}, write {}) and its read index did not move between "
        "the two snapshots{}. Its head dispatch, {} ({}), is the same in both{}. The head kernel "
        "is not completing; everything queued behind it waits.",
        q.target_id.empty() ? "queue " + q.id : q.target_id, *q.write - *q.read, *q.read, *q.write,
        gap, detail::dispatch_label(*head), kernel,
        pcs_compared ? " and its waves sit at the same PCs" : " (no waves to compare)");
    f.evidence.push_back(
        fmt::format("earlier: queue {} read {} write {}", p->id, *p->read, *p->write));
    f.evidence.push_back(
        fmt::format("later:   queue {} read {} write {}", q.id, *q.read, *q.write));
    f.evidence.push_back(
        fmt::format("head dispatch: {}: {}", detail::dispatch_label(*head), kernel));
    if (auto k = detail::kernel_line(*head, kernels); !k.empty()) {
      f.evidence.push_back(k);
    }
    const auto classes = snapshot::group_waves(later);
    nlohmann::json cj = nlohmann::json::array();
    for (const auto& c : detail::classes_of(classes, *head)) {
      f.evidence.push_back(fmt::format("  {}", detail::describe(c, later)));
      cj.push_back(detail::class_json(c, later));
      if (f.locations.size() < 8) {
        f.locations.push_back(detail::location_of(c, later));
      }
    }
    f.dispatches = {{head->id, detail::kernel_label(*head)}};
    f.details = {{"queue",
                  {{"id", q.id},
                   {"target_id", q.target_id},
                   {"read", *q.read},
                   {"write", *q.write},
                   {"earlier_read", *p->read},
                   {"earlier_write", *p->write}}},
                 {"head_dispatch", detail::dispatch_json(*head, kernels)},
                 {"wave_classes", std::move(cj)},
                 {"pcs_compared", pcs_compared}};
    f.next_step = fmt::format(
        "Anchor on {} and its wave PCs above: map each PC to its source line (`info line *PC`) "
        "and read the loop the waves sit in before forming a theory. If it waits on memory "
        "written by another kernel or stream, find that writer; do not add synchronize() "
        "calls.",
        short_function_name(kernel));
    out.push_back(std::move(f));
  }
  return out;
}

} // namespace rocplay::heuristics
