// What `rocplay run` and `rocplay record` share: options, and running a playbook end to end.
#pragma once

#include "cli/commands.hpp"

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace rocplay::cli {

struct RunCommandOptions {
  std::string playbook;
  std::int64_t pid = 0;
  std::string debugger;
  double timeout_seconds = 30;
  double attach_timeout_seconds = 90;
  std::string format = "text";
  std::string output;
  std::string record;
  bool fast = false;
  bool allow_unsafe = false;
  bool color = false;
  bool wide = false; // text report: nothing cut
  bool quiet = false;
  std::vector<std::string> vars;
  // Every rank at once (src/cli/fanout.hpp): --pids A,B,... or --workers-of SERVER.
  std::string pids;
  std::int64_t workers_of = 0;
  unsigned jobs = 0;
};

// Adds the options both commands take (all but PLAYBOOK and --record); `--output,-o` for the
// report only when `report_output`.
void add_run_options(CLI::App& sub, RunCommandOptions& o, bool report_output = true);
// Validates the playbook and options, attaches, runs, detaches, prints the report. Returns the
// exit code. Throws rocplay::Error for problems found before attaching.
int run_playbook_command(const RunCommandOptions& o);
// `%h` in a file name becomes this host's name, `%p` the pid and `%r` the rank where known, so
// one command line under srun/pdsh writes one file per node and target.
std::string expand_path_pattern(const std::string& pattern, std::optional<std::int64_t> pid,
                                std::optional<int> rank);
// --timeout and friends: seconds, more than 0 and at most a day. Throws Error(Usage).
std::chrono::milliseconds seconds_to_ms(double seconds, std::string_view flag);

} // namespace rocplay::cli
