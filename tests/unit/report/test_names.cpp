// Report-layer enum names (rocplay/core/names.hpp tables): a step's playbook key and status, a
// post-mortem input's kind and status, as JSON, SARIF and text print them, written out so a
// changed name fails.
#include "rocplay/case/run_result.hpp"
#include "rocplay/core/names.hpp"
#include "rocplay/report/postmortem_result.hpp"

#include <catch2/catch.hpp>

using namespace rocplay;

TEST_CASE("step kinds keep their playbook keys, and each key parses back", "[report][names]") {
  constexpr NameTable<playbook::StepKind, 10> expected{{
      {playbook::StepKind::Mi, "mi"},
      {playbook::StepKind::Cli, "cli"},
      {playbook::StepKind::Attach, "attach"},
      {playbook::StepKind::Detach, "detach"},
      {playbook::StepKind::Snapshot, "snapshot"},
      {playbook::StepKind::Threads, "threads"},
      {playbook::StepKind::InfoLine, "info-line"},
      {playbook::StepKind::Backtrace, "backtrace"},
      {playbook::StepKind::Disassemble, "disassemble"},
      {playbook::StepKind::Foreach, "foreach"},
  }};
  static_assert(names_cover(expected, playbook::StepKind::Foreach));
  for (const auto& [value, name] : expected) {
    CHECK(playbook::to_string(value) == name);
    CHECK(value_of(expected, playbook::to_string(value)) == value);
  }
  for (const auto& [value, name] : expected) {
    CHECK(playbook::step_kind_from_string(name) == value);
  }
  CHECK(!playbook::step_kind_from_string("info_line"));
  CHECK(!playbook::step_kind_from_string("MI"));
  CHECK(!playbook::step_kind_from_string(""));
  // The loader lists the keys in kStepKinds' order, which is the table's.
  for (std::size_t i = 0; i < playbook::kStepKinds.size(); ++i) {
    CHECK(playbook::kStepKinds[i] == expected[i].first);
  }
}

TEST_CASE("step statuses keep their names", "[report][names]") {
  constexpr NameTable<playbook::StepStatus, 6> expected{{
      {playbook::StepStatus::Ok, "ok"},
      {playbook::StepStatus::Failed, "failed"},
      {playbook::StepStatus::Ignored, "ignored"},
      {playbook::StepStatus::TimedOut, "timed-out"},
      {playbook::StepStatus::Skipped, "skipped"},
      {playbook::StepStatus::NotRun, "not-run"},
  }};
  static_assert(names_cover(expected, playbook::StepStatus::NotRun));
  for (const auto& [value, name] : expected) {
    CHECK(playbook::to_string(value) == name);
    CHECK(value_of(expected, playbook::to_string(value)) == value);
  }
}

TEST_CASE("post-mortem input kinds keep their names", "[report][names]") {
  constexpr NameTable<postmortem::InputKind, 9> expected{{
      {postmortem::InputKind::Unknown, "unknown"},
      {postmortem::InputKind::Recording, "recording"},
      {postmortem::InputKind::RawMi, "raw-mi"},
      {postmortem::InputKind::ReportJson, "report-json"},
      {postmortem::InputKind::AgentLog, "agent-log"},
      {postmortem::InputKind::CrashLog, "crash-log"},
      {postmortem::InputKind::CrashDump, "crash-dump"},
      {postmortem::InputKind::CrashDiagnostics, "crash-diagnostics"},
      {postmortem::InputKind::ConsoleLog, "console-log"},
  }};
  static_assert(names_cover(expected, postmortem::InputKind::ConsoleLog));
  for (const auto& [value, name] : expected) {
    CHECK(postmortem::to_string(value) == name);
    CHECK(value_of(expected, postmortem::to_string(value)) == value);
  }
}

TEST_CASE("post-mortem input statuses keep their names", "[report][names]") {
  constexpr NameTable<postmortem::InputStatus, 4> expected{{
      {postmortem::InputStatus::Ok, "ok"},
      {postmortem::InputStatus::Partial, "partial"},
      {postmortem::InputStatus::Empty, "empty"},
      {postmortem::InputStatus::Unreadable, "unreadable"},
  }};
  static_assert(names_cover(expected, postmortem::InputStatus::Unreadable));
  for (const auto& [value, name] : expected) {
    CHECK(postmortem::to_string(value) == name);
    CHECK(value_of(expected, postmortem::to_string(value)) == value);
  }
}
