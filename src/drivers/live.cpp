// The live drivers (rocplay/drivers/drivers.hpp): one target or several, examined by
// playbook::run_targets and returned as an Incident; the path patterns of reports and recordings; a
// server's workers.
#include "rocplay/drivers/drivers.hpp"

#include "rocplay/report/run.hpp"
#include "rocplay/session/process.hpp"

#include <fmt/format.h>

#include <unistd.h>

#include <filesystem>

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
      char host[256] = {};
      out += ::gethostname(host, sizeof host - 1) == 0 ? host : "unknown-host";
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

Incident examine(const playbook::Playbook& playbook, const std::vector<playbook::Target>& targets,
                 const playbook::TargetsOptions& options) {
  Incident inc =
      playbook::incident_of(playbook.name, playbook::run_targets(playbook, targets, options));
  inc.several = true; // the report over several targets, even of one
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
