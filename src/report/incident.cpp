// The incident-first report (rocplay/report/incident.hpp).
#include "rocplay/report/incident.hpp"

#include "rocplay/case/run_result.hpp"
#include "rocplay/heuristics/wait_graph.hpp"
#include "rocplay/report/html.hpp"
#include "rocplay/report/run.hpp"
#include "rocplay/report/verify.hpp"

#include <fmt/format.h>

namespace rocplay::report {

namespace {

std::size_t examined_of(const Incident& inc) {
  std::size_t n = 0;
  for (const auto& c : inc.cases) {
    n += c.examined() ? 1 : 0;
  }
  return n;
}

std::string severity_tag(const Finding& f) {
  return fmt::format("[{} {:.2f}]", to_string(f.severity), f.confidence);
}

} // namespace

void write_incident_text(std::ostream& out, const Incident& inc, const TextOptions& options) {
  const std::size_t examined = examined_of(inc);
  // Offline cases are inputs (read), live ones targets (examined).
  bool offline = !inc.cases.empty();
  for (const auto& c : inc.cases) {
    offline = offline && !c.source.path.empty();
  }
  const std::string counts =
      fmt::format("{} {}{}, {} {}", inc.cases.size(), offline ? "input" : "target",
                  inc.cases.size() == 1 ? "" : "s", examined, offline ? "read" : "examined");
  const auto groups = incident::rank_groups(inc);
  std::string verdict;
  if (const Finding* v = inc.verdict()) {
    verdict = severity_tag(*v) + " " + v->title;
  } else if (groups.size() == 1 && examined == inc.cases.size() && examined > 1) {
    verdict = fmt::format("every {} stands in the same place: {}", offline ? "input" : "target",
                          groups.front().at.verdict);
  } else if (examined < 2) {
    verdict = fmt::format("fewer than two {} {}: no cross-rank verdict",
                          offline ? "inputs" : "targets", offline ? "read" : "examined");
  } else {
    verdict = fmt::format("no cross-rank pattern; the {} stand in {} places",
                          offline ? "inputs" : "targets", groups.size());
  }
  write_wrapped(out, options.width, "INCIDENT  ", counts + ": " + verdict);
  for (const auto& line : graph::cause_lines(incident::wait_graph(inc))) {
    write_wrapped(out, options.width, "  Cause:   ", line);
  }
  if (const Finding* v = inc.verdict()) {
    if (!v->summary.empty()) {
      write_wrapped(out, options.width, "  Meaning: ", v->summary);
    }
    if (!v->next_step.empty()) {
      write_wrapped(out, options.width, "  Next:    ", v->next_step);
    }
  }
  for (const auto& g : groups) {
    const std::string who = incident::who(inc, g);
    write_wrapped(out, options.width, "  ",
                  who + ": " + (g.at.where.empty() ? std::string("(no place known)") : g.at.where));
    write_wrapped(out, options.width, "      ", g.at.verdict);
  }
  out << '\n';
  write_verification_text(out, inc, options.width, options.color, /*headline=*/false);
}

nlohmann::json incident_to_json(const Incident& inc) {
  nlohmann::json j = {{"title", inc.title},
                      {"cases", inc.cases.size()},
                      {"examined", examined_of(inc)},
                      {"exit_code", static_cast<int>(inc.exit_code())}};
  const Finding* v = inc.verdict();
  j["verdict"] = v != nullptr ? finding_to_json(*v) : nlohmann::json(nullptr);
  j["groups"] = nlohmann::json::array();
  for (const auto& g : incident::rank_groups(inc)) {
    nlohmann::json ranks = nlohmann::json::array();
    nlohmann::json pids = nlohmann::json::array();
    nlohmann::json inputs = nlohmann::json::array();
    for (std::size_t i : g.cases) {
      const auto& src = inc.cases[i].source;
      if (src.rank) {
        ranks.push_back(*src.rank);
      }
      if (src.pid) {
        pids.push_back(*src.pid);
      }
      if (!src.path.empty()) {
        inputs.push_back(src.path + src.member);
      }
    }
    j["groups"].push_back({{"who", incident::who(inc, g)},
                           {"ranks", std::move(ranks)},
                           {"pids", std::move(pids)},
                           {"inputs", std::move(inputs)},
                           {"verdict", g.at.verdict},
                           {"where", g.at.where}});
  }
  j["cross_rank_findings"] = findings_to_json(inc.cross_rank);
  j["crash_verdict"] = findings_to_json(inc.crash_verdict);
  j["series_findings"] = findings_to_json(inc.series);
  j["notes"] = inc.notes;
  j["harm"] = incident::harm(inc);
  if (inc.verification) {
    j["verification"] = verification_to_json(inc);
  }
  if (inc.cases.size() > 1) {
    j["graph"] = heuristics::graph_to_json(incident::wait_graph(inc));
  }
  return j;
}

nlohmann::json incident_jsonl_line(const Incident& inc, std::string_view schema) {
  nlohmann::json head = incident_to_json(inc);
  head["type"] = "incident";
  head["schema"] = schema;
  head["schema_version"] = kIncidentSchemaVersion;
  return head;
}

nlohmann::json sarif_with_incident(nlohmann::json sarif, const Incident& inc) {
  for (auto& run : sarif["runs"]) {
    run["properties"]["incident"] = incident_to_json(inc);
  }
  return sarif;
}

namespace {

// A target of several: what a run of it alone exits with, its wall time, why it was not examined,
// and its report when the playbook ran.
nlohmann::json target_to_json(const Case& c) {
  nlohmann::json j = {
      {"pid", c.source.pid.value_or(0)},
      {"rank", c.source.rank ? nlohmann::json(*c.source.rank) : nlohmann::json(nullptr)},
      {"exit_code", static_cast<int>(c.exit_code)},
      {"seconds", c.seconds}};
  if (!c.error.empty()) {
    j["error"] = {{"message", c.error}, {"hint", c.error_hint}};
  }
  if (c.run && c.status != CaseStatus::NotExamined) {
    j["report"] = run_case_to_json(c);
  }
  return j;
}

// Each target (`=== pid 4301 (rank 0): exit 1, 2.31s`, its report and steps), then the
// cross-rank part: sample skew, notes and findings.
void write_targets_text(std::ostream& os, const Incident& inc, const TextOptions& options) {
  for (const auto& c : inc.cases) {
    os << fmt::format("=== pid {} (rank {}): ", c.source.pid.value_or(0),
                      c.source.rank ? std::to_string(*c.source.rank) : "?");
    if (!c.run || c.status == CaseStatus::NotExamined) {
      os << "not examined: " << c.error << "\n";
      if (!c.error_hint.empty()) {
        os << "    hint: " << c.error_hint << "\n";
      }
      os << "\n";
      continue;
    }
    os << fmt::format("exit {}, {:.2f}s\n", static_cast<int>(c.exit_code), c.seconds);
    if (c.run->attached) {
      write_run_case_text(os, c, options);
    } else {
      write_run_section_text(os, *c.run, options.width);
    }
    os << "\n";
  }
  os << fmt::format("=== across {} examined of {} targets\n", examined_of(inc), inc.cases.size());
  for (const auto& [k, skew] : inc.sample_skew) {
    os << fmt::format("sample {}: stops began within {:.3f} s of each other{}\n", k, skew,
                      inc.lockstep ? " (lockstep)" : "");
  }
  for (const auto& n : inc.notes) {
    os << n << "\n";
  }
  if (inc.cross_rank.empty()) {
    os << "no cross-rank finding\n";
  }
  for (const auto& f : inc.cross_rank) {
    write_finding_entry(os, f, options.width);
  }
}

// For SARIF: the cross-rank findings, then each target's.
std::vector<Finding> all_findings(const Incident& inc) {
  std::vector<Finding> all = inc.cross_rank;
  for (const auto& c : inc.cases) {
    if (c.run && c.status != CaseStatus::NotExamined) {
      all.insert(all.end(), c.findings.begin(), c.findings.end());
    }
  }
  return all;
}

} // namespace

nlohmann::json multi_target_to_json(const Incident& inc) {
  nlohmann::json j = {{"schema", "rocplay.run.multi"},
                      {"schema_version", kIncidentSchemaVersion},
                      {"playbook", inc.title},
                      {"incident", incident_to_json(inc)}};
  j["targets"] = nlohmann::json::array();
  for (const auto& c : inc.cases) {
    j["targets"].push_back(target_to_json(c));
  }
  j["cross_rank_findings"] = findings_to_json(inc.cross_rank);
  j["sample_skew"] = nlohmann::json::array();
  for (const auto& [k, skew] : inc.sample_skew) {
    j["sample_skew"].push_back({{"sample", k}, {"seconds", skew}, {"lockstep", inc.lockstep}});
  }
  return j;
}

std::vector<nlohmann::json> multi_target_to_jsonl(const Incident& inc) {
  std::vector<nlohmann::json> lines;
  lines.push_back(incident_jsonl_line(inc, "rocplay.run.multi"));
  for (const auto& c : inc.cases) {
    nlohmann::json j = target_to_json(c);
    j["type"] = "target";
    if (j.contains("report")) {
      // `rocplay postmortem` reads the snapshot back from the top of the line; it is written
      // once (schema v2: no second copy inside `report`).
      j["snapshot"] = std::move(j["report"]["snapshot"]);
      j["report"].erase("snapshot");
    }
    lines.push_back(std::move(j));
  }
  lines.push_back({{"type", "summary"},
                   {"targets", inc.cases.size()},
                   {"examined", examined_of(inc)},
                   {"cross_rank_findings", findings_to_json(inc.cross_rank)}});
  return lines;
}

void write_cases(std::ostream& out, const Incident& inc, Format format, const TextOptions& options,
                 std::string_view tool_version) {
  const auto text = [](const nlohmann::json& j, int indent) {
    return j.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
  };
  switch (format) {
  case Format::Text:
    if (inc.cases.size() >= 2) { // one target's report is its own verdict
      write_incident_text(out, inc, options);
    }
    write_targets_text(out, inc, options);
    break;
  case Format::Json:
    out << text(multi_target_to_json(inc), 2) << "\n";
    break;
  case Format::Jsonl:
    for (const auto& line : multi_target_to_jsonl(inc)) {
      out << text(line, -1) << "\n";
    }
    break;
  case Format::Sarif:
    out << text(sarif_with_incident(to_sarif(all_findings(inc), tool_version), inc), 2) << "\n";
    break;
  case Format::Html:
    html::write_page(out, inc, options, tool_version, {});
    break;
  }
}

} // namespace rocplay::report
