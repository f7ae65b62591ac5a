// What several heuristics derive from one snapshot, derived once and shared when
// heuristics::run runs them over it: on a full node (78,000 waves) grouping the waves and finding
// the kernels' source files each walk every wave, and each heuristic did both on its own.
#pragma once

#include "heuristics/common.hpp"

#include <optional>
#include <set>
#include <string>
#include <vector>

namespace rocplay::heuristics {
namespace detail {

class Analysis {
public:
  explicit Analysis(const Snapshot& snapshot) : snapshot_(snapshot), kernels_(snapshot) {}
  // With the waves already grouped by the caller (incident::analyse groups them once per case).
  Analysis(const Snapshot& snapshot, const std::vector<snapshot::WaveClass>& classes)
      : snapshot_(snapshot), given_(&classes), kernels_(snapshot) {}
  const Snapshot& snapshot() const { return snapshot_; }
  // snapshot::group_waves of the snapshot, grouped on first use (or the caller's).
  const std::vector<snapshot::WaveClass>& classes() {
    if (given_ != nullptr) {
      return *given_;
    }
    if (!classes_) {
      classes_ = snapshot::group_waves(snapshot_);
    }
    return *classes_;
  }
  Kernels& kernels() { return kernels_; }

private:
  const Snapshot& snapshot_;
  const std::vector<snapshot::WaveClass>* given_ = nullptr;
  std::optional<std::vector<snapshot::WaveClass>> classes_;
  Kernels kernels_;
};

} // namespace detail

// The heuristics of rocplay/heuristics/heuristics.hpp that read those, over an analysis of the
// snapshot.
std::vector<Finding> program_fault(detail::Analysis& analysis);
std::vector<Finding> sync_lane_barrier_spin(detail::Analysis& analysis, const Context& context);
std::vector<Finding> splitk_clean_race(detail::Analysis& analysis);
// Dispatches in `explained` (the sync-lane findings' own) are not looked at: their finding would
// be dropped, and building it was a seventh of a small input's analysis.
std::vector<Finding> collective_wait(detail::Analysis& analysis,
                                     const std::set<std::string>& explained = {});
std::vector<Finding> host_blocked_on_gpu(detail::Analysis& analysis);
// Queues with packets pending and no dispatch in flight beside a host GPU wait; many such queues
// (queue_pending.cpp).
std::vector<Finding> queue_packets_pending(const Snapshot& snapshot);
// Sync-lane spin of waves whose dispatch and position are unknown (`?`), tied to their dispatch
// by code address (unknown_positions.cpp); dispatches in `already` have a finding.
std::vector<Finding> sync_lane_spin_unknown_positions(detail::Analysis& analysis,
                                                      const std::set<std::string>& already);

} // namespace rocplay::heuristics
