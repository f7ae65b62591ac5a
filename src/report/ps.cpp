// `rocplay ps`: the process tree and a server's GPU workers, as text and JSON.
#include "rocplay/report/ps.hpp"

#include "rocplay/report/report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <optional>

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

// `text` cut to `width` columns (UTF-8 characters), marked `...` when cut.
std::string fit(const std::string& text, std::size_t width) {
  if (text_columns(text) <= width) {
    return text;
  }
  const std::size_t keep = width > 3 ? width - 3 : 0;
  std::size_t cols = 0;
  std::size_t i = 0;
  for (; i < text.size(); ++i) {
    if ((static_cast<unsigned char>(text[i]) & 0xc0) != 0x80 && cols++ == keep) {
      break;
    }
  }
  return text.substr(0, i) + "...";
}

std::string command_of(const process::ProcessInfo& p) {
  return p.cmdline.empty() ? "[" + p.comm + "]" : p.cmdline;
}

// PID, PPID, CPU% and GPU take this many columns before the command.
constexpr std::size_t kLeadColumns = 35;
// The command keeps at least this many columns, however narrow the terminal.
constexpr std::size_t kMinCommand = 16;

// `GPU`, or `WHY` where the listing is of processes worth a look (no GPU holder).
void write_header(std::ostream& out, std::string_view fourth = "GPU") {
  out << fmt::format("{:<9} {:<9} {:>6} {:<7} {}\n", "PID", "PPID", "CPU%", fourth, "COMMAND");
}

// One row; `indent` goes into the command column, as `ps --forest` does: columns stay aligned.
// The command is cut so that the row, with its mark, fits `width`. `fourth`: the GPU column's
// text, or why the process is listed.
void write_row(std::ostream& out, const process::ProcessInfo& p, const std::string& indent,
               std::string_view mark, std::size_t width,
               std::optional<std::string_view> fourth = std::nullopt) {
  const std::size_t used = kLeadColumns + indent.size() + text_columns(mark);
  const std::size_t room = width > used + kMinCommand ? width - used : kMinCommand;
  out << fmt::format("{:<9} {:<9} {:>6} {:<7} {}{}{}\n", p.pid, p.ppid, cpu_column(p),
                     fourth ? std::string(*fourth) : gpu_column(p), indent,
                     fit(command_of(p), room), mark);
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
                                    const process::ProcessTree& shown,
                                    const std::map<std::int64_t, std::string>& worth_a_look) {
  nlohmann::json j;
  j["schema"] = std::string(kPsSchema);
  j["schema_version"] = kPsSchemaVersion;
  j["scanned"] = scanned.processes().size();
  j["uninspectable"] = ps_text::uninspectable(scanned);
  j["processes"] = nlohmann::json::array();
  for (const auto& p : shown.processes()) {
    j["processes"].push_back(process_to_json(p));
    const auto why = worth_a_look.find(p.pid);
    j["processes"].back()["worth_a_look"] =
        why == worth_a_look.end() ? nlohmann::json(nullptr) : nlohmann::json(why->second);
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
                             const process::ProcessTree& shown, std::size_t width,
                             const std::map<std::int64_t, std::string>& worth_a_look) {
  const std::size_t unknown = ps_text::uninspectable(scanned);
  if (shown.processes().empty()) {
    out << fmt::format("no process has /dev/kfd or /dev/nvidia* open, and no user process is busy "
                       "or blocked ({} processes scanned)\n",
                       scanned.processes().size());
    if (unknown > 0) {
      out << fmt::format(
          "{} processes could not be inspected: run as root to see their open files\n", unknown);
    }
    out << "`rocplay ps --all` lists every process\n";
    return;
  }
  const bool looks = !worth_a_look.empty();
  if (looks) {
    write_wrapped(out, width, "",
                  "No process has /dev/kfd or /dev/nvidia* open. User processes that are busy "
                  "(spinning), blocked (on a lock, a condition or a join, waiting for nothing "
                  "from outside) or stopped, with their parents (`--format json` says on what "
                  "each waits):");
  }
  ps_text::write_header(out, looks ? "WHY" : "GPU");
  std::function<void(const process::ProcessInfo&, int)> show = [&](const process::ProcessInfo& p,
                                                                   int depth) {
    const std::string indent =
        depth == 0 ? "" : std::string(static_cast<std::size_t>(depth - 1) * 2, ' ') + "\\_ ";
    if (looks) { // the kind of why (`busy`, `blocked`, ...); a parent listed for shape, blank
      const auto why = worth_a_look.find(p.pid);
      const std::string kind =
          why == worth_a_look.end() ? std::string() : why->second.substr(0, why->second.find(':'));
      ps_text::write_row(out, p, indent, "", width, kind);
    } else {
      ps_text::write_row(out, p, indent, p.holds_gpu() ? "   <- GPU" : "", width);
    }
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
  if (looks) {
    // A blocked one first: a spinning process is as often busy as hung.
    auto pick = std::find_if(worth_a_look.begin(), worth_a_look.end(),
                             [](const auto& w) { return w.second.starts_with("blocked"); });
    if (pick == worth_a_look.end()) {
      pick = worth_a_look.begin();
    }
    write_wrapped(out, width, "",
                  fmt::format("look at one with: rocplay run hang-triage --pid {}", pick->first));
  }
}

void write_workers_text(std::ostream& out, const process::ProcessInfo& server,
                        const std::vector<process::ProcessInfo>& workers, std::size_t width) {
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
    ps_text::write_row(out, w, "", "", width);
  }
  out << fmt::format("attach to one with: rocplay run hang-triage --pid {}\n", workers.front().pid);
}

void write_slurm_tasks_text(std::ostream& out, const nlohmann::json& doc, std::size_t width) {
  struct Row {
    int rank;
    std::string line;
  };
  std::vector<Row> rows;
  std::vector<std::string> silent;
  std::size_t nodes = 0;
  const auto text = [](const nlohmann::json& j, const char* key) {
    return j.contains(key) && j.at(key).is_string() ? j.at(key).get<std::string>() : std::string();
  };
  for (const auto& node : doc.value("nodes", nlohmann::json::array())) {
    ++nodes;
    const std::string host = text(node, "host");
    if (node.contains("error")) {
      silent.push_back(fmt::format("{}: {}", host, text(node.at("error"), "message")));
      continue;
    }
    for (const auto& t : node.value("tasks", nlohmann::json::array())) {
      const auto gpu = t.value("gpu", nlohmann::json::array());
      std::string cpu = "-";
      if (t.contains("cpu_percent") && t.at("cpu_percent").is_number()) {
        cpu = fmt::format("{:.0f}", t.at("cpu_percent").get<double>());
      }
      std::string line =
          fmt::format("{:<5} {:<12} {:<8} {:<6} {:<5} {:>4}  {:<4} {}", t.value("rank", -1), host,
                      t.value("pid", std::int64_t{0}), text(t, "step"), text(t, "state"), cpu,
                      gpu.empty() ? "-" : std::to_string(gpu.size()),
                      text(t, "cmdline").empty() ? text(t, "comm") : text(t, "cmdline"));
      if (line.size() > width && width > 3) {
        line = line.substr(0, width - 3) + "...";
      }
      rows.push_back({t.value("rank", -1), std::move(line)});
    }
  }
  std::stable_sort(rows.begin(), rows.end(),
                   [](const Row& a, const Row& b) { return a.rank < b.rank; });
  out << fmt::format(
      "Slurm job {}: {} task(s) on {} node(s){}\n", text(doc, "job"), rows.size(), nodes,
      silent.empty() ? std::string() : fmt::format(", {} not answering", silent.size()));
  out << fmt::format("{:<5} {:<12} {:<8} {:<6} {:<5} {:>4}  {:<4} {}\n", "RANK", "HOST", "PID",
                     "STEP", "STATE", "CPU%", "GPU", "COMMAND");
  for (const auto& r : rows) {
    out << r.line << '\n';
  }
  for (const auto& s : silent) {
    out << s << '\n';
  }
}

} // namespace rocplay::report
