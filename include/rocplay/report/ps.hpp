// `rocplay ps`'s report: the processes holding GPU work as a tree (`rocplay.ps/1`), and a
// server's GPU workers (`rocplay.workers/1`), as text and JSON. docs/json-schema.md documents
// every key. Layer: src/report/ (library rocplay_report; docs/architecture.md).
#pragma once

#include "rocplay/core/process_tree.hpp"

#include <nlohmann/json.hpp>

#include <ostream>
#include <string_view>
#include <vector>

namespace rocplay::report {

// The schema names carry their version; `schema_version` says it again, as every document does.
constexpr std::string_view kPsSchema = "rocplay.ps/1";
constexpr std::string_view kWorkersSchema = "rocplay.workers/1";
constexpr int kPsSchemaVersion = 1;

// One process: {pid, ppid, comm, cmdline, state, threads, cpu_percent, holds_gpu, gpu}.
nlohmann::json process_to_json(const process::ProcessInfo& process);
// {"schema":"rocplay.ps/1","schema_version":1,"scanned":N,"uninspectable":N,"processes":[...]}:
// `shown` (all of `scanned`, or its candidates()) in pid order; the counts are of `scanned`.
nlohmann::json process_list_to_json(const process::ProcessTree& scanned,
                                    const process::ProcessTree& shown);
// {"schema":"rocplay.workers/1","schema_version":1,"pid":P,"holds_gpu":B,"workers":[...]}
nlohmann::json workers_to_json(const process::ProcessInfo& server,
                               const std::vector<process::ProcessInfo>& workers);

// `shown` as a tree (PID, PPID, CPU%, GPU, the command indented as `ps --forest` does), or what
// to do when it is empty; then how many of `scanned` could not be inspected.
void write_process_tree_text(std::ostream& out, const process::ProcessTree& scanned,
                             const process::ProcessTree& shown);
// The server's GPU workers, and the command that attaches to the first; or why there are none.
void write_workers_text(std::ostream& out, const process::ProcessInfo& server,
                        const std::vector<process::ProcessInfo>& workers);

} // namespace rocplay::report
