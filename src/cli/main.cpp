// rocplay: drive GDB-family GPU debuggers over GDB/MI, turn what they say into typed snapshots,
// and tell which kernel is stuck where. main() only wires subcommands together.
#include "cli/commands.hpp"
#include "rocplay/error.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <exception>
#include <map>
#include <string>
#include <string_view>

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

bool stderr_is_tty() {
  return ::isatty(STDERR_FILENO) == 1;
}

} // namespace rocplay::cli

int main(int argc, char** argv) {
  using namespace rocplay;
  CLI::App app{"rocplay: run GDB-family GPU debuggers (rocgdb, cuda-gdb, gdb) over GDB/MI,\n"
               "snapshot a hung process and tell which kernel is stuck where.",
               "rocplay"};
  app.set_version_flag("-V,--version", std::string("rocplay ") + ROCPLAY_VERSION);
  app.require_subcommand(1);
  app.footer("Exit codes: 0 nothing found, 1 findings, 2 some inputs unreadable, 3 a step failed,\n"
             "64+ errors (see README.md). Docs: docs/ in the source tree.");

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

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? 0 : static_cast<int>(ExitCode::Usage);
  }

  try {
    for (auto* sub : app.get_subcommands()) {
      auto it = actions.find(sub);
      if (it != actions.end()) {
        return it->second();
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
