// `rocplay ps`'s process tree read from /proc (the model is src/core/process_tree.cpp).
#include "rocplay/core/error.hpp"
#include "rocplay/session/process.hpp"

#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <optional>
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
  std::vector<decltype(read_stat(0))> stats;
  for (const auto pid : sample ? list_pids() : pids) {
    stats.push_back(read_stat(pid));
  }
  std::set<std::int64_t> wanted; // options.subtree and below
  if (options.subtree) {
    wanted.insert(*options.subtree);
    for (bool grew = true; grew;) { // parents may have larger pids than their children
      grew = false;
      for (const auto& st : stats) {
        if (st && wanted.count(st->ppid) != 0 && wanted.insert(st->pid).second) {
          grew = true;
        }
      }
    }
  }
  for (const auto& st : stats) {
    if (!st || (options.subtree && wanted.count(st->pid) == 0)) {
      continue; // gone, or not asked for
    }
    const std::int64_t pid = st->pid;
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

std::vector<ProcessInfo> workers_of(std::int64_t pid, const ScanOptions& options) {
  if (!read_stat(pid)) {
    throw Error(ExitCode::NoSuchProcess, "no process with pid " + std::to_string(pid),
                "check the pid with `rocplay ps`");
  }
  ScanOptions opts = options;
  opts.subtree = pid;
  auto tree = scan(opts);
  if (tree.find(pid) == nullptr) {
    throw Error(ExitCode::NoSuchProcess, "process " + std::to_string(pid) + " exited",
                "check the pid with `rocplay ps`");
  }
  return workers_of(tree, pid);
}

} // namespace rocplay::process
