// Running a helper program (a debugger's --version, nvdisasm) with a bound on its time and its
// output: no shell, arguments passed as they are.
// Layer: src/session/ (library rocplay_session; docs/architecture.md).
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace rocplay::session {

struct ProgramRun {
  std::optional<int> exit_code; // nullopt: it could not be started, or was killed at the deadline
  bool timed_out = false;
  bool truncated = false; // wrote more than max_output; the rest was read and dropped
  std::string output;     // stdout, and stderr as they interleaved when asked for
  std::string error;      // why it could not be started
  std::string errors;     // stderr, with Stderr::Apart (bounded by max_output too)
};
// Apart: stderr read on its own pipe into ProgramRun::errors, so that a launcher's messages never
// split a line of the program's output (srun writes a long line in pieces).
enum class Stderr : std::uint8_t { Discard, Merge, Apart };
// At `timeout` the program is killed (SIGKILL); with `term_grace` it first gets SIGTERM and
// that long to end by itself (a launcher such as srun passes SIGTERM on to its tasks), its output
// still read meanwhile. When `cancel` becomes true (looked at every 20 ms) the program is killed
// at once; the run then has no exit code and says "cancelled".
ProgramRun run_program(const std::string& path, const std::vector<std::string>& args,
                       std::chrono::milliseconds timeout, std::size_t max_output,
                       Stderr stderr_output = Stderr::Merge,
                       std::chrono::milliseconds term_grace = std::chrono::milliseconds(0),
                       const std::atomic<bool>* cancel = nullptr);

bool is_executable_file(const std::string& path);
// `$PATH`'s directories in order; an empty entry is the current directory, as for a shell.
std::vector<std::string> split_path_var(std::string_view path_var);
// The first executable file called `name` in `dirs_first`, then in $PATH; nullopt when none.
std::optional<std::string> find_program(std::string_view name,
                                        const std::vector<std::string>& dirs_first);

} // namespace rocplay::session
