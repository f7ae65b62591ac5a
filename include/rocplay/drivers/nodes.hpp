// Past one node (docs/multi-node.md): each node's rocplay examines the ranks it holds (the node
// fan-out, drivers::examine) and the front end joins the nodes' parts into one incident. The
// parts travel as frames on a line stream the launcher already carries (srun's standard output),
// so no shared file system, port or daemon of ours is needed. The Slurm fan-out
// (`--slurm-job JOBID`) is the first launcher; mpirun/pdsh/Kubernetes recipes use the same
// agent and frames.
//
//   // on each node (srun ... rocplay run hang-triage --slurm-job 42 --slurm-node-agent START):
//   write_frame(std::cout, "report.json", report_bytes);
//   // on the front end, per node:
//   FrameReader r("rpnode2");
//   for (line : srun_stdout) r.line(line);   // other lines (messages) are kept aside
//   NodePart p = node_part_from_report("rpnode2", r.files().at("report.json"));
//   Incident inc = join_nodes("hang-triage", {p1, p2});
//
// Layer: src/drivers/ (library rocplay_drivers).
#pragma once

#include "rocplay/case/case.hpp"
#include "rocplay/core/error.hpp"
#include "rocplay/playbook/playbook.hpp"
#include "rocplay/playbook/run_targets.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

namespace rocplay::drivers {

// --- frames --------------------------------------------------------------------------------------
// One file as lines that survive a launcher's line handling (labels before them, other lines
// between them, lines of other nodes between them when merged):
//   @rocplay-frame 1 begin NAME BYTES
//   @rocplay-frame 1 data BASE64            at most kFrameDataChars characters each
//   @rocplay-frame 1 end FNV1A64-HEX        over the file's bytes
// A reader trusts none of it: bounded line length, file size and count, names checked, every
// error with its line number and column.
inline constexpr std::string_view kFrameMarker = "@rocplay-frame 1 ";
inline constexpr std::size_t kFrameDataChars = 1024;
inline constexpr std::size_t kMaxFrameLine = 4096;
inline constexpr std::size_t kMaxFrameFileBytes = 256u << 20; // one node's report or recording
inline constexpr std::size_t kMaxFrameFiles = 4096;
inline constexpr std::size_t kMaxOtherLines = 200; // other lines kept per node (its messages)

// NAME: 1 to 200 characters of [A-Za-z0-9._/-], no `..` component, not absolute.
bool valid_frame_name(std::string_view name);
// Writes `bytes` as frames named `name`. Throws Error(Usage) for an invalid name.
void write_frame(std::ostream& out, std::string_view name, std::string_view bytes);

class FrameReader {
public:
  explicit FrameReader(std::string source) : source_(std::move(source)) {}
  // One line, without its end. Text before the marker (a launcher's `0: ` label) is skipped; a
  // line without the marker is kept as another line (the last kMaxOtherLines).
  void line(std::string_view text);
  // Files received whole and checked, by name.
  const std::map<std::string, std::string>& files() const { return files_; }
  // What was wrong, each `SOURCE: line N, column C: ...`; a file with an error is dropped.
  const std::vector<std::string>& errors() const { return errors_; }
  const std::vector<std::string>& other_lines() const { return other_; }
  // A file begun but never ended (the stream was cut): its name; empty when none.
  std::string unfinished() const { return open_ ? name_ : std::string(); }

private:
  void fail(std::size_t column, const std::string& what);
  std::string source_;
  std::size_t line_no_ = 0;
  std::map<std::string, std::string> files_;
  std::vector<std::string> errors_;
  std::vector<std::string> other_;
  bool open_ = false;
  std::string name_;
  std::size_t expected_ = 0;
  std::string data_;
};

// --- one node's part, and the join -----------------------------------------------------------

// What one node contributed: its incident (its cases, each with source.host), or, when it sent
// no report, why (then the join names the node as one case that was not examined).
struct NodePart {
  std::string host;
  std::optional<Incident> incident;
  std::string error; // no report: what happened ("did not answer within 12 s", ...)
  std::string hint;
  ExitCode code = ExitCode::Ok;
  std::vector<std::string> messages; // the node's own error lines (its rocplay's stderr)
};

// A node's JSON report (`rocplay run ... --format json`, schema rocplay.run.multi) back to its
// part: each target a case, its snapshots (every sample) run through the one analysis step
// (incident::analyse) as a live run's are, its run account kept. Throws Error(DataError) with
// the JSON path of what is missing or of the wrong type.
NodePart node_part_from_report(const std::string& host, std::string_view json_text);

// THE join of several examinations into one incident, for the node fan-out (one part: the node
// itself) and the Slurm fan-out (a part per node) alike: the cases in part order, each naming its
// host; a part without a report becomes one case that was not examined, naming the node; the
// cross-rank heuristics over every examined case's last sample (ranks from the cases); the sample
// skew over every case's samples (how far apart the nodes' stops were); each part's notes said
// once, with its host when there are several parts.
Incident join_nodes(const std::string& title, std::vector<NodePart> parts);

// --- the node fan-out ----------------------------------------------------------------------------

// The targets of several pids on this node (ranks by the one rule, `--record`'s paths filled).
std::vector<playbook::Target> node_targets(const std::vector<std::int64_t>& pids,
                                           const std::string& record_pattern);

// --- Slurm ---------------------------------------------------------------------------------------

// A job id as Slurm writes it: digits, optionally `_N` (an array task). Throws Error(Usage).
void check_slurm_job_id(const std::string& id);

struct SlurmJob {
  std::string id;
  std::string state;              // RUNNING, PENDING, COMPLETED, ...
  std::vector<std::string> nodes; // the expanded node list, in Slurm's order
};
// `scontrol show job -o ID` and `scontrol show hostnames LIST`, each bounded in time and output.
// Throws Error(NoSuchProcess) when Slurm does not know the job or it is not running,
// Error(DebuggerNotFound) when scontrol is missing, Error(DataError) for output it cannot read.
SlurmJob slurm_job(const std::string& id, std::chrono::milliseconds timeout);
// `scontrol show job -o` output to the job's fields (JobState, NodeList); exposed for tests.
SlurmJob parse_slurm_job(const std::string& id, std::string_view text);

// One task of a job on this node, as `scontrol listpids` names it.
struct SlurmTask {
  std::int64_t pid = 0;
  std::string step; // `0`, `1`, `batch`, `extern`
  int local_id = 0;
  int global_id = 0; // the task's rank in its step (SLURM_PROCID)
};
// `scontrol listpids JOBID` output to the tasks of the job's steps on this node: only a step's
// task processes (rows with a LOCALID and a GLOBALID), none of the batch or extern step, none of
// `skip_step` (the step rocplay itself runs in). Errors name the line and column. Exposed for
// tests.
std::vector<SlurmTask> parse_slurm_listpids(std::string_view text, const std::string& skip_step);
// The job's tasks on this node (`scontrol listpids`); throws Error(NoSuchProcess) when there are
// none, saying which steps were seen.
std::vector<SlurmTask> slurm_local_tasks(const std::string& job, std::chrono::milliseconds timeout);

// The front end of `--slurm-job`: one `srun --jobid=JOB --overlap -N1 -n1 -w NODE` per node of
// the job (one srun per node: Slurm aborts a whole step when its launch fails on one node, so a
// dead node would take the others' reports with it), each running `agent_argv` (the node's
// rocplay in agent mode), all at once; each node's frames read from its srun's output and joined
// (join_nodes). The agreed window opens `lead` after the start (1 s + 50 ms a node, at most 10 s:
// time for srun to start rocplay everywhere); `--slurm-node-agent START --slurm-node-end END`
// is put after `agent_argv`. Each node ends its look by END (lead + sampling_window + timeout:
// a debugger that has not answered by then is given up on, its target detached) and sends what
// it has; a node that does not answer `wrap_up` later, whose srun fails, or whose report is
// malformed is named in the incident; its srun gets SIGTERM (srun passes it on: the node's
// rocplay detaches), then SIGKILL after `grace`.
struct SlurmRequest {
  std::string job;
  std::string title; // the playbook's name
  std::string srun = "srun";
  // The node's command: the first element is the rocplay to run there (this one's path: the
  // same file system layout on every node, as with any launcher).
  std::vector<std::string> agent_argv;
  // How long the samples take on a node (hang-triage: 2 s between its two), and how much longer
  // a node may take (`--timeout`); ps: `timeout` alone.
  std::chrono::milliseconds sampling_window{0};
  std::chrono::milliseconds timeout{30'000};
  // After END, for a node to end its debuggers (one that does not answer gets the session's
  // interrupt grace, 5 s, then is killed) and send its report.
  std::chrono::milliseconds wrap_up{8'000};
  std::chrono::milliseconds grace{5'000};
  std::chrono::milliseconds scontrol_timeout{10'000};
  // Where received recordings go (`--record`'s pattern; %h the node, %p pid, %r rank); empty:
  // recordings are not kept.
  std::string record_pattern;
  std::function<void(const std::string& host, const std::string& what)> node_done;
  std::function<void(const std::string&, const std::string&)> error; // a recording not written
};
Incident slurm_examine(const SlurmRequest& request, const SlurmJob& job);

// The node side: the job's tasks here (each task's GPU workers: the task when it holds a GPU,
// else the GPU holders under it, as a launcher such as torchrun starts them; a CPU task itself),
// examined together (the node fan-out) once the agreed
// window opens at `start_at` (UNIX milliseconds; a node that starts late begins at once and says
// so in a note), the report (JSON) and, with `record_pattern`, every recording written as frames
// to `out`. Returns the node's exit code; what goes wrong is sent as an `error.json` frame
// {message, hint, code} so the front end can name it.
struct NodeAgentRequest {
  std::string job;
  std::int64_t start_at_ms = 0;
  // UNIX milliseconds by which the look ends (the front end's bound less its wrap-up): no
  // debugger command waits past it, so the report goes out with what was seen; 0: no bound.
  std::int64_t end_at_ms = 0;
  bool record = false; // record each target (in a private temporary directory) and send it
  playbook::TargetsOptions examination;
  std::string tool_version; // in the report
};
int slurm_node_agent(const playbook::Playbook& playbook, const NodeAgentRequest& request,
                     std::ostream& out);
// `ps --slurm-job`, the node side: the job's tasks here with what /proc says of each (command,
// state, threads, CPU% over `sample`, GPU devices open), sent as the `tasks.json` frame
// {host, tasks: [{pid, rank, step, local_id, comm, cmdline, state, threads, cpu_percent, gpu}]}.
// Returns 0, or the code of what went wrong (sent as error.json).
int slurm_node_tasks(const std::string& job, std::chrono::milliseconds sample, std::ostream& out);
// The front end: every node's tasks.json joined into one document (docs/json-schema.md,
// `rocplay.ps.slurm`): {schema, schema_version, job, nodes: [{host, tasks} or {host, error}]},
// nodes in Slurm's order. A node that does not answer by the deadline is named with its error.
nlohmann::json slurm_tasks(const SlurmRequest& request, const SlurmJob& job);

// What kept a node from examining anything (no debugger there, a playbook it cannot load), sent
// as the `error.json` frame the front end names the node with. Returns the error's exit code.
int send_node_error(std::ostream& out, const Error& error);

} // namespace rocplay::drivers
