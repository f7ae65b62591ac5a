// Every rank at once: `rocplay run PLAYBOOK --pids ...`, `--workers-of SERVER` and
// `--slurm-job JOBID`.
#pragma once

#include "cli/run_common.hpp"
#include "rocplay/playbook/run_targets.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace rocplay::cli {

// `101,102,103` -> pids, duplicates dropped. Throws Error(Usage).
std::vector<std::int64_t> parse_pid_list(const std::string& text);
// Runs the playbook against every pid, at most `jobs` at a time (0: up to 8), and prints one
// report through report::write: the incident first, then each target, then the cross-rank
// findings. Every target is detached on every path. Returns Incident::exit_code: 0/1 (findings)
// when all were examined, 2 when some could not be, else the first one's code.
int run_fanout(const RunCommandOptions& options, const std::vector<std::int64_t>& pids,
               unsigned jobs);
// `--slurm-job JOBID`: the options wired to drivers::slurm_job and drivers::slurm_examine (one
// rocplay per node through srun, the nodes' reports joined), the incident written once.
int run_slurm(const RunCommandOptions& options);
// The node's side (`--slurm-node-agent`, started by run_slurm through srun): the job's tasks on
// this node examined, the report sent as frames on stdout (drivers::slurm_node_agent).
int run_slurm_node_agent(const RunCommandOptions& options);

} // namespace rocplay::cli
