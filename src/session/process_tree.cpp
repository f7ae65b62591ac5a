// The process tree of `rocplay ps` and the dispatcher -> GPU worker rule.
#include "rocplay/error.hpp"
#include "rocplay/process.hpp"

#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <set>
#include <thread>

namespace rocplay::process {

namespace {

std::vector<std::int64_t> list_pids() {
  std::vector<std::int64_t> pids;
  DIR* d = ::opendir("/proc");
  if (d == nullptr) {
    return pids;
  }
  while (const dirent* e = ::readdir(d)) {
    const char* name = e->d_name;
    if (*name < '1' || *name > '9') {
      continue;
    }
    std::int64_t pid = 0;
    bool ok = true;
    for (const char* p = name; *p != '\0'; ++p) {
      if (*p < '0' || *p > '9' || pid > (std::int64_t{1} << 40)) {
        ok = false;
        break;
      }
      pid = pid * 10 + (*p - '0');
    }
    if (ok) {
      pids.push_back(pid);
    }
  }
  ::closedir(d);
  std::sort(pids.begin(), pids.end());
  return pids;
}

} // namespace

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

ProcessTree scan(const ScanOptions& options) {
  const auto pids = list_pids();
  struct First {
    std::uint64_t ticks;
    std::uint64_t starttime;
  };
  std::map<std::int64_t, First> first;
  const bool sample = options.sample.count() > 0;
  if (sample) {
    for (const auto pid : pids) {
      if (const auto st = read_stat(pid)) {
        first.emplace(pid, First{st->utime + st->stime, st->starttime});
      }
    }
    std::this_thread::sleep_for(options.sample);
  }
  const double ticks_per_second = static_cast<double>(::sysconf(_SC_CLK_TCK));
  const double seconds = std::chrono::duration<double>(options.sample).count();
  std::vector<ProcessInfo> out;
  out.reserve(pids.size());
  // Processes started during the sample are picked up too (without a CPU figure).
  for (const auto pid : sample ? list_pids() : pids) {
    const auto st = read_stat(pid);
    if (!st) {
      continue; // gone
    }
    ProcessInfo info;
    info.pid = st->pid;
    info.ppid = st->ppid;
    info.comm = st->comm;
    info.state = st->state;
    info.threads = st->num_threads;
    info.cmdline = read_cmdline(pid);
    if (const auto status = read_status(pid)) {
      info.uid = status->uid_real;
    }
    info.gpu = read_gpu_open(pid, options.device_prefixes);
    if (sample) {
      const auto it = first.find(pid);
      // The same pid with another start time is another process.
      if (it != first.end() && it->second.starttime == st->starttime && ticks_per_second > 0) {
        const std::uint64_t now = st->utime + st->stime;
        const std::uint64_t delta = now >= it->second.ticks ? now - it->second.ticks : 0;
        info.cpu_percent = 100.0 * static_cast<double>(delta) / ticks_per_second / seconds;
      }
    }
    out.push_back(std::move(info));
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

std::vector<ProcessInfo> workers_of(std::int64_t pid, const ScanOptions& options) {
  if (!read_stat(pid)) {
    throw Error(ExitCode::NoSuchProcess, "no process with pid " + std::to_string(pid),
                "check the pid with `rocplay ps`");
  }
  ScanOptions opts = options;
  auto tree = scan(opts);
  if (tree.find(pid) == nullptr) {
    throw Error(ExitCode::NoSuchProcess, "process " + std::to_string(pid) + " exited",
                "check the pid with `rocplay ps`");
  }
  return workers_of(tree, pid);
}

} // namespace rocplay::process
