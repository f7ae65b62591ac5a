// The wait-for graph over every real recording in the repository (fixtures/: rocplay recordings,
// raw MI logs, reconstructed rocgdb snapshots): each file's root and chain, and each rank group's
// joined graph, against fixtures/graph/expected-causes.txt. A recording that is not listed, or a
// listed one that is gone, fails the test, so a new recording must say what it should produce.
// ROCPLAY_GRAPH_PRINT=1 prints every line as the graph gives it, for review before it is listed.
#include "rocplay/graph/graph.hpp"
#include "rocplay/heuristics/heuristics.hpp"
#include "rocplay/heuristics/wait_graph.hpp"
#include "rocplay/postmortem/postmortem.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>

using namespace rocplay;
namespace fs = std::filesystem;

namespace {

const fs::path kGraphFixtures = fs::path(ROCPLAY_SOURCE_DIR) / "fixtures";

// `root NODE [cycle] <- WAITER <- ... <- SYMPTOM`, `open NODE <- ...`, or `none`: what the graph
// makes of one input. Only the first root (the one the report leads with) and its first chain.
std::string graph_summary(const graph::Graph& g) {
  const auto roots = graph::find_roots(g);
  auto chain_text = [&](const std::vector<graph::NodeId>& chain) {
    std::string out;
    for (std::size_t i = chain.size(); i-- > 1;) {
      out += " <- " + g.node(chain[i - 1]).id;
    }
    return out;
  };
  if (!roots.empty()) {
    const auto& r = roots.front();
    std::string out = "root " + g.node(r.node).id + (r.cycle ? " cycle" : "");
    if (!r.chains.empty()) {
      out += chain_text(r.chains.front());
    }
    if (roots.size() > 1) {
      out += " (+" + std::to_string(roots.size() - 1) + " roots)";
    }
    return out;
  }
  const auto ends = graph::open_ends(g);
  if (!ends.empty()) {
    return "open " + g.node(ends.front().node).id + chain_text(ends.front().chain);
  }
  return "none";
}

bool is_recording_file(const fs::path& p) {
  const auto ext = p.extension().string();
  return ext == ".rec" || ext == ".rocplay" || ext == ".mi";
}

std::map<std::string, std::string> expected_causes() {
  std::map<std::string, std::string> out;
  std::ifstream in(kGraphFixtures / "graph/expected-causes.txt");
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line.front() == '#') {
      continue;
    }
    const auto tab = line.find('\t');
    REQUIRE(tab != std::string::npos);
    out[line.substr(0, tab)] = line.substr(tab + 1);
  }
  return out;
}

} // namespace

TEST_CASE("every real recording keeps its root and chain", "[graph][recordings]") {
  std::vector<fs::path> files;
  for (const auto& e : fs::recursive_directory_iterator(kGraphFixtures)) {
    const auto rel = fs::relative(e.path(), kGraphFixtures).string();
    // rocgdb-console and snapshot-json hold pasted text and JSON, not recordings.
    if (e.is_regular_file() && is_recording_file(e.path()) && !rel.starts_with("rocgdb-console/") &&
        !rel.starts_with("snapshot-json/")) {
      files.push_back(e.path());
    }
  }
  std::sort(files.begin(), files.end());
  REQUIRE(files.size() >= 80);
  const auto want = expected_causes();
  const bool print = std::getenv("ROCPLAY_GRAPH_PRINT") != nullptr;
  std::map<std::string, std::vector<postmortem::InputResult>> groups; // rank groups by template
  std::set<std::string> seen;
  for (const auto& f : files) {
    const std::string rel = fs::relative(f, kGraphFixtures).string();
    seen.insert(rel);
    postmortem::Options options;
    auto results = postmortem::analyse_file(f.string(), options);
    REQUIRE(results.size() == 1);
    auto& r = results.front();
    const std::string got = graph_summary(r.graph);
    if (print) {
      std::cout << rel << '\t' << got << '\n';
    } else {
      INFO(rel);
      REQUIRE(want.count(rel) == 1);
      CHECK(got == want.at(rel));
    }
    // Ranks of one event: files named by rank in one directory (`rank3.mi`, `x-rank1.rec`, or
    // `job-1.rec` when the recording's meta names its rank too).
    if (auto ranked = postmortem::rank_in_file_name(rel);
        ranked && (rel.find("rank") != std::string::npos || r.rank.has_value())) {
      if (!r.snapshot.rank) {
        r.snapshot.rank = ranked->second;
      }
      groups[ranked->first].push_back(std::move(r));
    }
  }
  // Each rank group joined: the incident's graph.
  for (auto& [key, members] : groups) {
    if (members.size() < 2) {
      continue;
    }
    // As postmortem judges the ranks: each at its last sample, with what its first adds.
    std::vector<Snapshot> snapshots;
    std::vector<heuristics::RankHistory> history;
    for (const auto& m : members) {
      const bool several = m.samples.size() >= 2;
      snapshots.push_back(several ? m.samples.back().snapshot : m.snapshot);
      snapshots.back().rank = m.snapshot.rank;
      history.push_back(several ? heuristics::rank_history(m.samples)
                                : heuristics::RankHistory{m.samples.size(), {}});
    }
    const auto cross = heuristics::run_ranks(snapshots, history);
    std::vector<heuristics::RankGraph> ranks;
    for (const auto& m : members) {
      ranks.push_back({m.snapshot.rank, m.snapshot.pid, &m.graph, &m.snapshot, {}});
    }
    const auto g = heuristics::incident_graph(ranks, cross);
    const std::string got = graph_summary(g);
    const std::string name = "join " + key;
    seen.insert(name);
    if (print) {
      std::cout << name << '\t' << got << '\n';
    } else {
      INFO(name);
      REQUIRE(want.count(name) == 1);
      CHECK(got == want.at(name));
    }
  }
  if (print) {
    return;
  }
  for (const auto& [name, line] : want) {
    INFO(name << " is listed but no longer in fixtures/");
    CHECK(seen.count(name) == 1);
  }
}

TEST_CASE("a saved info queues without info dispatches: unknown is not asked, never none",
          "[graph][console]") {
  // 28 queues on 4 GPUs, one HSA queue a packet behind (Read 1325, Write 1326), no `info
  // dispatches` in the session, the host thread in hipDeviceSynchronize.
  postmortem::Options options;
  auto results = postmortem::analyse_file(
      (kGraphFixtures / "rocgdb-console/queue-one-behind-no-dispatches/session.txt").string(),
      options);
  REQUIRE(results.size() == 1);
  const auto& r = results.front();
  REQUIRE(r.snapshot.queues.size() == 28);
  CHECK_FALSE(r.snapshot.coverage.dispatches);
  REQUIRE_FALSE(r.findings.empty());
  for (const auto& f : r.findings) {
    INFO(f.id << ": " << f.title);
    CHECK(f.title.find("no dispatch in flight") == std::string::npos);
    CHECK(f.title.find("no kernel of it in flight") == std::string::npos);
    for (const auto& e : f.evidence) {
      CHECK(e.find("no dispatch") == std::string::npos);
    }
  }
  CHECK(r.findings.front().id == heuristics::kQueuePacketsPending);
  // The graph: the host thread waits for the queue, the queue for its head packet, unknown.
  CHECK(graph::find_roots(r.graph).empty());
  const auto ends = graph::open_ends(r.graph);
  REQUIRE(ends.size() == 1);
  const auto& head = r.graph.node(ends.front().node);
  CHECK(head.state == graph::State::Unknown);
  CHECK(head.doing == "dispatches were not asked");
  REQUIRE(ends.front().chain.size() == 3);
  CHECK(r.graph.node(ends.front().chain[1]).label == "AMDGPU Queue 4:4 (QID 24)");
  const auto lines = graph::cause_lines(r.graph);
  REQUIRE(lines.size() == 1);
  CHECK(lines.front().starts_with("none found: the waits end at what could not be seen: its head "
                                  "packet, dispatches were not asked <- AMDGPU Queue 4:4"));
}
