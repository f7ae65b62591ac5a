// The offline driver (rocplay/drivers/drivers.hpp): a post-mortem batch (postmortem::run reads each
// input on the worker pool) turned into its incident: a light case per input, the events'
// cross-rank findings, the crash verdict and the series findings.
#include "rocplay/drivers/drivers.hpp"

namespace rocplay::drivers {

OfflineResult read_inputs(const postmortem::Options& options,
                          const std::function<void(const postmortem::InputResult&)>& on_input,
                          const std::function<void(const postmortem::Progress&)>& on_progress) {
  OfflineResult out;
  out.incident.title = "postmortem";
  // The incident model: one light Case per input (where it stands, not its snapshot).
  auto on_result = [&](const postmortem::InputResult& r) {
    out.incident.cases.push_back(postmortem::case_of(r));
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
  return out;
}

} // namespace rocplay::drivers
