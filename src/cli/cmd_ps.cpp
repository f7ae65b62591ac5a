// `rocplay ps`: which processes hold GPU work, as a tree, and a server's GPU workers.
#include "cli/commands.hpp"
#include "cli/output.hpp"
#include "rocplay/core/error.hpp"
#include "rocplay/report/ps.hpp"
#include "rocplay/session/process.hpp"

#include <iostream>
#include <string>

namespace rocplay::cli::ps_command {
namespace {

struct PsArgs {
  bool all = false;
  std::int64_t workers_of = 0;
  std::string format = "text";
  int sample_ms = 200;
};

int print_tree(const process::ProcessTree& scanned, const PsArgs& args) {
  const process::ProcessTree shown = args.all ? scanned : scanned.candidates();
  if (args.format == "json") {
    std::cout << json_text(report::process_list_to_json(scanned, shown), 2) << '\n';
  } else {
    report::write_process_tree_text(std::cout, scanned, shown);
  }
  return 0;
}

int print_workers(const process::ProcessTree& tree, const PsArgs& args) {
  const auto* server = tree.find(args.workers_of);
  if (server == nullptr) {
    throw Error(ExitCode::NoSuchProcess, "no process with pid " + std::to_string(args.workers_of),
                "`rocplay ps` lists the processes holding a GPU");
  }
  const auto workers = process::workers_of(tree, args.workers_of);
  if (args.format == "json") {
    std::cout << json_text(report::workers_to_json(*server, workers), 2) << '\n';
  } else {
    report::write_workers_text(std::cout, *server, workers);
  }
  return 0;
}

Action add_ps(CLI::App& app) {
  auto args = std::make_shared<PsArgs>();
  auto* sub = app.add_subcommand(
      "ps", "List processes holding GPU work (/dev/kfd, /dev/nvidia*) as a tree, or a server's "
            "GPU workers");
  sub->add_flag("--all", args->all, "List every process, not only GPU holders and their kin");
  sub->add_option("--workers-of", args->workers_of,
                  "Resolve the GPU workers of a server (dispatcher) PID")
      ->check(CLI::PositiveNumber);
  sub->add_option("--format", args->format, "Output format")
      ->check(CLI::IsMember({"text", "json"}));
  sub->add_option("--sample-ms", args->sample_ms, "CPU% sampling interval in milliseconds")
      ->check(CLI::Range(0, 10000));
  sub->footer("Exit codes: 0 listed, 64 bad command line, 67 --workers-of names no live process, "
              "70 internal error.");
  return [args] {
    process::ScanOptions options;
    options.sample = std::chrono::milliseconds(args->sample_ms);
    const auto tree = process::scan(options);
    if (args->workers_of != 0) {
      return print_workers(tree, *args);
    }
    return print_tree(tree, *args);
  };
}

const bool kRegistered = register_command({"ps", 60, &add_ps});

} // namespace
} // namespace rocplay::cli::ps_command
