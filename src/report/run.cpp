// A playbook run's report: one target's JSON, and several targets' text, JSON and JSON Lines.
#include "rocplay/report/run.hpp"

#include "rocplay/report/progress.hpp"

#include <fmt/format.h>

namespace rocplay::report {
namespace {

const Snapshot kNoSnapshot;
const std::vector<Finding> kNoFindings;

nlohmann::json target_to_json(const TargetReport& t) {
  nlohmann::json j = {{"pid", t.pid},
                      {"rank", t.rank ? nlohmann::json(*t.rank) : nlohmann::json(nullptr)},
                      {"exit_code", t.exit_code},
                      {"seconds", t.seconds}};
  if (!t.error.empty()) {
    j["error"] = {{"message", t.error}, {"hint", t.error_hint}};
  }
  if (t.report) {
    j["report"] = run_report_to_json(*t.report);
  }
  return j;
}

} // namespace

nlohmann::json run_jsonl_line(const RunReport& report) {
  return {{"type", "run"}, {"partial", report.partial.value_or(false)}, {"run", report.run}};
}

nlohmann::json run_report_to_json(const RunReport& r) {
  nlohmann::json j = report_to_json(r.snapshot ? *r.snapshot : kNoSnapshot,
                                    r.findings ? *r.findings : kNoFindings);
  if (r.partial) {
    j["partial"] = *r.partial;
  }
  j["run"] = r.run;
  if (r.progress != nullptr && r.samples != nullptr) {
    auto pj = progress_to_json(*r.progress, *r.samples);
    j["progress"] = std::move(pj["progress"]);
    j["samples"] = std::move(pj["samples"]);
  }
  return j;
}

void write_run_text(std::ostream& out, const RunReport& r, const TextOptions& options) {
  write_text(out, r.snapshot ? *r.snapshot : kNoSnapshot, r.findings ? *r.findings : kNoFindings,
             options);
  out << '\n';
  if (r.progress != nullptr && r.samples != nullptr) {
    write_progress_text(out, *r.progress, *r.samples, options.width);
    out << '\n';
  }
  out << r.steps_text;
}

void write_multi_target_text(std::ostream& os, const MultiTargetReport& m,
                             const TextOptions& options) {
  for (const auto& t : m.targets) {
    os << fmt::format("=== pid {} (rank {}): ", t.pid, t.rank ? std::to_string(*t.rank) : "?");
    if (!t.report) {
      os << "not examined: " << t.error << "\n";
      if (!t.error_hint.empty()) {
        os << "    hint: " << t.error_hint << "\n";
      }
      os << "\n";
      continue;
    }
    os << fmt::format("exit {}, {:.2f}s\n", t.exit_code, t.seconds);
    if (t.attached) {
      write_run_text(os, *t.report, options);
    } else {
      os << t.report->steps_text;
    }
    os << "\n";
  }
  os << fmt::format("=== across {} examined of {} targets\n", m.examined, m.targets.size());
  for (const auto& [k, skew] : m.sample_skew) {
    os << fmt::format("sample {}: stops began within {:.3f} s of each other{}\n", k, skew,
                      m.lockstep ? " (lockstep)" : "");
  }
  for (const auto& n : m.notes) {
    os << n << "\n";
  }
  if (m.cross_rank.empty()) {
    os << "no cross-rank finding\n";
  }
  for (const auto& f : m.cross_rank) {
    write_finding_entry(os, f, options.width);
  }
}

nlohmann::json multi_target_to_json(const MultiTargetReport& m) {
  nlohmann::json j = {{"schema", "rocplay.run.multi"},
                      {"schema_version", kJsonSchemaVersion},
                      {"playbook", m.playbook}};
  j["targets"] = nlohmann::json::array();
  for (const auto& t : m.targets) {
    j["targets"].push_back(target_to_json(t));
  }
  j["cross_rank_findings"] = findings_to_json(m.cross_rank);
  j["sample_skew"] = nlohmann::json::array();
  for (const auto& [k, skew] : m.sample_skew) {
    j["sample_skew"].push_back({{"sample", k}, {"seconds", skew}, {"lockstep", m.lockstep}});
  }
  return j;
}

std::vector<nlohmann::json> multi_target_to_jsonl(const MultiTargetReport& m) {
  std::vector<nlohmann::json> lines;
  for (const auto& t : m.targets) {
    nlohmann::json j = target_to_json(t);
    j["type"] = "target";
    if (t.report) {
      // `rocplay postmortem` reads the snapshot back from the top of the line; it is written
      // once (schema v2: no second copy inside `report`).
      j["snapshot"] = std::move(j["report"]["snapshot"]);
      j["report"].erase("snapshot");
    }
    lines.push_back(std::move(j));
  }
  lines.push_back({{"type", "summary"},
                   {"targets", m.targets.size()},
                   {"examined", m.examined},
                   {"cross_rank_findings", findings_to_json(m.cross_rank)}});
  return lines;
}

std::vector<Finding> multi_target_findings(const MultiTargetReport& m) {
  std::vector<Finding> all = m.cross_rank;
  for (const auto& t : m.targets) {
    if (t.report && t.report->findings != nullptr) {
      all.insert(all.end(), t.report->findings->begin(), t.report->findings->end());
    }
  }
  return all;
}

} // namespace rocplay::report
