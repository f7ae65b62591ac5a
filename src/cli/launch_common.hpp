// What `launch` and `run --wait-for-fault` share: reporting a program stopped at its fault.
#pragma once

#include "rocplay/launch.hpp"
#include "rocplay/playbook.hpp"
#include "rocplay/report.hpp"

#include <functional>
#include <optional>
#include <string>
#include <utility>
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

struct LaunchReportOptions {
  std::string playbook = "fault-triage";
  playbook::LoadOptions load;
  std::vector<std::pair<std::string, std::string>> vars;
  std::vector<std::string> argv;
  std::optional<double> timeout_seconds;
  report::Format format = report::Format::Text;
  std::string output;
  std::string color = "auto";
  bool wide = false;
  bool launched = false; // rocplay started the program (else: --wait-for-fault attached)
  std::function<void(const playbook::StepRecord&, bool)> progress;
};

// Runs the playbook at the stop when the program is stopped (fault, timeout, interrupt), ends
// it (the session's TargetEnd), writes the report; returns the exit code.
int report_stopped_program(session::Session& session, const session::LaunchResult& result,
                           const LaunchReportOptions& options);
int exit_code_for_launch(const session::LaunchResult& result);

} // namespace rocplay::cli
