// Shared by the snapshot, heuristics and report tests: loading fixtures, recorded exchanges, and
// check_invariants(), which every snapshot built in a test goes through (waves attributed or
// flagged, unique ids, grouping accounts for every wave, JSON round-trips exactly).
#pragma once

#include "rocplay/mi/transcript.hpp"
#include "rocplay/snapshot/grouping.hpp"
#include "rocplay/snapshot/snapshot.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

namespace rocplay::test {

inline std::filesystem::path fixture_path(const std::string& rel) {
  return std::filesystem::path(ROCPLAY_SOURCE_DIR) / "fixtures" / rel;
}

// An exchange as a session records it: the command, when it was sent and when it was answered.
inline mi::Exchange exchange(std::string command, double sent, double done) {
  mi::Exchange e;
  e.command = std::move(command);
  e.sent_at = sent;
  e.done_at = done;
  return e;
}

inline std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) {
    FAIL("cannot read " << p.string());
  }
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

template <class T> void check_unique(const std::vector<T>& items, auto id_of, const char* what) {
  std::set<std::string> seen;
  for (const auto& x : items) {
    INFO(what << " id " << id_of(x));
    CHECK(seen.insert(id_of(x)).second);
  }
}

inline void check_invariants(const Snapshot& s) {
  check_unique(
      s.agents, [](const Agent& a) { return a.id; }, "agent");
  check_unique(
      s.queues, [](const Queue& q) { return q.id; }, "queue");
  check_unique(
      s.dispatches, [](const Dispatch& d) { return d.id; }, "dispatch");
  check_unique(
      s.waves, [](const Wave& w) { return w.thread_id; }, "wave");
  check_unique(
      s.host_threads, [](const HostThread& t) { return t.id; }, "host thread");

  // Queues and dispatches name agents that exist (when the agent list was taken).
  if (!s.agents.empty()) {
    for (const auto& q : s.queues) {
      if (q.agent) {
        INFO("queue " << q.id);
        CHECK(s.agent(*q.agent) != nullptr);
      }
    }
    for (const auto& d : s.dispatches) {
      if (d.agent) {
        INFO("dispatch " << d.id);
        CHECK(s.agent(*d.agent) != nullptr);
      }
    }
  }
  // Every wave references an existing dispatch and agent, or is flagged, with a warning.
  std::size_t unattributed = 0;
  for (const auto& w : s.waves) {
    bool agent_ok = !w.agent || s.agents.empty() || s.agent(*w.agent) != nullptr;
    bool ok = agent_ok && s.dispatch_of(w) != nullptr;
    INFO("wave " << w.thread_id << " " << w.target_id);
    CHECK(w.unattributed == !ok);
    unattributed += w.unattributed ? 1 : 0;
  }
  if (unattributed) {
    bool warned = std::any_of(s.warnings.begin(), s.warnings.end(), [&](const std::string& m) {
      return m.find(std::to_string(unattributed) + " wave(s) are unattributed") !=
             std::string::npos;
    });
    CHECK(warned);
  }
  // One source line per PC, sorted.
  for (std::size_t i = 1; i < s.source_lines.size(); ++i) {
    CHECK(s.source_lines[i - 1].pc < s.source_lines[i].pc);
  }
  // Grouping accounts for every wave and thread.
  auto classes = snapshot::group_waves(s);
  std::size_t waves = 0;
  std::uint64_t threads = 0;
  std::uint64_t expected_threads = 0;
  for (const auto& c : classes) {
    waves += c.waves;
    threads += c.threads;
  }
  for (const auto& w : s.waves) {
    expected_threads += w.count;
  }
  CHECK(waves == s.waves.size());
  CHECK(threads == expected_threads);
  // JSON round-trips, through text too.
  nlohmann::json j = to_json(s);
  Snapshot back = snapshot_from_json(j);
  CHECK(back == s);
  Snapshot reparsed = snapshot_from_json(nlohmann::json::parse(j.dump()));
  CHECK(reparsed == s);
}

// Builds a fixture transcript (relative to fixtures/) and checks its invariants.
inline Snapshot load(const std::string& rel, mi::TranscriptInfo* info = nullptr) {
  std::string text = read_file(fixture_path(rel));
  Snapshot s = snapshot::build_from_transcript(text, {}, info);
  INFO("fixture " << rel);
  check_invariants(s);
  return s;
}

inline bool has_warning(const Snapshot& s, std::string_view needle) {
  return std::any_of(s.warnings.begin(), s.warnings.end(),
                     [&](const std::string& w) { return w.find(needle) != std::string::npos; });
}

} // namespace rocplay::test
