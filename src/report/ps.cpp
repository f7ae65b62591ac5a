// `rocplay ps`: the process tree and a server's GPU workers, as text and JSON.
#include "rocplay/report/ps.hpp"

#include <fmt/format.h>

#include <functional>

namespace rocplay::report {
namespace ps_text {
namespace {

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
  return p.cpu_percent ? fmt::format("{:.1f}", *p.cpu_percent) : std::string();
}

std::string command_of(const process::ProcessInfo& p, std::size_t width) {
  std::string cmd = p.cmdline.empty() ? "[" + p.comm + "]" : p.cmdline;
  if (cmd.size() > width) {
    cmd = cmd.substr(0, width - 3) + "...";
  }
  return cmd;
}

constexpr std::size_t kCommandWidth = 100;

void write_header(std::ostream& out) {
  out << fmt::format("{:<9} {:<9} {:>6} {:<7} {}\n", "PID", "PPID", "CPU%", "GPU", "COMMAND");
}

// One row; `indent` goes into the command column, as `ps --forest` does: columns stay aligned.
void write_row(std::ostream& out, const process::ProcessInfo& p, const std::string& indent,
               std::string_view mark) {
  out << fmt::format("{:<9} {:<9} {:>6} {:<7} {}{}{}\n", p.pid, p.ppid, cpu_column(p),
                     gpu_column(p), indent, command_of(p, kCommandWidth), mark);
}

std::size_t uninspectable(const process::ProcessTree& scanned) {
  std::size_t unknown = 0;
  for (const auto& p : scanned.processes()) {
    unknown += p.gpu.known ? 0 : 1;
  }
  return unknown;
}

} // namespace
} // namespace ps_text

nlohmann::json process_to_json(const process::ProcessInfo& p) {
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

nlohmann::json process_list_to_json(const process::ProcessTree& scanned,
                                    const process::ProcessTree& shown) {
  nlohmann::json j;
  j["schema"] = std::string(kPsSchema);
  j["schema_version"] = kPsSchemaVersion;
  j["scanned"] = scanned.processes().size();
  j["uninspectable"] = ps_text::uninspectable(scanned);
  j["processes"] = nlohmann::json::array();
  for (const auto& p : shown.processes()) {
    j["processes"].push_back(process_to_json(p));
  }
  return j;
}

nlohmann::json workers_to_json(const process::ProcessInfo& server,
                               const std::vector<process::ProcessInfo>& workers) {
  nlohmann::json j;
  j["schema"] = std::string(kWorkersSchema);
  j["schema_version"] = kPsSchemaVersion;
  j["pid"] = server.pid;
  j["holds_gpu"] = server.holds_gpu();
  j["workers"] = nlohmann::json::array();
  for (const auto& w : workers) {
    j["workers"].push_back(process_to_json(w));
  }
  return j;
}

void write_process_tree_text(std::ostream& out, const process::ProcessTree& scanned,
                             const process::ProcessTree& shown) {
  const std::size_t unknown = ps_text::uninspectable(scanned);
  if (shown.processes().empty()) {
    out << fmt::format("no process has /dev/kfd or /dev/nvidia* open ({} processes scanned)\n",
                       scanned.processes().size());
    if (unknown > 0) {
      out << fmt::format(
          "{} processes could not be inspected: run as root to see their open files\n", unknown);
    }
    out << "`rocplay ps --all` lists every process\n";
    return;
  }
  ps_text::write_header(out);
  std::function<void(const process::ProcessInfo&, int)> show = [&](const process::ProcessInfo& p,
                                                                   int depth) {
    const std::string indent =
        depth == 0 ? "" : std::string(static_cast<std::size_t>(depth - 1) * 2, ' ') + "\\_ ";
    ps_text::write_row(out, p, indent, p.holds_gpu() ? "   <- GPU" : "");
    for (const auto* c : shown.children(p.pid)) {
      show(*c, depth + 1);
    }
  };
  for (const auto* root : shown.roots()) {
    show(*root, 0);
  }
  if (unknown > 0) {
    out << fmt::format("({} processes could not be inspected: GPU `?`; run as root to see them)\n",
                       unknown);
  }
}

void write_workers_text(std::ostream& out, const process::ProcessInfo& server,
                        const std::vector<process::ProcessInfo>& workers) {
  if (workers.empty()) {
    if (server.holds_gpu()) {
      out << fmt::format("pid {} holds the GPU itself ({}) and has no GPU workers below it: "
                         "attach to it\n",
                         server.pid, ps_text::gpu_column(server));
    } else {
      out << fmt::format("pid {} ({}) has no descendant with /dev/kfd or /dev/nvidia* open\n",
                         server.pid, server.comm);
    }
    return;
  }
  out << fmt::format("GPU workers of pid {} ({}){}:\n", server.pid, server.comm,
                     server.holds_gpu() ? "" : ", which holds no GPU itself (the dispatcher)");
  ps_text::write_header(out);
  for (const auto& w : workers) {
    ps_text::write_row(out, w, "", "");
  }
  out << fmt::format("attach to one with: rocplay run hang-triage --pid {}\n", workers.front().pid);
}

} // namespace rocplay::report
