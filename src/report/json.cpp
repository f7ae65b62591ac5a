// JSON, JSON Lines and the format names (docs/json-schema.md, "Report").
#include "rocplay/core/error.hpp"
#include "rocplay/report/report.hpp"
#include "rocplay/snapshot/code_loops.hpp"
#include "rocplay/snapshot/grouping.hpp"

#include <fmt/format.h>

namespace rocplay::report {

Format parse_format(std::string_view name) {
  if (name == "text") {
    return Format::Text;
  }
  if (name == "json") {
    return Format::Json;
  }
  if (name == "jsonl") {
    return Format::Jsonl;
  }
  if (name == "sarif") {
    return Format::Sarif;
  }
  if (name == "html") {
    return Format::Html;
  }
  throw Error(ExitCode::Usage, fmt::format("unknown report format `{}`", name),
              "use one of: text, json, jsonl, sarif, html");
}

nlohmann::json finding_to_json(const Finding& f) {
  nlohmann::json j = nlohmann::json::object();
  j["id"] = f.id;
  j["title"] = f.title;
  j["severity"] = to_string(f.severity);
  j["confidence"] = f.confidence;
  j["summary"] = f.summary;
  j["evidence"] = f.evidence;
  j["details"] = f.details.is_null() ? nlohmann::json::object() : f.details;
  j["next_step"] = f.next_step;
  nlohmann::json locs = nlohmann::json::array();
  for (const auto& l : f.locations) {
    nlohmann::json e = nlohmann::json::object();
    if (!l.file.empty()) {
      e["file"] = l.file;
    }
    if (l.line) {
      e["line"] = *l.line;
    }
    if (!l.function.empty()) {
      e["function"] = l.function;
    }
    if (l.pc) {
      e["pc"] = fmt::format("{:#x}", *l.pc);
    }
    locs.push_back(std::move(e));
  }
  j["locations"] = std::move(locs);
  if (f.rank) {
    j["rank"] = *f.rank;
  }
  return j;
}

nlohmann::json findings_to_json(const std::vector<Finding>& findings) {
  nlohmann::json a = nlohmann::json::array();
  for (const auto& f : findings) {
    a.push_back(finding_to_json(f));
  }
  return a;
}

namespace {

nlohmann::json snapshot_section(const Snapshot& s) {
  nlohmann::json j = to_json(s);
  j["wave_classes"] = snapshot::to_json(snapshot::group_waves(s));
  if (auto loops = snapshot::code_loops(s); !loops.empty()) {
    nlohmann::json code = nlohmann::json::array();
    for (const auto& l : loops) {
      code.push_back(snapshot::to_json(l));
    }
    j["code"] = std::move(code);
  }
  return j;
}

} // namespace

nlohmann::json report_to_json(const Snapshot& snapshot, const std::vector<Finding>& findings) {
  nlohmann::json j = nlohmann::json::object();
  j["schema"] = "rocplay.report";
  j["schema_version"] = kJsonSchemaVersion;
  j["snapshot"] = snapshot_section(snapshot);
  j["findings"] = findings_to_json(findings);
  return j;
}

nlohmann::json report_to_json(const std::vector<Snapshot>& snapshots,
                              const std::vector<Finding>& findings) {
  nlohmann::json j = nlohmann::json::object();
  j["schema"] = "rocplay.report";
  j["schema_version"] = kJsonSchemaVersion;
  nlohmann::json a = nlohmann::json::array();
  for (const auto& s : snapshots) {
    a.push_back(snapshot_section(s));
  }
  j["snapshots"] = std::move(a);
  j["findings"] = findings_to_json(findings);
  return j;
}

void write_jsonl(std::ostream& out, const std::vector<Finding>& findings) {
  for (const auto& f : findings) {
    out << finding_to_json(f).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)
        << '\n';
  }
}

} // namespace rocplay::report
