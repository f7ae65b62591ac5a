// What a batch post-mortem found: one result per input, and the summary over all of them. The
// driver (src/postmortem, rocplay/postmortem/postmortem.hpp) fills these; the report writers
// (src/report/postmortem.cpp, rocplay/report/postmortem.hpp) render them.
// Layer: src/report/ (library rocplay_report; docs/architecture.md).
#pragma once

#include "rocplay/core/finding.hpp"
#include "rocplay/graph/graph.hpp"
#include "rocplay/heuristics/progress.hpp"
#include "rocplay/snapshot/snapshot.hpp"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace rocplay::crash {
struct Evidence; // rocplay/crash/crash.hpp
}
namespace rocplay::collectives {
struct Input; // rocplay/collectives/collectives.hpp
}

namespace rocplay::postmortem {

// Of every post-mortem JSON document: `rocplay.postmortem`, `.input`, `.summary`
// (docs/json-schema.md).
constexpr int kSchemaVersion = 3; // 2: the incident first; 3: `graph` (docs/json-schema.md)

enum class InputKind : std::uint8_t {
  Unknown,    // read, but not a format rocplay knows
  Recording,  // a rocplay recording (`# rocplay-transcript 1`)
  RawMi,      // a debugger's MI stdout as saved
  ReportJson, // rocplay's own JSON / JSON Lines output (a snapshot inside)
  AgentLog,   // a server log with rocm-debug-agent wave dumps
  // Crash evidence (rocplay/crash/crash.hpp, docs/crash-evidence.md):
  CrashLog,         // API-call log, kernel log or runtime messages
  CrashDump,        // a level-10 dump's metadata.json or tensor file
  CrashDiagnostics, // the crash seed's crash_diagnostics.json
  ConsoleLog, // debugger console text: a `set logging` file, `-batch` output, a pasted session
  // The job's own collective records (rocplay/collectives/collectives.hpp): a Flight Recorder
  // dump (pickle or JSON) or a saved `ncclras` answer. An NCCL_DEBUG log keeps the kind its text
  // got (a crash log, say) and carries its records in `collectives`.
  CollectiveRecord,
};
std::string_view to_string(InputKind kind);

enum class InputStatus : std::uint8_t {
  Ok,
  Partial,    // read with problems: truncated, lines skipped; the snapshot may be incomplete
  Empty,      // an empty file
  Unreadable, // missing, unreadable, or not a known format
};
std::string_view to_string(InputStatus status);

struct InputResult {
  std::size_t index = 0; // position in the expanded input list
  std::string path;
  std::string member; // `#3` for the 4th snapshot of a JSON Lines file; empty otherwise
  InputKind kind = InputKind::Unknown;
  InputStatus status = InputStatus::Ok;
  std::string error; // why it is unreadable
  std::uint64_t bytes = 0;
  std::optional<int> rank;
  std::string rank_rule;           // where the rank came from: `--rank-from`, `meta`, `meta RANK`
                                   // (set later for `file name` and `input order` ranks)
  std::uint64_t skipped_lines = 0; // lines that were not MI
  std::vector<std::string> warnings;
  std::vector<Finding> findings;
  std::vector<Signature> signatures;            // one per finding at warning or above
  Snapshot snapshot;                            // empty for agent logs and unreadable inputs
  std::shared_ptr<const crash::Evidence> crash; // crash evidence found in it, if any
  // Collective records found in it (Flight Recorder, NCCL log, RAS), if any.
  std::shared_ptr<const collectives::Input> collectives;
  // A recording of several samples (`rocplay run --samples N`): each one, and what they say.
  // Empty for one sample (`snapshot` is then the whole recording's).
  std::vector<Sample> samples;
  // A recording of one sample whose meta says how many the live look asked for: one moment of a
  // job that may be healthy, judged as the live run judged it (heuristics::judge_one_moment).
  bool one_live_sample = false;
  SampleProgress progress;
  graph::Graph graph; // who waits for whom (Case::graph)
  // From a recording's meta, to match recordings of one process: host, pid, command name.
  std::string process_key;
  double started_unix = 0; // its first stop, UNIX seconds (0: unknown)
};

// Recordings of one process given together (same host, pid and command name in the meta, each
// within an hour of the one before): their samples in time order, and what they say.
struct Series {
  std::string key;                  // `host pid 4242 (python3)`
  std::vector<std::string> members; // paths, in time order
  std::vector<double> at;           // each member's first stop, seconds after the first's
  SampleProgress progress;
  std::vector<Finding> findings;
};

struct SignatureClass {
  Signature signature;
  std::vector<std::string> members; // input paths, in input order
};

struct Event {
  std::string key; // the directory (or file) whose ranked snapshots form one event
  std::vector<int> ranks;
  // How the ranks were told: `meta` (the recordings' own rank), `--rank-from`, `file name`
  // (rank0/rank_1/r3/tp2/-N among files differing only in that number), `input order`
  // (--one-event); several joined by `, ` when the members differ.
  std::string rule;
  std::vector<Finding> findings; // heuristics::run_ranks
};

// A file a directory walk found and did not read (documentation, an empty file), and why.
struct SkippedInput {
  std::string path;
  std::string why;
};

struct Summary {
  std::size_t inputs = 0;
  std::size_t ok = 0;
  std::size_t partial = 0;
  std::size_t empty = 0;
  std::size_t unreadable = 0;
  std::size_t with_findings = 0;
  std::uint64_t bytes = 0;
  double seconds = 0;
  std::vector<SignatureClass> classes; // most members first
  std::vector<Event> events;           // cross-rank findings per event
  std::vector<Finding> crash;          // the crash verdict joined over every input, if any
  std::vector<Series> series;          // recordings of one process, compared
  std::vector<std::string> warnings;
  std::vector<SkippedInput> skipped; // not counted in `inputs`
  // Inputs whose contents went into the report (a snapshot, findings, crash evidence, an agent
  // log's faults), in input order; the rest were read and held nothing rocplay knows.
  std::vector<std::string> evidence;
};

} // namespace rocplay::postmortem
