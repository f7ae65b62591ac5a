// Stuck-kernel heuristics: pure functions of snapshots that return findings.
#pragma once

#include "rocplay/snapshot.hpp"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace rocplay {

enum class Severity : std::uint8_t { Info, Warning, Error, Critical };
std::string_view to_string(Severity severity);

struct Location {
  std::string file;
  std::optional<std::uint32_t> line;
  std::string function;
  std::optional<std::uint64_t> pc;
  bool operator==(const Location&) const = default;
};

struct Finding {
  std::string id;          // stable, e.g. `sync-lane-barrier-spin`
  std::string title;       // one line
  Severity severity = Severity::Warning;
  double confidence = 0.5; // 0..1
  std::string summary;     // what it means, in a sentence or three
  std::vector<std::string> evidence; // human lines: wave classes, PCs, dispatch ids
  nlohmann::json details;  // the same evidence, structured
  std::string next_step;   // what to do now
  std::vector<Location> locations;
  std::optional<int> rank; // for per-rank findings in multi-rank runs
};

namespace heuristics {

struct Context {
  // Worker PIDs of this process tree, for the "nothing visible" finding.
  std::vector<std::int64_t> worker_pids;
};

// Every single-snapshot heuristic.
std::vector<Finding> run(const Snapshot& snapshot, const Context& context = {});
// Heuristics over two snapshots of one process taken some time apart (queue stall, progress).
std::vector<Finding> run_pair(const Snapshot& earlier, const Snapshot& later);
// Heuristics across ranks (one snapshot per rank of one event): missing rank, unequal grids.
std::vector<Finding> run_ranks(const std::vector<Snapshot>& ranks);

} // namespace heuristics
} // namespace rocplay
