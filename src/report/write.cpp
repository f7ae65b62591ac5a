// The one writer (rocplay/report/incident.hpp): an Incident in the format chosen once. A report
// over several cases opens with the incident (live: src/report/incident.cpp; a post-mortem batch:
// src/report/postmortem_writer.cpp); a single case keeps the layout its command always had: a
// launched program's (`launch`, `run --wait-for-fault`), one live run's (`run --pid`), an agent
// log's (`agent-log`), one offline input's (`postmortem` of one recording), with the incident
// beside its keys in JSON.
#include "rocplay/report/incident.hpp"

#include "rocplay/agentlog/agentlog.hpp"
#include "rocplay/heuristics/wait_graph.hpp"
#include "rocplay/report/agent_log.hpp"
#include "rocplay/report/html.hpp"
#include "rocplay/report/launch.hpp"
#include "rocplay/report/postmortem.hpp"
#include "rocplay/report/progress.hpp"
#include "rocplay/report/verify.hpp"

#include <fmt/format.h>

namespace rocplay::report {

namespace {

std::string json_line(const nlohmann::json& j, int indent = -1) {
  return j.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

// `rocplay.report` v3 of one live case: v1's document with the incident beside it (one case: its
// exit code, its verdict), as every report over several cases has, and the case's wait-for graph.
nlohmann::json with_incident(nlohmann::json document, const Incident& inc) {
  document["schema_version"] = kIncidentSchemaVersion;
  document["incident"] = incident_to_json(inc);
  if (!inc.cases.empty() && !inc.cases.front().graph.empty()) {
    document["graph"] = heuristics::graph_to_json(inc.cases.front().graph);
  }
  return document;
}

// `rocplay launch` and `run --wait-for-fault`: how the program ran and ended, then (when the
// playbook ran at its stop) the findings report and the steps.
void write_launch_case(std::ostream& out, const Incident& inc, Format format,
                       const TextOptions& options, std::string_view tool_version) {
  const Case& c = inc.cases.front();
  const LaunchInfo& launch = *c.launch;
  const playbook::RunResult* run = c.run.get();
  switch (format) {
  case Format::Text: {
    write_launch_text(out, launch, options.width, options.color);
    out << '\n';
    write_verification_text(out, inc, options.width, options.color);
    if (run != nullptr) {
      TextOptions to = options;
      to.cause = graph::cause_lines(c.graph);
      if (run->fatal) {
        to.failure = run->fatal->what();
        to.failure_label = failure_label(*run);
      }
      write_text(out, c.snapshot, c.findings, to);
      out << '\n';
      write_run_section_text(out, *run, options.width);
    }
    break;
  }
  case Format::Json:
    out << json_line(with_incident(launch_report_to_json(launch, run != nullptr ? &c : nullptr,
                                                         run != nullptr && run->fatal.has_value()),
                                   inc),
                     2)
        << '\n';
    break;
  case Format::Jsonl:
    if (inc.verification) {
      write_jsonl(out, {*inc.verification});
    }
    if (run != nullptr) {
      write_jsonl(out, c.findings);
    }
    if (inc.verification) {
      out << json_line({{"type", "verification"}, {"verification", verification_to_json(inc)}})
          << '\n';
    }
    out << json_line(launch_jsonl_line(launch)) << '\n';
    break;
  case Format::Sarif: {
    std::vector<Finding> all;
    if (inc.verification) {
      all.push_back(*inc.verification);
    }
    all.insert(all.end(), c.findings.begin(), c.findings.end());
    out << json_line(to_sarif(all, tool_version), 2) << '\n';
    break;
  }
  case Format::Html: // report::write draws the page first (html::write_page)
    break;
  }
}

// `rocplay run --pid`: the findings report (led by what failed, when the run ended early), the
// progress over the samples, the steps. A run that never attached has no text report: the
// command says why on stderr.
void write_run_case(std::ostream& out, const Incident& inc, Format format,
                    const TextOptions& options, std::string_view tool_version) {
  const Case& c = inc.cases.front();
  const playbook::RunResult& run = *c.run;
  const std::string failure = failure_text(run);
  switch (format) {
  case Format::Text:
    if (has_text_report(run)) {
      TextOptions to = options;
      if (!failure.empty()) {
        to.failure = failure;
        to.failure_label = failure_label(run);
        to.target = target_account(run);
      }
      write_run_case_text(out, c, to);
    }
    break;
  case Format::Json:
    out << json_line(with_incident(run_case_to_json(c, !failure.empty()), inc), 2) << '\n';
    break;
  case Format::Jsonl:
    write_jsonl(out, c.findings);
    out << json_line(run_jsonl_line(c, !failure.empty())) << '\n';
    break;
  case Format::Sarif:
    out << json_line(to_sarif(c.findings, tool_version), 2) << '\n';
    break;
  case Format::Html: // report::write draws the page first (html::write_page)
    break;
  }
}

// `rocplay agent-log`: the fault groups; JSON Lines and SARIF carry them as findings. Its JSON
// (`rocplay.agent-log` v2) carries the incident beside its keys, as one live case's does.
void write_agent_log_case(std::ostream& out, const Incident& inc, Format format,
                          const TextOptions& options, std::string_view tool_version) {
  const Case& c = inc.cases.front();
  const agentlog::Report& faults = *c.faults;
  switch (format) {
  case Format::Text: {
    AgentLogTextOptions to;
    to.color = options.color;
    to.verbose = options.verbose;
    to.max_groups = options.max_groups;
    write_agent_log_text(out, faults, to);
    break;
  }
  case Format::Json:
    // File names need not be UTF-8: json_line replaces what is not.
    out << json_line(with_incident(agent_log_to_json(faults), inc), 2) << "\n";
    break;
  case Format::Jsonl:
    write_jsonl(out, c.findings);
    break;
  case Format::Sarif:
    out << json_line(to_sarif(c.findings, tool_version), 2) << "\n";
    break;
  case Format::Html: // report::write draws the page first (html::write_page)
    break;
  }
}

// One offline input with a snapshot (`postmortem` of one recording): the findings report as a
// live run shows it, the progress over its samples, its warnings.
void write_input_case(std::ostream& out, const Incident& inc, Format format,
                      const TextOptions& options, std::string_view tool_version) {
  const Case& c = inc.cases.front();
  switch (format) {
  case Format::Text: {
    TextOptions to = options;
    to.cause = graph::cause_lines(c.graph);
    write_text(out, c.snapshot, c.findings, to);
    if (c.samples.size() > 1) {
      out << '\n';
      write_progress_text(out, c.progress, c.samples, options.width);
    }
    for (const auto& w : c.warnings) {
      write_wrapped(out, options.width, "warning: ", w);
    }
    break;
  }
  case Format::Json:
    out << json_line(with_incident(report_to_json(c.snapshot, c.findings), inc), 2) << '\n';
    break;
  case Format::Jsonl:
    write_jsonl(out, c.findings);
    break;
  case Format::Sarif:
    out << json_line(to_sarif(c.findings, tool_version), 2) << '\n';
    break;
  case Format::Html: // report::write draws the page first (html::write_page)
    break;
  }
}

} // namespace

void write(std::ostream& out, const Incident& inc, Format format, const TextOptions& options,
           std::string_view tool_version, const PostmortemBatch* batch) {
  if (format == Format::Text) {
    // Before any verdict: a look that may have stopped the job matters more than what it saw.
    const auto harm = incident::harm(inc);
    if (!harm.empty()) {
      write_wrapped(out, options.width, "HARM      ",
                    "the look behind this report may have damaged the job: a debugger's attach "
                    "to a GPU failed inside the driver, and no process this happened to recovered "
                    "in any run measured. Check the job's own progress (its log, a step counter, "
                    "GPU utilisation); if it no longer advances, restart it from its last "
                    "checkpoint.");
      for (const auto& line : harm) {
        write_wrapped(out, options.width, "  ", line);
      }
      out << '\n';
    }
  }
  if (batch != nullptr) {
    batch->write(out, inc, format, options, tool_version);
    return;
  }
  if (format == Format::Html) {
    // One page whatever the command: the cases as the incident holds them.
    html::write_page(out, inc, options, tool_version, {});
    return;
  }
  if (inc.cases.size() == 1 && !inc.several) {
    const Case& c = inc.cases.front();
    if (c.launch) {
      write_launch_case(out, inc, format, options, tool_version);
      return;
    }
    if (c.run) {
      write_run_case(out, inc, format, options, tool_version);
      return;
    }
    if (c.faults) {
      write_agent_log_case(out, inc, format, options, tool_version);
      return;
    }
    if (!c.source.path.empty()) {
      write_input_case(out, inc, format, options, tool_version);
      return;
    }
  }
  write_cases(out, inc, format, options, tool_version);
}

} // namespace rocplay::report
