// The few functions of a playbook run's vocabulary (rocplay/case/run_result.hpp): a step's
// position and the names of step kinds and statuses, as playbooks and reports spell them.
#include "rocplay/case/run_result.hpp"

#include "rocplay/core/names.hpp"

#include <fmt/format.h>

namespace rocplay::playbook {

std::string Position::str() const {
  if (line == 0) {
    return file;
  }
  return fmt::format("{}:{}:{}", file, line, column);
}

// The one map between a step kind and its playbook key; the loader reads keys through it.
constexpr NameTable<StepKind, 10> kStepKindNames{{
    {StepKind::Mi, "mi"},
    {StepKind::Cli, "cli"},
    {StepKind::Attach, "attach"},
    {StepKind::Detach, "detach"},
    {StepKind::Snapshot, "snapshot"},
    {StepKind::Threads, "threads"},
    {StepKind::InfoLine, "info-line"},
    {StepKind::Backtrace, "backtrace"},
    {StepKind::Disassemble, "disassemble"},
    {StepKind::Foreach, "foreach"},
}};
static_assert(names_cover(kStepKindNames, StepKind::Foreach));

std::string_view to_string(StepKind kind) {
  return name_of(kStepKindNames, kind, "?");
}

std::optional<StepKind> step_kind_from_string(std::string_view key) {
  return value_of(kStepKindNames, key);
}

constexpr NameTable<StepStatus, 6> kStepStatusNames{{
    {StepStatus::Ok, "ok"},
    {StepStatus::Failed, "failed"},
    {StepStatus::Ignored, "ignored"},
    {StepStatus::TimedOut, "timed-out"},
    {StepStatus::Skipped, "skipped"},
    {StepStatus::NotRun, "not-run"},
}};
static_assert(names_cover(kStepStatusNames, StepStatus::NotRun));

std::string_view to_string(StepStatus status) {
  return name_of(kStepStatusNames, status, "?");
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
