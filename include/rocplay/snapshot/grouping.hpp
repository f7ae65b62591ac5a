// STAT-style wave grouping: thousands of waves read as a handful of classes.
//
// Waves are grouped by (agent, dispatch, PC). Each class says how many waves (or, for cuda-gdb
// thread ranges, how many threads) sit at that PC, which work-groups and wave-in-group slots they
// cover, and where the PC is in the source. Classes are ordered by agent, dispatch, then size.
//
//   for (const auto& c : rocplay::snapshot::group_waves(snap)) { ... c.waves ... c.pc ... }
// Layer: src/snapshot/ (library rocplay_snapshot; docs/architecture.md).
#pragma once

#include "rocplay/snapshot/snapshot.hpp"

#include <nlohmann/json_fwd.hpp>

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace rocplay::snapshot {

struct Range {
  std::int64_t first = 0;
  std::int64_t last = 0;
  bool operator==(const Range&) const = default;
};

struct WaveClass {
  std::optional<std::uint32_t> agent;
  std::optional<std::uint32_t> queue;
  std::optional<std::uint64_t> dispatch; // dispatch_no; nullopt for unattributed waves
  std::optional<std::uint64_t> pc;
  std::string kernel_name; // of the dispatch, when known
  std::string function;    // from the waves' frame (first wave of the class)
  std::string inline_function;
  std::string file;
  std::optional<std::uint32_t> line;
  std::size_t waves = 0;      // Wave entries in the class
  std::uint64_t threads = 0;  // sum of Wave::count (cuda-gdb ranges), else = waves
  std::size_t workgroups = 0; // distinct known work-groups
  std::array<std::optional<Range>, 3> workgroup{}; // bounding box of the known work-groups
  std::vector<Range> wave_in_group;                // distinct slots, as ranges (`0`, `1-7`)
  std::optional<Range> work_items;     // union of first/last_work_item (cuda-gdb ranges)
  std::size_t unknown_coordinates = 0; // waves with `?` in the work-group or slot
  std::size_t unattributed = 0;        // waves whose dispatch is not in the snapshot
  std::string first_thread;            // a thread id to select for a closer look
  bool operator==(const WaveClass&) const = default;
};

std::vector<WaveClass> group_waves(const Snapshot& snapshot);

// `0`, `1-7`, `0,2-3`.
std::string format_ranges(const std::vector<Range>& ranges);
// `(0-15,0,0)` from the bounding box; `?` where unknown.
std::string format_workgroups(const WaveClass& wave_class);

nlohmann::json to_json(const WaveClass& wave_class);
nlohmann::json to_json(const std::vector<WaveClass>& classes);

} // namespace rocplay::snapshot
