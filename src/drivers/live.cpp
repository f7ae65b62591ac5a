// The live drivers (rocplay/drivers/drivers.hpp): one target or several, examined by
// playbook::run_targets and returned as an Incident; the path patterns of reports and recordings; a
// server's workers.
#include "rocplay/drivers/drivers.hpp"

#include "rocplay/report/run.hpp"
#include "rocplay/session/process.hpp"

#include <fmt/format.h>

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <future>

namespace rocplay::drivers {

std::string expand_path_pattern(const std::string& pattern, std::optional<std::int64_t> pid,
                                std::optional<int> rank) {
  std::string out;
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    const char next = i + 1 < pattern.size() ? pattern[i + 1] : '\0';
    if (pattern[i] != '%' || (next != 'h' && next != 'p' && next != 'r')) {
      out += pattern[i];
      continue;
    }
    ++i;
    if (next == 'h') {
      const std::string host = process::host_name();
      out += host.empty() ? "unknown-host" : host;
    } else if (next == 'p') {
      out += pid ? std::to_string(*pid) : "%p";
    } else {
      out += rank ? std::to_string(*rank) : "x";
    }
  }
  return out;
}

std::string record_path_for(const std::string& pattern, std::int64_t pid, std::optional<int> rank) {
  if (pattern.empty()) {
    return {};
  }
  if (pattern.find("%p") != std::string::npos || pattern.find("%r") != std::string::npos) {
    return expand_path_pattern(pattern, pid, rank);
  }
  std::filesystem::path p(expand_path_pattern(pattern, pid, rank));
  return (p.parent_path() /
          (p.stem().string() + "." + std::to_string(pid) + p.extension().string()))
      .string();
}

std::vector<std::int64_t> resolve_workers(std::int64_t server_pid) {
  process::ScanOptions scan;
  scan.sample = std::chrono::milliseconds(0);
  std::vector<std::int64_t> pids;
  for (const auto& w : process::workers_of(server_pid, scan)) {
    pids.push_back(w.pid);
  }
  if (pids.empty()) {
    throw Error(ExitCode::NoSuchProcess,
                fmt::format("no GPU workers found under pid {}: neither it nor its descendants "
                            "have /dev/kfd or /dev/nvidia* open",
                            server_pid),
                "check the pid with `rocplay ps`; `--pid` attaches to one process directly");
  }
  return pids;
}

std::optional<collectives::RasQueryOptions> ras_query_for(const std::vector<std::int64_t>& pids) {
  collectives::RasQueryOptions query;
  for (const auto pid : pids) {
    const auto env = process::read_environ(pid);
    if (!env) {
      continue;
    }
    if (auto it = env->find("NCCL_RAS_ENABLE"); it != env->end() && it->second == "0") {
      return std::nullopt;
    }
    if (auto it = env->find("NCCL_RAS_ADDR"); it != env->end()) {
      // HOST:PORT ([v6]:PORT); a value that does not parse keeps the default.
      const auto colon = it->second.rfind(':');
      const std::string host = it->second.substr(0, colon);
      int port = 0;
      if (colon != std::string::npos &&
          std::sscanf(it->second.c_str() + colon + 1, "%d", &port) == 1 && port > 0 &&
          port < 65536) {
        query.host = host.size() > 2 && host.front() == '[' && host.back() == ']'
                         ? host.substr(1, host.size() - 2)
                         : (host.empty() ? query.host : host);
        query.port = port;
      }
      break;
    }
  }
  return query;
}

void add_ras_answer(Incident& incident, const collectives::RasAnswer& answer,
                    const collectives::RasQueryOptions& query, const std::string& ras_path,
                    const std::vector<std::int64_t>& examined) {
  const std::string where = fmt::format("{}:{}", query.host, query.port);
  if (!answer.answered) {
    // Nothing listening is the common case (no NCCL, or NCCL before 2.24): not worth a line.
    if (answer.error.find("refused") == std::string::npos) {
      incident.notes.push_back(
          fmt::format("NCCL RAS at {} did not answer: {}", where, answer.error));
    }
    return;
  }
  std::string kept;
  if (!ras_path.empty()) {
    std::ofstream out(ras_path, std::ios::binary);
    out << answer.text;
    kept = out ? fmt::format("; kept in {}", ras_path)
               : fmt::format("; could not be written to {}", ras_path);
  }
  collectives::Input input = collectives::read_ras(answer.text, "NCCL RAS at " + where);
  // Asked beside the attaches: a rank our debugger held stopped could not answer.
  for (auto& line : collectives::set_aside_unanswered(input, examined)) {
    incident.notes.push_back(std::move(line));
  }
  const auto findings = collectives::findings(collectives::match({input}));
  incident.cross_rank.insert(incident.cross_rank.end(), findings.begin(), findings.end());
  incident.notes.push_back(fmt::format(
      "NCCL RAS at {} answered in {:.2f} s: {} communicator(s){}{}", where, answer.seconds,
      input.ras.size(),
      findings.empty() ? ", no divergence" : fmt::format(", {} divergence(s)", findings.size()),
      kept));
}

Incident examine(const playbook::Playbook& playbook, const std::vector<playbook::Target>& targets,
                 const playbook::TargetsOptions& options, const NodeRecords& node) {
  // RAS gathers from every process of the job, which takes a while: asked beside the attaches.
  std::optional<collectives::RasQueryOptions> query;
  std::future<collectives::RasAnswer> ras;
  std::vector<std::int64_t> pids;
  if (node.ask_ras && targets.size() >= 2) {
    for (const auto& t : targets) {
      pids.push_back(t.pid);
    }
    query = ras_query_for(pids);
    if (query) {
      ras = std::async(std::launch::async, [q = *query] { return collectives::ask_ras(q); });
    }
  }
  Incident inc =
      playbook::incident_of(playbook.name, playbook::run_targets(playbook, targets, options));
  inc.several = true; // the report over several targets, even of one
  if (ras.valid()) {
    add_ras_answer(inc, ras.get(), *query, node.ras_path, pids);
  }
  return inc;
}

Incident examine_one(const playbook::Playbook& playbook, const playbook::Target& target,
                     const playbook::TargetsOptions& options) {
  // A fan-out of one: the same examination as each target of --pids, reported as one run.
  playbook::TargetsResult run = playbook::run_targets(playbook, {target}, options);
  if (!run.targets.front().result) {
    throw *run.targets.front().error; // before the playbook ran (the debugger did not start, ...)
  }
  return playbook::incident_of(playbook.name, std::move(run));
}

std::vector<Error> target_problems(const Incident& incident) {
  std::vector<Error> out;
  for (const auto& c : incident.cases) {
    if (c.run && c.run->times.left_stopped) {
      out.emplace_back(ExitCode::TargetLeftStopped,
                       fmt::format("pid {} was left stopped after detach; rocplay sent it SIGCONT",
                                   c.source.pid.value_or(0)),
                       report::left_stopped_hint(*c.run));
    }
  }
  std::size_t failed = 0;
  for (const auto& c : incident.cases) {
    failed += c.examined() ? 0 : 1;
  }
  if (incident.cases.empty() || failed == 0) {
    return out;
  }
  const Case& first = incident.cases.front();
  if (failed == incident.cases.size()) {
    // Nothing was examined: the first target's reason is the reason.
    out.emplace_back(first.exit_code, first.error.empty() ? "no target was examined" : first.error,
                     first.error_hint);
  } else {
    out.emplace_back(
        ExitCode::PartialInput,
        fmt::format("{} of {} targets could not be examined", failed, incident.cases.size()),
        "their reasons are in the report; the others were examined and detached");
  }
  return out;
}

} // namespace rocplay::drivers
