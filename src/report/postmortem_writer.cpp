// The one writer of a post-mortem batch (rocplay/report/postmortem.hpp): each input as the batch
// reads it, then the incident (several inputs) and the summary, in the format chosen once.
#include "rocplay/report/incident.hpp"
#include "rocplay/report/postmortem.hpp"

#include <iterator>

namespace rocplay::report {

namespace {

std::string json_line(const nlohmann::json& j, int indent = -1) {
  return j.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

// The one input's case in full, for its own report: what a live run's report shows.
Incident incident_of_input(const postmortem::InputResult& r) {
  rocplay::Case c;
  c.source.path = r.path;
  c.source.member = r.member;
  c.source.rank = r.rank;
  c.snapshot = r.snapshot;
  c.findings = r.findings;
  c.samples = r.samples;
  c.progress = r.progress;
  c.warnings = r.warnings;
  Incident inc;
  inc.title = "postmortem";
  inc.cases.push_back(std::move(c));
  return inc;
}

} // namespace

PostmortemWriter::PostmortemWriter(std::ostream& out, Format format, TextOptions text,
                                   PostmortemWriteOptions options, std::string tool_version)
    : out_(out), format_(format), text_(std::move(text)), options_(options),
      tool_version_(std::move(tool_version)) {}

void PostmortemWriter::add(const postmortem::InputResult& r) {
  switch (format_) {
  case Format::Jsonl:
    jsonl_inputs_ += json_line(postmortem_input_to_json(r, options_.snapshots));
    jsonl_inputs_ += '\n';
    break;
  case Format::Json:
    inputs_.push_back(postmortem_input_to_json(r, options_.snapshots));
    break;
  case Format::Sarif: {
    auto located = postmortem_sarif_findings(r);
    sarif_findings_.insert(sarif_findings_.end(), std::make_move_iterator(located.begin()),
                           std::make_move_iterator(located.end()));
    break;
  }
  case Format::Text:
    if (++results_ == 1 && has_snapshot_report(r) && !options_.details) {
      only_ = r;
    } else {
      only_.reset();
    }
    if (options_.details && has_snapshot_report(r)) {
      out_ << "=== " << r.path << r.member
           << (r.rank ? " (rank " + std::to_string(*r.rank) + ")" : std::string()) << "\n";
      write_postmortem_input_text(out_, r, text_);
      out_ << "\n";
    }
    if (auto line = postmortem_input_line(r)) {
      if (listed_.size() >= options_.max_listed) {
        ++not_listed_;
      } else {
        listed_.push_back(std::move(*line));
      }
    }
    break;
  }
}

void PostmortemWriter::finish(const Incident& incident, const postmortem::Summary& summary) {
  switch (format_) {
  case Format::Jsonl:
    if (incident.cases.size() >= 2) { // several inputs: the incident first
      nlohmann::json head = incident_to_json(incident);
      head["schema"] = "rocplay.postmortem.incident";
      head["schema_version"] = postmortem::kSchemaVersion;
      out_ << json_line(head) << "\n";
    }
    out_ << jsonl_inputs_;
    out_ << json_line(postmortem_summary_to_json(summary)) << "\n";
    break;
  case Format::Json: {
    nlohmann::json j = postmortem_to_json(std::move(inputs_), summary);
    inputs_ = nlohmann::json::array();
    if (incident.cases.size() >= 2) {
      j["incident"] = incident_to_json(incident);
    }
    out_ << json_line(j, 2) << "\n";
    break;
  }
  case Format::Sarif: {
    auto located = postmortem_sarif_findings(summary);
    sarif_findings_.insert(sarif_findings_.end(), std::make_move_iterator(located.begin()),
                           std::make_move_iterator(located.end()));
    out_ << json_line(to_sarif(sarif_findings_, tool_version_), 2) << "\n";
    break;
  }
  case Format::Text:
    if (only_ && results_ == 1 && summary.events.empty()) {
      // One input: its own report, through the one writer.
      write(out_, incident_of_input(*only_), Format::Text, text_, tool_version_);
    } else {
      // Several inputs: the incident first (where each rank stands), then the batch summary.
      if (incident.cases.size() >= 2) {
        write_incident_text(out_, incident, text_);
      }
      write_postmortem_summary_text(out_, summary, listed_, not_listed_, text_);
    }
    break;
  }
}

} // namespace rocplay::report
