// The one analysis step (docs/architecture.md, "The incident model"): exchanges -> samples ->
// snapshot -> wave classes -> findings, for live runs and post-mortems alike. A live run builds
// its samples after the detach (playbook/runner.cpp); a post-mortem streams a recording into a
// snapshot::SampleBuilder (postmortem/postmortem.cpp); both then call `analyse` here, so the two
// say the same about the same exchanges.
//
//   snapshot::SampleBuilder b(build_options);        // each sample's snapshot built once
//   for (...) b.add(exchange);
//   Case c = incident::analyse(b.finish(), source, {.context = ctx});
//   // c.snapshot, c.classes, c.findings (the verdict first), c.samples and c.progress (several)
//
// Layer: src/case/ (library rocplay_case).
#pragma once

#include "rocplay/case/case.hpp"
#include "rocplay/core/source.hpp"
#include "rocplay/heuristics/heuristics.hpp"
#include "rocplay/snapshot/sampling.hpp"

#include <nlohmann/json_fwd.hpp>

#include <vector>

namespace rocplay::incident {

struct AnalyseOptions {
  heuristics::Context context;
  // One sample of a run that asked for several: keep it as `samples` with its progress (a live
  // run says "1 of N samples"); otherwise one sample leaves `samples` empty.
  bool keep_one_sample = false;
  // The one sample of a live look at a job that may be healthy (heuristics::judge_one_moment).
  bool one_live_sample = false;
};

// Samples (one or more, each with its snapshot already built and stamped) to a case: the
// snapshot (the first sample's), the waves grouped once into `classes`, the findings and, for
// several samples, the samples and their progress. A source without a rank takes the one the
// snapshots carry (a recording's meta); a rank is then put on every sample's snapshot.
// Heuristics that throw leave a warning, never an exception. No samples: a case with an empty
// snapshot and no findings.
Case analyse(std::vector<Sample> samples, source::Source source,
             const AnalyseOptions& options = {});

// Exchanges of a whole session (a live run's, a test's) through snapshot::build_samples, then
// the step above.
Case analyse(const std::vector<mi::Exchange>& exchanges, const snapshot::BuildOptions& build,
             source::Source source, const AnalyseOptions& options = {});

// A rocplay JSON snapshot (a report's `snapshot` object, or a bare one) to a case the same way;
// throws std::exception when it is not a snapshot.
Case analyse_json(const nlohmann::json& snapshot, source::Source source,
                  const AnalyseOptions& options = {});

} // namespace rocplay::incident
