// One live case's report (rocplay/report/run.hpp): its JSON, its JSON Lines' last line, its text.
#include "rocplay/report/run.hpp"

#include "rocplay/report/progress.hpp"

namespace rocplay::report {

namespace {

// The Progress section and each sample: only when the run wanted several.
bool with_samples(const Case& c) {
  return c.run != nullptr && c.run->samples_wanted > 1;
}

} // namespace

nlohmann::json run_jsonl_line(const Case& c, bool partial) {
  return {{"type", "run"},
          {"partial", partial},
          {"run", c.run ? run_section_to_json(*c.run) : nlohmann::json(nullptr)}};
}

nlohmann::json run_case_to_json(const Case& c, std::optional<bool> partial) {
  nlohmann::json j = report_to_json(c.snapshot, c.findings);
  if (partial) {
    j["partial"] = *partial;
  }
  j["run"] = c.run ? run_section_to_json(*c.run) : nlohmann::json(nullptr);
  if (with_samples(c)) {
    auto pj = progress_to_json(c.progress, c.samples);
    j["progress"] = std::move(pj["progress"]);
    j["samples"] = std::move(pj["samples"]);
  }
  return j;
}

void write_run_case_text(std::ostream& out, const Case& c, const TextOptions& options) {
  TextOptions with_cause = options;
  with_cause.cause = graph::cause_lines(c.graph);
  write_text(out, c.snapshot, c.findings, with_cause);
  out << '\n';
  if (with_samples(c)) {
    write_progress_text(out, c.progress, c.samples, options.width);
    out << '\n';
  }
  if (c.run) {
    write_run_section_text(out, *c.run, options.width);
  }
}

} // namespace rocplay::report
