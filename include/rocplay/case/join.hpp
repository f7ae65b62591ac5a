// The one join (docs/architecture.md, "The incident model"): the cases of one process — its
// recordings' snapshots, its crash evidence, its agent-log faults — meet in one place, grouped
// by (host, pid, rank) under the one rank rule (rocplay/core/source.hpp). The crash verdict is made
// over the same groups (crash::Joiner keeps the verdict logic; the grouping is this one).
//
//   incident::ProcessIndex index;                      // streaming: one case at a time
//   const auto key = index.add(c.source, c.crash.get(), &c.snapshot);
//   crash_joiner.add(*c.crash, key);                    // rank 2's log and rank 2's recording
//
//   for (const auto& p : incident::processes(inc))      // batch: every case of an incident
//     ...;                                              // p.who: host, pid, rank; p.cases
//   inc.crash_verdict = incident::crash_verdict(inc);
//
// Layer: src/case/ (library rocplay_case).
#pragma once

#include "rocplay/case/case.hpp"
#include "rocplay/core/source.hpp"
#include "rocplay/crash/crash.hpp"

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace rocplay::incident {

// One process across the cases that speak of it.
struct Process {
  source::Source who;             // host, pid and rank (the strongest rule among its cases)
  std::vector<std::size_t> cases; // indexes into Incident::cases, in order
};

// The grouping, one case at a time (a post-mortem batch keeps no case whole). A case's rank is
// its source's; else its crash evidence's (a `[rank3]:` prefix, a rank in the file name, else the
// `cuda:N` device: source::rank_from_device); its pid the source's, else the snapshot's, else
// the crash evidence's. Two cases are one process when their ranks are equal, or, with no rank
// on one of them, their pids; hosts must agree where both name one. The first case with a rank
// gives a pid-only process its rank. Crash evidence that names neither joins the evidence of
// the same GPU (`node-2`) that names neither.
class ProcessIndex {
public:
  // The process the case belongs to (its index in processes()), a new one if none matches.
  crash::ProcessKey add(const source::Source& source, const crash::Evidence* crash = nullptr,
                        const Snapshot* snapshot = nullptr);
  const std::vector<Process>& processes() const { return processes_; }

private:
  std::vector<Process> processes_;
  std::multimap<int, std::size_t> by_rank_;
  std::multimap<std::int64_t, std::size_t> by_pid_;
  std::vector<std::string> gpus_; // per process: the GPU its crash evidence named, if any
  std::size_t cases_ = 0;
};

// Every case of the incident grouped so.
std::vector<Process> processes(const Incident& incident);

// The crash verdict over the incident's cases: each case's crash evidence joined into the process
// the grouping above put it in. Empty without crash evidence.
std::vector<Finding> crash_verdict(const Incident& incident);

} // namespace rocplay::incident
