// What one playbook run did and found: each step's record, the target's times, the snapshot, the
// samples and the findings. The playbook driver (src/playbook, rocplay/playbook/playbook.hpp) fills
// it; a Case carries it; the report writers render it (src/report/run_section.cpp,
// rocplay/report/run.hpp). Layer: src/case/ (library rocplay_case, below both, so the playbook
// links the incident model and not the report; docs/architecture.md).
#pragma once

#include "rocplay/core/debugger.hpp"
#include "rocplay/core/error.hpp"
#include "rocplay/core/finding.hpp"
#include "rocplay/graph/graph.hpp"
#include "rocplay/heuristics/progress.hpp"
#include "rocplay/snapshot/sampling.hpp"
#include "rocplay/snapshot/snapshot.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace rocplay::playbook {

// Where a step stands in its playbook.
struct Position {
  std::string file;       // a path, or `builtin:NAME`
  std::uint32_t line = 0; // 1-based; 0 when unknown
  std::uint32_t column = 0;
  std::string str() const; // FILE:LINE:COLUMN
};

enum class StepKind : std::uint8_t {
  Mi,          // mi: any MI command
  Cli,         // cli: a console command, via -interpreter-exec console
  Attach,      // attach to ${pid} (implicit before the first step when absent)
  Detach,      // detach (implicit at the end of `always`)
  Snapshot,    // build the typed snapshot over the exchanges so far
  Threads,     // -thread-info: every thread's PC, function, file:line
  InfoLine,    // `info line *PC` once per unique PC of threads and waves
  Backtrace,   // -stack-list-frames for each host thread, with a frame limit
  Disassemble, // -data-disassemble around each wave class's PC and each host thread's top PC
  Foreach,     // run nested steps once per thread, wave or dispatch that matches `where:`
};
std::string_view to_string(StepKind kind); // the playbook key: `mi`, `info-line` ...
std::optional<StepKind> step_kind_from_string(std::string_view key); // its inverse; nullopt else
// Every kind, in the order the loader's messages list their keys.
inline constexpr std::array<StepKind, 10> kStepKinds = {
    StepKind::Mi,          StepKind::Cli,     StepKind::Attach,   StepKind::Detach,
    StepKind::Snapshot,    StepKind::Threads, StepKind::InfoLine, StepKind::Backtrace,
    StepKind::Disassemble, StepKind::Foreach};

enum class StepStatus : std::uint8_t {
  Ok,
  Failed,   // failed; on_error: abort stopped the playbook
  Ignored,  // failed; on_error: continue went on
  TimedOut, // past its deadline
  Skipped,  // `when:` false, `requires:` another debugger, or nothing to do
  NotRun,   // an earlier step aborted the playbook
};
std::string_view to_string(StepStatus status);

struct StepRecord {
  std::string name;
  StepKind kind = StepKind::Mi;
  Position position;
  bool in_always = false;
  std::uint32_t depth = 0; // nesting inside foreach
  std::string item;        // foreach: the item this ran for (`thread 3`)
  StepStatus status = StepStatus::NotRun;
  std::string message;               // why it failed or was skipped
  std::vector<std::string> commands; // what was sent (first few)
  std::size_t command_count = 0;
  // cli: the console text the command printed; mi: that, then the result record as received.
  std::string output;
  double seconds = 0;
  std::uint32_t sample = 1; // which sample it ran for
};

struct RunResult {
  std::string playbook;
  std::int64_t pid = 0;
  DebuggerIdentity debugger;
  std::vector<StepRecord> steps;
  TargetTimes times;
  std::vector<std::string> warnings;
  Snapshot snapshot;
  std::vector<Finding> findings;
  bool attached = false;
  bool aborted = false;       // a step failed with on_error: abort
  std::optional<Error> fatal; // what ended the run early: attach refused, debugger died
  double total_seconds = 0;
  // --allow-unsafe-commands was given, and the commands it let through (those that would have
  // been refused without it), in the order they ran.
  bool unsafe_commands_allowed = false;
  std::vector<std::string> unsafe_commands_run;
  // Every sample taken, in order (the first is `snapshot`); the progress analysis over them.
  std::vector<Sample> samples;
  SampleProgress progress;
  graph::Graph graph; // who waits for whom (Case::graph), moved to the case
  std::uint32_t samples_wanted = 1;
  std::string sampling_stopped; // why fewer samples than wanted were taken
  // Several samples: the target's stops added up (times.stop_seconds then says the same).
  std::optional<double> stopped_seconds;

  // Fatal error code; else StepFailed when a step failed without on_error: continue; else
  // Findings when a finding is warning or above; else Ok.
  ExitCode exit_code() const;
};

} // namespace rocplay::playbook
