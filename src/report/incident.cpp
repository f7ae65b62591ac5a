// The incident-first report (rocplay/report/incident.hpp).
#include "rocplay/report/incident.hpp"

#include "rocplay/report/run_result.hpp"

#include <fmt/format.h>

#include <sstream>

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
  return j;
}

RunReport run_report_of(const Case& c) {
  RunReport r;
  r.snapshot = &c.snapshot;
  r.findings = &c.findings;
  if (c.run) {
    r.run = run_section_to_json(*c.run);
    if (c.run->samples_wanted > 1) {
      r.progress = &c.progress;
      r.samples = &c.samples;
    }
    std::ostringstream steps;
    write_run_section_text(steps, *c.run);
    r.steps_text = steps.str();
  }
  return r;
}

MultiTargetReport multi_target_report(const Incident& inc) {
  MultiTargetReport m;
  m.playbook = inc.title;
  m.examined = examined_of(inc);
  for (const auto& c : inc.cases) {
    TargetReport t;
    t.pid = c.source.pid.value_or(0);
    t.rank = c.source.rank;
    t.exit_code = static_cast<int>(c.exit_code);
    t.seconds = c.seconds;
    t.error = c.error;
    t.error_hint = c.error_hint;
    if (c.run && c.status != CaseStatus::NotExamined) {
      t.report = run_report_of(c);
      t.attached = c.run->attached;
    }
    m.targets.push_back(std::move(t));
  }
  m.cross_rank = inc.cross_rank;
  m.sample_skew = inc.sample_skew;
  m.lockstep = inc.lockstep;
  m.notes = inc.notes;
  return m;
}

nlohmann::json multi_target_to_json(const Incident& inc) {
  nlohmann::json j = multi_target_to_json(multi_target_report(inc));
  j["schema_version"] = kIncidentSchemaVersion;
  j["incident"] = incident_to_json(inc);
  return j;
}

std::vector<nlohmann::json> multi_target_to_jsonl(const Incident& inc) {
  std::vector<nlohmann::json> lines;
  nlohmann::json head = incident_to_json(inc);
  head["type"] = "incident";
  head["schema"] = "rocplay.run.multi";
  head["schema_version"] = kIncidentSchemaVersion;
  lines.push_back(std::move(head));
  for (auto& line : multi_target_to_jsonl(multi_target_report(inc))) {
    lines.push_back(std::move(line));
  }
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
    write_multi_target_text(out, multi_target_report(inc), options);
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
    out << text(to_sarif(multi_target_findings(multi_target_report(inc)), tool_version), 2) << "\n";
    break;
  }
}

} // namespace rocplay::report
