// Queue-level findings from one snapshot (docs/heuristics.md, "queue packets pending" and "wedged
// rank").
//
// What people read in `info queues` in practice (shared/reference/rocgdb-real-formats.md): an HSA
// queue whose Read is behind its Write has packets the GPU has not taken; with no dispatch of that
// queue in flight the head packet is not a kernel (a barrier or signal wait, or a completion that
// never arrived), and a host thread waiting in hipDeviceSynchronize / hsa_signal_wait_* is waiting
// for it. Many queues with packets pending on one process is a wedged rank.
#include "heuristics/analysis.hpp"

#include <fmt/format.h>

namespace rocplay::heuristics {
namespace {

constexpr std::size_t kWedgedQueues = 4;
constexpr std::uint64_t kWedgedPackets = 100;

struct Pending {
  const Queue* queue;
  std::uint64_t packets;
  bool dispatch_in_flight;
};

std::string queue_label(const Queue& q) {
  return q.target_id.empty() ? "queue " + q.id : q.target_id;
}

// The outermost frame of a host thread that waits for the GPU, and what it is.
std::string gpu_wait(const HostThread& t) {
  std::string found;
  for (const auto& f : t.frames) {
    // Each call below appears as it is in the frame's function: most frames are none of them and
    // need no shortening.
    const bool may_be_call = detail::contains(f.function, "Synchronize") ||
                             detail::contains(f.function, "WaitEvent") ||
                             detail::contains(f.function, "hsa_signal_wait");
    const std::string name = may_be_call ? short_function_name(f.function) : std::string();
    static constexpr std::string_view kCalls[] = {
        "hipDeviceSynchronize",   "hipStreamSynchronize",      "hipEventSynchronize",
        "hipStreamWaitEvent",     "hsa_signal_wait_scacquire", "hsa_signal_wait_relaxed",
        "hsa_signal_wait_acquire"};
    for (auto c : kCalls) {
      if (name == c) {
        found = std::string(c);
      }
    }
    if (found.empty() && (detail::contains(f.function, "InterruptSignal::Wait") ||
                          detail::contains(f.function, "hsaKmtWaitOnEvent") ||
                          detail::contains(f.function, "hsaKmtWaitOnMultipleEvents"))) {
      found = "an HSA signal wait";
    }
  }
  return found;
}

} // namespace

std::vector<Finding> queue_packets_pending(const Snapshot& s) {
  std::vector<Finding> out;
  std::vector<Pending> pending;
  std::uint64_t total = 0;
  for (const auto& q : s.queues) {
    if (q.type != QueueType::Hsa || !q.read || !q.write || *q.write <= *q.read) {
      continue;
    }
    bool in_flight = false;
    for (const auto& d : s.dispatches) {
      in_flight = in_flight || (d.agent && q.agent && *d.agent == *q.agent && d.queue &&
                                q.queue_no && *d.queue == *q.queue_no);
    }
    pending.push_back({&q, *q.write - *q.read, in_flight});
    total += *q.write - *q.read;
  }
  if (pending.empty()) {
    return out;
  }
  std::vector<std::pair<const HostThread*, std::string>> waiters;
  for (const auto& t : s.host_threads) {
    if (auto w = gpu_wait(t); !w.empty()) {
      waiters.emplace_back(&t, std::move(w));
    }
  }
  auto host_lines = [&](Finding& f) {
    for (std::size_t i = 0; i < waiters.size() && i < 4; ++i) {
      const auto& [t, call] = waiters[i];
      f.evidence.push_back(fmt::format("host thread {}{} waits in {}", t->id,
                                       t->name.empty() ? std::string() : " (" + t->name + ")",
                                       call));
    }
  };
  std::vector<const Pending*> idle;
  for (const auto& p : pending) {
    if (!p.dispatch_in_flight) {
      idle.push_back(&p);
    }
  }
  if (!idle.empty() && !waiters.empty()) {
    Finding f;
    f.id = std::string(kQueuePacketsPending);
    f.severity = Severity::Error;
    f.confidence = 0.7;
    const Pending& head = *idle.front();
    // Dispatches never asked (a saved `info queues` alone): whether a kernel runs is unknown.
    const bool asked = s.coverage.dispatches;
    f.title = fmt::format("{}: {} packet(s) pending{}; the host waits in {}",
                          queue_label(*head.queue), head.packets,
                          asked ? " and no kernel of it in flight"
                                : " (dispatches were not asked: whether a kernel of it runs is "
                                  "unknown)",
                          waiters.front().second);
    f.summary = fmt::format(
        "{} HSA queue(s) have packets the GPU has not completed (Read behind Write){}. {} host "
        "thread(s) wait for the GPU ({}).",
        idle.size(),
        asked ? " while no dispatch of those queues is in flight: the packet at the head is not "
                "a kernel that is running but a barrier or signal wait, or a completion that "
                "never arrived"
              : "; `info dispatches` was not asked, so the head packet may be a running kernel "
                "or a barrier or signal wait",
        waiters.size(), waiters.front().second);
    nlohmann::json queues = nlohmann::json::array();
    for (const auto* p : idle) {
      f.evidence.push_back(
          fmt::format("{}: read {}, write {}: {} packet(s) pending, {}", queue_label(*p->queue),
                      *p->queue->read, *p->queue->write, p->packets,
                      asked ? "no dispatch of it in flight" : "dispatches not asked"));
      queues.push_back({{"id", p->queue->id},
                        {"target_id", p->queue->target_id},
                        {"read", *p->queue->read},
                        {"write", *p->queue->write},
                        {"pending", p->packets}});
    }
    host_lines(f);
    nlohmann::json hosts = nlohmann::json::array();
    for (const auto& [t, call] : waiters) {
      hosts.push_back({{"thread", t->id}, {"name", t->name}, {"waits_in", call}});
    }
    f.details = {{"queues", std::move(queues)}, {"host_waits", std::move(hosts)}};
    f.next_step =
        "Take a second snapshot a few seconds later (queue-stall compares two): if Read has not "
        "moved, the head packet never completes. Find what it waits on: a stream waiting on an "
        "event (hipStreamWaitEvent) whose producer never ran, or a peer rank's work; take `info "
        "queues` and `info dispatches` on every rank of the job, and the kernel log (dmesg) for "
        "queue evictions or resets.";
    out.push_back(std::move(f));
  }
  if (pending.size() >= kWedgedQueues || (pending.size() >= 2 && total >= kWedgedPackets)) {
    Finding f;
    f.id = std::string(kWedgedRank);
    f.severity = Severity::Error;
    f.confidence = 0.6;
    f.title = fmt::format("{} queues hold {} packets the GPU has not completed: a wedged process",
                          pending.size(), total);
    f.summary = fmt::format(
        "{} HSA queues of this process have Read behind Write ({} packets pending in all, {} of "
        "those queues with no dispatch in flight): its GPU work is not draining. On one rank of a "
        "job this is the rank the others wait for, or a GPU that stopped taking work.",
        pending.size(), total, idle.size());
    for (std::size_t i = 0; i < pending.size() && i < 8; ++i) {
      const auto& p = pending[i];
      f.evidence.push_back(fmt::format("{}: {} pending{}", queue_label(*p.queue), p.packets,
                                       p.dispatch_in_flight    ? ""
                                       : s.coverage.dispatches ? " (no dispatch in flight)"
                                                               : " (dispatches not asked)"));
    }
    host_lines(f);
    f.details = {{"queues", pending.size()}, {"packets", total}, {"idle_queues", idle.size()}};
    f.next_step =
        "Take a second snapshot a few seconds later: queues whose Read does not move are frozen. "
        "Compare with the other ranks (`rocplay postmortem` of one snapshot per rank) and read "
        "the kernel log for `Queue preemption time out` or a GPU reset on this rank's GPU.";
    out.push_back(std::move(f));
  }
  return out;
}

} // namespace rocplay::heuristics
