// `--slurm-job JOBID` (rocplay/drivers/nodes.hpp): Slurm names the job's nodes and its tasks on
// each node; srun, already on every node of the job, starts one rocplay per node; the nodes'
// reports come back as frames on srun's standard output and meet in the one join. No daemon,
// port or ssh of ours.
// Tested in tests/unit/drivers/test_nodes.cpp (the parsers) and tests/live/slurm_run.cpp (a real
// cluster from scripts/slurm-cluster.sh).
#include "rocplay/drivers/nodes.hpp"

#include "rocplay/core/clock.hpp"
#include "rocplay/core/process_tree.hpp"
#include "rocplay/core/procfs.hpp"
#include "rocplay/core/source.hpp"
#include "rocplay/core/temp_dir.hpp"
#include "rocplay/core/worker_pool.hpp"
#include "rocplay/drivers/drivers.hpp"
#include "rocplay/report/incident.hpp"
#include "rocplay/report/report.hpp"
#include "rocplay/session/helper_program.hpp"
#include "rocplay/session/process.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>
#include <tuple>

namespace rocplay::drivers {
namespace {

constexpr std::size_t kMaxScontrolOutput = 4u << 20;
constexpr std::size_t kMaxNodes = 4096;

std::string scontrol_path() {
  if (auto p = session::find_program("scontrol", {})) {
    return *p;
  }
  throw Error(ExitCode::DebuggerNotFound, "--slurm-job: scontrol is not on PATH",
              "run rocplay where Slurm's client commands are (a login node or a node of the job); "
              "on Debian: apt-get install slurm-client");
}

// Runs scontrol with the arguments; its output, or an Error saying what it said.
std::string scontrol(const std::vector<std::string>& args, std::chrono::milliseconds timeout) {
  const auto run = session::run_program(scontrol_path(), args, timeout, kMaxScontrolOutput);
  const std::string cmd = "scontrol " + fmt::format("{}", fmt::join(args, " "));
  if (!run.error.empty()) {
    throw Error(ExitCode::DebuggerNotFound, fmt::format("`{}` could not start: {}", cmd, run.error),
                "check that Slurm's client commands run here");
  }
  if (run.timed_out) {
    throw Error(ExitCode::Timeout,
                fmt::format("`{}` did not answer within {} s", cmd, timeout.count() / 1000.0),
                "slurmctld may be down or overloaded: try `scontrol ping`");
  }
  if (run.exit_code.value_or(1) != 0) {
    std::string said = run.output;
    while (!said.empty() && (said.back() == '\n' || said.back() == ' ')) {
      said.pop_back();
    }
    throw Error(ExitCode::NoSuchProcess,
                fmt::format("`{}` failed (exit {}): {}", cmd, run.exit_code.value_or(-1), said),
                "check the job id with `squeue -j JOBID`; SLURM_CONF must name the cluster's "
                "slurm.conf when it is not the default");
  }
  return run.output;
}

// The value of ` KEY=` in one `scontrol show -o` line, up to the next space; nullopt when absent.
std::optional<std::string> field_of(std::string_view line, std::string_view key) {
  const std::string needle = std::string(key) + "=";
  std::size_t pos = 0;
  while ((pos = line.find(needle, pos)) != std::string_view::npos) {
    if (pos == 0 || line[pos - 1] == ' ') {
      const std::size_t start = pos + needle.size();
      const std::size_t end = std::min(line.find(' ', start), line.size());
      return std::string(line.substr(start, end - start));
    }
    pos += needle.size();
  }
  return std::nullopt;
}

bool is_number(std::string_view s) {
  return !s.empty() && s.size() <= 9 &&
         std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

std::string last_lines(const std::vector<std::string>& lines, std::size_t n) {
  std::string out;
  const std::size_t from = lines.size() > n ? lines.size() - n : 0;
  for (std::size_t i = from; i < lines.size(); ++i) {
    if (lines[i].empty()) {
      continue;
    }
    out += (out.empty() ? "" : " | ") + lines[i];
  }
  return out;
}

// The name a node gives a recording: `record/PID-RANK.rocplay` (RANK `x` when none).
std::string record_frame_name(std::int64_t pid, std::optional<int> rank) {
  return fmt::format("record/{}-{}.rocplay", pid, rank ? std::to_string(*rank) : "x");
}

// A received recording's file under the user's --record pattern, `%h` the node.
void keep_recording(const SlurmRequest& request, const std::string& host, const std::string& name,
                    const std::string& bytes) {
  std::int64_t pid = 0;
  std::optional<int> rank;
  const std::string stem = name.substr(7, name.size() - 7 - 8); // record/ ... .rocplay
  const std::size_t dash = stem.find('-');
  if (dash == std::string::npos || !is_number(stem.substr(0, dash))) {
    return;
  }
  pid = std::stoll(stem.substr(0, dash));
  if (is_number(stem.substr(dash + 1))) {
    rank = std::stoi(stem.substr(dash + 1));
  }
  std::string pattern = request.record_pattern;
  if (pattern.find("%h") == std::string::npos && pattern.find("%r") == std::string::npos) {
    // Pids repeat across nodes: without the host or the rank in the name, two nodes' recordings
    // could take one path. `rec.rocplay` becomes `rec.NODE.rocplay` (then `.PID` is added).
    const std::filesystem::path p(pattern);
    pattern = (p.parent_path() / (p.stem().string() + ".%h" + p.extension().string())).string();
  }
  for (std::size_t at = 0; (at = pattern.find("%h", at)) != std::string::npos;) {
    pattern.replace(at, 2, host);
    at += host.size();
  }
  const std::string path = record_path_for(pattern, pid, rank);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out && request.error) {
    request.error(
        fmt::format("{}'s recording of pid {} could not be written to {}", host, pid, path),
        "check that the directory of --record exists and is writable");
  }
}

// One node: its srun, its frames, its part.
// One node's srun, to its end or the deadline: the frames it sent, what it and srun said.
struct NodeRun {
  FrameReader reader;
  std::vector<std::string> messages; // the node's other stdout lines, then stderr's
  bool timed_out = false;
  std::optional<int> exit_code;
  std::string start_error;
};

NodeRun run_on_node(const SlurmRequest& request, const std::string& host,
                    std::chrono::steady_clock::time_point deadline) {
  std::vector<std::string> args = {
      "--jobid=" + request.job, "--overlap", "--nodes=1", "--ntasks=1", "--nodelist=" + host,
      "--kill-on-bad-exit=0",   "--quiet"};
  args.insert(args.end(), request.agent_argv.begin(), request.agent_argv.end());
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
      deadline - std::chrono::steady_clock::now());
  const auto run = session::run_program(
      request.srun, args, std::max(left, std::chrono::milliseconds(1)),
      kMaxFrameFileBytes / 3 * 4 + (16u << 20), session::Stderr::Apart, request.grace);
  NodeRun out{FrameReader(host), {}, run.timed_out, run.exit_code, run.error};
  std::size_t pos = 0;
  while (pos < run.output.size()) {
    const std::size_t end = std::min(run.output.find('\n', pos), run.output.size());
    out.reader.line(std::string_view(run.output).substr(pos, end - pos));
    pos = end + 1;
  }
  out.messages = out.reader.other_lines();
  // srun's own messages and the node's stderr: what the node said, for the incident.
  FrameReader said(host);
  pos = 0;
  while (pos < run.errors.size()) {
    const std::size_t end = std::min(run.errors.find('\n', pos), run.errors.size());
    said.line(std::string_view(run.errors).substr(pos, end - pos));
    pos = end + 1;
  }
  for (const auto& m : said.other_lines()) {
    // srun's closing line for a node whose rocplay found something (exit 1) is no news.
    if (m.find(": task 0: Exited with exit code") == std::string::npos) {
      out.messages.push_back(m);
    }
  }
  return out;
}

// Why a node sent nothing usable: its error.json, the deadline, or srun's end.
void explain_silence(const SlurmRequest& request, const std::string& host, const NodeRun& run,
                     std::string& error, std::string& hint, ExitCode& code) {
  const auto& files = run.reader.files();
  if (auto err = files.find("error.json"); err != files.end()) {
    const auto j = nlohmann::json::parse(err->second, nullptr, false);
    error = fmt::format("{}: {}", host,
                        j.is_object() ? j.value("message", std::string("failed"))
                                      : std::string("failed"));
    hint = j.is_object() ? j.value("hint", std::string()) : std::string();
    code = static_cast<ExitCode>(j.is_object() ? j.value("code", 70) : 70);
  } else if (run.timed_out) {
    error = fmt::format("{} did not answer in time (the run's bound: --timeout past the "
                        "sampling window, and {:.0f} s to send its report); its srun was ended{}",
                        host, std::chrono::duration<double>(request.wrap_up).count(),
                        run.messages.empty() ? std::string()
                                             : "; it said: " + last_lines(run.messages, 3));
    hint = fmt::format("check the node: `scontrol show node {}`, `srun --jobid={} --overlap "
                       "-w {} true`; a larger --timeout waits longer",
                       host, request.job, host);
    code = ExitCode::Timeout;
  } else if (std::any_of(run.messages.begin(), run.messages.end(), [](const std::string& m) {
               return m.find("Task launch for") != std::string::npos &&
                      m.find("failed on node") != std::string::npos;
             })) {
    // srun's own words when the node's slurmd did not take the step (stopped, unreachable).
    error = fmt::format("{}: Slurm could not start rocplay there: {}", host,
                        last_lines(run.messages, 2));
    hint = fmt::format("check the node: `scontrol show node {}`, `srun --jobid={} --overlap "
                       "-w {} true`",
                       host, request.job, host);
    code = ExitCode::Timeout;
  } else {
    error = fmt::format("{}: srun ended (exit {}) without a report{}", host,
                        run.exit_code ? std::to_string(*run.exit_code) : run.start_error,
                        run.messages.empty() ? std::string() : ": " + last_lines(run.messages, 3));
    hint = fmt::format("srun --jobid={} --overlap -w {} {} --help: does rocplay run there?",
                       request.job, host,
                       request.agent_argv.empty() ? "rocplay" : request.agent_argv.front());
    code = ExitCode::NoSuchProcess;
  }
}

// One node: its srun, its frames, its part.
NodePart examine_node(const SlurmRequest& request, const std::string& host,
                      std::chrono::steady_clock::time_point deadline) {
  const NodeRun run = run_on_node(request, host, deadline);
  const FrameReader& reader = run.reader;
  NodePart part;
  part.host = host;
  part.messages = run.messages;
  const auto& files = reader.files();
  if (auto it = files.find("report.json"); it != files.end()) {
    try {
      NodePart got = node_part_from_report(host, it->second);
      got.messages = part.messages;
      part = std::move(got);
    } catch (const Error& e) {
      part.error = fmt::format("{} sent a report rocplay cannot read: {}", host, e.what());
      part.hint = "a different rocplay version on that node? run the same rocplay on every node";
      part.code = ExitCode::DataError;
    }
  } else {
    explain_silence(request, host, run, part.error, part.hint, part.code);
  }
  for (const auto& e : reader.errors()) {
    part.messages.push_back(e);
  }
  if (!reader.unfinished().empty()) {
    part.messages.push_back(fmt::format("{}: `{}` was cut off", host, reader.unfinished()));
  }
  if (!request.record_pattern.empty()) {
    for (const auto& [name, bytes] : files) {
      if (name.rfind("record/", 0) == 0 && name.size() > 15) {
        keep_recording(request, host, name, bytes);
      }
    }
  }
  if (part.incident && !reader.errors().empty()) {
    for (const auto& e : reader.errors()) {
      part.incident->notes.push_back(e);
    }
  }
  return part;
}

} // namespace

void check_slurm_job_id(const std::string& id) {
  const std::size_t under = id.find('_');
  const bool ok = under == std::string::npos
                      ? is_number(id)
                      : is_number(id.substr(0, under)) && is_number(id.substr(under + 1));
  if (!ok) {
    throw Error(ExitCode::Usage, fmt::format("--slurm-job `{}` is not a Slurm job id", id),
                "give the number squeue shows (JOBID), e.g. --slurm-job 4242 or 4242_3 for an "
                "array task");
  }
}

SlurmJob parse_slurm_job(const std::string& id, std::string_view text) {
  SlurmJob job;
  job.id = id;
  std::size_t pos = 0;
  std::size_t line_no = 0;
  while (pos < text.size()) {
    std::size_t end = std::min(text.find('\n', pos), text.size());
    const std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    ++line_no;
    if (line.empty()) {
      continue;
    }
    const auto state = field_of(line, "JobState");
    const auto nodes = field_of(line, "NodeList");
    if (!state || !nodes) {
      throw Error(ExitCode::DataError,
                  fmt::format("scontrol show job {}: line {}: no {}", id, line_no,
                              state ? "NodeList=" : "JobState="),
                  "is this Slurm's scontrol? rocplay reads `scontrol show job -o` of Slurm 20 "
                  "and later");
    }
    job.state = *state;
    job.nodes = {*nodes};
    return job;
  }
  throw Error(ExitCode::NoSuchProcess, fmt::format("Slurm says nothing of job {}", id),
              "check the job id with `squeue -j JOBID`");
}

SlurmJob slurm_job(const std::string& id, std::chrono::milliseconds timeout) {
  check_slurm_job_id(id);
  SlurmJob job = parse_slurm_job(id, scontrol({"show", "job", "-o", id}, timeout));
  if (job.state != "RUNNING") {
    throw Error(ExitCode::NoSuchProcess,
                fmt::format("Slurm job {} is {}, not RUNNING: it has no processes to examine", id,
                            job.state),
                job.state == "PENDING" ? "wait until squeue shows it running (ST R)"
                                       : "a job that ended leaves its logs: rocplay postmortem");
  }
  const std::string list = job.nodes.empty() ? std::string() : job.nodes.front();
  job.nodes.clear();
  const std::string names = scontrol({"show", "hostnames", list}, timeout);
  std::istringstream in(names);
  std::string name;
  while (std::getline(in, name)) {
    if (name.empty()) {
      continue;
    }
    if (!valid_frame_name(name) || name.find('/') != std::string::npos) {
      throw Error(ExitCode::DataError,
                  fmt::format("scontrol show hostnames {}: `{}` is not a host name", list, name));
    }
    if (job.nodes.size() >= kMaxNodes) {
      throw Error(ExitCode::Usage, fmt::format("job {} has more than {} nodes", id, kMaxNodes),
                  "examine a part of it with --pids on the nodes that matter");
    }
    job.nodes.push_back(name);
  }
  if (job.nodes.empty()) {
    throw Error(ExitCode::NoSuchProcess, fmt::format("Slurm job {} has no nodes", id),
                "check it with `scontrol show job JOBID`");
  }
  return job;
}

std::vector<SlurmTask> parse_slurm_listpids(std::string_view text, const std::string& skip_step) {
  std::vector<SlurmTask> out;
  std::size_t pos = 0;
  std::size_t line_no = 0;
  bool header = false;
  while (pos < text.size()) {
    const std::size_t end = std::min(text.find('\n', pos), text.size());
    const std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    ++line_no;
    std::vector<std::pair<std::size_t, std::string_view>> cols; // column, word
    for (std::size_t i = 0; i < line.size();) {
      if (line[i] == ' ' || line[i] == '\t') {
        ++i;
        continue;
      }
      std::size_t j = i;
      while (j < line.size() && line[j] != ' ' && line[j] != '\t') {
        ++j;
      }
      cols.emplace_back(i, line.substr(i, j - i));
      i = j;
    }
    if (cols.empty()) {
      continue;
    }
    if (cols[0].second == "PID") {
      header = true;
      continue;
    }
    if (!header) {
      throw Error(ExitCode::DataError,
                  fmt::format("scontrol listpids: line {}, column 1: expected the header `PID "
                              "JOBID STEPID LOCALID GLOBALID`",
                              line_no));
    }
    if (cols.size() != 5) {
      throw Error(ExitCode::DataError,
                  fmt::format("scontrol listpids: line {}, column {}: expected 5 columns, found {}",
                              line_no, cols.back().first + 1, cols.size()));
    }
    if (!is_number(cols[0].second)) {
      throw Error(ExitCode::DataError,
                  fmt::format("scontrol listpids: line {}, column {}: `{}` is not a pid", line_no,
                              cols[0].first + 1, cols[0].second));
    }
    const std::string step(cols[2].second);
    if (step == "batch" || step == "extern" || step == skip_step || !is_number(cols[3].second) ||
        !is_number(cols[4].second)) {
      continue; // not a task of a job step (a task's child, the batch script, rocplay's own step)
    }
    SlurmTask t;
    t.pid = std::stoll(std::string(cols[0].second));
    t.step = step;
    t.local_id = std::stoi(std::string(cols[3].second));
    t.global_id = std::stoi(std::string(cols[4].second));
    if (std::none_of(out.begin(), out.end(), [&](const SlurmTask& o) { return o.pid == t.pid; })) {
      out.push_back(t);
    }
  }
  std::sort(out.begin(), out.end(), [](const SlurmTask& a, const SlurmTask& b) {
    return std::tie(a.global_id, a.step) < std::tie(b.global_id, b.step);
  });
  return out;
}

std::vector<SlurmTask> slurm_local_tasks(const std::string& job,
                                         std::chrono::milliseconds timeout) {
  // rocplay's own step, when it runs inside the job (srun --overlap): never one of the targets.
  std::string own_step;
  const char* env_job = std::getenv("SLURM_JOB_ID");
  const char* env_step = std::getenv("SLURM_STEP_ID");
  if (env_job != nullptr && env_step != nullptr && job.rfind(env_job, 0) == 0) {
    own_step = env_step;
  }
  const std::string text = scontrol({"listpids", job}, timeout);
  auto tasks = parse_slurm_listpids(text, own_step);
  if (tasks.empty()) {
    throw Error(ExitCode::NoSuchProcess,
                fmt::format("no task of Slurm job {} runs on {} (scontrol listpids lists only its "
                            "batch script or rocplay's own step)",
                            job, process::host_name()),
                "the job's steps may have ended; `squeue -s -j JOBID` lists them");
  }
  return tasks;
}

namespace {

// The request with srun's full path: rocplay runs it, and a name alone is looked up once.
SlurmRequest with_srun_path(const SlurmRequest& given) {
  SlurmRequest request = given;
  if (request.srun.find('/') == std::string::npos) {
    auto found = session::find_program(request.srun, {});
    if (!found) {
      throw Error(ExitCode::DebuggerNotFound,
                  fmt::format("--slurm-job: {} is not on PATH", request.srun),
                  "run rocplay where Slurm's client commands are (a login node or a node of the "
                  "job); on Debian: apt-get install slurm-client");
    }
    request.srun = *found;
  }
  return request;
}

} // namespace

Incident slurm_examine(const SlurmRequest& given, const SlurmJob& job) {
  const auto start = std::chrono::steady_clock::now();
  SlurmRequest request = with_srun_path(given);
  // The agreed window opens once srun has had time to start every node's rocplay.
  const auto lead = std::chrono::milliseconds(
      std::min<std::int64_t>(10'000, 1'000 + 50 * static_cast<std::int64_t>(job.nodes.size())));
  const auto start_at = std::chrono::duration_cast<std::chrono::milliseconds>(
                            std::chrono::system_clock::now().time_since_epoch()) +
                        lead;
  const auto end_at = start_at + request.sampling_window + request.timeout;
  request.agent_argv.insert(request.agent_argv.end(),
                            {"--slurm-node-agent", std::to_string(start_at.count()),
                             "--slurm-node-end", std::to_string(end_at.count())});
  const auto deadline = start + lead + request.sampling_window + request.timeout + request.wrap_up;
  std::vector<NodePart> parts(job.nodes.size());
  {
    WorkerPool pool(job.nodes.size(), static_cast<unsigned>(job.nodes.size()), [&](std::size_t i) {
      parts[i] = examine_node(request, job.nodes[i], deadline);
      if (request.node_done) {
        request.node_done(job.nodes[i], parts[i].incident ? "done" : "failed");
      }
    });
    pool.join();
  }
  std::vector<std::string> said;
  for (const auto& p : parts) {
    for (const auto& m : p.messages) {
      if (m.rfind("rocplay: error:", 0) == 0 || m.find(": line ") != std::string::npos) {
        said.push_back(fmt::format("{}: {}", p.host, m));
      }
    }
  }
  Incident inc = join_nodes(request.title, std::move(parts));
  for (auto& s : said) {
    inc.notes.push_back(std::move(s));
  }
  inc.notes.push_back(fmt::format(
      "slurm job {}: {} node(s) asked through srun --overlap, one rocplay each; {:.2f} s",
      request.job, job.nodes.size(),
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()));
  return inc;
}

int slurm_node_tasks(const std::string& job, std::chrono::milliseconds sample, std::ostream& out) {
  try {
    const auto tasks = slurm_local_tasks(job, std::chrono::milliseconds(10'000));
    process::ScanOptions options;
    options.sample = sample;
    const auto tree = process::scan(options);
    nlohmann::json list = nlohmann::json::array();
    for (const auto& t : tasks) {
      nlohmann::json j = {
          {"pid", t.pid}, {"rank", t.global_id}, {"step", t.step}, {"local_id", t.local_id}};
      if (const auto* p = tree.find(t.pid)) {
        j["comm"] = p->comm;
        j["cmdline"] = p->cmdline;
        j["state"] = std::string(1, p->state);
        j["threads"] = p->threads;
        j["cpu_percent"] = p->cpu_percent ? nlohmann::json(*p->cpu_percent) : nlohmann::json();
        j["gpu"] = p->gpu.devices;
      }
      list.push_back(std::move(j));
    }
    write_frame(out, "tasks.json",
                nlohmann::json{{"host", process::host_name()}, {"tasks", list}}.dump());
    return 0;
  } catch (const Error& e) {
    return send_node_error(out, e);
  }
}

nlohmann::json slurm_tasks(const SlurmRequest& given, const SlurmJob& job) {
  const SlurmRequest request = with_srun_path(given);
  const auto deadline = std::chrono::steady_clock::now() + request.timeout;
  std::vector<nlohmann::json> nodes(job.nodes.size());
  {
    WorkerPool pool(job.nodes.size(), static_cast<unsigned>(job.nodes.size()), [&](std::size_t i) {
      const std::string& host = job.nodes[i];
      const NodeRun run = run_on_node(request, host, deadline);
      nlohmann::json node = {{"host", host}};
      const auto& files = run.reader.files();
      auto it = files.find("tasks.json");
      const auto got =
          it == files.end() ? nlohmann::json() : nlohmann::json::parse(it->second, nullptr, false);
      if (got.is_object() && got.contains("tasks") && got.at("tasks").is_array()) {
        node["tasks"] = got.at("tasks");
      } else {
        std::string error;
        std::string hint;
        ExitCode code = ExitCode::Ok;
        explain_silence(request, host, run, error, hint, code);
        node["error"] = {{"message", error}, {"hint", hint}, {"code", static_cast<int>(code)}};
      }
      nodes[i] = std::move(node);
    });
    pool.join();
  }
  return {{"schema", "rocplay.ps.slurm"}, {"schema_version", 1}, {"job", job.id}, {"nodes", nodes}};
}

int send_node_error(std::ostream& out, const Error& e) {
  const nlohmann::json j = {
      {"message", e.what()}, {"hint", e.hint()}, {"code", static_cast<int>(e.code())}};
  write_frame(out, "error.json", j.dump());
  return static_cast<int>(e.code());
}

int slurm_node_agent(const playbook::Playbook& playbook, const NodeAgentRequest& request,
                     std::ostream& out) {
  const auto fail = [&](const Error& e) { return send_node_error(out, e); };
  try {
    const auto tasks = slurm_local_tasks(request.job, std::chrono::milliseconds(10'000));
    std::string record_dir;
    if (request.record) {
      std::string why;
      auto dir = make_private_temp_dir("rocplay-slurm", why);
      if (!dir) {
        throw Error(ExitCode::NoInput, "no temporary directory for the recordings: " + why,
                    "set TMPDIR to a writable directory on the nodes");
      }
      record_dir = *dir;
    }
    // Each task's GPU workers: the task itself when it holds a GPU, else the GPU holders under
    // it (torchrun, a shell or a Python launcher starts the workers as its children), else the
    // task itself (a CPU task). A task's rank is Slurm's (its SLURM_PROCID); a worker under it
    // takes the one rank rule's (RANK, LOCAL_RANK, ...), else, alone, its task's.
    process::ScanOptions scan;
    scan.sample = std::chrono::milliseconds(0);
    const auto tree = process::scan(scan);
    std::vector<playbook::Target> targets;
    for (const auto& t : tasks) {
      std::vector<std::int64_t> pids;
      const auto* self = tree.find(t.pid);
      if (self == nullptr || !self->holds_gpu()) {
        for (const auto& w : process::workers_of(tree, t.pid)) {
          pids.push_back(w.pid);
        }
      }
      if (pids.empty()) {
        pids.push_back(t.pid);
      }
      for (const std::int64_t pid : pids) {
        playbook::Target target;
        target.pid = pid;
        target.rank_rule = source::RankRule::Environment;
        if (pid == t.pid) {
          target.rank = t.global_id;
        } else if (const auto env = process::read_environ(pid)) {
          target.rank = source::rank_from_env(*env);
        }
        if (!target.rank && pids.size() == 1) {
          target.rank = t.global_id;
        }
        if (!target.rank) {
          target.rank_rule = source::RankRule::None;
        }
        if (!record_dir.empty()) {
          target.record_path = record_dir + "/" + std::to_string(pid) + ".rocplay";
        }
        targets.push_back(std::move(target));
      }
    }
    // The agreed window: every node starts sampling at the same instant.
    const double now_ms = unix_now() * 1000;
    std::string late;
    if (request.start_at_ms > 0) {
      const double wait_ms = static_cast<double>(request.start_at_ms) - now_ms;
      if (wait_ms > 0 && wait_ms < 60'000) {
        std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(wait_ms));
      } else if (wait_ms < 0) {
        late = fmt::format("started {:.3f} s after the agreed window opened", -wait_ms / 1000.0);
      }
    }
    playbook::TargetsOptions examination = request.examination;
    if (request.end_at_ms > 0) {
      // The look's bound, on this node's steady clock; a target waiting at a sample for the
      // others waits no longer than that either.
      const auto left = std::chrono::milliseconds(std::max<std::int64_t>(
          0, request.end_at_ms - static_cast<std::int64_t>(unix_now() * 1000)));
      examination.session.end_by = std::chrono::steady_clock::now() + left;
      examination.lockstep_wait = std::min(examination.lockstep_wait, left);
    }
    Incident inc = examine(playbook, targets, examination);
    if (!late.empty()) {
      inc.notes.push_back(late);
    }
    std::ostringstream json;
    report::write(json, inc, report::Format::Json, {}, request.tool_version);
    write_frame(out, "report.json", json.str());
    for (const auto& t : targets) {
      if (t.record_path.empty()) {
        continue;
      }
      std::ifstream in(t.record_path, std::ios::binary);
      std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      if (in && bytes.size() <= kMaxFrameFileBytes) {
        write_frame(out, record_frame_name(t.pid, t.rank), bytes);
      }
    }
    if (!record_dir.empty()) {
      std::error_code ec;
      std::filesystem::remove_all(record_dir, ec);
    }
    return static_cast<int>(inc.exit_code());
  } catch (const Error& e) {
    return fail(e);
  } catch (const std::exception& e) {
    return fail(Error(ExitCode::Internal, fmt::format("internal error: {}", e.what()),
                      "please report this with the command line"));
  }
}

} // namespace rocplay::drivers
