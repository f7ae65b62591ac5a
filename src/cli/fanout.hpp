// Every rank at once: `rocplay run PLAYBOOK --pids ...` and `--workers-of SERVER`.
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

} // namespace rocplay::cli
