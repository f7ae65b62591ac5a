// `rocplay run PLAYBOOK --pid PID`: attach, run the playbook's steps, detach, report.
#include "cli/commands.hpp"
#include "cli/run_common.hpp"

#include <memory>

namespace rocplay::cli::run_command {
namespace {

Action add_run(CLI::App& app) {
  auto o = std::make_shared<RunCommandOptions>();
  auto* sub = app.add_subcommand(
      "run", "Attach to a process, run a playbook's steps, detach, and report what is stuck");
  sub->add_option("playbook", o->playbook,
                  "A playbook name (`rocplay playbooks` lists them) or a path to a .yaml file")
      ->required();
  add_run_options(*sub, *o);
  sub->add_option("--record", o->record,
                  "Save the whole debugger transcript to FILE (replayable offline; %h host, "
                  "%p pid, %r rank)");
  sub->add_flag("--wait-for-fault", o->wait_for_fault,
                "Let the process run and run the playbook at its first fault stop (fault-triage "
                "suits); --timeout then bounds the wait, after which rocplay detaches with the "
                "process running");
  sub->footer(run_exit_codes() +
              " With --wait-for-fault: 81 it faulted (reported), 83 no fault before --timeout "
              "(detached, running), 0/80 it exited with status 0/another.");
  auto* timeout = sub->get_option("--timeout");
  return [o, timeout] {
    if (o->wait_for_fault && timeout->count() > 0) {
      o->fault_timeout = o->timeout;
      o->timeout = "30s";
    }
    return run_playbook_command(*o);
  };
}

const bool kRegistered = register_command({"run", 10, &add_run});

} // namespace
} // namespace rocplay::cli::run_command
