// `rocplay ps`: which processes hold GPU work, as a tree, and a server's GPU workers.
#include "cli/commands.hpp"
#include "cli/output.hpp"
#include "rocplay/core/error.hpp"
#include "rocplay/drivers/nodes.hpp"
#include "rocplay/report/ps.hpp"
#include "rocplay/report/report.hpp"
#include "rocplay/session/process.hpp"

#include <unistd.h>

#include <filesystem>
#include <iostream>
#include <map>
#include <set>
#include <string>

namespace rocplay::cli::ps_command {
namespace {

struct PsArgs {
  bool all = false;
  std::int64_t workers_of = 0;
  std::string slurm_job;
  bool slurm_node_agent = false; // hidden: one node's side of --slurm-job
  std::string format = "text";
  int sample_ms = 200;
};

// Without GPU holders, the user processes worth a look (busy or blocked) by their main thread's
// state and kernel wait; another user's only for root, who can attach to them.
std::map<std::int64_t, std::string> worth_a_look(const process::ProcessTree& scanned) {
  std::map<std::int64_t, std::string> out;
  const auto uid = static_cast<std::int64_t>(::getuid());
  for (const auto& p : scanned.processes()) {
    if (p.pid == ::getpid() || process::is_kernel_thread(p) ||
        (uid != 0 && p.uid && *p.uid != uid)) {
      continue;
    }
    std::vector<std::string> wchans;
    for (const auto& t : process::read_task_stats(p.pid, 64)) { // the main thread first
      wchans.push_back(process::read_wchan(p.pid, t.tid));
    }
    if (auto why = process::worth_a_look(p, wchans); !why.empty()) {
      out.emplace(p.pid, std::move(why));
    }
  }
  return out;
}

int print_tree(const process::ProcessTree& scanned, const PsArgs& args) {
  const std::int64_t self = ::getpid();
  process::ProcessTree shown =
      args.all ? scanned.without_kernel_threads(self) : scanned.candidates();
  std::map<std::int64_t, std::string> reasons;
  if (!args.all && shown.processes().empty()) {
    reasons = worth_a_look(scanned);
    std::set<std::int64_t> keep;
    for (const auto& [pid, why] : reasons) {
      keep.insert(pid);
    }
    shown = scanned.with_ancestors(keep, self);
  }
  if (args.format == "json") {
    std::cout << json_text(report::process_list_to_json(scanned, shown, reasons), 2) << '\n';
  } else {
    report::write_process_tree_text(std::cout, scanned, shown, report::text_width(STDOUT_FILENO),
                                    reasons);
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
    report::write_workers_text(std::cout, *server, workers, report::text_width(STDOUT_FILENO));
  }
  return 0;
}

// `ps --slurm-job JOBID`: the job's tasks on every node, through one srun per node.
int print_slurm_tasks(const PsArgs& args) {
  if (args.slurm_node_agent) {
    return drivers::slurm_node_tasks(args.slurm_job, std::chrono::milliseconds(args.sample_ms),
                                     std::cout);
  }
  const drivers::SlurmJob job =
      drivers::slurm_job(args.slurm_job, std::chrono::milliseconds(10'000));
  drivers::SlurmRequest request;
  request.job = job.id;
  request.timeout = std::chrono::milliseconds(30'000 + args.sample_ms);
  std::error_code ec;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  request.agent_argv = {ec ? std::string("rocplay") : self.string(),
                        "ps",
                        "--slurm-job",
                        job.id,
                        "--slurm-node-agent",
                        "--sample-ms",
                        std::to_string(args.sample_ms)};
  const nlohmann::json doc = drivers::slurm_tasks(request, job);
  int code = 0;
  for (const auto& node : doc["nodes"]) {
    if (node.contains("error")) {
      print_error(node["error"].value("message", ""), node["error"].value("hint", ""));
      code = static_cast<int>(ExitCode::PartialInput);
    }
  }
  if (args.format == "json") {
    std::cout << json_text(doc, 2) << '\n';
  } else {
    report::write_slurm_tasks_text(std::cout, doc, report::text_width(STDOUT_FILENO));
  }
  return code;
}

Action add_ps(CLI::App& app) {
  auto args = std::make_shared<PsArgs>();
  auto* sub = app.add_subcommand(
      "ps", "List processes holding GPU work (/dev/kfd, /dev/nvidia*) as a tree (without any: "
            "user processes that are busy or blocked), or a server's GPU workers");
  sub->add_flag("--all", args->all,
                "List every process (never kernel threads, nor rocplay itself), not only GPU "
                "holders and their kin");
  sub->add_option("--workers-of", args->workers_of,
                  "Resolve the GPU workers of a server (dispatcher) PID")
      ->check(CLI::PositiveNumber);
  auto* slurm = sub->add_option(
      "--slurm-job", args->slurm_job,
      "The tasks of this running Slurm job on every node (one srun --overlap per node): rank, "
      "host, pid, step, state, CPU%, GPU devices, command");
  sub->add_flag("--slurm-node-agent", args->slurm_node_agent)->group("")->needs(slurm);
  sub->add_option("--format", args->format, "Output format")
      ->check(CLI::IsMember({"text", "json"}));
  sub->add_option("--sample-ms", args->sample_ms, "CPU% sampling interval in milliseconds")
      ->check(CLI::Range(0, 10000));
  sub->footer("Exit codes: 0 listed, 2 --slurm-job: some nodes did not answer, 64 bad command "
              "line, 67 --workers-of names no live process (--slurm-job: no such running job), "
              "70 internal error.");
  return [args] {
    if (!args->slurm_job.empty()) {
      return print_slurm_tasks(*args);
    }
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
