// SARIF 2.1.0 (OASIS): one rule per heuristic, one result per finding.
#include "rocplay/report/report.hpp"

#include <fmt/format.h>

#include <map>

namespace rocplay::report {
namespace {

std::string_view level_of(Severity s) {
  switch (s) {
  case Severity::Critical:
  case Severity::Error:
    return "error";
  case Severity::Warning:
    return "warning";
  case Severity::Info:
    break;
  }
  return "note";
}

nlohmann::json location_json(const Location& l) {
  nlohmann::json loc = nlohmann::json::object();
  nlohmann::json phys = nlohmann::json::object();
  if (!l.file.empty()) {
    phys["artifactLocation"] = {{"uri", l.file}};
    if (l.line && *l.line > 0) {
      phys["region"] = {{"startLine", *l.line}};
    }
  }
  if (l.pc) {
    phys["address"] = {{"absoluteAddress", *l.pc}};
  }
  if (!phys.empty()) {
    loc["physicalLocation"] = std::move(phys);
  }
  if (!l.function.empty()) {
    loc["logicalLocations"] = nlohmann::json::array({{{"name", l.function}, {"kind", "function"}}});
  }
  return loc;
}

} // namespace

nlohmann::json to_sarif(const std::vector<Finding>& findings, std::string_view tool_version) {
  nlohmann::json rules = nlohmann::json::array();
  std::map<std::string, std::size_t> index;
  for (const auto& h : heuristics::catalogue()) {
    index.emplace(std::string(h.id), rules.size());
    rules.push_back({{"id", h.id},
                     {"name", h.id},
                     {"shortDescription", {{"text", h.title}}},
                     {"fullDescription", {{"text", fmt::format("Evidence needed: {}.", h.needs)}}},
                     {"help", {{"text", fmt::format("See docs/heuristics.md, \"{}\".", h.id)}}}});
  }
  nlohmann::json results = nlohmann::json::array();
  for (const auto& f : findings) {
    if (!index.count(f.id)) { // a finding from outside the catalogue still gets a rule
      index.emplace(f.id, rules.size());
      rules.push_back({{"id", f.id}, {"name", f.id}, {"shortDescription", {{"text", f.title}}}});
    }
    nlohmann::json r = nlohmann::json::object();
    r["ruleId"] = f.id;
    r["ruleIndex"] = index.at(f.id);
    r["level"] = level_of(f.severity);
    r["message"] = {{"text", f.summary.empty() ? f.title : f.title + ". " + f.summary}};
    nlohmann::json locs = nlohmann::json::array();
    for (const auto& l : f.locations) {
      auto lj = location_json(l);
      if (!lj.empty()) {
        locs.push_back(std::move(lj));
      }
    }
    if (!locs.empty()) {
      r["locations"] = std::move(locs);
    }
    nlohmann::json props = {{"severity", to_string(f.severity)},
                            {"confidence", f.confidence},
                            {"evidence", f.evidence},
                            {"nextStep", f.next_step}};
    if (f.rank) {
      props["rank"] = *f.rank;
    }
    r["properties"] = std::move(props);
    results.push_back(std::move(r));
  }
  nlohmann::json driver = {
      {"name", "rocplay"}, {"version", tool_version}, {"rules", std::move(rules)}};
  nlohmann::json run = {{"tool", {{"driver", std::move(driver)}}}, {"results", std::move(results)}};
  return {{"$schema", "https://json.schemastore.org/sarif-2.1.0.json"},
          {"version", "2.1.0"},
          {"runs", nlohmann::json::array({std::move(run)})}};
}

} // namespace rocplay::report
