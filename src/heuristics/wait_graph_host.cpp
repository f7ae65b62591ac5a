// The host producers of the wait-for graph that read what the kernel said each thread waits in
// (Snapshot::kernel_waits, /proc read while the target ran; docs/heuristics.md, "Producers"):
//   - a thread in wait4/waitid waits for that child process (whose own threads' waits are read
//     too, so its graph joins this one);
//   - a read (write) blocked on a pipe waits for whoever holds the other end: a thread of the
//     target, another process, or nobody else;
//   - every thread of the process asleep with no possible waker (no timer, no fd another process
//     holds) is a deadlock of the process; a consumer in queue.get among them waits on a queue
//     nothing will put to.
#include "heuristics/common.hpp"
#include "rocplay/heuristics/wait_graph.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

namespace rocplay::heuristics {
namespace wfg {

using graph::EdgeKind;
using graph::NodeId;
using graph::State;

namespace {

bool reading(std::string_view call) {
  return call == "read" || call == "readv" || call == "pread64" || call == "recvfrom" ||
         call == "recvmsg";
}

bool writing(std::string_view call) {
  return call == "write" || call == "writev" || call == "pwrite64" || call == "sendto" ||
         call == "sendmsg";
}

// `read(fd 0, pipe:[824717])`, `wait4(pid 4243)`, `futex(0x55d0..)`.
std::string call_text(const KernelWait& w) {
  if (w.fd) {
    return fmt::format("{}(fd {}{})", w.call, *w.fd, w.file.empty() ? "" : ", " + w.file);
  }
  if (w.child) {
    return *w.child > 0 ? fmt::format("{}(pid {})", w.call, *w.child)
                        : fmt::format("{}(any child)", w.call);
  }
  if (w.futex) {
    return fmt::format("{}({:#x}{})", w.call, *w.futex, w.timed ? ", timed" : "");
  }
  return w.call;
}

bool blocked_call(const KernelWait& w) {
  return !w.call.empty() && w.call != "running" && w.call != "none";
}

std::string short_cmdline(const ProcessWaits& p) {
  std::string c = p.cmdline.empty() ? p.comm : p.cmdline;
  if (c.size() > 60) {
    c = c.substr(0, 57) + "...";
  }
  return c;
}

struct HostProducer {
  graph::Graph& g;
  const Snapshot& s;
  const std::map<std::uint64_t, NodeId>& target_threads; // by LWP
  std::map<std::int64_t, NodeId> processes;              // by pid, other processes
  std::vector<NodeId> dead_readers; // target threads blocked on a pipe none of its threads writes

  std::int64_t target_pid() const { return s.pid.value_or(0); }

  std::string evidence(std::int64_t pid, const KernelWait& w) const {
    return fmt::format("/proc/{}/task/{}/syscall: {}", pid, w.tid, call_text(w));
  }

  // A process other than the target, as one node: a single-threaded one is its thread; a process
  // of several threads ends when one of them ends it (OR).
  NodeId process_node(std::int64_t pid) {
    if (auto it = processes.find(pid); it != processes.end()) {
      return it->second;
    }
    const ProcessWaits* p = s.kernel_waits.process(pid);
    if (p == nullptr) {
      const NodeId n =
          g.add(make_node(fmt::format("process:{}", pid), fmt::format("process {}", pid),
                          State::Unknown, {}, "its threads were not read"));
      processes[pid] = n;
      return n;
    }
    const std::string what =
        p->ppid == target_pid() ? "child process" : (p->role.empty() ? "process" : p->role);
    const std::string label = fmt::format("{} {} ({})", what, pid, short_cmdline(*p));
    State st = State::Blocked;
    std::string doing;
    bool running = false;
    for (const auto& w : p->threads) {
      running = running || !blocked_call(w);
    }
    if (p->state == "Z" || p->state == "X") {
      st = State::Moving;
      doing = "exited: its parent's wait returns";
    } else if (running || p->threads.empty()) {
      st = running ? State::Moving : State::Unknown;
      doing = running ? "a thread of it runs" : "its threads were not read";
    }
    const std::string where = p->threads.size() == 1 ? call_text(p->threads.front()) : "";
    const NodeId n =
        g.add(make_node(fmt::format("process:{}", pid), label, st, where,
                        doing.empty() && p->threads.size() == 1
                            ? fmt::format("blocked in {}", call_text(p->threads.front()))
                            : doing));
    processes[pid] = n;
    if (st != State::Blocked) {
      return n;
    }
    // Every thread of it asleep in a wait only another of its own threads could end: that
    // process's own deadlock, whatever this one does (its stacks: `rocplay run --pid PID`).
    if (std::all_of(p->threads.begin(), p->threads.end(), [&](const KernelWait& w) {
          return w.call == "futex" && only_own_waker(w, pid, s.kernel_waits);
        })) {
      graph::Node& pn = g.node(n);
      pn.dead_end = true;
      pn.where.clear();
      pn.doing = fmt::format("every thread of it asleep in an untimed wait on its own futexes "
                             "(/proc): none will wake; its stacks: rocplay run --pid {}",
                             pid);
      return n;
    }
    if (p->threads.size() == 1) {
      waits_of(*p, p->threads.front(), n);
      return n;
    }
    for (const auto& w : p->threads) {
      const NodeId t = g.add(make_node(fmt::format("process:{}/thread:{}", pid, w.tid),
                                       fmt::format("thread {} of process {}", w.tid, pid),
                                       State::Blocked, call_text(w), {}));
      g.wait(n, t, EdgeKind::Or, "a process ends when one of its threads ends it");
      waits_of(*p, w, t);
    }
    return n;
  }

  static graph::Node make_node(std::string id, std::string label, State st, std::string where,
                               std::string doing) {
    graph::Node n;
    n.id = std::move(id);
    n.kind = "process";
    n.label = std::move(label);
    n.state = st;
    n.where = std::move(where);
    n.doing = std::move(doing);
    return n;
  }

  // The node of a thread that may act for process `pid` (write to a pipe, close it): the
  // target's thread nodes, or the other process's node.
  std::vector<NodeId> actors_of(std::int64_t pid) {
    if (pid != target_pid()) {
      return {process_node(pid)};
    }
    std::vector<NodeId> out;
    for (const auto& [lwp, n] : target_threads) {
      out.push_back(n);
    }
    return out;
  }

  // The edges of one thread's kernel wait, from node `w`.
  void waits_of(const ProcessWaits& p, const KernelWait& k, NodeId w) {
    if ((k.call == "wait4" || k.call == "waitid") && k.child) {
      std::vector<std::int64_t> children;
      if (*k.child > 0) {
        children.push_back(*k.child);
      } else {
        for (const auto& q : s.kernel_waits.processes) {
          if (q.ppid == p.pid && q.pid != p.pid) {
            children.push_back(q.pid);
          }
        }
      }
      for (std::int64_t c : children) {
        if (processes.size() > kMaxWaitProcesses * 4) {
          break;
        }
        const NodeId cn = process_node(c);
        g.wait(w, cn, children.size() == 1 ? EdgeKind::One : EdgeKind::Or,
               evidence(p.pid, k) + ": waits for that child to end");
      }
      if (!children.empty() && g.node(w).state == State::Unknown) {
        g.node(w).state = State::Blocked;
      }
      return;
    }
    const bool rd = reading(k.call);
    if (!rd && !writing(k.call)) {
      return;
    }
    const auto inode = pipe_inode(k.file);
    const PipeHolders* h = inode ? s.kernel_waits.pipe(*inode) : nullptr;
    if (h == nullptr) {
      return;
    }
    const auto& others = rd ? h->writers : h->readers;
    // Held by this process alone: the threads that could write (read) it are its own, but not
    // the waiter itself nor a thread spinning in one place. None left: the wait never ends.
    const bool own = p.pid == target_pid() && h->complete && !others.empty() &&
                     std::all_of(others.begin(), others.end(),
                                 [&](std::int64_t o) { return o == target_pid(); });
    if (own) {
      std::vector<NodeId> actors;
      for (const auto& [lwp, n] : target_threads) {
        if (n != w && g.node(n).state != State::Spinning) {
          actors.push_back(n);
        }
      }
      if (actors.empty()) {
        graph::Node& wn = g.node(w);
        wn.state = State::Blocked;
        wn.dead_end = true;
        wn.doing = fmt::format("blocked in {}: only this process holds the pipe's {} end, and no "
                               "other thread of it could {} it",
                               call_text(k), rd ? "write" : "read", rd ? "write" : "read");
        dead_readers.push_back(w);
        return;
      }
    }
    std::vector<std::string> names;
    for (std::int64_t o : others) {
      names.push_back(o == target_pid() ? fmt::format("pid {} (the target)", o)
                                        : fmt::format("pid {}", o));
    }
    graph::Node pn;
    pn.id = fmt::format("pipe:{}:{}", *inode, rd ? "w" : "r");
    pn.kind = "pipe";
    pn.label = fmt::format("pipe {}'s {} end", *inode, rd ? "write" : "read");
    pn.state = State::Blocked;
    pn.doing = others.empty() ? "held by no process"
                              : fmt::format("held by {}{}", fmt::join(names, ", "),
                                            h->complete ? "" : " (not every process looked at)");
    // Held by nobody else: whoever could end the wait is among the holders seen.
    pn.dead_end = others.empty() && h->complete;
    const NodeId pipe = g.add(std::move(pn));
    g.wait(w, pipe, EdgeKind::One,
           evidence(p.pid, k) + (rd ? ": ends when a holder of the write end writes or closes it"
                                    : ": ends when a holder of the read end reads"));
    if (g.node(w).state == State::Unknown) {
      g.node(w).state = State::Blocked;
    }
    for (std::int64_t o : others) {
      for (NodeId a : actors_of(o)) {
        if (a != w) { // blocked in this very call, it writes nothing
          g.wait(pipe, a, EdgeKind::Or, fmt::format("/proc/{}/fd: holds pipe:[{}]", o, *inode));
        }
      }
    }
    if (!h->complete) {
      const NodeId unseen = g.add(make_node("process:unseen", "processes not looked at",
                                            State::Unknown, {}, "the /proc scan was cut short"));
      g.wait(pipe, unseen, EdgeKind::Or, "the scan for the pipe's holders was bounded");
    }
  }

  void run() {
    const ProcessWaits* target = s.kernel_waits.process(target_pid());
    if (target == nullptr) {
      return;
    }
    std::map<std::int64_t, const HostThread*> by_lwp;
    for (const auto& t : s.host_threads) {
      if (t.lwp) {
        by_lwp[static_cast<std::int64_t>(*t.lwp)] = &t;
      }
    }
    for (const auto& k : target->threads) {
      auto it = target_threads.find(static_cast<std::uint64_t>(k.tid));
      if (it != target_threads.end() && blocked_call(k)) {
        waits_of(*target, k, it->second);
      }
    }
    asleep(*target, by_lwp);
    spinners();
  }

  // A thread spinning in place beside a thread whose read no one will end: the loop polls memory
  // (a flag) that such a thread would set once its read returned. Inferred, so the spinner waits
  // for any one of them (OR): the read is the root, the spin behind it.
  void spinners() {
    if (dead_readers.empty()) {
      return;
    }
    for (const auto& [lwp, node] : target_threads) {
      const NodeId n = node; // clang 14 cannot capture a structured binding in a lambda
      const bool waits = std::any_of(g.edges().begin(), g.edges().end(),
                                     [&](const graph::Edge& e) { return e.from == n; });
      if (g.node(n).state != State::Spinning || waits) {
        continue;
      }
      for (NodeId r : dead_readers) {
        g.wait(n, r, EdgeKind::Or,
               fmt::format("spins in place while {} waits in a read no thread will end: the flag "
                           "it polls is set after that read (inferred)",
                           g.node(r).label));
      }
    }
  }

  // Every thread asleep, none with a possible waker: the process's deadlock.
  void asleep(const ProcessWaits& target, const std::map<std::int64_t, const HostThread*>& by_lwp) {
    if (detail::asleep_without_waker(s) == nullptr) {
      return;
    }
    // Threads in a wait loop already found (a lock cycle): when one sleeper is left besides
    // them, only they could wake it, and they never will.
    std::vector<NodeId> looping;
    for (const auto& r : graph::find_roots(g)) {
      for (const NodeId v : r.cycle_nodes) {
        if (g.node(v).kind == "thread") {
          looping.push_back(v);
        }
      }
    }
    std::vector<std::pair<NodeId, const KernelWait*>> sleepers;
    NodeId all = graph::Graph::npos;
    std::vector<std::string> lines;
    std::map<std::string, std::size_t> count;
    for (const auto& k : target.threads) {
      auto node = target_threads.find(static_cast<std::uint64_t>(k.tid));
      auto thread = by_lwp.find(k.tid);
      if (node == target_threads.end() || thread == by_lwp.end() || k.call != "futex") {
        continue; // a pipe's wait already leads back to the threads; helpers have no node
      }
      if (std::any_of(g.edges().begin(), g.edges().end(),
                      [&](const graph::Edge& e) { return e.from == node->second; })) {
        continue; // already waits for something known: a mutex's owner, the GIL's holder
      }
      // A copy: g.add below may move the nodes.
      const std::string where = g.node(node->second).where;
      if (g.node(node->second).state == State::Unknown) {
        g.node(node->second).state = State::Blocked;
      }
      if (detail::in_queue_get(*thread->second)) {
        graph::Node q;
        q.id = fmt::format("queue:{}", k.tid);
        q.kind = "queue";
        q.label = "a queue nothing will put to";
        q.state = State::Blocked;
        q.doing = "every other thread of the process is asleep: none could put to it";
        q.dead_end = true;
        q.weight = 5;
        q.where = where; // the user's line that called queue.get
        const NodeId qn = g.add(std::move(q));
        g.wait(node->second, qn, EdgeKind::One,
               evidence(target.pid, k) + ": in queue.get, untimed");
        continue;
      }
      sleepers.emplace_back(node->second, &k);
    }
    if (!looping.empty() && sleepers.size() == 1) {
      const auto& [node, k] = sleepers.front();
      for (const NodeId v : looping) {
        g.wait(node, v, EdgeKind::Or,
               evidence(target.pid, *k) +
                   ": an untimed wait only a thread of the process could end; every thread is "
                   "asleep, and those of the loop for good");
      }
      return;
    }
    for (const auto& [node_id, k] : sleepers) {
      const std::string where = g.node(node_id).where;
      if (all == graph::Graph::npos) {
        graph::Node n;
        n.id = fmt::format("asleep:{}", target.pid);
        n.kind = "process";
        n.label = "every thread of the process asleep";
        n.state = State::Blocked;
        n.doing = "each waits on a condition only another of its threads could signal: no timer, "
                  "no fd another process holds (/proc): none will ever wake";
        n.dead_end = true;
        n.weight = 4;
        all = g.add(std::move(n));
      }
      if (count[where]++ == 0) {
        lines.push_back(where);
      }
      g.wait(node_id, all, EdgeKind::One,
             evidence(target.pid, *k) + ": an untimed wait no other process can end");
    }
    if (all == graph::Graph::npos) {
      return;
    }
    if (std::any_of(g.nodes().begin(), g.nodes().end(),
                    [](const graph::Node& n) { return n.kind == "queue" && n.dead_end; })) {
      g.node(all).label = "every other thread of the process asleep";
    }
    // The most-shared line first: a pool's workers before the thread that waits for them.
    std::stable_sort(lines.begin(), lines.end(), [&](const std::string& a, const std::string& b) {
      return count[a] > count[b];
    });
    std::vector<std::string> parts;
    for (const auto& l : lines) {
      if (parts.size() == 3) {
        parts.push_back("...");
        break;
      }
      parts.push_back(count[l] > 1 ? fmt::format("{} in {} threads", l, count[l]) : l);
    }
    g.node(all).where = fmt::format("{}", fmt::join(parts, "; "));
  }
};

} // namespace

void host_kernel_waits(graph::Graph& g, const Snapshot& s,
                       const std::map<std::uint64_t, NodeId>& target_threads) {
  if (s.kernel_waits.empty() || !s.pid) {
    return;
  }
  HostProducer p{g, s, target_threads, {}, {}};
  p.run();
}

} // namespace wfg
} // namespace rocplay::heuristics
