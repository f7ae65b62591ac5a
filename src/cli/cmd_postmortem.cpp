// `rocplay postmortem PATH...`: snapshots and findings from recorded transcripts in batch.
#include "cli/commands.hpp"
#include "cli/output.hpp"
#include "rocplay/error.hpp"
#include "rocplay/postmortem.hpp"
#include "rocplay/report_incident.hpp"
#include "rocplay/report_postmortem.hpp"

#include <nlohmann/json.hpp>

#include <unistd.h>

#include <cstdio>
#include <iterator>
#include <optional>

namespace rocplay::cli::postmortem_command {
namespace {

using namespace rocplay::postmortem;

struct Options {
  std::vector<std::string> paths;
  std::string format = "text";
  std::string output;
  std::string rank_from;
  unsigned jobs = 0;
  bool snapshots = false;
  bool progress = false;
  bool no_progress = false;
  bool one_event = false;
  bool details = false;
  bool wide = false;
  std::size_t max_listed = 50;
  std::string color = "auto";
};

int run_postmortem(const Options& o) {
  const report::Format format = report::parse_format(o.format);
  if (o.paths.empty()) {
    throw Error(ExitCode::Usage, "no inputs given",
                "pass transcripts, directories or globs: rocplay postmortem hangs/");
  }
  OutputFile out(o.output);
  postmortem::Options options;
  options.paths = o.paths;
  options.jobs = o.jobs;
  options.one_event = o.one_event;
  if (!o.rank_from.empty()) {
    options.rank_pattern = o.rank_from;
  }

  std::vector<std::string> listed;
  std::size_t not_listed = 0;
  std::vector<Finding> sarif_findings;
  nlohmann::json all_inputs = nlohmann::json::array();
  const bool show_progress = !o.no_progress && (o.progress || stderr_is_tty());

  report::TextOptions text_options;
  text_options.wide = o.wide;
  text_options.width = report::text_width(o.output.empty() || o.output == "-" ? 1 : -1);
  text_options.color = use_color(o.color, o.output.empty() || o.output == "-" ? STDOUT_FILENO : -1);
  // One input: the live run's full report. Kept until the batch is over (a JSON Lines file may
  // hold several snapshots, which makes it several inputs).
  std::optional<InputResult> only;
  std::size_t results = 0;
  // The incident model: one light Case per input (where it stands, not its snapshot).
  Incident incident;
  incident.title = "postmortem";
  // JSON Lines open with the incident, known once every input is read: the input lines wait.
  std::string jsonl_inputs;
  auto on_result = [&](const InputResult& r) {
    incident.cases.push_back(postmortem::case_of(r));
    switch (format) {
    case report::Format::Jsonl:
      jsonl_inputs += json_text(report::postmortem_input_to_json(r, o.snapshots));
      jsonl_inputs += '\n';
      break;
    case report::Format::Json:
      all_inputs.push_back(report::postmortem_input_to_json(r, o.snapshots));
      break;
    case report::Format::Sarif: {
      auto located = report::postmortem_sarif_findings(r);
      sarif_findings.insert(sarif_findings.end(), std::make_move_iterator(located.begin()),
                            std::make_move_iterator(located.end()));
      break;
    }
    case report::Format::Text:
      if (++results == 1 && report::has_snapshot_report(r) && !o.details) {
        only = r;
      } else {
        only.reset();
      }
      if (o.details && report::has_snapshot_report(r)) {
        out.stream() << "=== " << r.path << r.member
                     << (r.rank ? " (rank " + std::to_string(*r.rank) + ")" : std::string())
                     << "\n";
        report::write_postmortem_input_text(out.stream(), r, text_options);
        out.stream() << "\n";
      }
      if (auto line = report::postmortem_input_line(r)) {
        if (listed.size() >= o.max_listed) {
          ++not_listed;
        } else {
          listed.push_back(std::move(*line));
        }
      }
      break;
    }
  };
  auto on_progress = [&](const Progress& p) {
    if (!show_progress || p.total < 2) {
      return;
    }
    constexpr int kWidth = 30;
    const int filled = static_cast<int>(kWidth * p.done / p.total);
    std::fprintf(stderr, "\r[%.*s%*s] %zu/%zu inputs, %.0f MB", filled,
                 "==============================", kWidth - filled, "", p.done, p.total,
                 static_cast<double>(p.bytes) / (1 << 20));
    if (p.done == p.total) {
      std::fputc('\n', stderr);
    }
  };

  const Summary summary = postmortem::run(options, on_result, on_progress);
  for (const auto& e : summary.events) {
    incident.cross_rank.insert(incident.cross_rank.end(), e.findings.begin(), e.findings.end());
  }
  incident.crash_verdict = summary.crash;
  for (const auto& sr : summary.series) {
    incident.series.insert(incident.series.end(), sr.findings.begin(), sr.findings.end());
  }
  switch (format) {
  case report::Format::Jsonl: {
    if (incident.cases.size() >= 2) { // several inputs: the incident first
      nlohmann::json head = report::incident_to_json(incident);
      head["schema"] = "rocplay.postmortem.incident";
      head["schema_version"] = postmortem::kSchemaVersion;
      out.stream() << json_text(head) << "\n";
    }
    out.stream() << jsonl_inputs;
    out.stream() << json_text(report::postmortem_summary_to_json(summary)) << "\n";
    break;
  }
  case report::Format::Json: {
    nlohmann::json j = report::postmortem_to_json(std::move(all_inputs), summary);
    if (incident.cases.size() >= 2) {
      j["incident"] = report::incident_to_json(incident);
    }
    out.stream() << json_text(j, 2) << "\n";
    break;
  }
  case report::Format::Sarif: {
    auto located = report::postmortem_sarif_findings(summary);
    sarif_findings.insert(sarif_findings.end(), std::make_move_iterator(located.begin()),
                          std::make_move_iterator(located.end()));
    out.stream() << json_text(report::to_sarif(sarif_findings, ROCPLAY_VERSION), 2) << "\n";
    break;
  }
  case report::Format::Text:
    if (only && results == 1 && summary.events.empty()) {
      report::write_postmortem_input_text(out.stream(), *only, text_options);
      for (const auto& w : only->warnings) {
        out.stream() << "warning: " << w << "\n";
      }
    } else {
      // Several inputs: the incident first (where each rank stands), then the batch summary.
      if (incident.cases.size() >= 2) {
        report::write_incident_text(out.stream(), incident, text_options);
      }
      report::write_postmortem_summary_text(out.stream(), summary, listed, not_listed,
                                            text_options);
    }
    break;
  }
  out.commit();
  return static_cast<int>(incident.exit_code());
}

Action add_postmortem(CLI::App& app) {
  auto o = std::make_shared<Options>();
  auto* cmd = app.add_subcommand(
      "postmortem",
      "Snapshots and findings from recorded transcripts, in batch (never starts a debugger)");
  cmd->add_option("paths", o->paths,
                  "Transcripts (rocplay recordings, raw MI logs), rocplay JSON/JSONL output, "
                  "rocm-debug-agent logs, crash evidence (kernel API-call logs, level-10 dump "
                  "directories, dmesg/journalctl, runtime messages, crash_diagnostics.json); "
                  "directories are read recursively; globs are expanded")
      ->required();
  cmd->add_option("-f,--format", o->format, "text, json, jsonl or sarif")->default_val("text");
  cmd->add_option("-o,--output", o->output, "Write the report here instead of stdout");
  cmd->add_option("--rank-from", o->rank_from,
                  "Regex over each path whose first group is the rank, e.g. 'rank(\\d+)' "
                  "(recordings' own rank metadata is used first)");
  cmd->add_flag("--one-event", o->one_event,
                "The inputs are the ranks of one hang, in the order given (ranks from the "
                "recordings' meta or --rank-from still win)");
  cmd->add_flag("--details", o->details,
                "Text: the full report (verdict, evidence, tables) of every input before the "
                "summary; one input alone always gets it");
  add_wide_option(*cmd, o->wide);
  cmd->add_option("-j,--jobs", o->jobs, "Parallel readers (default: all cores)");
  add_color_option(*cmd, o->color);
  cmd->add_flag("--snapshots", o->snapshots, "Include each input's full snapshot in JSON output");
  cmd->add_flag("--progress", o->progress, "Show progress even when stderr is not a terminal");
  cmd->add_flag("--no-progress", o->no_progress, "Never show progress");
  cmd->add_option("--max-listed", o->max_listed, "Inputs listed one by one in text output")
      ->default_val(50);
  cmd->footer("Exit codes: 0 no findings, 1 findings, 2 some inputs could not be read "
              "(unreadable inputs win over findings), 64 bad command line, 66 the report cannot "
              "be written, 70 internal error, 130 interrupted. `-` reads standard input; a FIFO "
              "or `<(...)` is read whole. Ranks come from each recording's meta, else "
              "--rank-from, else file names that differ only in a rank number (rank0, rank_1, "
              "r3, tp2, -N), else the order given with --one-event; ranked snapshots in one "
              "directory form one event, and cross-rank findings (missing rank, unequal grids) "
              "are reported per event, with the rule that told the ranks. Crash evidence from "
              "every input is joined per process and rank into one crash verdict "
              "(docs/crash-evidence.md).");
  return [o] { return run_postmortem(*o); };
}

const bool kRegistered = register_command({"postmortem", 20, &add_postmortem});

} // namespace
} // namespace rocplay::cli::postmortem_command
