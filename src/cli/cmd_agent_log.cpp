// `rocplay agent-log FILE...`: rocm-debug-agent wave dumps in server logs as grouped fault
// reports (text, JSON, JSON Lines of findings, SARIF). Reads files only; runs nothing.
#include "cli/commands.hpp"
#include "cli/output.hpp"
#include "rocplay/agentlog.hpp"
#include "rocplay/error.hpp"
#include "rocplay/report.hpp"
#include "rocplay/report_agent_log.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>

namespace rocplay::cli::agent_log_command {
namespace {

struct Options {
  std::vector<std::string> files;
  std::string format = "text";
  std::string output;
  std::string code_objects;
  std::string objdump = "/opt/rocm/llvm/bin/llvm-objdump";
  std::optional<int> rank;
  int rank_value = 0;
  bool verbose = false;
  std::size_t max_groups = 20;
  std::string color = "auto";
};

constexpr std::size_t kMaxListedCodeObjects = 200000;

// The names --save-code-objects left in DIR, so the report can name the exact file.
std::vector<std::string> list_code_objects(const std::string& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  std::filesystem::directory_iterator it(dir, ec);
  if (ec) {
    print_error("cannot list " + dir + ": " + ec.message(),
                "the report still names the code objects, as globs");
    return names;
  }
  for (const auto& entry : it) {
    if (names.size() >= kMaxListedCodeObjects) {
      break;
    }
    names.push_back(entry.path().filename().string());
  }
  return names;
}

int run_agent_log(const Options& options) {
  const auto format = report::parse_format(options.format);
  std::vector<agentlog::AgentLog> logs;
  std::size_t unreadable = 0;
  for (const auto& file : options.files) {
    agentlog::ParseOptions po;
    po.source = file == "-" ? "<stdin>" : file;
    po.rank = options.rank;
    if (file == "-") {
      logs.push_back(agentlog::parse(std::cin, po));
      continue;
    }
    std::error_code ec;
    if (std::filesystem::is_directory(file, ec)) {
      ++unreadable;
      print_error(file + " is a directory", "pass the log files in it, e.g. " + file + "/*.log");
      continue;
    }
    std::ifstream in(file, std::ios::binary);
    if (!in) {
      ++unreadable;
      print_error("cannot open " + file + ": " + std::strerror(errno),
                  "check the path and permissions; the other files are still read");
      continue;
    }
    logs.push_back(agentlog::parse(in, po));
    if (in.bad()) {
      ++unreadable;
      print_error("reading " + file + " failed part way: " + std::strerror(errno),
                  "the part read so far is reported");
    }
  }
  if (logs.empty()) {
    throw Error(ExitCode::NoInput, "none of the inputs could be read",
                "check the paths; `-` reads standard input");
  }

  agentlog::AnalyzeOptions ao;
  ao.objdump = options.objdump;
  if (!options.code_objects.empty()) {
    ao.code_object_dir = options.code_objects;
    ao.saved_code_objects = list_code_objects(options.code_objects);
    ao.read_code_objects = true;
  }
  const auto report = agentlog::analyze(logs, ao);

  OutputFile output(options.output);
  auto& out = output.stream();
  switch (format) {
  case report::Format::Text: {
    report::AgentLogTextOptions to;
    to.color = use_color(options.color,
                         options.output.empty() || options.output == "-" ? STDOUT_FILENO : -1);
    to.verbose = options.verbose;
    to.max_groups = options.max_groups;
    report::write_agent_log_text(out, report, to);
    break;
  }
  case report::Format::Json:
    out << json_text(report::agent_log_to_json(report), 2) << "\n"; // file names need not be UTF-8
    break;
  case report::Format::Jsonl:
    report::write_jsonl(out, report::agent_log_findings(report));
    break;
  case report::Format::Sarif:
    out << json_text(report::to_sarif(report::agent_log_findings(report), ROCPLAY_VERSION), 2)
        << "\n";
    break;
  }
  output.commit();

  if (report.dumps == 0 && format != report::Format::Text) {
    // Not an error: said on stderr because stdout carries the machine-readable report.
    std::fprintf(stderr, "rocplay: %s\n  hint: %s\n",
                 std::string(agentlog::kNoDumpsMessage).c_str(),
                 std::string(agentlog::kNoDumpsHint).c_str());
  }
  if (unreadable > 0) {
    return static_cast<int>(ExitCode::PartialInput);
  }
  const bool faults = std::any_of(report.groups.begin(), report.groups.end(),
                                  [](const auto& g) { return g.reason_info.fault; });
  return static_cast<int>(faults ? ExitCode::Findings : ExitCode::Ok);
}

Action add_agent_log(CLI::App& app) {
  auto options = std::make_shared<Options>();
  auto* sub = app.add_subcommand(
      "agent-log", "Read rocm-debug-agent wave dumps in server logs as grouped fault reports");
  sub->footer("Finds each dump among ordinary log lines, groups waves by kernel, offset and stop\n"
              "reason, and says what the reason means, which instruction and lanes faulted, and\n"
              "the llvm-objdump command for the saved code object. Exit codes: 0 no faults, 1\n"
              "faults, 2 some files unreadable, 64 bad command line, 66 no file could be read,\n"
              "70 internal error. A log with no dumps: a silent hang needs\n"
              "`rocplay run hang-triage` instead. Docs: docs/agent-log.md.");
  sub->add_option("files", options->files, "Server logs (`-` for standard input)")->required();
  sub->add_option("--format,-f", options->format, "text, json, jsonl (findings) or sarif")
      ->capture_default_str();
  sub->add_option("--output,-o", options->output, "Write the report here instead of stdout");
  sub->add_option("--code-objects", options->code_objects,
                  "The directory given to the agent's --save-code-objects: each fault's saved "
                  "object is opened, its instructions decoded and its kernel fitted");
  sub->add_option("--objdump", options->objdump, "llvm-objdump to put in the commands")
      ->capture_default_str();
  auto* rank =
      sub->add_option("--rank", options->rank_value, "The rank of every dump (one file per rank)");
  sub->add_option("--max-groups", options->max_groups, "Fault groups shown in text")
      ->capture_default_str();
  sub->add_flag("--verbose,-v", options->verbose, "Every caveat, address and warning in text");
  add_color_option(*sub, options->color);
  return [options, rank] {
    if (rank->count() > 0) {
      options->rank = options->rank_value;
    }
    return run_agent_log(*options);
  };
}

const bool kRegistered = register_command({"agent-log", 30, &add_agent_log});

} // namespace
} // namespace rocplay::cli::agent_log_command
