// What the watcher watches: a server and its GPU workers (found again after a restart), or fixed
// pids. A process is known by its pid and start time, so a reused pid is never taken for the
// process that had it before. Each check reads one /proc/PID/stat per process; the whole process
// tree is scanned only when a worker vanished or none is known.
#include "rocplay/core/error.hpp"
#include "rocplay/watch/watch.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace rocplay::watch {

namespace {

// Still the same process: alive (not a zombie) with the start time it had.
bool same_process(std::int64_t pid, std::uint64_t starttime) {
  const auto st = process::read_stat(pid);
  return st && st->starttime == starttime && st->state != 'Z' && st->state != 'X';
}

std::string pid_list(const std::vector<Worker>& workers) {
  std::string out;
  for (const auto& w : workers) {
    out += (out.empty() ? "" : ",") + std::to_string(w.pid);
  }
  return out.empty() ? "none" : out;
}

} // namespace

Targets Targets::workers_of(std::int64_t server, std::vector<std::string> device_prefixes) {
  const auto st = process::read_stat(server);
  if (!st || st->state == 'Z') {
    throw Error(ExitCode::NoSuchProcess, fmt::format("--workers-of {}: no such process", server),
                "`rocplay ps` lists the processes that hold a GPU and their parents");
  }
  Targets t;
  t.server_ = server;
  t.server_start_ = st->starttime;
  t.server_comm_ = st->comm;
  if (!device_prefixes.empty()) {
    // Extra device paths are added to the defaults, not put in their place.
    device_prefixes.insert(device_prefixes.begin(), {"/dev/kfd", "/dev/nvidia", "/dev/dri/render"});
  }
  t.device_prefixes_ = std::move(device_prefixes);
  std::vector<std::string> ignored;
  t.rescan(ignored);
  t.said_no_workers_ = false; // the first check says it, if there are none
  return t;
}

Targets Targets::fixed(const std::vector<std::int64_t>& pids) {
  Targets t;
  for (const auto pid : pids) {
    const auto st = process::read_stat(pid);
    if (st && st->state != 'Z') {
      t.workers_.push_back({pid, st->starttime, st->comm, process::read_gpu_open(pid)});
    }
  }
  if (t.workers_.empty()) {
    throw Error(ExitCode::NoSuchProcess, "--pid/--pids: none of the given processes exists",
                "`rocplay ps` lists the processes that hold a GPU");
  }
  return t;
}

void Targets::rescan(std::vector<std::string>& events) {
  process::ScanOptions scan;
  scan.sample = std::chrono::milliseconds(0);
  scan.device_prefixes = device_prefixes_;
  std::vector<Worker> found;
  try {
    for (const auto& p : process::workers_of(server_, scan)) {
      const auto st = process::read_stat(p.pid);
      if (st) {
        found.push_back({p.pid, st->starttime, p.comm, p.gpu});
      }
    }
  } catch (const Error&) {
    // the server vanished between its check and the scan: the next check says so
  }
  const auto key = [](const Worker& w) { return std::make_pair(w.pid, w.starttime); };
  const bool changed =
      found.size() != workers_.size() ||
      !std::equal(found.begin(), found.end(), workers_.begin(),
                  [&](const Worker& a, const Worker& b) { return key(a) == key(b); });
  if (changed) {
    if (!workers_.empty() || !found.empty()) {
      events.push_back(
          found.empty() ? fmt::format("server {} has no GPU workers now (was {}); waiting for them",
                                      server_, pid_list(workers_))
          : workers_.empty()
              ? fmt::format("GPU workers of server {}: {}", server_, pid_list(found))
              : fmt::format("workers of server {} changed: {} -> {} (a restart?); the quiet "
                            "timer starts again",
                            server_, pid_list(workers_), pid_list(found)));
    }
    workers_ = std::move(found);
    ++generation_;
    said_no_workers_ = workers_.empty();
  } else if (workers_.empty() && !said_no_workers_) {
    said_no_workers_ = true;
    events.push_back(fmt::format("no GPU workers under server {} yet (no descendant has /dev/kfd "
                                 "or /dev/nvidia* open); waiting",
                                 server_));
  }
  if (!workers_.empty()) {
    said_no_workers_ = false;
  }
}

void Targets::check(std::vector<std::string>& events) {
  if (gone_) {
    return;
  }
  if (server_ > 0) {
    if (!same_process(server_, server_start_)) {
      gone_ = true;
      events.push_back(fmt::format("server {} ({}) exited", server_, server_comm_));
      return;
    }
    const bool all_there = std::all_of(workers_.begin(), workers_.end(), [](const Worker& w) {
      return same_process(w.pid, w.starttime);
    });
    if (!all_there || workers_.empty()) {
      rescan(events);
    }
    return;
  }
  std::vector<Worker> alive;
  for (auto& w : workers_) {
    if (same_process(w.pid, w.starttime)) {
      alive.push_back(w);
    } else {
      events.push_back(fmt::format("pid {} ({}) exited", w.pid, w.comm));
    }
  }
  if (alive.size() != workers_.size()) {
    workers_ = std::move(alive);
    ++generation_;
  }
  if (workers_.empty()) {
    gone_ = true;
    events.push_back("every watched pid has exited");
  }
}

std::vector<std::int64_t> Targets::pids() const {
  std::vector<std::int64_t> out;
  for (const auto& w : workers_) {
    out.push_back(w.pid);
  }
  return out;
}

std::string Targets::describe() const {
  if (server_ > 0) {
    return fmt::format("server {} ({}), workers {}", server_, server_comm_, pid_list(workers_));
  }
  return fmt::format("pids {}", pid_list(workers_));
}

} // namespace rocplay::watch
