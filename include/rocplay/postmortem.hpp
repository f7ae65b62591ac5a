// Batch post-mortems: snapshots and findings from recorded transcripts, rocplay JSON output and
// rocm-debug-agent logs, in parallel, in a deterministic order, with bounded memory. Never starts
// a debugger and never runs anything.
#pragma once

#include "rocplay/heuristics.hpp"
#include "rocplay/mi/transcript.hpp"
#include "rocplay/progress.hpp"
#include "rocplay/snapshot.hpp"

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace rocplay::crash {
struct Evidence; // rocplay/crash.hpp
}

namespace rocplay::postmortem {

constexpr int kSchemaVersion = 1;

enum class InputKind : std::uint8_t {
  Unknown,    // read, but not a format rocplay knows
  Recording,  // a rocplay recording (`# rocplay-transcript 1`)
  RawMi,      // a debugger's MI stdout as saved
  ReportJson, // rocplay's own JSON / JSON Lines output (a snapshot inside)
  AgentLog,   // a server log with rocm-debug-agent wave dumps
  // Crash evidence (rocplay/crash.hpp, docs/crash-evidence.md):
  CrashLog,         // API-call log, kernel log or runtime messages
  CrashDump,        // a level-10 dump's metadata.json or tensor file
  CrashDiagnostics, // the crash seed's crash_diagnostics.json
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
  // A recording of several samples (`rocplay run --samples N`): each one, and what they say.
  // Empty for one sample (`snapshot` is then the whole recording's).
  std::vector<Sample> samples;
  SampleProgress progress;
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
};

struct Options {
  std::vector<std::string> paths;          // files, directories (recursive) and globs
  std::optional<std::string> rank_pattern; // --rank-from: ECMAScript regex, first group = rank
  unsigned jobs = 0;                       // 0: all cores
  mi::Limits limits;
  std::size_t max_ranked_snapshots = 1024; // kept for cross-rank analysis; beyond it, a warning
  // --one-event: every input is a rank of one event; ranks without meta or --rank-from are the
  // order the inputs were given in.
  bool one_event = false;
};

struct Progress {
  std::size_t done = 0;
  std::size_t total = 0;
  std::uint64_t bytes = 0;
};

// Expands paths into files in a stable order (directories sorted, recursive). Paths that match
// nothing come back as unreadable results from run().
std::vector<std::string> expand_inputs(const std::vector<std::string>& paths,
                                       std::vector<std::string>& missing);
// The same, naming what is found but not read, with why: a dangling symbolic link, or a FIFO,
// socket or device inside a directory (named on the command line, a FIFO is read). `-` stays
// `-`: standard input.
std::vector<std::string> expand_inputs(const std::vector<std::string>& paths,
                                       std::vector<std::string>& missing,
                                       std::vector<std::pair<std::string, std::string>>& rejected);

// A rank in a file name (`hang_rank3.mi`, `rank_1`, `r3`, `tp2`, `worker-5`, a trailing `-N`):
// the file name with the number replaced by `#` (the template files of one event share) and the
// number. nullopt when the name holds none of these.
std::optional<std::pair<std::string, int>> rank_in_file_name(const std::string& path);

// Reads one input. Never throws for bad input: problems become its status and warnings.
std::vector<InputResult> analyse_file(const std::string& path, const Options& options);

// Runs the batch. `on_result` gets every result in input order, from the calling thread.
// `on_progress` (optional) is called from the calling thread as results come in.
Summary run(const Options& options, const std::function<void(const InputResult&)>& on_result,
            const std::function<void(const Progress&)>& on_progress = {});

} // namespace rocplay::postmortem
