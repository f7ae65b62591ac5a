// `rocplay run PLAYBOOK --pids A,B,...` / `--workers-of SERVER`: the options and the pid list
// wired to playbook::run_targets (one debugger per target, in parallel, lockstep samples, the
// cross-rank findings), progress lines, and the combined report written.
#include "cli/fanout.hpp"

#include "cli/output.hpp"
#include "rocplay/playbook.hpp"
#include "rocplay/process.hpp"
#include "rocplay/report_incident.hpp"
#include "rocplay/run_targets.hpp"
#include "rocplay/session.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <sstream>
#include <utility>

namespace rocplay::cli {

namespace {

// `%p` and `%r` in --record become the pid and rank; otherwise `.PID` goes before the extension.
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

} // namespace

std::vector<std::int64_t> parse_pid_list(const std::string& text) {
  std::vector<std::int64_t> pids;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    item.erase(0, item.find_first_not_of(" \t"));
    item.erase(item.find_last_not_of(" \t") + 1);
    if (item.empty()) {
      continue;
    }
    std::size_t used = 0;
    long long pid = 0;
    try {
      pid = std::stoll(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != item.size() || pid <= 0) {
      throw Error(ExitCode::Usage, fmt::format("--pids: `{}` is not a process id", item),
                  "give a comma-separated list, e.g. --pids 4301,4302,4303");
    }
    if (std::find(pids.begin(), pids.end(), pid) == pids.end()) {
      pids.push_back(pid);
    }
  }
  if (pids.empty()) {
    throw Error(ExitCode::Usage, "--pids: no process ids given",
                "give a comma-separated list, e.g. --pids 4301,4302");
  }
  return pids;
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

int run_fanout(const RunCommandOptions& o, const std::vector<std::int64_t>& pids, unsigned jobs,
               Incident* outcome) {
  session::install_signal_guard();
  // Everything that can be checked is checked once, before any target stops.
  const playbook::Playbook pb = run_playbook_of(o);
  playbook::TargetsOptions examination = targets_options_of(o);
  const report::Format format = report::parse_format(o.format);
  examination.debugger = session::find_debugger(o.debugger);
  examination.jobs = jobs;
  OutputFile out(expand_path_pattern(o.output, std::nullopt, std::nullopt));

  std::vector<playbook::Target> targets = playbook::ranked_targets(pids);
  for (auto& t : targets) {
    t.record_path = record_path_for(o.record, t.pid, t.rank);
  }
  if (!o.quiet && stderr_is_tty()) {
    examination.target_done = [](const playbook::TargetRun& t) {
      std::fprintf(stderr, "rocplay: pid %lld %s (%.2fs)\n", static_cast<long long>(t.target.pid),
                   t.examined() ? "done" : "failed", t.seconds);
    };
  }
  playbook::TargetsResult result = playbook::run_targets(pb, targets, examination);

  for (const auto& t : result.targets) {
    if (t.result && t.result->times.left_stopped) {
      print_error(fmt::format("pid {} was left stopped after detach; rocplay sent it SIGCONT",
                              t.target.pid),
                  "check that it runs (`ps -o stat -p PID`); something else may be tracing it");
    }
  }
  const std::size_t failed = result.targets.size() - result.examined;
  if (!result.targets.empty()) {
    const playbook::TargetRun& first = result.targets.front();
    if (failed == result.targets.size()) {
      // Nothing was examined: the first target's reason is the reason.
      print_error(first.error ? first.error->what() : "no target was examined",
                  first.error ? first.error->hint() : "");
    } else if (failed > 0) {
      print_error(
          fmt::format("{} of {} targets could not be examined", failed, result.targets.size()),
          "their reasons are in the report; the others were examined and detached");
    }
  }
  // One model, one writer, one exit-code rule (rocplay/case.hpp, rocplay/report_incident.hpp).
  Incident incident = playbook::incident_of(pb.name, std::move(result));
  report::write(out.stream(), incident, format, report_text_options(o), ROCPLAY_VERSION);
  out.commit();
  const int code = static_cast<int>(incident.exit_code());
  if (outcome != nullptr) {
    *outcome = std::move(incident);
  }
  return code;
}

} // namespace rocplay::cli
