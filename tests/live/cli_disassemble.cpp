// `rocplay run hang-triage` disassembles around the stuck PCs while the target is stopped: the
// spinning threads' loop in start_sync, from real gdb, with the instructions in the JSON.
#include "cli_util.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

using namespace rocplay;
using namespace rocplay::testing;

TEST_CASE("rocplay run hang-triage: the spin loop of the threads in start_sync, from gdb") {
  SpinTarget target;
  TempDir dir;
  const std::string out = dir.path() + "/report.json";
  const auto r =
      run_rocplay({"run", "hang-triage", "--pid", std::to_string(target.pid()), "--debugger", "gdb",
                   "--attach-timeout", "30", "--timeout", "20", "--format", "json", "-o", out});
  INFO("stderr: " << r.err);
  REQUIRE_FALSE(r.timed_out);
  CHECK((r.exit_code == 0 || r.exit_code == 1));
  std::ifstream in(out);
  const auto j = nlohmann::json::parse(in);
  bool step_ran = false;
  for (const auto& s : j.at("run").at("steps")) {
    if (s.at("kind") == "disassemble") {
      INFO(s.dump());
      step_ran = true;
      CHECK(s.at("status") == "ok");
      CHECK(s.at("command_count").get<int>() >= 2); // the spinning PC and the blocked ones
    }
  }
  CHECK(step_ran);
  const auto& code = j.at("snapshot").at("code");
  std::size_t spinning = 0;
  for (const auto& c : code) {
    INFO(c.dump());
    CHECK(c.at("gpu") == false);
    CHECK(c.at("arch") == "x86-64");
    CHECK(!c.at("instructions").empty());
    if (c.at("function") == "start_sync") {
      ++spinning;
      REQUIRE(c.at("loop").is_object());
      CHECK(c.at("loop").at("spin") == true);
      CHECK(c.at("loop").at("summary").get<std::string>().starts_with("spin loop of "));
    }
  }
  CHECK(spinning >= 1);
  CHECK(j.at("run").at("target").at("detached") == true);
  CHECK(j.at("run").at("target").at("left_stopped") == false);
  require_running_again(target);
}
