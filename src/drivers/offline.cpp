// The offline driver (rocplay/drivers/drivers.hpp): a post-mortem batch (postmortem::run reads each
// input on the worker pool) turned into its incident: a light case per input, the events'
// cross-rank findings, the crash verdict and the series findings.
#include "rocplay/drivers/drivers.hpp"

#include "rocplay/heuristics/launch_verify.hpp"

#include <algorithm>

namespace rocplay::drivers {

namespace {
// `launch --verify` runs at most 20 x (1 + experiments); more recordings than this are not one
// verification.
constexpr std::size_t kMostVerifyRuns = 1000;
} // namespace

OfflineResult read_inputs(const postmortem::Options& options,
                          const std::function<void(const postmortem::InputResult&)>& on_input,
                          const std::function<void(const postmortem::Progress&)>& on_progress) {
  OfflineResult out;
  out.incident.title = "postmortem";
  // The incident model: one light Case per input (where it stands, not its snapshot).
  std::vector<heuristics::VerifyRun> verify_runs;
  auto on_result = [&](const postmortem::InputResult& r) {
    out.incident.cases.push_back(postmortem::case_of(r));
    // A `launch --verify` run's recording says which run it was: the runs compare again.
    if (const auto& run = r.snapshot.launch_run; run && verify_runs.size() < kMostVerifyRuns) {
      heuristics::VerifyRun v;
      v.run = *run;
      v.fault = heuristics::fault_site(r.snapshot);
      v.launch_line = heuristics::launch_line(r.snapshot);
      v.concurrent = heuristics::concurrent_work(r.snapshot);
      v.launch_sites = run->launch_sites;
      v.recording = r.path + r.member;
      verify_runs.push_back(std::move(v));
    }
    if (on_input) {
      on_input(r);
    }
  };
  out.summary = postmortem::run(options, on_result, on_progress);
  for (const auto& e : out.summary.events) {
    out.incident.cross_rank.insert(out.incident.cross_rank.end(), e.findings.begin(),
                                   e.findings.end());
  }
  out.incident.crash_verdict = out.summary.crash;
  for (const auto& sr : out.summary.series) {
    out.incident.series.insert(out.incident.series.end(), sr.findings.begin(), sr.findings.end());
  }
  if (!verify_runs.empty()) {
    std::stable_sort(verify_runs.begin(), verify_runs.end(),
                     [](const auto& a, const auto& b) { return a.run.index < b.run.index; });
    heuristics::add_launch_sites(verify_runs);
    out.incident.verification = heuristics::compare_verify_runs(verify_runs);
    out.incident.verify_runs = std::move(verify_runs);
  }
  return out;
}

} // namespace rocplay::drivers
