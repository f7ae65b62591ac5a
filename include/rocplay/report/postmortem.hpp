// A batch post-mortem as a report: each input's JSON (`rocplay.postmortem.input`), the summary
// (`rocplay.postmortem.summary`), the whole document (`rocplay.postmortem`), the text summary,
// and the findings a SARIF log carries. docs/json-schema.md documents every key.
// Layer: src/report/ (library rocplay_report; docs/architecture.md).
#pragma once

#include "rocplay/case/case.hpp"
#include "rocplay/report/postmortem_result.hpp"
#include "rocplay/report/report.hpp"

#include <nlohmann/json.hpp>

#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace rocplay::report {

// One input. `with_snapshot`: its whole snapshot (and each later sample's); otherwise the
// snapshot's counts only.
nlohmann::json postmortem_input_to_json(const postmortem::InputResult& input, bool with_snapshot);
nlohmann::json postmortem_summary_to_json(const postmortem::Summary& summary);
// {"schema":"rocplay.postmortem","schema_version":1,"inputs":[...],"summary":{...}}; `inputs`
// holds postmortem_input_to_json objects, collected as the batch ran.
nlohmann::json postmortem_to_json(nlohmann::json inputs, const postmortem::Summary& summary);

// Whether the input holds a snapshot a live run's report could have shown (a recording, raw MI,
// rocplay's JSON), readable; agent logs and crash evidence keep their own summary and verdict.
bool has_snapshot_report(const postmortem::InputResult& input);
// The input's full report, as `rocplay run` prints it live: verdict, evidence, tables, and the
// Progress section when it holds several samples.
void write_postmortem_input_text(std::ostream& out, const postmortem::InputResult& input,
                                 const TextOptions& options);
// The input's entry in the summary's list: path, kind, status, rank, its first signature and the
// verdict finding's title, samples and warnings (continuation lines indented). nullopt for an
// input with nothing to say (read whole, no finding, one sample).
std::optional<std::string> postmortem_input_line(const postmortem::InputResult& input);
// The batch: counts, stuck signatures, cross-rank events (their findings as a live fan-out
// prints them), the crash verdict, recordings of one process, then `listed` (input lines) with
// `not_listed` more, and the warnings.
void write_postmortem_summary_text(std::ostream& out, const postmortem::Summary& summary,
                                   const std::vector<std::string>& listed, std::size_t not_listed,
                                   const TextOptions& options);

// The findings a SARIF log carries for an input (its path and member as the first location, its
// rank), and for the summary (series and events under their keys, then the crash verdict).
std::vector<Finding> postmortem_sarif_findings(const postmortem::InputResult& input);
std::vector<Finding> postmortem_sarif_findings(const postmortem::Summary& summary);

// The one writer of a post-mortem batch, in the format chosen once: each input added as the
// batch reads it (in input order; JSON Lines and JSON keep them until the end, where the incident
// goes first), then the end. One input with a snapshot, in text, is that input's own report
// (report::write of its case: verdict, evidence, tables, progress, warnings); several open with the
// incident, then the batch summary.
struct PostmortemWriteOptions {
  bool snapshots = false;      // JSON: each input's whole snapshot
  bool details = false;        // text: every input's full report before the summary
  std::size_t max_listed = 50; // text: inputs listed one by one
};
class PostmortemWriter {
public:
  PostmortemWriter(std::ostream& out, Format format, TextOptions text,
                   PostmortemWriteOptions options, std::string tool_version);
  void add(const postmortem::InputResult& input);
  void finish(const Incident& incident, const postmortem::Summary& summary);

private:
  std::ostream& out_;
  Format format_;
  TextOptions text_;
  PostmortemWriteOptions options_;
  std::string tool_version_;
  std::vector<std::string> listed_;
  std::size_t not_listed_ = 0;
  std::vector<Finding> sarif_findings_;
  nlohmann::json inputs_ = nlohmann::json::array();
  std::string jsonl_inputs_;
  std::optional<postmortem::InputResult> only_; // text: the one input, kept for its full report
  std::size_t results_ = 0;
};

} // namespace rocplay::report
