// Stuck or slow: several samples of one process, compared. Pure functions of snapshots, beside
// the heuristics (docs/heuristics.md, "Progress across samples").
//
//   std::vector<Sample> samples = ...;          // from `rocplay run --samples N` or a recording
//   auto sampled = heuristics::run_samples(samples, context);
//   sampled.progress.verdict                    // Stuck / Moving / ...
//   sampled.findings                            // confirmed or "slow, not stuck"
// Layer: src/heuristics/ (library rocplay_heuristics; docs/architecture.md).
#pragma once

#include "rocplay/heuristics/heuristics.hpp"
#include "rocplay/snapshot/sampling.hpp"
#include "rocplay/snapshot/snapshot.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace rocplay {

// What the samples say about one thing.
enum class Motion : std::uint8_t {
  Unknown, // the samples cannot tell (no waves, no read index, seen once)
  Stuck,   // in the same place in every sample (a spin: same loop region, same read index)
  Blocked, // a host thread in the same frames in every sample, inside a wait (futex, poll ...)
  Moving,  // left its place, completed, or appeared since the first sample
};
std::string_view to_string(Motion motion);

struct ProgressEntry {
  std::string kind;  // `dispatch`, `waves`, `queue`, `thread`
  std::string id;    // dispatch id, `DISPATCH@PC` for a wave class, queue id, thread id
  std::string label; // kernel name, function and source line, thread name
  Motion motion = Motion::Unknown;
  std::string why;           // `stayed within 16 bytes of 0x...`, `read index 412 -> 518`
  std::uint32_t samples = 0; // samples it was seen in
  double seconds = 0;        // from the first sample it was seen in to the last
  std::string frame0;        // a thread's innermost frame, as the report names its place
  nlohmann::json details;    // the same and more, for the JSON only
};

struct SampleProgress {
  std::uint32_t samples = 0;
  double seconds = 0; // first sample to last
  std::vector<ProgressEntry> entries;
  Motion verdict = Motion::Unknown; // Stuck when anything that matters is stuck
  std::string verdict_text;         // one line for the report
};

// Bytes a PC may move and still be "in the same loop region": a polling loop is a few
// instructions (16-byte NVIDIA instructions, 4-8 byte AMD ones), and two stops catch it at
// different ones. A healthy loop body moves its waves further than this between samples.
inline constexpr std::uint64_t kLoopRegionBytes = 64;

namespace heuristics {

inline constexpr std::string_view kNoProgress = "no-progress";

// Compares the samples (in order) of one process. Fewer than two samples: every entry Unknown.
SampleProgress analyze_progress(const std::vector<Sample>& samples);

struct SampledFindings {
  std::vector<Finding> findings;
  SampleProgress progress;
};
// run() over the first sample, run_pair(first, last) when there are two or more, then the
// progress analysis: each finding's confidence says whether the samples confirmed it, a finding
// whose dispatch moved becomes "slow, not stuck" (kept, lower severity, with the figures), and
// `no-progress` names what is stuck that no other finding names.
SampledFindings run_samples(const std::vector<Sample>& samples, const Context& context = {});

} // namespace heuristics

nlohmann::json to_json(const SampleProgress& progress);

} // namespace rocplay
