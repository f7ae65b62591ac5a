// rocplay: drive GDB-family GPU debuggers over GDB/MI, turn what they say into typed snapshots,
// and tell which kernel is stuck where. main() only wires subcommands together.
#include "cli/commands.hpp"
#include "cli/help_format.hpp"
#include "cli/launch_common.hpp"
#include "core/text_scan.hpp"
#include "rocplay/core/error.hpp"
#include "rocplay/session/launch.hpp"
#include "rocplay/session/session.hpp"

#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace rocplay::cli {

namespace {
std::vector<CommandSpec>& registry() {
  static std::vector<CommandSpec> commands;
  return commands;
}
} // namespace

bool register_command(CommandSpec spec) {
  registry().push_back(std::move(spec));
  return true;
}

const std::vector<CommandSpec>& registered_commands() {
  return registry();
}

void print_error(const std::string& message, const std::string& hint) {
  std::fprintf(stderr, "rocplay: error: %s\n", message.c_str());
  if (!hint.empty()) {
    // Wrapped at word boundaries, continuation lines under the hint's first word.
    constexpr std::size_t kWidth = 100;
    constexpr std::string_view kLead = "  hint: ";
    std::string out(kLead);
    std::size_t column = kLead.size();
    std::size_t pos = 0;
    while (pos < hint.size()) {
      if (hint[pos] == '\n') {
        out += "\n" + std::string(kLead.size(), ' ');
        column = kLead.size();
        ++pos;
        continue;
      }
      std::size_t end = hint.find_first_of(" \n", pos);
      if (end == std::string::npos) {
        end = hint.size();
      }
      const std::size_t word = end - pos;
      if (column > kLead.size() && column + word > kWidth) {
        while (out.back() == ' ') {
          out.pop_back();
        }
        out += "\n" + std::string(kLead.size(), ' ');
        column = kLead.size();
      }
      out.append(hint, pos, word);
      column += word;
      pos = end;
      if (pos < hint.size() && hint[pos] == ' ') {
        if (column + 1 < kWidth) {
          out += ' ';
          ++column;
        }
        ++pos;
      }
    }
    std::fprintf(stderr, "%s\n", out.c_str());
  }
}

namespace {

// The option or command nearest `word` (at most a third of its letters off), or empty.
std::string nearest(std::string_view word, const std::vector<std::string>& candidates) {
  std::string best;
  std::size_t best_d = word.size() / 3 + 1;
  for (const auto& c : candidates) {
    const std::size_t d = text_scan::edit_distance(word, c);
    if (d < best_d || (d == best_d && best.empty() && d <= 2)) {
      best = c;
      best_d = d;
    }
  }
  return best;
}

} // namespace

std::string command_hint(CLI::App& app, std::string_view word) {
  std::vector<std::string> commands;
  for (const auto* sub : app.get_subcommands({})) {
    commands.push_back(sub->get_name());
  }
  const auto guess = nearest(word, commands);
  return guess.empty() ? "`rocplay --help` lists the commands"
                       : "did you mean `rocplay " + guess + "`?";
}

std::string did_you_mean(CLI::App& app, const CLI::ParseError& error) {
  const std::string what = error.what();
  // The chosen subcommand (the innermost parsed), else the app: its option and command names.
  CLI::App* scope = &app;
  for (bool deeper = true; deeper;) {
    deeper = false;
    for (auto* sub : scope->get_subcommands()) {
      scope = sub;
      deeper = true;
      break;
    }
  }
  std::vector<std::string> names;
  for (const auto* opt : scope->get_options()) {
    for (const auto& l : opt->get_lnames()) {
      names.push_back("--" + l);
    }
  }
  for (const auto* sub : scope->get_subcommands({})) {
    names.push_back(sub->get_name());
  }
  // CLI11: "The following arguments were not expected: --fromat text" (ExtrasError).
  std::vector<std::string> words;
  std::size_t colon = what.find(": ");
  std::string rest = colon == std::string::npos ? std::string() : what.substr(colon + 2);
  std::size_t pos = 0;
  while (pos < rest.size()) {
    const std::size_t sp = rest.find(' ', pos);
    words.push_back(rest.substr(pos, sp == std::string::npos ? std::string::npos : sp - pos));
    pos = sp == std::string::npos ? rest.size() : sp + 1;
  }
  // A bare number where a pid was meant (`rocplay run hang-triage 3124`).
  const bool takes_pid = std::find(names.begin(), names.end(), "--pid") != names.end();
  for (const auto& word : words) {
    if (takes_pid && !word.empty() && word.size() <= 10 &&
        word.find_first_not_of("0123456789") == std::string::npos) {
      return "a process id goes after --pid: `--pid " + word + "` (`rocplay " + scope->get_name() +
             " --help` lists the options)";
    }
  }
  for (auto word : words) {
    if (const auto eq = word.find('='); eq != std::string::npos) {
      word.resize(eq);
    }
    if (word.empty() || std::find(names.begin(), names.end(), word) != names.end()) {
      continue;
    }
    if (const auto guess = nearest(word, names); !guess.empty()) {
      return "did you mean `" + guess + "` instead of `" + word + "`? (`rocplay " +
             (scope == &app ? std::string() : scope->get_name() + " ") + "--help` lists them)";
    }
  }
  return {};
}

std::string finding_exit_codes(std::string_view json_keys) {
  return "0 " + std::string(kExitNothing) + "; 1 " + std::string(kExitFinding) + "; 2 " +
         std::string(kExitUnreadable) +
         "; the same code in every format (JSON: " + std::string(json_keys) + ")";
}

bool stderr_is_tty() {
  return ::isatty(STDERR_FILENO) == 1;
}

CLI::Option* add_color_option(CLI::App& sub, std::string& when) {
  return sub
      .add_flag("--color{always}", when,
                "Colour the text report: --color=auto (default: on a terminal, unless NO_COLOR "
                "is set), --color=always, --color=never")
      ->check(CLI::IsMember({"auto", "always", "never"}));
}

CLI::Option* add_wide_option(CLI::App& sub, bool& wide) {
  return sub.add_flag("--wide", wide,
                      "Text report: print every row, cell and stack frame whole (otherwise cut to "
                      "the terminal's width: $COLUMNS, the terminal, else 100)");
}

CLI::Option* add_debugger_option(CLI::App& sub, std::string& debugger) {
  return sub.add_option("--debugger", debugger,
                        "rocgdb, cuda-gdb, gdb or a path (default: $ROCPLAY_DEBUGGER, then the "
                        "first found of rocgdb, cuda-gdb, gdb)");
}

CLI::Option* add_var_option(CLI::App& sub, std::vector<std::string>& vars) {
  // One value per --var, so `--var depth=4 team.yaml` leaves team.yaml to PLAYBOOK.
  return sub.add_option("--var", vars, "Set a playbook variable: --var NAME=VALUE (repeatable)")
      ->allow_extra_args(false)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
}

bool use_color(const std::string& when, int fd) {
  if (when == "always") {
    return true;
  }
  if (when == "never" || fd < 0) {
    return false;
  }
  const char* no_color = std::getenv("NO_COLOR");
  if (no_color != nullptr && *no_color != '\0') {
    return false;
  }
  const char* term = std::getenv("TERM");
  if (term != nullptr && std::string_view(term) == "dumb") {
    return false;
  }
  return ::isatty(fd) == 1;
}

} // namespace rocplay::cli

int main(int argc, char** argv) {
  using namespace rocplay;
  if (argc > 1 && std::string_view(argv[1]) == session::kExecHelperWord) {
    // The debugger runs rocplay as the launched program's exec helper (src/session/launch.cpp).
    session::exec_helper_main(argc, argv);
  }
  // `rocplay launch ... -- COMMAND ARGS`: the program's words never go through option parsing.
  if (argc > 1 && std::string_view(argv[1]) == "launch") {
    for (int i = 2; i < argc; ++i) {
      if (std::string_view(argv[i]) == "--") {
        cli::launch_separator_seen() = true;
        cli::launch_command_words().assign(argv + i + 1, argv + argc);
        argc = i;
        break;
      }
    }
  }
  // First: a Ctrl-C at any moment ends rocplay with a message and 130, never silently by the
  // signal; while a debugger is attached the session detaches first (src/session/signal_guard).
  session::install_signal_guard();
  CLI::App app{"rocplay: run GDB-family GPU debuggers (rocgdb, cuda-gdb, gdb) over GDB/MI,\n"
               "snapshot a hung process and tell which kernel is stuck where.",
               "rocplay"};
  app.formatter(std::make_shared<cli::WrappingFormatter>(cli::help_width()));
  app.set_version_flag("-V,--version", std::string("rocplay ") + ROCPLAY_VERSION);
  app.require_subcommand(1);
  app.footer("`rocplay COMMAND --help` lists each command's options and its exit codes "
             "(README.md: all of them). Docs: docs/ in the source tree.");

  auto specs = cli::registered_commands();
  std::sort(specs.begin(), specs.end(),
            [](const auto& a, const auto& b) { return a.order < b.order; });
  std::map<CLI::App*, cli::Action> actions;
  for (const auto& spec : specs) {
    CLI::App* sub = nullptr;
    auto action = spec.add(app);
    for (auto* candidate : app.get_subcommands({})) {
      if (candidate->get_name() == spec.name) {
        sub = candidate;
      }
    }
    if (sub != nullptr) {
      actions[sub] = std::move(action);
    }
  }

  if (argc <= 1) {
    // No command: what there is to run, not a parse error.
    std::fputs(app.help().c_str(), stdout);
    return static_cast<int>(ExitCode::Usage);
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) { // --help, --help-all, --version
      return app.exit(e);
    }
    if (const auto guess = cli::did_you_mean(app, e); !guess.empty()) {
      cli::print_error(e.what(), guess);
      return static_cast<int>(ExitCode::Usage);
    }
    // The same error shape as every other failure, with where to look next.
    const std::string first = argv[1];
    if (app.get_subcommands().empty() && !first.starts_with("-")) {
      cli::print_error("unknown command `" + first + "`", cli::command_hint(app, first));
      return static_cast<int>(ExitCode::Usage);
    }
    const auto* sub = app.get_subcommands().empty() ? nullptr : app.get_subcommands().front();
    cli::print_error(e.what(), sub != nullptr
                                   ? "`rocplay " + sub->get_name() + " --help` says what it takes"
                                   : std::string("`rocplay --help` says what it takes"));
    return static_cast<int>(ExitCode::Usage);
  }

  try {
    for (auto* sub : app.get_subcommands()) {
      auto it = actions.find(sub);
      if (it != actions.end()) {
        const int rc = it->second();
        if (const auto sig = session::caught_signal(); sig && rc < 128) {
          // It came while the debugger was ending (after the report): nothing was lost, but the
          // exit code still says rocplay was interrupted.
          const char* name = *sig == SIGINT ? "SIGINT" : *sig == SIGTERM ? "SIGTERM" : "SIGHUP";
          cli::print_error(std::string("interrupted by ") + name +
                           " while rocplay was finishing; the report is complete and the target "
                           "was already detached");
          return static_cast<int>(session::exit_code_for_signal(*sig));
        }
        return rc;
      }
    }
    cli::print_error("no subcommand chosen", "run `rocplay --help`");
    return static_cast<int>(ExitCode::Usage);
  } catch (const Error& e) {
    cli::print_error(e.what(), e.hint());
    return static_cast<int>(e.code());
  } catch (const std::exception& e) {
    cli::print_error(std::string("internal error: ") + e.what(),
                     "this is a bug in rocplay; please report it with the command line");
    return static_cast<int>(ExitCode::Internal);
  }
}
