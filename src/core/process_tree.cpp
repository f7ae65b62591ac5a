// The process tree of `rocplay ps` and the dispatcher -> GPU worker rule: the model only, no
// /proc (that is src/session/process_scan.cpp).
#include "rocplay/core/process_tree.hpp"

#include <algorithm>
#include <set>

namespace rocplay::process {

ProcessTree::ProcessTree(std::vector<ProcessInfo> processes) : processes_(std::move(processes)) {
  std::sort(processes_.begin(), processes_.end(),
            [](const ProcessInfo& a, const ProcessInfo& b) { return a.pid < b.pid; });
  for (std::size_t i = 0; i < processes_.size(); ++i) {
    by_parent_.emplace(processes_[i].ppid, i);
  }
}

const ProcessInfo* ProcessTree::find(std::int64_t pid) const {
  const auto it = std::lower_bound(processes_.begin(), processes_.end(), pid,
                                   [](const ProcessInfo& p, std::int64_t v) { return p.pid < v; });
  if (it == processes_.end() || it->pid != pid) {
    return nullptr;
  }
  return &*it;
}

std::vector<const ProcessInfo*> ProcessTree::children(std::int64_t pid) const {
  std::vector<const ProcessInfo*> out;
  const auto [lo, hi] = by_parent_.equal_range(pid);
  for (auto it = lo; it != hi; ++it) {
    if (processes_[it->second].pid != pid) { // pid 0's "parent" of itself guard
      out.push_back(&processes_[it->second]);
    }
  }
  std::sort(out.begin(), out.end(),
            [](const ProcessInfo* a, const ProcessInfo* b) { return a->pid < b->pid; });
  return out;
}

namespace {

// Depth first below `pid`, each child before its siblings' subtrees and in `children` order, each
// process once (a pid reused into a loop cannot trap the walk); `visit(p)` says whether to go
// below p. An explicit stack: a deep tree must not overflow ours.
template <class Visit> void walk_below(const ProcessTree& tree, std::int64_t pid, Visit visit) {
  std::set<std::int64_t> visited{pid};
  std::vector<const ProcessInfo*> stack;
  auto push_children = [&](std::int64_t parent) {
    const auto kids = tree.children(parent);
    stack.insert(stack.end(), kids.rbegin(), kids.rend());
  };
  push_children(pid);
  while (!stack.empty()) {
    const ProcessInfo* p = stack.back();
    stack.pop_back();
    if (visited.insert(p->pid).second && visit(*p)) {
      push_children(p->pid);
    }
  }
}

} // namespace

std::vector<const ProcessInfo*> ProcessTree::descendants(std::int64_t pid) const {
  std::vector<const ProcessInfo*> out;
  walk_below(*this, pid, [&](const ProcessInfo& p) {
    out.push_back(&p);
    return true;
  });
  return out;
}

std::vector<const ProcessInfo*> ProcessTree::roots() const {
  std::vector<const ProcessInfo*> out;
  for (const auto& p : processes_) {
    if (p.ppid == p.pid || find(p.ppid) == nullptr) {
      out.push_back(&p);
    }
  }
  return out;
}

ProcessTree ProcessTree::candidates() const {
  std::set<std::int64_t> keep;
  for (const auto& p : processes_) {
    if (!p.holds_gpu()) {
      continue;
    }
    keep.insert(p.pid);
    // Ancestors give the tree its shape (which server spawned which worker).
    std::int64_t up = p.ppid;
    for (int guard = 0; guard < 4096 && up > 0 && keep.insert(up).second; ++guard) {
      const ProcessInfo* parent = find(up);
      if (parent == nullptr) {
        break;
      }
      up = parent->ppid;
    }
    for (const ProcessInfo* d : descendants(p.pid)) {
      keep.insert(d->pid);
    }
  }
  std::vector<ProcessInfo> out;
  for (const auto& p : processes_) {
    if (keep.count(p.pid) != 0) {
      out.push_back(p);
    }
  }
  return ProcessTree(std::move(out));
}

ProcessTree ProcessTree::with_ancestors(const std::set<std::int64_t>& keep,
                                        std::int64_t self) const {
  std::set<std::int64_t> shown;
  for (const std::int64_t pid : keep) {
    for (std::int64_t up = pid, guard = 0; up > 1 && guard < 4096; ++guard) {
      const ProcessInfo* p = find(up);
      if (p == nullptr || p->pid == self || is_kernel_thread(*p) || !shown.insert(up).second) {
        break;
      }
      up = p->ppid;
    }
  }
  std::vector<ProcessInfo> out;
  for (const auto& p : processes_) {
    if (shown.count(p.pid) != 0) {
      out.push_back(p);
    }
  }
  return ProcessTree(std::move(out));
}

ProcessTree ProcessTree::without_kernel_threads(std::int64_t self) const {
  std::vector<ProcessInfo> out;
  for (const auto& p : processes_) {
    if (!is_kernel_thread(p) && p.pid != self) {
      out.push_back(p);
    }
  }
  return ProcessTree(std::move(out));
}

bool is_kernel_thread(const ProcessInfo& p) {
  return p.pid == 2 || (p.ppid == 2 && p.cmdline.empty());
}

namespace {
// Kernel waits of a process that waits for something from outside: input (poll, select, epoll,
// a read of a pipe, socket or terminal, accept), a child (wait4) or time (nanosleep).
bool idle_wait(std::string_view wchan) {
  static constexpr std::string_view kIdle[] = {
      "poll",    "select",     "epoll",    "pipe_read",   "pipe_wait",   "unix_stream",
      "sk_wait", "accept",     "tty_read", "wait_woken",  "nanosleep",   "sigtimedwait",
      "inotify", "sigsuspend", "skb_wait", "read_events", "kernel_wait4"};
  for (std::string_view w : kIdle) {
    if (wchan.find(w) != std::string_view::npos) {
      return true;
    }
  }
  // wait4's own wait, by its whole name: `futex_do_wait` is a lock, not a child.
  return wchan == "do_wait";
}
} // namespace

std::string worth_a_look(const ProcessInfo& p, const std::vector<std::string>& wchans) {
  if (is_kernel_thread(p) || p.pid <= 1) {
    return {};
  }
  if (p.cpu_percent && *p.cpu_percent >= kBusyCpuPercent) {
    return "busy: " + std::to_string(static_cast<int>(*p.cpu_percent + 0.5)) + "% CPU";
  }
  const std::string main = wchans.empty() ? std::string() : wchans.front();
  switch (p.state) {
  case 'D':
    return "D wait: " + (main.empty() ? std::string("?") : main);
  case 'T':
  case 't':
    return "stopped: state T";
  default:
    break;
  }
  // A thread asleep on a futex waits for a lock, a condition variable or a join: where a hung
  // program sits. A process that also waits for input, a child or time is idle, not hung.
  std::string futex;
  for (const auto& w : wchans) {
    if (idle_wait(w)) {
      return {};
    }
    if (futex.empty() && w.find("futex") != std::string::npos) {
      futex = w;
    }
  }
  return futex.empty() ? std::string() : "blocked: " + futex;
}

std::vector<ProcessInfo> workers_of(const ProcessTree& tree, std::int64_t pid) {
  std::vector<ProcessInfo> out;
  if (tree.find(pid) == nullptr) {
    return out;
  }
  // Stop at the first GPU holder on each branch: its own children are part of that worker
  // (compile helpers, dataloaders), not workers of the server.
  walk_below(tree, pid, [&](const ProcessInfo& p) {
    if (p.holds_gpu()) {
      out.push_back(p);
      return false;
    }
    return true;
  });
  std::sort(out.begin(), out.end(),
            [](const ProcessInfo& a, const ProcessInfo& b) { return a.pid < b.pid; });
  return out;
}

} // namespace rocplay::process
