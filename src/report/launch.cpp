// How the launched program ran and ended, for the text and JSON reports.
#include "rocplay/report/launch.hpp"
#include "rocplay/report/report.hpp"

#include <fmt/format.h>

#include <sstream>

namespace rocplay::report {

std::string shell_quote(const std::string& word) {
  const bool plain =
      !word.empty() && word.find_first_not_of("abcdefghijklmnopqrstuvwxyz"
                                              "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                              "0123456789_-./=:,+@%") == std::string::npos;
  if (plain) {
    return word;
  }
  std::string out = "'";
  for (const char c : word) {
    if (c == '\'') {
      out += "'\\''";
    } else if (c == '\n') {
      out += "'$'\\n''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

namespace {

std::string how_it_ended(const LaunchInfo& l) {
  if (l.outcome == "faulted" && l.stop_reason == "breakpoint-hit") {
    return fmt::format("stopped at the C++ exception it threw (--catch throw) after {:.2f} s",
                       l.ran_seconds);
  }
  if (l.outcome == "faulted") {
    return fmt::format("stopped on {} after {:.2f} s",
                       l.stop_signal.empty() ? l.stop_reason : l.stop_signal, l.ran_seconds);
  }
  if (l.outcome == "exited") {
    return fmt::format("exited with status {} after {:.2f} s, no fault", l.exit_code.value_or(0),
                       l.ran_seconds);
  }
  if (l.outcome == "killed-by-signal") {
    return fmt::format("was killed by {} after {:.2f} s (not a stop the debugger reported)",
                       l.exit_signal.empty() ? std::string("a signal") : l.exit_signal,
                       l.ran_seconds);
  }
  if (l.outcome == "timed-out") {
    return l.timeout_seconds
               ? fmt::format("was still running at the --timeout of {:.3g} s, with no fault; "
                             "stopped there for the snapshot",
                             *l.timeout_seconds)
               : std::string("was still running at the deadline, with no fault");
  }
  if (l.outcome == "lost") {
    return fmt::format("ended after {:.2f} s with no fault stop and no exit status: the debugger "
                       "had no thread of it left",
                       l.ran_seconds);
  }
  if (l.outcome == "interrupted") {
    return fmt::format("was stopped after {:.2f} s because rocplay got {}; no fault", l.ran_seconds,
                       l.user_signal.empty() ? "a signal" : l.user_signal);
  }
  return "did not start";
}

} // namespace

void write_launch_text(std::ostream& out, const LaunchInfo& l, std::size_t width, bool color) {
  std::string command;
  for (const auto& a : l.argv) {
    command += (command.empty() ? "" : " ") + shell_quote(a);
  }
  std::string text =
      command.empty() ? fmt::format("pid {}", l.pid) : fmt::format("{} (pid {})", command, l.pid);
  text += ": " + how_it_ended(l);
  if (l.passed_signals > 0) {
    text += fmt::format("; {} signal(s) that are no fault were passed on to it", l.passed_signals);
  }
  if (!l.after.empty()) {
    text += "; " + l.after;
  }
  const std::string label = color ? "\x1b[1mProgram\x1b[0m  " : "Program  ";
  // The label's escape codes take no columns: wrap as if it were plain.
  std::string plain = "Program  ";
  std::ostringstream body;
  write_wrapped(body, width, plain, text);
  std::string s = body.str();
  out << label << s.substr(plain.size());
  out << '\n';
  if (!l.api_errors.empty()) {
    // A kernel's fault cuda-gdb did not stop on reaches the host as a failed CUDA call.
    std::string errors = fmt::format("{} CUDA call(s) failed: ", l.api_errors.size());
    for (std::size_t i = 0; i < l.api_errors.size(); ++i) {
      errors += (i == 0 ? "" : "; ") + l.api_errors[i];
    }
    if (l.outcome != "faulted") {
      errors += ". The debugger did not stop at the fault: run again with --set 'cuda "
                "api_failures stop' to stop at the failing call, where cuda-gdb reports the "
                "kernel's exception (docs/launch.md)";
    }
    std::ostringstream more;
    write_wrapped(more, width, "CUDA     ", errors);
    out << more.str() << '\n';
  }
}

nlohmann::json launch_to_json(const LaunchInfo& l) {
  nlohmann::json j = nlohmann::json::object();
  j["argv"] = l.argv;
  j["pid"] = l.pid;
  j["outcome"] = l.outcome;
  if (l.exit_code) {
    j["exit_code"] = *l.exit_code;
  }
  if (!l.exit_signal.empty()) {
    j["exit_signal"] = l.exit_signal;
  }
  if (!l.stop_signal.empty()) {
    j["stop_signal"] = l.stop_signal;
  }
  if (!l.stop_reason.empty()) {
    j["stop_reason"] = l.stop_reason;
  }
  if (!l.user_signal.empty()) {
    j["user_signal"] = l.user_signal;
  }
  j["ran_seconds"] = l.ran_seconds;
  if (l.timeout_seconds) {
    j["timeout_seconds"] = *l.timeout_seconds;
  }
  j["passed_signals"] = l.passed_signals;
  if (!l.api_errors.empty()) {
    j["api_errors"] = l.api_errors;
  }
  j["after"] = l.after;
  return j;
}

nlohmann::json launch_report_to_json(const LaunchInfo& launch, const Case* stopped, bool partial) {
  nlohmann::json j = stopped != nullptr ? run_case_to_json(*stopped, partial)
                                        : nlohmann::json{{"schema", "rocplay.report"},
                                                         {"schema_version", kJsonSchemaVersion},
                                                         {"findings", nlohmann::json::array()}};
  j["launch"] = launch_to_json(launch);
  return j;
}

nlohmann::json launch_jsonl_line(const LaunchInfo& launch) {
  return {{"type", "launch"}, {"launch", launch_to_json(launch)}};
}

} // namespace rocplay::report
