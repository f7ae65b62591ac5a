// The few functions of a playbook run's vocabulary (rocplay/report/run_result.hpp): a step's
// position and the names of step kinds and statuses, as playbooks and reports spell them.
#include "rocplay/report/run_result.hpp"

#include <fmt/format.h>

namespace rocplay::playbook {

std::string Position::str() const {
  if (line == 0) {
    return file;
  }
  return fmt::format("{}:{}:{}", file, line, column);
}

// The one map between a step kind and its playbook key; the loader reads keys through it.
std::string_view to_string(StepKind kind) {
  switch (kind) {
  case StepKind::Mi:
    return "mi";
  case StepKind::Cli:
    return "cli";
  case StepKind::Attach:
    return "attach";
  case StepKind::Detach:
    return "detach";
  case StepKind::Snapshot:
    return "snapshot";
  case StepKind::Threads:
    return "threads";
  case StepKind::InfoLine:
    return "info-line";
  case StepKind::Backtrace:
    return "backtrace";
  case StepKind::Disassemble:
    return "disassemble";
  case StepKind::Foreach:
    return "foreach";
  }
  return "?";
}

std::string_view to_string(StepStatus status) {
  switch (status) {
  case StepStatus::Ok:
    return "ok";
  case StepStatus::Failed:
    return "failed";
  case StepStatus::Ignored:
    return "ignored";
  case StepStatus::TimedOut:
    return "timed-out";
  case StepStatus::Skipped:
    return "skipped";
  case StepStatus::NotRun:
    return "not-run";
  }
  return "?";
}

ExitCode RunResult::exit_code() const {
  if (fatal) {
    return fatal->code();
  }
  if (times.left_stopped) {
    return ExitCode::TargetLeftStopped;
  }
  if (aborted) {
    return ExitCode::StepFailed;
  }
  for (const auto& f : findings) {
    if (f.severity >= Severity::Warning) {
      return ExitCode::Findings;
    }
  }
  return ExitCode::Ok;
}

} // namespace rocplay::playbook
