// Report writers: a person's text (verdict first, then evidence), versioned JSON, JSON Lines,
// SARIF 2.1.0 for findings, and one self-contained HTML page (rocplay/report/html.hpp).
#pragma once

#include "rocplay/heuristics/heuristics.hpp"
#include "rocplay/snapshot/snapshot.hpp"

#include <nlohmann/json.hpp>

#include <ostream>
#include <string_view>
#include <vector>

namespace rocplay::report {

enum class Format : std::uint8_t { Text, Json, Jsonl, Sarif, Html };
// Throws Error(Usage) naming the valid formats.
Format parse_format(std::string_view name);

constexpr int kJsonSchemaVersion = 1;

struct TextOptions {
  bool color = false;
  std::size_t max_rows = 40; // per evidence table; the rest is summarised
  // A run that did not finish: the report leads with what failed (`failure`, under `failure_label`
  // such as "RUN FAILED") and the target's state (`target`), and says it is partial.
  std::string failure_label;
  std::string failure;
  std::string target;
  std::size_t width = 100; // columns; text_width() gives the terminal's
  bool wide = false;       // print everything: no cut cells or stacks, every row
  // `agent-log`: fault groups shown, and every caveat, sample and context line.
  std::size_t max_groups = 20;
  bool verbose = false;
  // The wait-for graph's `Cause:` lines (graph::cause_lines), printed under the VERDICT line.
  std::vector<std::string> cause;
};

// The width a text report should have: $COLUMNS, else the terminal on `fd` (when it is one),
// else 100. Bounded to 40..1000.
std::size_t text_width(int fd = 1);
// Columns a line takes on a terminal: colour escape codes take none, a UTF-8 character one.
std::size_t text_columns(std::string_view line);
// Word-wraps `text` to `width` columns after `label`; continuation lines are indented to the
// label's width. Every text section of a report uses it, so each fits the same width.
void write_wrapped(std::ostream& out, std::size_t width, std::string_view label,
                   std::string_view text);

// How long the target was stopped, for text: `0.412 s`, or `0.45 ms` below 10 ms (a stop by copy
// reads as zero in seconds). `digits` decimals of seconds; `gap` between number and unit.
std::string stop_time_text(double seconds, int digits = 3, std::string_view gap = " ");

// One finding as the cross-rank part of a report lists it (a fan-out's, a post-mortem event's):
// `[id] title`, then its meaning, evidence and next step, wrapped to `width`, `indent` deep.
void write_finding_entry(std::ostream& out, const Finding& finding, std::size_t width,
                         std::size_t indent = 0);

// Findings are expected most severe first (heuristics::run orders them): the first is the verdict.
void write_text(std::ostream& out, const Snapshot& snapshot, const std::vector<Finding>& findings,
                const TextOptions& options = {});
// Several snapshots (two of one process, or one per rank): the verdict, then each snapshot.
void write_text(std::ostream& out, const std::vector<Snapshot>& snapshots,
                const std::vector<Finding>& findings, const TextOptions& options = {});
nlohmann::json finding_to_json(const Finding& finding);
// An array of finding_to_json objects.
nlohmann::json findings_to_json(const std::vector<Finding>& findings);
// {"schema":"rocplay.report","schema_version":1,"snapshot":{...},"findings":[...]}; the snapshot
// carries its wave classes. docs/json-schema.md documents every field.
nlohmann::json report_to_json(const Snapshot& snapshot, const std::vector<Finding>& findings);
// {"schema":"rocplay.report","schema_version":1,"snapshots":[...],"findings":[...]}
nlohmann::json report_to_json(const std::vector<Snapshot>& snapshots,
                              const std::vector<Finding>& findings);
// One finding per line (finding_to_json), for log pipelines.
void write_jsonl(std::ostream& out, const std::vector<Finding>& findings);
// A SARIF 2.1.0 log: one rule per heuristic of heuristics::catalogue() (plus any other id that
// appears), one result per finding.
nlohmann::json to_sarif(const std::vector<Finding>& findings, std::string_view tool_version);

} // namespace rocplay::report
