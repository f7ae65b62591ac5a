// A post-mortem batch through the one writer (rocplay/report/postmortem.hpp): each input rendered
// as the batch reads it, in the format chosen once, kept in a Spool; report::write then writes
// the incident first (several inputs), those parts, and the batch summary.
#include "rocplay/core/error.hpp"
#include "rocplay/report/incident.hpp"
#include "rocplay/report/postmortem.hpp"

#include <cerrno>
#include <cstring>
#include <iterator>
#include <sstream>
#include <stdexcept>

namespace rocplay::report {

namespace {

std::string json_line(const nlohmann::json& j, int indent = -1) {
  return j.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

// `j` pretty-printed as nlohmann::json prints it `depth` levels deep in a document: every line
// after the first indented by 2 * depth more spaces.
std::string nested(const nlohmann::json& j, std::size_t depth) {
  const std::string text = json_line(j, 2);
  const std::string pad(2 * depth, ' ');
  std::string out;
  out.reserve(text.size() + text.size() / 8);
  for (const char ch : text) {
    out += ch;
    if (ch == '\n') {
      out += pad;
    }
  }
  return out;
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
  c.graph = r.graph;
  c.warnings = r.warnings;
  Incident inc;
  inc.title = "postmortem";
  inc.cases.push_back(std::move(c));
  return inc;
}

[[noreturn]] void spool_failed(const char* what) {
  throw Error(ExitCode::NoInput,
              std::string("the report's temporary file could not be ") + what + ": " +
                  std::strerror(errno),
              "free space where $TMPDIR (else /tmp) points, or use --format text");
}

} // namespace

// --- Spool
// ----------------------------------------------------------------------------------------

Spool::Spool(std::size_t memory_bound) : memory_bound_(memory_bound) {}

void Spool::append(std::string_view text) {
  size_ += text.size();
  if (!file_ && memory_.size() + text.size() <= memory_bound_) {
    memory_.append(text);
    return;
  }
  if (!file_) {
    std::FILE* f = std::tmpfile(); // unnamed: gone when closed or when rocplay ends
    if (f == nullptr) {
      spool_failed("created");
    }
    file_.reset(f, [](std::FILE* p) { std::fclose(p); });
  }
  if (std::fwrite(text.data(), 1, text.size(), file_.get()) != text.size()) {
    spool_failed("written");
  }
}

void Spool::write_to(std::ostream& out) const {
  out << memory_;
  if (!file_) {
    return;
  }
  if (std::fflush(file_.get()) != 0 || std::fseek(file_.get(), 0, SEEK_SET) != 0) {
    spool_failed("read back");
  }
  std::string buffer(std::size_t{1} << 16, '\0');
  while (const std::size_t n = std::fread(buffer.data(), 1, buffer.size(), file_.get())) {
    out.write(buffer.data(), static_cast<std::streamsize>(n));
  }
  if (std::ferror(file_.get()) != 0) {
    spool_failed("read back");
  }
  std::fseek(file_.get(), 0, SEEK_END); // later appends go after what is there
}

// --- PostmortemBatch
// ------------------------------------------------------------------------------

PostmortemBatch::PostmortemBatch(Format format, TextOptions text, PostmortemWriteOptions options)
    : format_(format), text_(std::move(text)), options_(options) {}

void PostmortemBatch::add(const postmortem::InputResult& r) {
  ++added_;
  switch (format_) {
  case Format::Jsonl:
    parts_.append(json_line(postmortem_input_to_json(r, options_.snapshots)));
    parts_.append("\n");
    break;
  case Format::Json:
    // An element of the document's `inputs`, as the whole document would print it.
    parts_.append(added_ == 1 ? "\n    " : ",\n    ");
    parts_.append(nested(postmortem_input_to_json(r, options_.snapshots), 2));
    break;
  case Format::Sarif: {
    auto located = postmortem_sarif_findings(r);
    findings_.insert(findings_.end(), std::make_move_iterator(located.begin()),
                     std::make_move_iterator(located.end()));
    break;
  }
  case Format::Html: {
    html::CaseInput in;
    in.label = r.path + r.member;
    if (r.rank) {
      in.label = "rank " + std::to_string(*r.rank) + " · " + in.label;
    }
    in.rank = r.rank;
    in.pid = r.snapshot.pid;
    in.examined =
        r.status == postmortem::InputStatus::Ok || r.status == postmortem::InputStatus::Partial;
    in.error = r.error;
    in.snapshot = &r.snapshot;
    in.findings = &r.findings;
    in.graph = &r.graph;
    in.warnings = &r.warnings;
    if (has_snapshot_report(r)) {
      TextOptions to = text_;
      to.color = false;
      to.width = 100;
      std::ostringstream text;
      write_postmortem_input_text(text, r, to);
      in.text_report = text.str();
    }
    html_.push_back(html::case_parts(in, html_.size()));
    break;
  }
  case Format::Text:
    if (added_ == 1 && has_snapshot_report(r) && !options_.details) {
      only_ = incident_of_input(r);
    } else {
      only_.reset();
    }
    if (options_.details && has_snapshot_report(r)) {
      std::ostringstream details;
      write_wrapped(details, text_.width, "=== ",
                    r.path + r.member +
                        (r.rank ? " (rank " + std::to_string(*r.rank) + ")" : std::string()));
      write_postmortem_input_text(details, r, text_);
      details << "\n";
      parts_.append(details.str());
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

void PostmortemBatch::close(postmortem::Summary summary) {
  summary_ = std::move(summary);
}

void PostmortemBatch::write(std::ostream& out, const Incident& incident, Format format,
                            const TextOptions& options, std::string_view tool_version) const {
  if (format != format_) {
    throw std::logic_error("report::write: a post-mortem batch rendered for another format");
  }
  // Several inputs: the incident first, in every format.
  const bool several = incident.cases.size() >= 2;
  switch (format) {
  case Format::Jsonl:
    if (several) {
      out << json_line(incident_jsonl_line(incident, "rocplay.postmortem.incident")) << "\n";
    }
    parts_.write_to(out);
    out << json_line(postmortem_summary_to_json(summary_)) << "\n";
    break;
  case Format::Json:
    // postmortem_to_json's document, written as nlohmann::json prints it (keys in order), with
    // the inputs as they were rendered: `incident`, `inputs`, `schema`, `schema_version`,
    // `summary`.
    out << "{\n  \"incident\": " << nested(incident_to_json(incident), 1) << ",\n  \"inputs\": [";
    parts_.write_to(out);
    out << (added_ == 0 ? "],\n" : "\n  ],\n");
    out << "  \"schema\": " << json_line(nlohmann::json("rocplay.postmortem")) << ",\n";
    out << "  \"schema_version\": " << postmortem::kSchemaVersion << ",\n";
    out << "  \"summary\": " << nested(postmortem_summary_to_json(summary_), 1) << "\n}\n";
    break;
  case Format::Sarif: {
    // What holds across the inputs first (events and series under their keys, the crash
    // verdict), then each input's findings.
    std::vector<Finding> findings = postmortem_sarif_findings(summary_);
    findings.insert(findings.end(), findings_.begin(), findings_.end());
    nlohmann::json sarif = to_sarif(findings, tool_version);
    if (several) {
      sarif = sarif_with_incident(std::move(sarif), incident);
    }
    out << json_line(sarif, 2) << "\n";
    break;
  }
  case Format::Html:
    html::write_page(out, incident, options, tool_version, html_);
    break;
  case Format::Text:
    if (only_ && added_ == 1 && summary_.events.empty()) {
      // One input: its own report, as a live run's, and what a directory walk left out.
      report::write(out, *only_, Format::Text, options, tool_version);
      write_postmortem_sources_text(out, summary_, options, false);
    } else {
      // Several inputs: the incident first (where each rank stands), then with --details each
      // input's report, then the batch summary.
      if (several) {
        write_incident_text(out, incident, options);
      }
      parts_.write_to(out);
      write_postmortem_summary_text(out, summary_, listed_, not_listed_, options);
    }
    break;
  }
}

} // namespace rocplay::report
