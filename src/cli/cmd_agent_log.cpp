// `rocplay agent-log FILE...`: rocm-debug-agent wave dumps in server logs as grouped fault
// reports (text, JSON, JSON Lines of findings, SARIF). Reads files only; runs nothing. Options to
// drivers::read_agent_logs (src/drivers/agent_log.cpp), the incident to report::write.
#include "cli/commands.hpp"
#include "cli/output.hpp"
#include "rocplay/agentlog/agentlog.hpp"
#include "rocplay/core/error.hpp"
#include "rocplay/drivers/drivers.hpp"
#include "rocplay/report/incident.hpp"
#include "rocplay/report/report.hpp"

#include <unistd.h>

#include <cstdio>
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

int run_agent_log(const Options& options) {
  const auto format = report::parse_format(options.format);
  if (format == report::Format::Html) {
    throw Error(ExitCode::Usage,
                "--format html: agent-log writes text, json, jsonl or sarif; its fault groups "
                "have no page of their own",
                "for a page with the fault verdict, read the same logs with `rocplay postmortem "
                "LOG... --format html -o faults.html`");
  }
  drivers::AgentLogRequest rq;
  rq.files = options.files;
  rq.rank = options.rank;
  rq.code_objects = options.code_objects;
  rq.objdump = options.objdump;
  rq.error = [](const std::string& message, const std::string& hint) {
    print_error(message, hint);
  };
  const Incident incident = drivers::read_agent_logs(rq);

  OutputFile output(options.output);
  report::TextOptions to;
  to.color = use_color(options.color,
                       options.output.empty() || options.output == "-" ? STDOUT_FILENO : -1);
  to.verbose = options.verbose;
  to.max_groups = options.max_groups;
  report::write(output.stream(), incident, format, to, ROCPLAY_VERSION);
  output.commit();

  if (incident.cases.front().faults->dumps == 0 && format != report::Format::Text) {
    // Not an error: said on stderr because stdout carries the machine-readable report.
    std::fprintf(stderr, "rocplay: %s\n  hint: %s\n",
                 std::string(agentlog::kNoDumpsMessage).c_str(),
                 std::string(agentlog::kNoDumpsHint).c_str());
  }
  return static_cast<int>(incident.exit_code());
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
