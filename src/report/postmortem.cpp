// A batch post-mortem rendered: JSON per input and for the summary, the text summary, SARIF's
// findings. The driver (src/postmortem) only reads inputs and joins them.
#include "rocplay/report/postmortem.hpp"

#include "rocplay/collectives/collectives.hpp"
#include "rocplay/core/names.hpp"
#include "rocplay/crash/crash.hpp"
#include "rocplay/heuristics/wait_graph.hpp"
#include "rocplay/report/crash.hpp"
#include "rocplay/report/incident.hpp"
#include "rocplay/report/progress.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>

namespace rocplay::postmortem {

constexpr NameTable<InputKind, 10> kInputKindNames{{
    {InputKind::Unknown, "unknown"},
    {InputKind::Recording, "recording"},
    {InputKind::RawMi, "raw-mi"},
    {InputKind::ReportJson, "report-json"},
    {InputKind::AgentLog, "agent-log"},
    {InputKind::CrashLog, "crash-log"},
    {InputKind::CrashDump, "crash-dump"},
    {InputKind::CrashDiagnostics, "crash-diagnostics"},
    {InputKind::ConsoleLog, "console-log"},
    {InputKind::CollectiveRecord, "collective-record"},
}};
static_assert(names_cover(kInputKindNames, InputKind::CollectiveRecord));

std::string_view to_string(InputKind kind) {
  return name_of(kInputKindNames, kind, "unknown");
}

constexpr NameTable<InputStatus, 4> kInputStatusNames{{
    {InputStatus::Ok, "ok"},
    {InputStatus::Partial, "partial"},
    {InputStatus::Empty, "empty"},
    {InputStatus::Unreadable, "unreadable"},
}};
static_assert(names_cover(kInputStatusNames, InputStatus::Unreadable));

std::string_view to_string(InputStatus status) {
  return name_of(kInputStatusNames, status, "unreadable");
}

} // namespace rocplay::postmortem

namespace rocplay::report {
namespace {

using postmortem::InputKind;
using postmortem::InputResult;
using postmortem::InputStatus;
using postmortem::Summary;

nlohmann::json signature_json(const Signature& s) {
  return {{"heuristic", s.heuristic}, {"kernel", s.kernel}, {"location", s.location}};
}

nlohmann::json snapshot_counts(const Snapshot& s) {
  return {{"debugger", to_string(s.debugger)},
          {"agents", s.agents.size()},
          {"queues", s.queues.size()},
          {"dispatches", s.dispatches.size()},
          {"waves", s.waves.size()},
          {"host_threads", s.host_threads.size()},
          {"warnings", s.warnings}};
}

bool is_crash_kind(InputKind kind) {
  return kind == InputKind::CrashLog || kind == InputKind::CrashDump ||
         kind == InputKind::CrashDiagnostics;
}

bool is_readable(const InputResult& r) {
  return r.status != InputStatus::Unreadable && r.status != InputStatus::Empty;
}

// `heuristic: kernel at location` of the input's first signature; empty without one.
std::string first_signature_text(const InputResult& r) {
  if (r.signatures.empty()) {
    return {};
  }
  const Signature& s = r.signatures.front();
  std::string line = s.heuristic;
  if (!s.kernel.empty()) {
    line += ": " + s.kernel;
  }
  if (!s.location.empty()) {
    line += " at " + s.location;
  }
  return line;
}

// The findings of `findings` a SARIF log carries under `where` (a path, an event's key).
void append_located(std::vector<Finding>& out, const std::vector<Finding>& findings,
                    const std::string& where, std::optional<int> rank, bool set_rank) {
  for (Finding f : findings) {
    f.locations.insert(f.locations.begin(), Location{where, std::nullopt, "", {}});
    if (set_rank) {
      f.rank = rank;
    }
    out.push_back(std::move(f));
  }
}

} // namespace

nlohmann::json postmortem_input_to_json(const InputResult& r, bool with_snapshot) {
  nlohmann::json j = {{"schema", "rocplay.postmortem.input"},
                      {"schema_version", postmortem::kSchemaVersion},
                      {"index", r.index},
                      {"path", r.path},
                      {"kind", to_string(r.kind)},
                      {"status", to_string(r.status)},
                      {"bytes", r.bytes},
                      {"skipped_lines", r.skipped_lines},
                      {"warnings", r.warnings}};
  if (!r.member.empty()) {
    j["member"] = r.member;
  }
  if (!r.error.empty()) {
    j["error"] = r.error;
  }
  j["rank"] = r.rank ? nlohmann::json(*r.rank) : nlohmann::json(nullptr);
  if (!r.rank_rule.empty()) {
    j["rank_rule"] = r.rank_rule;
  }
  j["findings"] = findings_to_json(r.findings);
  auto sigs = nlohmann::json::array();
  for (const auto& s : r.signatures) {
    sigs.push_back(signature_json(s));
  }
  j["signatures"] = std::move(sigs);
  if (r.crash) {
    j["crash"] = crash::to_json(*r.crash);
  }
  if (r.collectives) {
    j["collectives"] = collectives::to_json(*r.collectives);
  }
  if (is_readable(r) && r.kind != InputKind::AgentLog && !is_crash_kind(r.kind) &&
      r.kind != InputKind::CollectiveRecord) {
    j["snapshot"] = with_snapshot ? to_json(r.snapshot) : snapshot_counts(r.snapshot);
    j["graph"] = heuristics::graph_to_json(r.graph);
  }
  if (r.samples.size() > 1) {
    auto pj = progress_to_json(r.progress, r.samples);
    if (!with_snapshot) {
      for (auto& sm : pj["samples"]) {
        sm.erase("snapshot");
      }
    }
    j["progress"] = std::move(pj["progress"]);
    j["samples"] = std::move(pj["samples"]);
  }
  return j;
}

namespace {
nlohmann::json skipped_to_json(const Summary& s) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& k : s.skipped) {
    out.push_back({{"path", k.path}, {"why", k.why}});
  }
  return out;
}
} // namespace

void write_postmortem_sources_text(std::ostream& out, const Summary& s, const TextOptions& options,
                                   bool with_evidence) {
  auto bold = [&options](std::string_view text) {
    return options.color ? "\x1b[1m" + std::string(text) + "\x1b[0m" : std::string(text);
  };
  if (with_evidence) {
    out << "\n" << bold(fmt::format("Evidence from {} input(s):", s.evidence.size())) << "\n";
    constexpr std::size_t kShown = 20;
    for (std::size_t i = 0; i < s.evidence.size() && i < kShown; ++i) {
      write_wrapped(out, options.width, "  ", s.evidence[i]);
    }
    if (s.evidence.size() > kShown) {
      out << "  ... and " << s.evidence.size() - kShown
          << " more (--format json lists every one under summary.evidence)\n";
    }
  }
  if (!s.skipped.empty()) {
    out << "\n";
    write_wrapped(
        out, options.width, "",
        bold(fmt::format("Skipped {} file(s) found by a directory walk", s.skipped.size())) +
            " (documentation and empty files are not read as evidence; name a file on "
            "the command line to read it):");
    // One line per reason and folder: `documentation (Markdown) in share/doc/rocplay: a.md, ...`.
    std::vector<std::pair<std::string, std::vector<std::string>>> groups;
    for (const auto& k : s.skipped) {
      const std::filesystem::path p(k.path);
      const std::string key = k.why + " in " + p.parent_path().string();
      if (groups.empty() || groups.back().first != key) {
        groups.emplace_back(key, std::vector<std::string>{});
      }
      groups.back().second.push_back(p.filename().string());
    }
    for (const auto& [key, names] : groups) {
      write_wrapped(out, options.width, "  - ", fmt::format("{}: {}", key, fmt::join(names, ", ")));
    }
  }
}

nlohmann::json postmortem_summary_to_json(const Summary& s) {
  nlohmann::json classes = nlohmann::json::array();
  for (const auto& c : s.classes) {
    nlohmann::json j = signature_json(c.signature);
    j["count"] = c.members.size();
    j["members"] = c.members;
    classes.push_back(std::move(j));
  }
  nlohmann::json events = nlohmann::json::array();
  for (const auto& e : s.events) {
    events.push_back({{"key", e.key},
                      {"ranks", e.ranks},
                      {"rank_rule", e.rule},
                      {"findings", findings_to_json(e.findings)}});
  }
  nlohmann::json series = nlohmann::json::array();
  for (const auto& sr : s.series) {
    series.push_back({{"process", sr.key},
                      {"members", sr.members},
                      {"at", sr.at},
                      {"progress", to_json(sr.progress)},
                      {"findings", findings_to_json(sr.findings)}});
  }
  return {{"schema", "rocplay.postmortem.summary"},
          {"schema_version", postmortem::kSchemaVersion},
          {"inputs", s.inputs},
          {"ok", s.ok},
          {"partial", s.partial},
          {"empty", s.empty},
          {"unreadable", s.unreadable},
          {"with_findings", s.with_findings},
          {"bytes", s.bytes},
          {"seconds", s.seconds},
          {"classes", std::move(classes)},
          {"events", std::move(events)},
          {"series", std::move(series)},
          {"crash", findings_to_json(s.crash)},
          {"evidence", s.evidence},
          {"skipped", skipped_to_json(s)},
          {"warnings", s.warnings}};
}

nlohmann::json postmortem_to_json(nlohmann::json inputs, const Summary& summary,
                                  const Incident& incident) {
  return {{"schema", "rocplay.postmortem"},
          {"schema_version", postmortem::kSchemaVersion},
          {"incident", incident_to_json(incident)},
          {"inputs", std::move(inputs)},
          {"summary", postmortem_summary_to_json(summary)}};
}

bool has_snapshot_report(const InputResult& r) {
  return (r.kind == InputKind::Recording || r.kind == InputKind::RawMi ||
          r.kind == InputKind::ReportJson || r.kind == InputKind::ConsoleLog) &&
         is_readable(r);
}

void write_postmortem_input_text(std::ostream& out, const InputResult& r,
                                 const TextOptions& options) {
  TextOptions to = options;
  to.cause = graph::cause_lines(r.graph);
  write_text(out, r.snapshot, r.findings, to);
  if (r.samples.size() > 1) {
    out << '\n';
    write_progress_text(out, r.progress, r.samples, options.width);
  }
}

std::optional<std::string> postmortem_input_line(const InputResult& r) {
  const bool problem = r.status != InputStatus::Ok;
  if (r.signatures.empty() && !problem && r.samples.size() < 2) {
    return std::nullopt;
  }
  std::string line = r.path + r.member + "  [" + std::string(to_string(r.kind)) + ", " +
                     std::string(to_string(r.status));
  if (r.rank) {
    line += ", rank " + std::to_string(*r.rank);
  }
  line += "]";
  if (!r.error.empty()) {
    line += "  " + r.error;
  }
  if (const std::string first = first_signature_text(r); !first.empty()) {
    line += "  " + first;
    if (r.signatures.size() > 1) {
      line += " (+" + std::to_string(r.signatures.size() - 1) + " more)";
    }
  }
  // The verdict as the live report words it (findings come most severe first).
  if (!r.signatures.empty() && !r.findings.empty()) {
    const Finding& v = r.findings.front();
    line += fmt::format("\n      [{} {:.2f}] {}", to_string(v.severity), v.confidence, v.title);
  }
  if (r.samples.size() > 1) {
    line += "\n      " + std::to_string(r.samples.size()) + " samples: " + r.progress.verdict_text;
  }
  for (const auto& w : r.warnings) {
    line += "\n      warning: " + w;
  }
  return line;
}

void write_postmortem_summary_text(std::ostream& out, const Summary& s,
                                   const std::vector<std::string>& listed, std::size_t not_listed,
                                   const TextOptions& options) {
  auto bold = [&options](std::string_view text) {
    return options.color ? "\x1b[1m" + std::string(text) + "\x1b[0m" : std::string(text);
  };
  write_wrapped(out, options.width, "",
                bold(fmt::format("rocplay postmortem: {} inputs ({} ok, {} partial, {} empty, {} "
                                 "unreadable), {} with findings; {:.1f} MB in {:.2f} s",
                                 s.inputs, s.ok, s.partial, s.empty, s.unreadable, s.with_findings,
                                 static_cast<double>(s.bytes) / (1 << 20), s.seconds)));
  if (!s.classes.empty()) {
    out << "\n";
    write_wrapped(out, options.width, "",
                  bold("Stuck signatures") +
                      " (inputs grouped by heuristic, kernel and source line):");
    for (const auto& c : s.classes) {
      std::string line = c.signature.heuristic;
      if (!c.signature.kernel.empty()) {
        line += "  " + c.signature.kernel;
      }
      if (!c.signature.location.empty()) {
        line += "  " + c.signature.location;
      }
      write_wrapped(out, options.width,
                    "  " + std::to_string(c.members.size()) +
                        (c.members.size() == 1 ? " input   " : " inputs  "),
                    line);
      std::string names;
      const std::size_t shown = std::min<std::size_t>(c.members.size(), 6);
      for (std::size_t i = 0; i < shown; ++i) {
        names += (i == 0 ? "" : " ") + std::filesystem::path(c.members[i]).filename().string();
      }
      if (c.members.size() > shown) {
        names += " (+" + std::to_string(c.members.size() - shown) + " more)";
      }
      write_wrapped(out, options.width, "      ", names);
    }
  }
  for (const auto& e : s.events) {
    out << "\n";
    write_wrapped(out, options.width, "",
                  fmt::format("Across ranks {} (ranks {}; ranks from {}):", e.key,
                              fmt::join(e.ranks, " "), e.rule));
    if (e.findings.empty()) {
      out << "  no cross-rank finding\n";
    }
    for (const auto& f : e.findings) {
      write_finding_entry(out, f, options.width, 2);
    }
  }
  write_crash_verdict(out, s.crash, options.color, options.width);
  for (const auto& sr : s.series) {
    out << "\n";
    write_wrapped(out, options.width, "",
                  fmt::format("Recordings of {} ({}, in time order):", sr.key, sr.members.size()));
    for (std::size_t i = 0; i < sr.members.size(); ++i) {
      write_wrapped(out, options.width, fmt::format("  +{:.1f}s  ", sr.at[i]), sr.members[i]);
    }
    write_progress_text(out, sr.progress, {}, options.width);
    for (const auto& f : sr.findings) {
      write_finding_entry(out, f, options.width, 2);
    }
  }
  if (!listed.empty()) {
    out << "\n" << bold("Inputs with findings or problems:") << "\n";
    for (const auto& entry : listed) {
      // Its first line, then the lines under it (verdict, samples, warnings), each wrapped.
      std::size_t from = 0;
      for (bool first = true; from <= entry.size(); first = false) {
        const auto nl = entry.find('\n', from);
        const std::string line = entry.substr(from, nl == std::string::npos ? nl : nl - from);
        const auto lead = std::min(line.find_first_not_of(' '), line.size());
        write_wrapped(out, options.width, first ? "  " : line.substr(0, lead),
                      first ? line : line.substr(lead));
        if (nl == std::string::npos) {
          break;
        }
        from = nl + 1;
      }
    }
    if (not_listed > 0) {
      out << "  ... and " << not_listed << " more (--format jsonl lists every input)\n";
    }
  }
  write_postmortem_sources_text(out, s, options, true);
  for (const auto& w : s.warnings) {
    write_wrapped(out, options.width, "warning: ", w);
  }
}

std::vector<Finding> postmortem_sarif_findings(const InputResult& r) {
  std::vector<Finding> out;
  append_located(out, r.findings, r.path + r.member, r.rank, true);
  return out;
}

std::vector<Finding> postmortem_sarif_findings(const Summary& s) {
  std::vector<Finding> out;
  for (const auto& sr : s.series) {
    append_located(out, sr.findings, sr.key, std::nullopt, false);
  }
  for (const auto& e : s.events) {
    append_located(out, e.findings, e.key, std::nullopt, false);
  }
  out.insert(out.end(), s.crash.begin(), s.crash.end());
  return out;
}

} // namespace rocplay::report
