#include "cli/commands.hpp"

#include <cstdio>

namespace rocplay::cli::version_command {
namespace {
Action add_version(CLI::App& app) {
  app.add_subcommand("version", "Print rocplay's version")->footer("Exit codes: 0.");
  return [] {
    std::printf("rocplay %s\n", ROCPLAY_VERSION);
    return 0;
  };
}
const bool kRegistered = register_command({"version", 100, &add_version});
} // namespace
} // namespace rocplay::cli::version_command
