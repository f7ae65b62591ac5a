// `rocplay postmortem PATH...`: snapshots and findings from recorded transcripts in batch.
#include "cli/commands.hpp"
#include "cli/output.hpp"
#include "rocplay/crash.hpp"
#include "rocplay/error.hpp"
#include "rocplay/postmortem.hpp"
#include "rocplay/report.hpp"
#include "rocplay/report_crash.hpp"
#include "rocplay/report_progress.hpp"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <optional>
#include <sstream>

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

nlohmann::json signature_json(const Signature& s) {
  return {{"heuristic", s.heuristic}, {"kernel", s.kernel}, {"location", s.location}};
}

nlohmann::json snapshot_summary(const Snapshot& s) {
  return {{"debugger", to_string(s.debugger)},
          {"agents", s.agents.size()},
          {"queues", s.queues.size()},
          {"dispatches", s.dispatches.size()},
          {"waves", s.waves.size()},
          {"host_threads", s.host_threads.size()},
          {"warnings", s.warnings}};
}

nlohmann::json input_json(const InputResult& r, bool with_snapshot) {
  nlohmann::json j = {{"schema", "rocplay.postmortem.input"},
                      {"schema_version", kSchemaVersion},
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
  auto findings = nlohmann::json::array();
  for (const auto& f : r.findings) {
    findings.push_back(report::finding_to_json(f));
  }
  j["findings"] = std::move(findings);
  auto sigs = nlohmann::json::array();
  for (const auto& s : r.signatures) {
    sigs.push_back(signature_json(s));
  }
  j["signatures"] = std::move(sigs);
  if (r.crash) {
    j["crash"] = crash::to_json(*r.crash);
  }
  const bool crash_kind = r.kind == InputKind::CrashLog || r.kind == InputKind::CrashDump ||
                          r.kind == InputKind::CrashDiagnostics;
  if (r.status != InputStatus::Unreadable && r.status != InputStatus::Empty &&
      r.kind != InputKind::AgentLog && !crash_kind) {
    j["snapshot"] = with_snapshot ? to_json(r.snapshot) : snapshot_summary(r.snapshot);
  }
  if (r.samples.size() > 1) {
    auto pj = report::progress_to_json(r.progress, r.samples);
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

nlohmann::json findings_json(const std::vector<Finding>& findings) {
  auto out = nlohmann::json::array();
  for (const auto& f : findings) {
    out.push_back(report::finding_to_json(f));
  }
  return out;
}

nlohmann::json summary_json(const Summary& s) {
  nlohmann::json classes = nlohmann::json::array();
  for (const auto& c : s.classes) {
    nlohmann::json j = signature_json(c.signature);
    j["count"] = c.members.size();
    j["members"] = c.members;
    classes.push_back(std::move(j));
  }
  nlohmann::json events = nlohmann::json::array();
  for (const auto& e : s.events) {
    auto findings = nlohmann::json::array();
    for (const auto& f : e.findings) {
      findings.push_back(report::finding_to_json(f));
    }
    events.push_back(
        {{"key", e.key}, {"ranks", e.ranks}, {"rank_rule", e.rule}, {"findings", findings}});
  }
  nlohmann::json series = nlohmann::json::array();
  for (const auto& sr : s.series) {
    auto findings = nlohmann::json::array();
    for (const auto& f : sr.findings) {
      findings.push_back(report::finding_to_json(f));
    }
    series.push_back({{"process", sr.key},
                      {"members", sr.members},
                      {"at", sr.at},
                      {"progress", to_json(sr.progress)},
                      {"findings", std::move(findings)}});
  }
  return {{"schema", "rocplay.postmortem.summary"},
          {"series", std::move(series)},
          {"schema_version", kSchemaVersion},
          {"inputs", s.inputs},
          {"ok", s.ok},
          {"partial", s.partial},
          {"empty", s.empty},
          {"unreadable", s.unreadable},
          {"with_findings", s.with_findings},
          {"bytes", s.bytes},
          {"seconds", s.seconds},
          {"classes", classes},
          {"events", events},
          {"crash", findings_json(s.crash)},
          {"warnings", s.warnings}};
}

std::string first_finding_line(const InputResult& r) {
  for (const auto& s : r.signatures) {
    std::string line = s.heuristic;
    if (!s.kernel.empty()) {
      line += ": " + s.kernel;
    }
    if (!s.location.empty()) {
      line += " at " + s.location;
    }
    return line;
  }
  return {};
}

void write_text_summary(std::ostream& out, const Summary& s, const std::vector<std::string>& listed,
                        std::size_t not_listed, const report::TextOptions& text_options) {
  const bool color = text_options.color;
  auto bold = [color](std::string_view text) {
    return color ? "\x1b[1m" + std::string(text) + "\x1b[0m" : std::string(text);
  };
  char head[256];
  std::snprintf(head, sizeof head,
                "rocplay postmortem: %zu inputs (%zu ok, %zu partial, %zu empty, %zu unreadable), "
                "%zu with findings; %.1f MB in %.2f s\n",
                s.inputs, s.ok, s.partial, s.empty, s.unreadable, s.with_findings,
                static_cast<double>(s.bytes) / (1 << 20), s.seconds);
  out << bold(head);
  if (!s.classes.empty()) {
    out << "\n"
        << bold("Stuck signatures") << " (inputs grouped by heuristic, kernel and source line):\n";
    for (const auto& c : s.classes) {
      out << "  " << c.members.size() << (c.members.size() == 1 ? " input   " : " inputs  ")
          << c.signature.heuristic;
      if (!c.signature.kernel.empty()) {
        out << "  " << c.signature.kernel;
      }
      if (!c.signature.location.empty()) {
        out << "  " << c.signature.location;
      }
      out << "\n     ";
      const std::size_t shown = std::min<std::size_t>(c.members.size(), 6);
      for (std::size_t i = 0; i < shown; ++i) {
        out << " " << std::filesystem::path(c.members[i]).filename().string();
      }
      if (c.members.size() > shown) {
        out << " (+" << c.members.size() - shown << " more)";
      }
      out << "\n";
    }
  }
  for (const auto& e : s.events) {
    out << "\nAcross ranks " << e.key << " (ranks";
    for (int r : e.ranks) {
      out << " " << r;
    }
    out << "; ranks from " << e.rule << "):\n";
    if (e.findings.empty()) {
      out << "  no cross-rank finding\n";
    }
    for (const auto& f : e.findings) {
      out << "  [" << f.id << "] " << f.title << "\n";
      if (!f.next_step.empty()) {
        out << "    next: " << f.next_step << "\n";
      }
    }
  }
  report::write_crash_verdict(out, s.crash);
  for (const auto& sr : s.series) {
    out << "\nRecordings of " << sr.key << " (" << sr.members.size() << ", in time order):\n";
    for (std::size_t i = 0; i < sr.members.size(); ++i) {
      out << fmt::format("  +{:.1f}s  {}\n", sr.at[i], sr.members[i]);
    }
    std::ostringstream progress;
    report::write_progress_text(progress, sr.progress, {}, text_options.width);
    out << progress.str();
    for (const auto& f : sr.findings) {
      out << "  [" << f.id << "] " << f.title << "\n";
    }
  }
  if (!listed.empty()) {
    out << "\n" << bold("Inputs with findings or problems:") << "\n";
    for (const auto& line : listed) {
      out << "  " << line << "\n";
    }
    if (not_listed > 0) {
      out << "  ... and " << not_listed << " more (--format jsonl lists every input)\n";
    }
  }
  for (const auto& w : s.warnings) {
    out << "warning: " << w << "\n";
  }
}

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
  bool any_findings = false;
  const bool show_progress = !o.no_progress && (o.progress || stderr_is_tty());

  report::TextOptions text_options;
  text_options.wide = o.wide;
  text_options.width = report::text_width(o.output.empty() || o.output == "-" ? 1 : -1);
  text_options.color = use_color(o.color, o.output.empty() || o.output == "-" ? STDOUT_FILENO : -1);
  auto full_report = [&](std::ostream& os, const InputResult& r) {
    report::write_text(os, r.snapshot, r.findings, text_options);
    if (r.samples.size() > 1) { // as the live run prints it
      os << '\n';
      report::write_progress_text(os, r.progress, r.samples, text_options.width);
    }
  };
  auto reportable = [](const InputResult& r) {
    // Snapshots only: agent logs and crash evidence keep their own summary and verdict.
    return (r.kind == InputKind::Recording || r.kind == InputKind::RawMi ||
            r.kind == InputKind::ReportJson) &&
           r.status != InputStatus::Unreadable && r.status != InputStatus::Empty;
  };
  // One input: the live run's full report. Kept until the batch is over (a JSON Lines file may
  // hold several snapshots, which makes it several inputs).
  std::optional<InputResult> only;
  std::size_t results = 0;
  auto on_result = [&](const InputResult& r) {
    any_findings = any_findings || !r.signatures.empty();
    if (format == report::Format::Text) {
      if (++results == 1 && reportable(r) && !o.details) {
        only = r;
      } else {
        only.reset();
      }
      if (o.details && reportable(r)) {
        out.stream() << "=== " << r.path << r.member
                     << (r.rank ? " (rank " + std::to_string(*r.rank) + ")" : std::string())
                     << "\n";
        full_report(out.stream(), r);
        out.stream() << "\n";
      }
    }
    switch (format) {
    case report::Format::Jsonl:
      out.stream() << json_text(input_json(r, o.snapshots)) << "\n";
      break;
    case report::Format::Json:
      all_inputs.push_back(input_json(r, o.snapshots));
      break;
    case report::Format::Sarif:
      for (Finding f : r.findings) {
        f.locations.insert(f.locations.begin(), Location{r.path + r.member, std::nullopt, "", {}});
        f.rank = r.rank;
        sarif_findings.push_back(std::move(f));
      }
      break;
    case report::Format::Text: {
      const bool problem = r.status != InputStatus::Ok;
      if (r.signatures.empty() && !problem && r.samples.size() < 2) {
        break;
      }
      if (listed.size() >= o.max_listed) {
        ++not_listed;
        break;
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
      const std::string first = first_finding_line(r);
      if (!first.empty()) {
        line += "  " + first;
        if (r.signatures.size() > 1) {
          line += " (+" + std::to_string(r.signatures.size() - 1) + " more)";
        }
      }
      if (r.samples.size() > 1) {
        line +=
            "\n      " + std::to_string(r.samples.size()) + " samples: " + r.progress.verdict_text;
      }
      for (const auto& w : r.warnings) {
        line += "\n      warning: " + w;
      }
      listed.push_back(std::move(line));
      break;
    }
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
    any_findings = any_findings || !e.findings.empty();
  }
  any_findings = any_findings || !summary.crash.empty();
  for (const auto& sr : summary.series) {
    for (const auto& f : sr.findings) {
      any_findings = any_findings || f.severity >= Severity::Warning;
    }
  }
  switch (format) {
  case report::Format::Jsonl:
    out.stream() << json_text(summary_json(summary)) << "\n";
    break;
  case report::Format::Json:
    out.stream() << json_text(nlohmann::json{{"schema", "rocplay.postmortem"},
                                             {"schema_version", kSchemaVersion},
                                             {"inputs", all_inputs},
                                             {"summary", summary_json(summary)}},
                              2)
                 << "\n";
    break;
  case report::Format::Sarif:
    for (const auto& sr : summary.series) {
      for (Finding f : sr.findings) {
        f.locations.insert(f.locations.begin(), Location{sr.key, std::nullopt, "", {}});
        sarif_findings.push_back(std::move(f));
      }
    }
    for (const auto& e : summary.events) {
      for (Finding f : e.findings) {
        f.locations.insert(f.locations.begin(), Location{e.key, std::nullopt, "", {}});
        sarif_findings.push_back(std::move(f));
      }
    }
    sarif_findings.insert(sarif_findings.end(), summary.crash.begin(), summary.crash.end());
    out.stream() << json_text(report::to_sarif(sarif_findings, ROCPLAY_VERSION), 2) << "\n";
    break;
  case report::Format::Text:
    if (only && results == 1 && summary.events.empty()) {
      full_report(out.stream(), *only);
      for (const auto& w : only->warnings) {
        out.stream() << "warning: " << w << "\n";
      }
    } else {
      write_text_summary(out.stream(), summary, listed, not_listed, text_options);
    }
    break;
  }
  out.commit();
  if (summary.unreadable > 0) {
    return static_cast<int>(ExitCode::PartialInput);
  }
  return any_findings ? static_cast<int>(ExitCode::Findings) : static_cast<int>(ExitCode::Ok);
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
  cmd->add_flag("--wide", o->wide,
                "Text: print every row, cell and stack frame whole (otherwise cut to the "
                "terminal's width: $COLUMNS, the terminal, else 100)");
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
