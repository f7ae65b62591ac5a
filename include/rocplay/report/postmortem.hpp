// A batch post-mortem as a report: each input's JSON (`rocplay.postmortem.input`), the summary
// (`rocplay.postmortem.summary`), the whole document (`rocplay.postmortem`), the text summary,
// and the findings a SARIF log carries. docs/json-schema.md documents every key.
// Layer: src/report/ (library rocplay_report; docs/architecture.md).
#pragma once

#include "rocplay/case/case.hpp"
#include "rocplay/report/html.hpp"
#include "rocplay/report/postmortem_result.hpp"
#include "rocplay/report/report.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

namespace rocplay::report {

// One input. `with_snapshot`: its whole snapshot (and each later sample's); otherwise the
// snapshot's counts only.
nlohmann::json postmortem_input_to_json(const postmortem::InputResult& input, bool with_snapshot);
nlohmann::json postmortem_summary_to_json(const postmortem::Summary& summary);
// {"schema":"rocplay.postmortem","schema_version":2,"incident":{...},"inputs":[...],
//  "summary":{...}}; `inputs` holds postmortem_input_to_json objects, `incident` is
// incident_to_json. report::write of a batch writes this document input by input (the same bytes).
nlohmann::json postmortem_to_json(nlohmann::json inputs, const postmortem::Summary& summary,
                                  const Incident& incident);

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

// Which inputs gave evidence (with `with_evidence`) and which files a directory walk skipped
// (documentation, empty files), and why.
void write_postmortem_sources_text(std::ostream& out, const postmortem::Summary& summary,
                                   const TextOptions& options, bool with_evidence);

// The findings a SARIF log carries for an input (its path and member as the first location, its
// rank), and for the summary (series and events under their keys, then the crash verdict).
std::vector<Finding> postmortem_sarif_findings(const postmortem::InputResult& input);
std::vector<Finding> postmortem_sarif_findings(const postmortem::Summary& summary);

// Text held in memory up to a bound, then in an unnamed temporary file: the parts of a report
// that are rendered as they come but written after what can only be said at the end (the
// incident). A batch's memory stays bounded however many inputs it reads.
class Spool {
public:
  explicit Spool(std::size_t memory_bound = std::size_t{8} << 20);
  void append(std::string_view text);
  // Everything appended, in order, to `out`. Throws Error(CantCreate) when the file part cannot be
  // read back.
  void write_to(std::ostream& out) const;
  bool empty() const { return size_ == 0; }
  std::uint64_t size() const { return size_; }

private:
  std::size_t memory_bound_;
  std::string memory_;
  std::shared_ptr<std::FILE> file_; // once memory_ would pass the bound
  std::uint64_t size_ = 0;
};

// A post-mortem batch as its inputs are read (in input order, PostmortemBatch::add) for the one
// writer: each input rendered at once in the format chosen once (JSON: its
// `rocplay.postmortem.input` object; JSON Lines: its line; SARIF: its findings located under its
// path; text: its line in the list, and with --details its full report; HTML: its stacks, wave
// maps and section, html::CaseParts), kept in a Spool, so no
// input's snapshot is kept. report::write(incident, format, ..., &batch) then writes the incident
// first (several inputs), these parts, and the batch summary (src/report/postmortem_writer.cpp).
struct PostmortemWriteOptions {
  bool snapshots = false;      // JSON: each input's whole snapshot
  bool details = false;        // text: every input's full report before the summary
  std::size_t max_listed = 50; // text: inputs listed one by one
};
class PostmortemBatch {
public:
  PostmortemBatch(Format format, TextOptions text, PostmortemWriteOptions options);
  void add(const postmortem::InputResult& input);
  // The batch's summary, once every input was added.
  void close(postmortem::Summary summary);

  // For report::write.
  void write(std::ostream& out, const Incident& incident, Format format, const TextOptions& options,
             std::string_view tool_version) const;

private:
  Format format_;
  TextOptions text_;
  PostmortemWriteOptions options_;
  postmortem::Summary summary_;
  std::size_t added_ = 0;
  Spool parts_;                     // json: the inputs' objects; jsonl: their lines; text: details
  std::vector<Finding> findings_;   // sarif: each input's, located
  std::vector<std::string> listed_; // text: the inputs' lines
  std::size_t not_listed_ = 0;
  std::optional<Incident> only_;      // text: the first input, whole, while it is the only one
  std::vector<html::CaseParts> html_; // html: each input's parts (its snapshot is not kept)
};

} // namespace rocplay::report
