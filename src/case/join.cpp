// The one join (rocplay/case/join.hpp): cases grouped by (host, pid, rank), the crash verdict over
// those groups.
#include "rocplay/case/join.hpp"

#include <optional>
#include <string>
#include <utility>

namespace rocplay::incident {

namespace {

bool hosts_agree(const std::string& a, const std::string& b) {
  return a.empty() || b.empty() || a == b;
}

} // namespace

crash::ProcessKey ProcessIndex::add(const source::Source& src, const crash::Evidence* crash,
                                    const Snapshot* snapshot) {
  // The case's own key, by the one rule: the source's rank first (it already holds the strongest
  // of --rank-from, the meta, the environment, the file name), then what the evidence names.
  source::Source who;
  who.host = src.host;
  who.path = src.path;
  who.member = src.member;
  who.rank = src.rank;
  who.rank_rule = src.rank_rule;
  who.pid = src.pid;
  if (!who.pid && snapshot != nullptr) {
    who.pid = snapshot->pid;
  }
  if (crash != nullptr) {
    if (!who.rank) {
      who.offer_rank(crash->rank, source::RankRule::Prefix);
      who.offer_rank(source::rank_from_device(crash->gpu), source::RankRule::Device);
    }
    if (!who.pid) {
      who.pid = crash->pid;
    }
  }
  const std::size_t index = cases_++;
  std::optional<std::size_t> found;
  if (who.rank) {
    for (auto [it, end] = by_rank_.equal_range(*who.rank); it != end && !found; ++it) {
      if (hosts_agree(processes_[it->second].who.host, who.host)) {
        found = it->second;
      }
    }
  }
  if (!found && who.pid) {
    for (auto [it, end] = by_pid_.equal_range(*who.pid); it != end && !found; ++it) {
      // A pid joins a process of no rank or of the same rank (pids are reused across hosts and
      // jobs; a rank says more).
      const Process& p = processes_[it->second];
      if (hosts_agree(p.who.host, who.host) && (!p.who.rank || !who.rank)) {
        found = it->second;
      }
    }
  }
  const std::string gpu = crash != nullptr ? crash->gpu : std::string();
  if (!found && !who.rank && !who.pid && !gpu.empty()) {
    // Nothing names the process but the GPU it ran on (`node-2`): one process per GPU.
    for (std::size_t i = 0; i < processes_.size() && !found; ++i) {
      if (!processes_[i].who.rank && !processes_[i].who.pid && gpus_[i] == gpu) {
        found = i;
      }
    }
  }
  if (!found) {
    found = processes_.size();
    gpus_.push_back(gpu);
    Process p;
    p.who = std::move(who);
    processes_.push_back(std::move(p));
    const Process& made = processes_.back();
    if (made.who.rank) {
      by_rank_.emplace(*made.who.rank, *found);
    }
    if (made.who.pid) {
      by_pid_.emplace(*made.who.pid, *found);
    }
  } else {
    Process& p = processes_[*found];
    if (!p.who.rank && who.rank) {
      p.who.rank = who.rank;
      p.who.rank_rule = who.rank_rule;
      by_rank_.emplace(*who.rank, *found);
    }
    if (!p.who.pid && who.pid) {
      p.who.pid = who.pid;
      by_pid_.emplace(*who.pid, *found);
    }
    if (p.who.host.empty()) {
      p.who.host = who.host;
    }
    if (gpus_[*found].empty()) {
      gpus_[*found] = gpu;
    }
  }
  Process& p = processes_[*found];
  p.cases.push_back(index);
  crash::ProcessKey key;
  key.id = *found;
  key.rank = p.who.rank;
  // The crash verdict names the pid the evidence names (the process that wrote it), else the
  // one its process got from a recording.
  key.pid = crash != nullptr && crash->pid ? crash->pid : p.who.pid;
  return key;
}

std::vector<Process> processes(const Incident& incident) {
  ProcessIndex index;
  for (const auto& c : incident.cases) {
    index.add(c.source, c.crash.get(), &c.snapshot);
  }
  return index.processes();
}

std::vector<Finding> crash_verdict(const Incident& incident) {
  ProcessIndex index;
  std::vector<std::pair<const crash::Evidence*, crash::ProcessKey>> evidence;
  for (const auto& c : incident.cases) {
    const auto key = index.add(c.source, c.crash.get(), &c.snapshot);
    if (c.crash) {
      evidence.emplace_back(c.crash.get(), key);
    }
  }
  if (evidence.empty()) {
    return {};
  }
  crash::Joiner joiner;
  for (const auto& [ev, key] : evidence) {
    // The key as it stands once every case is in: a pid-only process may have got its rank later.
    crash::ProcessKey final_key = key;
    const Process& p = index.processes()[key.id];
    final_key.rank = p.who.rank;
    final_key.pid = ev->pid ? ev->pid : p.who.pid;
    joiner.add(*ev, final_key);
  }
  return joiner.verdict();
}

} // namespace rocplay::incident
