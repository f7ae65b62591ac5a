// `rocplay ps`'s report: the processes holding GPU work as a tree (`rocplay.ps/1`), and a
// server's GPU workers (`rocplay.workers/1`), as text and JSON. docs/json-schema.md documents
// every key. Layer: src/report/ (library rocplay_report; docs/architecture.md).
#pragma once

#include "rocplay/core/process_tree.hpp"

#include <nlohmann/json.hpp>

#include <map>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

namespace rocplay::report {

// The schema names carry their version; `schema_version` says it again, as every document does.
constexpr std::string_view kPsSchema = "rocplay.ps/1";
constexpr std::string_view kWorkersSchema = "rocplay.workers/1";
constexpr int kPsSchemaVersion = 1;

// One process: {pid, ppid, comm, cmdline, state, threads, cpu_percent, holds_gpu, gpu}
// (process_list_to_json adds `worth_a_look` to each).
nlohmann::json process_to_json(const process::ProcessInfo& process);
// {"schema":"rocplay.ps/1","schema_version":1,"scanned":N,"uninspectable":N,"processes":[...]}:
// `shown` (all of `scanned`, or its candidates()) in pid order; the counts are of `scanned`.
nlohmann::json process_list_to_json(const process::ProcessTree& scanned,
                                    const process::ProcessTree& shown,
                                    const std::map<std::int64_t, std::string>& worth_a_look = {});
// {"schema":"rocplay.workers/1","schema_version":1,"pid":P,"holds_gpu":B,"workers":[...]}
nlohmann::json workers_to_json(const process::ProcessInfo& server,
                               const std::vector<process::ProcessInfo>& workers);

// `shown` as a tree (PID, PPID, CPU%, GPU, the command indented as `ps --forest` does), or what
// to do when it is empty; then how many of `scanned` could not be inspected.
// Rows fit `width` columns (the command is cut). `worth_a_look` (pid -> why, from
// process::worth_a_look) is for a machine without GPU holders: `shown` is then those processes
// with their parents, each marked with why it is listed.
void write_process_tree_text(std::ostream& out, const process::ProcessTree& scanned,
                             const process::ProcessTree& shown, std::size_t width = 100,
                             const std::map<std::int64_t, std::string>& worth_a_look = {});
// The server's GPU workers, and the command that attaches to the first; or why there are none.
void write_workers_text(std::ostream& out, const process::ProcessInfo& server,
                        const std::vector<process::ProcessInfo>& workers, std::size_t width = 100);

// `ps --slurm-job`: the job's tasks on every node (drivers::slurm_tasks' document), one line per
// task in rank order with its host, pid, step, state, CPU%, GPU devices and command, then each
// node that did not answer with why.
void write_slurm_tasks_text(std::ostream& out, const nlohmann::json& document, std::size_t width);

} // namespace rocplay::report
