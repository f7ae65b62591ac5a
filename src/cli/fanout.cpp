// `rocplay run PLAYBOOK --pids A,B,...` / `--workers-of SERVER` / `--slurm-job JOBID`: the
// options wired to the drivers (rocplay/drivers/nodes.hpp: the node fan-out, the Slurm fan-out,
// the one join), progress lines, and the incident written by report::write.
#include "cli/fanout.hpp"

#include "cli/output.hpp"
#include "rocplay/drivers/drivers.hpp"
#include "rocplay/drivers/nodes.hpp"
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
#include <iostream>
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

  const std::vector<playbook::Target> targets = drivers::node_targets(pids, o.record);
  if (!o.quiet && stderr_is_tty()) {
    examination.target_done = [](const playbook::TargetRun& t) {
      std::fprintf(stderr, "rocplay: pid %lld %s (%.2fs)\n", static_cast<long long>(t.target.pid),
                   t.examined() ? "done" : "failed", t.seconds);
    };
  }
  drivers::NodeRecords records;
  records.ask_ras = !o.no_ras;
  if (!targets.empty() && !targets.front().record_path.empty()) {
    records.ras_path =
        (std::filesystem::path(targets.front().record_path).parent_path() / "ncclras.txt").string();
  }
  std::vector<drivers::NodePart> node(1);
  node.front().incident = drivers::examine(pb, targets, examination, records);
  const Incident incident = drivers::join_nodes(pb.name, std::move(node));
  for (const auto& e : drivers::target_problems(incident)) {
    print_error(e.what(), e.hint());
  }
  // One model, one writer, one exit-code rule (rocplay/case/case.hpp, rocplay/report/incident.hpp).
  report::write(out.stream(), incident, format, report_text_options(o), ROCPLAY_VERSION);
  out.commit();
  return static_cast<int>(incident.exit_code());
}

namespace {

std::string self_path() {
  std::error_code ec;
  const auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string("rocplay") : p.string();
}

} // namespace

int run_slurm(const RunCommandOptions& o) {
  // Everything that can be checked is checked here, before any node is asked.
  const playbook::Playbook pb = run_playbook_of(o);
  const playbook::TargetsOptions examination = targets_options_of(o);
  const report::Format format = report::parse_format(o.format);
  const auto timeout = duration_option(o.timeout, "--timeout");
  duration_option(o.attach_timeout, "--attach-timeout");
  OutputFile out(drivers::expand_path_pattern(o.output, std::nullopt, std::nullopt));
  const drivers::SlurmJob job = drivers::slurm_job(o.slurm_job, std::chrono::milliseconds(10'000));

  const std::uint32_t samples = examination.run.samples.value_or(pb.samples.value_or(1));
  const auto interval =
      examination.run.interval.value_or(pb.interval.value_or(std::chrono::milliseconds(2'000)));
  const auto window = interval * (samples > 1 ? samples - 1 : 0);

  drivers::SlurmRequest request;
  request.job = job.id;
  request.title = pb.name;
  request.sampling_window = window;
  request.timeout = timeout;
  request.record_pattern = o.record;
  std::vector<std::string>& a = request.agent_argv;
  a = {self_path(), "run",       o.playbook, "--slurm-job",      job.id,
       "--quiet",   "--timeout", o.timeout,  "--attach-timeout", o.attach_timeout};
  if (!o.debugger.empty()) {
    a.insert(a.end(), {"--debugger", o.debugger});
  }
  for (const auto& v : o.vars) {
    a.insert(a.end(), {"--var", v});
  }
  if (o.samples > 0) {
    a.insert(a.end(), {"--samples", std::to_string(o.samples)});
  }
  if (!o.interval.empty()) {
    a.insert(a.end(), {"--interval", o.interval});
  }
  if (!o.stop.empty()) {
    a.insert(a.end(), {"--stop", o.stop});
  }
  if (o.jobs > 0) {
    a.insert(a.end(), {"--jobs", std::to_string(o.jobs)});
  }
  if (!o.record.empty()) {
    a.insert(a.end(), {"--record", "sent-to-front-end"});
  }
  for (const auto& [flag, on] :
       {std::pair{"--fast", o.fast}, std::pair{"--full-symbols", o.full_symbols},
        std::pair{"--allow-unsafe-commands", o.allow_unsafe}}) {
    if (on) {
      a.emplace_back(flag);
    }
  }
  if (!o.quiet && stderr_is_tty()) {
    request.node_done = [](const std::string& host, const std::string& what) {
      std::fprintf(stderr, "rocplay: node %s %s\n", host.c_str(), what.c_str());
    };
  }
  request.error = [](const std::string& message, const std::string& hint) {
    print_error(message, hint);
  };
  const Incident incident = drivers::slurm_examine(request, job);
  std::size_t silent = 0;
  std::vector<std::string> said;
  for (const auto& c : incident.cases) {
    if (!c.examined() && !c.source.pid) {
      ++silent;
      print_error(c.error, c.error_hint);
      said.push_back(c.error);
    }
  }
  for (const auto& e : drivers::target_problems(incident)) {
    if (std::find(said.begin(), said.end(), e.what()) == said.end()) {
      print_error(e.what(), e.hint());
    }
  }
  if (silent > 0) {
    print_error(
        fmt::format("{} of {} nodes of job {} sent no report", silent, job.nodes.size(), job.id),
        "the incident names them; the other nodes' ranks were examined and detached");
  }
  report::write(out.stream(), incident, format, report_text_options(o), ROCPLAY_VERSION);
  out.commit();
  return static_cast<int>(incident.exit_code());
}

int run_slurm_node_agent(const RunCommandOptions& o) {
  session::install_signal_guard();
  drivers::NodeAgentRequest request;
  request.job = o.slurm_job;
  request.start_at_ms = o.slurm_node_agent;
  request.end_at_ms = o.slurm_node_end;
  request.record = !o.record.empty();
  request.tool_version = ROCPLAY_VERSION;
  try {
    drivers::check_slurm_job_id(request.job);
    const playbook::Playbook pb = run_playbook_of(o);
    request.examination = targets_options_of(o);
    request.examination.debugger = session::find_debugger(o.debugger);
    request.examination.jobs = o.jobs;
    return drivers::slurm_node_agent(pb, request, std::cout);
  } catch (const Error& e) {
    return drivers::send_node_error(std::cout, e); // the front end names this node with it
  }
}

} // namespace rocplay::cli
