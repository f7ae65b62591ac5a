// Crash evidence from a process that really died: a CPU program writes a level-3 API-call log and
// segfaults inside a call; `rocplay postmortem` reads the log (and the exit status, as the crash
// seed's collection script records it) back into a verdict.
#include "cli_util.hpp"

#include <catch2/catch.hpp>

#include <fstream>

using namespace rocplay::testing;

TEST_CASE("postmortem names the call a segfaulted process died in") {
  TempDir dir;
  const std::string log_pattern = dir.path() + "/kernel_api_%i.log";
  const CliRun crashed = run_program({find_built("api_log_crash"), log_pattern, "6"});
  REQUIRE(crashed.exit_code == 128 + SIGSEGV); // 139, as a shell reports it
  // What the seed's collect_crash_diagnostics.sh writes after the trial.
  std::ofstream(dir.path() + "/crash_diagnostics.json")
      << nlohmann::json{{"exit_code", crashed.exit_code}, {"gpu_arch", ""}}.dump();

  const CliRun pm = run_rocplay({"postmortem", dir.path(), "--format", "json", "--no-progress"});
  INFO(pm.err);
  CHECK(pm.exit_code == 1); // findings
  const auto j = nlohmann::json::parse(pm.out);
  const auto& crash = j["summary"]["crash"];
  REQUIRE(crash.size() >= 1);
  const auto& v = crash[0];
  CHECK(v["id"] == "crash-verdict");
  CHECK(v["details"]["kernel"] == "fused_moe_kernel");
  CHECK(v["details"]["last_call"]["calls_before"] == 6);
  CHECK(v["details"]["last_call"]["returned"] == false);
  CHECK(v["details"]["last_call"]["inputs"][0]["tensors"][0]["shape"] ==
        nlohmann::json::array({16, 7168}));
  CHECK(v["details"]["exit_code"] == 139);
  CHECK(v["next_step"].get<std::string>().find("level 10") != std::string::npos);
  // The log's %i was the dead process's pid.
  bool named = false;
  for (const auto& input : j["inputs"]) {
    if (input["kind"] == "crash-log") {
      named = input["crash"]["pid"].is_number();
    }
  }
  CHECK(named);

  const CliRun text = run_rocplay({"postmortem", dir.path(), "--no-progress"});
  CHECK(text.out.find("CRASH VERDICT") != std::string::npos);
  CHECK(text.out.find("fused_moe_kernel (call #7)") != std::string::npos);
}
