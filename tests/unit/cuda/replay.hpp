// Replaying a multi-sample cuda-gdb recording as `rocplay postmortem` does: the samples one
// recording holds and the heuristics' context from its meta.
#pragma once

#include "../snapshot/support.hpp"

#include "rocplay/heuristics/heuristics.hpp"
#include "rocplay/snapshot/sampling.hpp"

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

} // namespace rocplay::test
