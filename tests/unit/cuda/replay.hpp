// Replaying a multi-sample cuda-gdb recording as `rocplay postmortem` does: the samples one
// recording holds and the heuristics' context from its meta.
#pragma once

#include "../snapshot/support.hpp"

#include "rocplay/heuristics/heuristics.hpp"
#include "rocplay/snapshot/sampling.hpp"

#include <catch2/catch.hpp>

#include <string>
#include <vector>

namespace rocplay::test {

struct Replayed {
  std::vector<Sample> samples;
  heuristics::Context context;
};

// A recording's text (a fixture, or one a test changed) replayed into its samples.
inline Replayed replay_text(const std::string& text) {
  mi::TranscriptReader reader;
  reader.feed(text);
  reader.finish();
  snapshot::BuildOptions bo;
  bo.meta_json = reader.info().meta_json;
  snapshot::SampleBuilder builder(bo);
  while (auto ex = reader.next()) {
    builder.add(*ex);
  }
  return {builder.finish(), heuristics::context_from_meta(reader.info().meta_json)};
}

inline Replayed replay_samples(const std::string& rel) {
  return replay_text(read_file(fixture_path(rel)));
}

// One recording per rank (rank i is files[i]), as the cross-rank rules take them: each rank's
// first and last sample, and what its first sample adds.
struct ReplayedRanks {
  std::vector<Snapshot> first;
  std::vector<Snapshot> last;
  std::vector<heuristics::RankHistory> history;
};

inline ReplayedRanks replayed_ranks(const std::vector<std::string>& files) {
  ReplayedRanks out;
  for (std::size_t i = 0; i < files.size(); ++i) {
    auto r = replay_samples(files[i]);
    REQUIRE(!r.samples.empty());
    out.first.push_back(r.samples.front().snapshot);
    out.last.push_back(r.samples.back().snapshot);
    out.first.back().rank = static_cast<int>(i);
    out.last.back().rank = static_cast<int>(i);
    out.history.push_back(heuristics::rank_history(r.samples));
  }
  return out;
}

} // namespace rocplay::test
