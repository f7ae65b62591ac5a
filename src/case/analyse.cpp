// The one analysis step (rocplay/case/analyse.hpp): samples -> snapshot -> classes -> findings.
#include "rocplay/case/analyse.hpp"

#include "rocplay/heuristics/progress.hpp"
#include "rocplay/heuristics/wait_graph.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <exception>
#include <utility>

namespace rocplay::incident {
namespace {

// The wait-for graph over what the case holds; a producer that throws leaves a warning.
void add_graph(Case& c) {
  try {
    heuristics::GraphInputs in;
    in.snapshot = &c.snapshot;
    in.classes = &c.classes;
    in.findings = &c.findings;
    in.progress = c.samples.size() > 1 ? &c.progress : nullptr;
    in.samples = c.samples.size() > 1 ? &c.samples : nullptr;
    c.graph = heuristics::wait_graph(in);
    auto more = heuristics::graph_findings(c.graph, c.findings);
    c.findings.insert(c.findings.begin(), more.begin(), more.end());
  } catch (const std::exception& e) {
    c.warnings.push_back(fmt::format("wait-for graph: {}", e.what()));
  }
}

} // namespace

Case analyse(std::vector<Sample> samples, source::Source source, const AnalyseOptions& options) {
  Case c;
  if (!samples.empty() && !source.rank) {
    // The live run's own decision, recorded in the meta (the builder put it on the snapshot).
    source.offer_rank(samples.front().snapshot.rank, source::RankRule::Meta);
  }
  if (source.rank) {
    for (auto& s : samples) {
      s.snapshot.rank = source.rank;
    }
  }
  c.source = std::move(source);
  if (samples.empty()) {
    return c;
  }
  if (samples.size() == 1) {
    c.snapshot = std::move(samples.front().snapshot);
    c.classes = snapshot::group_waves(c.snapshot);
    try {
      c.findings = heuristics::run(c.snapshot, c.classes, options.context);
      if (options.one_live_sample) {
        heuristics::judge_one_moment(c.findings);
      }
    } catch (const std::exception& e) {
      c.warnings.push_back(fmt::format("heuristics: {}", e.what()));
    }
    if (options.keep_one_sample) {
      Sample one = std::move(samples.front());
      one.snapshot = c.snapshot;
      c.samples.push_back(std::move(one));
      c.progress = heuristics::analyze_progress(c.samples);
    }
    add_graph(c);
    return c;
  }
  c.snapshot = samples.front().snapshot;
  c.classes = snapshot::group_waves(c.snapshot);
  try {
    auto sampled = heuristics::run_samples(samples, options.context);
    c.findings = std::move(sampled.findings);
    c.progress = std::move(sampled.progress);
  } catch (const std::exception& e) {
    c.warnings.push_back(fmt::format("heuristics: {}", e.what()));
  }
  c.samples = std::move(samples);
  add_graph(c);
  return c;
}

Case analyse(const std::vector<mi::Exchange>& exchanges, const snapshot::BuildOptions& build,
             source::Source source, const AnalyseOptions& options) {
  return analyse(snapshot::build_samples(exchanges, build), std::move(source), options);
}

Case analyse_json(const nlohmann::json& json, source::Source source,
                  const AnalyseOptions& options) {
  std::vector<Sample> one(1);
  one.front().snapshot = snapshot_from_json(json);
  return analyse(std::move(one), std::move(source), options);
}

} // namespace rocplay::incident
