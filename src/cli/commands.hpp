// Subcommands register themselves here; main.cpp only wires them to CLI11.
//
// Each src/cli/cmd_*.cpp defines a function that adds its subcommand to the app and returns the
// action to run when that subcommand is chosen, and registers it with a static registrar:
//
//   static const bool kRegistered = rocplay::cli::register_command({"mi2json", 90, &add_mi2json});
//
// Each command lives in its own namespace (rocplay::cli::mi2json_command): the CLI is compiled as
// a unity file, where every command's Options and kRegistered would otherwise collide.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace rocplay::cli {

using Action = std::function<int()>;

struct CommandSpec {
  std::string name;
  int order; // position in --help: lower first
  std::function<Action(CLI::App&)> add;
};

bool register_command(CommandSpec spec);
const std::vector<CommandSpec>& registered_commands();

// Prints `rocplay: error: MESSAGE` and, when given, `  hint: HINT` to stderr.
void print_error(const std::string& message, const std::string& hint = {});
// For an unknown option or command in a parse error: "did you mean `--format`?", or empty.
std::string did_you_mean(CLI::App& app, const CLI::ParseError& error);
// For a first word that is no command: "did you mean `rocplay run`?", else where the list is.
std::string command_hint(CLI::App& app, std::string_view word);
// True when stderr is a terminal (progress bars, colour).
bool stderr_is_tty();

// `--color[=WHEN]` for every command that prints a report: WHEN is auto (the default: colour
// when the report goes to a terminal and NO_COLOR is unset or empty), always or never; a bare
// `--color` means always.
CLI::Option* add_color_option(CLI::App& sub, std::string& when);
// Options several commands take, worded once: `--wide` (text cut to nothing), `--debugger`,
// `--var NAME=VALUE` (repeatable).
CLI::Option* add_wide_option(CLI::App& sub, bool& wide);
CLI::Option* add_debugger_option(CLI::App& sub, std::string& debugger);
CLI::Option* add_var_option(CLI::App& sub, std::vector<std::string>& vars);
// The one exit-code rule of every command that reports findings (run, record, postmortem), worded
// once: README.md's exit-code table and the man page say the same words
// (tests/live/cli_exit_rule.cpp holds them to it).
inline constexpr std::string_view kExitNothing =
    "nothing: no finding at warning or above (the report may list notes at info)";
inline constexpr std::string_view kExitFinding =
    "a finding: at least one finding at warning or above, which the report leads with";
inline constexpr std::string_view kExitUnreadable =
    "unreadable: an input could not be read (missing, empty or not a known format) or a target "
    "could not be examined; the rest are reported";
// `0 nothing: ...; 1 a finding: ...; 2 unreadable: ...; the same code in every format (...)`.
std::string finding_exit_codes(std::string_view json_keys = "incident.exit_code");

// Whether to colour a report written to `fd` (-1: a file) under `when`.
bool use_color(const std::string& when, int fd);

} // namespace rocplay::cli
