// The process tree of `rocplay ps` and the dispatcher -> GPU worker rule: the model only, no
// /proc (that is src/session/process_scan.cpp).
#include "rocplay/process_tree.hpp"

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

std::vector<const ProcessInfo*> ProcessTree::descendants(std::int64_t pid) const {
  std::vector<const ProcessInfo*> out;
  std::set<std::int64_t> visited{pid};
  // Explicit stack: a deep tree must not overflow ours.
  std::vector<const ProcessInfo*> stack;
  auto push_children = [&](std::int64_t parent) {
    auto kids = children(parent);
    for (auto it = kids.rbegin(); it != kids.rend(); ++it) {
      stack.push_back(*it);
    }
  };
  push_children(pid);
  while (!stack.empty()) {
    const ProcessInfo* p = stack.back();
    stack.pop_back();
    if (!visited.insert(p->pid).second) {
      continue;
    }
    out.push_back(p);
    push_children(p->pid);
  }
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

std::vector<ProcessInfo> workers_of(const ProcessTree& tree, std::int64_t pid) {
  std::vector<ProcessInfo> out;
  if (tree.find(pid) == nullptr) {
    return out;
  }
  // Walk down from pid; stop at the first GPU holder on each branch: its own children are part of
  // that worker (compile helpers, dataloaders), not workers of the server.
  std::vector<const ProcessInfo*> stack;
  std::set<std::int64_t> visited{pid};
  auto push_children = [&](std::int64_t parent) {
    for (const ProcessInfo* c : tree.children(parent)) {
      stack.push_back(c);
    }
  };
  push_children(pid);
  while (!stack.empty()) {
    const ProcessInfo* p = stack.back();
    stack.pop_back();
    if (!visited.insert(p->pid).second) {
      continue;
    }
    if (p->holds_gpu()) {
      out.push_back(*p);
      continue;
    }
    push_children(p->pid);
  }
  std::sort(out.begin(), out.end(),
            [](const ProcessInfo& a, const ProcessInfo& b) { return a.pid < b.pid; });
  return out;
}

} // namespace rocplay::process
