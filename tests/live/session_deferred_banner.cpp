// A debugger named on the command line starts without a `--version` process first: the session
// learns its kind and version from `-gdb-version` (SearchEnv::defer_banner, issue 33), and a
// program that does not run as a GDB is still reported as not found, before any target stops.
#include "cli_util.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include <sys/stat.h>

using namespace rocplay;
using namespace rocplay::testing;

namespace {

bool sent(const session::Session& s, const std::string& prefix) {
  const auto& all = s.exchanges();
  return std::any_of(all.begin(), all.end(),
                     [&](const auto& ex) { return ex.command.rfind(prefix, 0) == 0; });
}

} // namespace

TEST_CASE("a session given only the debugger's path learns its kind and version over MI",
          "[live][discovery]") {
  session::Debugger bare;
  bare.path = test_gdb().path; // kind Unknown, version empty: as find_debugger defers them
  REQUIRE(bare.kind == DebuggerKind::Unknown);
  session::Session s(bare, test_options());
  CHECK(s.debugger().kind == DebuggerKind::Gdb);
  CHECK(s.debugger().version == test_gdb().version); // the same line `gdb --version` prints
  CHECK(sent(s, "-gdb-version"));
  // The kind was known in time for the plain-gdb-only setting.
  CHECK(sent(s, "-interpreter-exec console \"maint set target-non-stop off\""));
  // With the banner from `--version`, no -gdb-version is asked.
  session::Session eager(test_gdb(), test_options());
  CHECK_FALSE(sent(eager, "-gdb-version"));
}

TEST_CASE("rocplay run --debugger gdb: the report names gdb and its version, no --version run",
          "[live][discovery]") {
  SpinTarget target;
  const auto r = run_rocplay({"run", "hang-triage", "--pid", std::to_string(target.pid()),
                              "--debugger", "gdb", "--samples", "1", "--format", "json", "-q"});
  INFO("stderr: " << r.err);
  REQUIRE(r.exit_code <= 1);
  const auto doc = nlohmann::json::parse(r.out);
  CHECK(doc["run"]["debugger"]["kind"] == "gdb");
  CHECK(doc["run"]["debugger"]["version"] == test_gdb().version);
  CHECK(target.advances());
}

TEST_CASE("rocplay run --debugger PROGRAM that is no GDB: exit 69, what ran, target untouched",
          "[live][discovery]") {
  SpinTarget target;
  char dir_tmpl[] = "/tmp/rocplay-notgdb-XXXXXX";
  REQUIRE(::mkdtemp(dir_tmpl) != nullptr);
  const std::string dir = dir_tmpl;
  const std::string quits = dir + "/quits";   // exits at once, printing nothing
  const std::string silent = dir + "/silent"; // runs but never answers
  {
    std::ofstream(quits) << "#!/bin/sh\nexit 0\n";
    std::ofstream(silent) << "#!/bin/sh\nexec sleep 60\n";
  }
  ::chmod(quits.c_str(), 0755);
  ::chmod(silent.c_str(), 0755);
  for (const auto& program : {quits, silent}) {
    const auto r = run_rocplay({"run", "hang-triage", "--pid", std::to_string(target.pid()),
                                "--debugger", program, "--samples", "1", "-q"},
                               std::chrono::seconds(60));
    INFO(program << " stderr: " << r.err);
    CHECK(r.exit_code == static_cast<int>(ExitCode::DebuggerNotFound));
    CHECK(r.err.find(program + " does not run as a GDB-family debugger") != std::string::npos);
    CHECK(r.err.find("check that it runs: `" + program + " --version`") != std::string::npos);
  }
  // A playbook for another debugger is refused before the target stops, as before.
  const auto r = run_rocplay(
      {"run", "gpu-state", "--pid", std::to_string(target.pid()), "--debugger", "gdb", "-q"});
  INFO("stderr: " << r.err);
  CHECK(r.exit_code == static_cast<int>(ExitCode::DebuggerNotFound));
  CHECK(r.err.find("needs rocgdb") != std::string::npos);
  CHECK(target.advances());
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
}
