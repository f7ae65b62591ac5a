// `rocplay run PLAYBOOK --pids A,B,...` / `--workers-of SERVER`: the options and the pid list
// wired to drivers::examine (one debugger per target, in parallel, lockstep samples, the
// cross-rank findings), progress lines, and the incident written by report::write.
#include "cli/fanout.hpp"

#include "cli/output.hpp"
#include "rocplay/drivers/drivers.hpp"
#include "rocplay/playbook/playbook.hpp"
#include "rocplay/playbook/run_targets.hpp"
#include "rocplay/report/incident.hpp"
#include "rocplay/session/session.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <sstream>
#include <utility>

namespace rocplay::cli {

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

int run_fanout(const RunCommandOptions& o, const std::vector<std::int64_t>& pids, unsigned jobs) {
  session::install_signal_guard();
  // Everything that can be checked is checked once, before any target stops.
  const playbook::Playbook pb = run_playbook_of(o);
  playbook::TargetsOptions examination = targets_options_of(o);
  const report::Format format = report::parse_format(o.format);
  examination.debugger = session::find_debugger(o.debugger);
  examination.jobs = jobs;
  OutputFile out(drivers::expand_path_pattern(o.output, std::nullopt, std::nullopt));

  std::vector<playbook::Target> targets = playbook::ranked_targets(pids);
  for (auto& t : targets) {
    t.record_path = drivers::record_path_for(o.record, t.pid, t.rank);
  }
  if (!o.quiet && stderr_is_tty()) {
    examination.target_done = [](const playbook::TargetRun& t) {
      std::fprintf(stderr, "rocplay: pid %lld %s (%.2fs)\n", static_cast<long long>(t.target.pid),
                   t.examined() ? "done" : "failed", t.seconds);
    };
  }
  drivers::NodeRecords node;
  node.ask_ras = !o.no_ras;
  if (!targets.empty() && !targets.front().record_path.empty()) {
    node.ras_path =
        (std::filesystem::path(targets.front().record_path).parent_path() / "ncclras.txt").string();
  }
  const Incident incident = drivers::examine(pb, targets, examination, node);
  for (const auto& e : drivers::target_problems(incident)) {
    print_error(e.what(), e.hint());
  }
  // One model, one writer, one exit-code rule (rocplay/case/case.hpp, rocplay/report/incident.hpp).
  report::write(out.stream(), incident, format, report_text_options(o), ROCPLAY_VERSION);
  out.commit();
  return static_cast<int>(incident.exit_code());
}

} // namespace rocplay::cli
