// What `launch` and `run --wait-for-fault` share: the exit codes, the words after `--`, and the
// request both make of their driver (src/drivers/launch.cpp).
#pragma once

#include "rocplay/drivers/drivers.hpp"

#include <string>
#include <vector>

namespace rocplay::cli {

inline constexpr const char* kLaunchExitCodes =
    "Exit codes: 0 the program exited with status 0, 80 it exited with another status, 81 it "
    "faulted (the report is the fault's), 82 it was killed by a signal the debugger did not stop "
    "it for, 83 it ran past --timeout (stopped, reported, killed), 64 bad command line, 66 the "
    "program cannot be found or run, 69 no debugger found, 70 internal error, 75 a debugger "
    "step ran past its deadline, 76 the debugger crashed, 78 bad playbook, 130/143/129 "
    "interrupted by SIGINT/SIGTERM/SIGHUP (the program was stopped, reported and killed; a "
    "second signal kills it at once).";

// The words after `--` on the command line (main.cpp takes them away before option parsing).
std::vector<std::string>& launch_command_words();
bool& launch_separator_seen();

// Writes a launched or waited-on program's incident (report::write) to `output` and says on
// stderr what cut the playbook short at the stop; returns Incident::exit_code.
int write_stopped_program(const Incident& incident, const std::string& format,
                          const std::string& output, const std::string& color, bool wide);

} // namespace rocplay::cli
