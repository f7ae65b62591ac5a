// `rocplay ps`: which processes hold GPU work, as a tree, and a server's GPU workers.
#include "cli/commands.hpp"
#include "cli/output.hpp"
#include "rocplay/error.hpp"
#include "rocplay/process.hpp"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <functional>
#include <set>
#include <string>

namespace rocplay::cli::ps_command {
namespace {

struct PsArgs {
  bool all = false;
  std::int64_t workers_of = 0;
  std::string format = "text";
  int sample_ms = 200;
};

std::string gpu_column(const process::ProcessInfo& p) {
  if (!p.gpu.known) {
    return "?";
  }
  std::string out;
  if (p.gpu.kfd) {
    out = "kfd";
  }
  if (p.gpu.nvidia) {
    out += out.empty() ? "nvidia" : "+nvidia";
  }
  return out.empty() ? "-" : out;
}

std::string cpu_column(const process::ProcessInfo& p) {
  if (!p.cpu_percent) {
    return "";
  }
  char buf[16];
  std::snprintf(buf, sizeof buf, "%.1f", *p.cpu_percent);
  return buf;
}

std::string command_of(const process::ProcessInfo& p, std::size_t width) {
  std::string cmd = p.cmdline.empty() ? "[" + p.comm + "]" : p.cmdline;
  if (cmd.size() > width) {
    cmd = cmd.substr(0, width - 3) + "...";
  }
  return cmd;
}

nlohmann::json to_json(const process::ProcessInfo& p) {
  nlohmann::json j;
  j["pid"] = p.pid;
  j["ppid"] = p.ppid;
  j["comm"] = p.comm;
  j["cmdline"] = p.cmdline;
  j["state"] = std::string(1, p.state);
  j["threads"] = p.threads;
  j["cpu_percent"] = p.cpu_percent ? nlohmann::json(*p.cpu_percent) : nlohmann::json(nullptr);
  j["holds_gpu"] = p.holds_gpu();
  j["gpu"] = {{"known", p.gpu.known},
              {"kfd", p.gpu.kfd},
              {"nvidia", p.gpu.nvidia},
              {"devices", p.gpu.devices}};
  return j;
}

void print_json(const nlohmann::json& j) {
  std::printf("%s\n", json_text(j, 2).c_str());
}

int print_tree(const process::ProcessTree& full, const PsArgs& args) {
  const process::ProcessTree tree = args.all ? full : full.candidates();
  std::size_t unknown = 0;
  for (const auto& p : full.processes()) {
    unknown += p.gpu.known ? 0 : 1;
  }
  if (args.format == "json") {
    nlohmann::json j;
    j["schema"] = "rocplay.ps/1";
    j["scanned"] = full.processes().size();
    j["uninspectable"] = unknown;
    j["processes"] = nlohmann::json::array();
    for (const auto& p : tree.processes()) {
      j["processes"].push_back(to_json(p));
    }
    print_json(j);
    return 0;
  }
  if (tree.processes().empty()) {
    std::printf("no process has /dev/kfd or /dev/nvidia* open (%zu processes scanned)\n",
                full.processes().size());
    if (unknown > 0) {
      std::printf("%zu processes could not be inspected: run as root to see their open files\n",
                  unknown);
    }
    std::printf("`rocplay ps --all` lists every process\n");
    return 0;
  }
  std::printf("%-9s %-9s %6s %-7s %s\n", "PID", "PPID", "CPU%", "GPU", "COMMAND");
  std::function<void(const process::ProcessInfo&, int)> show = [&](const process::ProcessInfo& p,
                                                                   int depth) {
    // Indentation goes into the command column, as `ps --forest` does: columns stay aligned.
    const std::string indent =
        depth == 0 ? "" : std::string(static_cast<std::size_t>(depth - 1) * 2, ' ') + "\\_ ";
    std::printf("%-9lld %-9lld %6s %-7s %s%s%s\n", static_cast<long long>(p.pid),
                static_cast<long long>(p.ppid), cpu_column(p).c_str(), gpu_column(p).c_str(),
                indent.c_str(), command_of(p, 100).c_str(), p.holds_gpu() ? "   <- GPU" : "");
    for (const auto* c : tree.children(p.pid)) {
      show(*c, depth + 1);
    }
  };
  for (const auto* root : tree.roots()) {
    show(*root, 0);
  }
  if (unknown > 0) {
    std::printf("(%zu processes could not be inspected: GPU `?`; run as root to see them)\n",
                unknown);
  }
  return 0;
}

int print_workers(const process::ProcessTree& tree, const PsArgs& args) {
  const auto* self = tree.find(args.workers_of);
  if (self == nullptr) {
    throw Error(ExitCode::NoSuchProcess, "no process with pid " + std::to_string(args.workers_of),
                "`rocplay ps` lists the processes holding a GPU");
  }
  const auto workers = process::workers_of(tree, args.workers_of);
  if (args.format == "json") {
    nlohmann::json j;
    j["schema"] = "rocplay.workers/1";
    j["pid"] = args.workers_of;
    j["holds_gpu"] = self->holds_gpu();
    j["workers"] = nlohmann::json::array();
    for (const auto& w : workers) {
      j["workers"].push_back(to_json(w));
    }
    print_json(j);
    return 0;
  }
  if (workers.empty()) {
    if (self->holds_gpu()) {
      std::printf("pid %lld holds the GPU itself (%s) and has no GPU workers below it: attach to "
                  "it\n",
                  static_cast<long long>(self->pid), gpu_column(*self).c_str());
    } else {
      std::printf("pid %lld (%s) has no descendant with /dev/kfd or /dev/nvidia* open\n",
                  static_cast<long long>(self->pid), self->comm.c_str());
    }
    return 0;
  }
  std::printf("GPU workers of pid %lld (%s)%s:\n", static_cast<long long>(self->pid),
              self->comm.c_str(),
              self->holds_gpu() ? "" : ", which holds no GPU itself (the dispatcher)");
  std::printf("%-9s %-9s %6s %-7s %s\n", "PID", "PPID", "CPU%", "GPU", "COMMAND");
  for (const auto& w : workers) {
    std::printf("%-9lld %-9lld %6s %-7s %s\n", static_cast<long long>(w.pid),
                static_cast<long long>(w.ppid), cpu_column(w).c_str(), gpu_column(w).c_str(),
                command_of(w, 100).c_str());
  }
  std::printf("attach to one with: rocplay run hang-triage --pid %lld\n",
              static_cast<long long>(workers.front().pid));
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
