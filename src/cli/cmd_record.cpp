// `rocplay record --pid PID -o FILE`: hang-triage with the whole transcript saved, for offline
// replay (`rocplay postmortem FILE`) or for attaching to a bug report.
#include "cli/run_common.hpp"

#include <fmt/format.h>

#include <memory>

namespace rocplay::cli::record_command {
namespace {

Action add_record(CLI::App& app) {
  auto o = std::make_shared<RunCommandOptions>();
  auto* sub = app.add_subcommand(
      "record", "Run a playbook (hang-triage by default) and save the debugger transcript");
  sub->add_option("--output,-o", o->record, "Where to save the transcript")->required();
  o->playbook = "hang-triage";
  sub->add_option("--playbook", o->playbook, "The playbook to run")->capture_default_str();
  add_run_options(*sub, *o, false);
  sub->footer(run_exit_codes());
  return [o] { return run_playbook_command(*o); };
}

const bool kRegistered = register_command({"record", 15, &add_record});

} // namespace
} // namespace rocplay::cli::record_command
