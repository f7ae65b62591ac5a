// `rocplay postmortem PATH...`: snapshots and findings from recorded transcripts in batch. Options
// to drivers::read_inputs (src/drivers/offline.cpp), each input rendered as it is read
// (report::PostmortemBatch), then the incident and the batch to the one writer (report::write).
#include "cli/commands.hpp"
#include "cli/output.hpp"
#include "rocplay/core/error.hpp"
#include "rocplay/drivers/drivers.hpp"
#include "rocplay/postmortem/postmortem.hpp"
#include "rocplay/report/incident.hpp"
#include "rocplay/report/postmortem.hpp"

#include <unistd.h>

#include <cstdio>

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
  options.details = format != report::Format::Text; // text never prints the findings' details
  if (!o.rank_from.empty()) {
    options.rank_pattern = o.rank_from;
  }

  const bool show_progress = !o.no_progress && (o.progress || stderr_is_tty());
  report::TextOptions text_options;
  text_options.wide = o.wide;
  text_options.width = report::text_width(o.output.empty() || o.output == "-" ? 1 : -1);
  text_options.color = use_color(o.color, o.output.empty() || o.output == "-" ? STDOUT_FILENO : -1);
  report::PostmortemWriteOptions write_options;
  write_options.snapshots = o.snapshots;
  write_options.details = o.details;
  write_options.max_listed = o.max_listed;
  report::PostmortemBatch batch(format, text_options, write_options);
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

  drivers::OfflineResult result = drivers::read_inputs(
      options, [&batch](const InputResult& r) { batch.add(r); }, on_progress);
  batch.close(std::move(result.summary));
  report::write(out.stream(), result.incident, format, text_options, ROCPLAY_VERSION, &batch);
  out.commit();
  return static_cast<int>(result.incident.exit_code());
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
                  "directories are read recursively (documentation and empty files in them "
                  "are skipped); globs are expanded")
      ->required();
  cmd->add_option("-f,--format", o->format,
                  "text, json, jsonl, sarif or html (one self-contained page)")
      ->default_val("text");
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
  cmd->footer("Exit codes: " + finding_exit_codes() +
              " (unreadable inputs win over findings); 64 bad command line, 66 the report cannot "
              "be written, 70 internal error, 130 interrupted. A directory is read recursively, "
              "leaving out documentation (Markdown, reStructuredText, HTML, README, ...) and "
              "empty files, which the report lists as skipped; named on the command line, such "
              "a file is read. `-` reads standard input; a FIFO "
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
