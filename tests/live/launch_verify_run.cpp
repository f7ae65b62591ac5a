// `rocplay launch --verify` against real gdb and tests/targets/race_target (issue 48): a fault that
// goes away with blocking launches reads as an asynchronous race with the PC's code a victim, one
// that moves reads as moved (both places named), one in the same place every run as static; the
// runs' recordings compare the same way in `postmortem DIR`; no run leaves a process behind.
#include "cli_util.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <thread>

using namespace rocplay;
using namespace rocplay::testing;
using namespace std::chrono_literals;

namespace {

int race_line(const std::string& marker) {
  return marker_line("race_target.cpp", "// FAULT: " + marker);
}

struct Verified {
  CliRun run;
  nlohmann::json report;
};

// The program writes to rocplay's stdout: the JSON report goes to a file.
Verified verify(const std::string& mode, std::vector<std::string> options,
                const std::string& record_dir = {}) {
  TempDir dir;
  const std::string path = dir.path() + "/report.json";
  std::vector<std::string> a = {"launch",   "--verify", "--debugger", "gdb",
                                "--format", "json",     "-o",         path};
  a.insert(a.end(), options.begin(), options.end());
  if (!record_dir.empty()) {
    a.insert(a.end(), {"--record", record_dir});
  }
  a.insert(a.end(), {"--", find_built("race_target"), mode});
  Verified v;
  v.run = run_rocplay(a, 180s);
  v.report = nlohmann::json::parse(read_file(path), nullptr, false);
  return v;
}

const nlohmann::json& verification(const Verified& v) {
  INFO("stderr: " << v.run.err);
  REQUIRE_FALSE(v.report.is_discarded());
  REQUIRE(v.report["incident"]["verification"].is_object());
  return v.report["incident"]["verification"];
}

} // namespace

TEST_CASE("launch --verify: a fault gone with blocking launches is a race, its PC a victim") {
  TempDir rec;
  const auto v = verify("race", {}, rec.path() + "/runs");
  CHECK(v.run.exit_code == 81); // the first run's: it faulted
  const auto& ver = verification(v);
  CHECK(ver["verdict"]["id"] == "verify-async-race");
  CHECK(v.report["incident"]["verdict"]["id"] == "verify-async-race");
  const auto& runs = ver["runs"];
  REQUIRE(runs.size() == 4); // 2 as given, 2 with blocking launches
  for (std::size_t i = 0; i < 2; ++i) {
    CHECK(runs[i]["experiment"] == "as given");
    CHECK(runs[i]["outcome"] == "faulted");
    CHECK(runs[i]["fault"]["function"].get<std::string>().find("read_results") !=
          std::string::npos);
    CHECK(runs[i]["fault"]["line"] == race_line("victim"));
  }
  for (std::size_t i = 2; i < 4; ++i) {
    CHECK(runs[i]["experiment"] == "blocking launches");
    CHECK(runs[i]["env"]["CUDA_LAUNCH_BLOCKING"] == "1");
    CHECK(runs[i]["outcome"] == "exited");
    CHECK(runs[i]["exit_code"] == 0);
    CHECK(runs[i]["fault"].is_null());
  }
  // The racer's candidate: the worker thread, in the code that fills the results.
  CHECK(runs[0]["concurrent"].dump().find("fill_results") != std::string::npos);
  // The first run's own report is as `launch` gives it.
  CHECK(v.report["findings"][0]["id"] == "host-fault");
  CHECK(stray_process(find_built("race_target")).empty());

  // Every run was recorded, and the recordings compare again without the program.
  std::size_t recordings = 0;
  for (const auto& e : std::filesystem::directory_iterator(rec.path() + "/runs")) {
    recordings += e.path().extension() == ".mi" ? 1 : 0;
  }
  CHECK(recordings == 4);
  const auto pm = run_rocplay({"postmortem", rec.path() + "/runs", "--format", "json"}, 60s);
  INFO("postmortem stderr: " << pm.err);
  const auto j = nlohmann::json::parse(pm.out, nullptr, false);
  REQUIRE_FALSE(j.is_discarded());
  CHECK(j["incident"]["verdict"]["id"] == "verify-async-race");
  CHECK(j["incident"]["verification"]["runs"].size() == 4);
  CHECK(j["incident"]["verification"]["runs"][2]["outcome"] == "exited");
  const auto text = run_rocplay({"postmortem", rec.path() + "/runs"}, 60s, {"COLUMNS=100"});
  CHECK(unwrapped(text.out).find("asynchronous race: the code at the fault (read_results at "
                                 "race_target.cpp:" +
                                 std::to_string(race_line("victim")) + ") is likely a victim") !=
        std::string::npos);
}

TEST_CASE("launch --verify: the experiments trace kernel launches, the first run does not") {
  // race_target stub launches its "kernel" the way nvcc's code does: wrapper, stub,
  // cudaLaunchKernel. The runs after the first stop at each launch and keep where it came from.
  TempDir rec;
  const auto v = verify("stub", {"--repeats", "1"}, rec.path() + "/runs");
  const auto& ver = verification(v);
  CHECK(ver["verdict"]["id"] == "verify-async-race");
  const auto& runs = ver["runs"];
  REQUIRE(runs.size() == 2);
  CHECK(runs[0]["launch_sites"].empty()); // as given: its timing is the evidence
  const std::string launched = "main at race_target.cpp:" +
                               std::to_string(marker_line("race_target.cpp", "// LAUNCH: stub"));
  REQUIRE(runs[1]["launch_sites"].size() == 1);
  CHECK(runs[1]["launch_sites"][0]["kernel"] == "fill_kernel");
  CHECK(runs[1]["launch_sites"][0]["where"] == launched);
  CHECK(ver["verdict"]["evidence"][1].get<std::string>().find("1 kernel launch traced") !=
        std::string::npos);
  CHECK(stray_process(find_built("race_target")).empty());
  // The recordings keep the sites: a post-mortem reads them back.
  const auto pm = run_rocplay({"postmortem", rec.path() + "/runs", "--format", "json"}, 60s);
  const auto j = nlohmann::json::parse(pm.out, nullptr, false);
  REQUIRE_FALSE(j.is_discarded());
  const auto& again = j["incident"]["verification"]["runs"];
  REQUIRE(again.size() == 2);
  CHECK(again[1]["launch_sites"] == runs[1]["launch_sites"]);
  const auto text = run_rocplay({"postmortem", rec.path() + "/runs"}, 60s, {"COLUMNS=200"});
  CHECK(unwrapped(text.out).find("Launched: fill_kernel from " + launched) != std::string::npos);
}

TEST_CASE("launch --verify: a fault that moves under blocking launches names both places") {
  const auto v = verify("moved", {});
  CHECK(v.run.exit_code == 81);
  const auto& ver = verification(v);
  CHECK(ver["verdict"]["id"] == "verify-fault-moved");
  // The culprit's place leads the locations, the victim's follows.
  const auto& loc = ver["verdict"]["locations"];
  REQUIRE(loc.size() == 2);
  CHECK(loc[0]["line"] == race_line("moved-culprit"));
  CHECK(loc[1]["line"] == race_line("victim"));
  const auto title = ver["verdict"]["title"].get<std::string>();
  CHECK(title.find("read_results") != std::string::npos);
  CHECK(title.find("fill_results") != std::string::npos);
  CHECK(stray_process(find_built("race_target")).empty());
}

TEST_CASE("launch --verify: the same place in every run is a static fault (text report)") {
  TempDir dir;
  const auto r =
      run_rocplay({"launch", "--verify", "--repeats", "1", "--debugger", "gdb", "-o",
                   dir.path() + "/report.txt", "--", find_built("race_target"), "static"},
                  120s, {"COLUMNS=100"});
  INFO("stderr: " << r.err);
  CHECK(r.exit_code == 81);
  const std::string text = unwrapped(read_file(dir.path() + "/report.txt"));
  CHECK(text.find("VERIFY [error 0.90] static fault in read_past_end at race_target.cpp:" +
                  std::to_string(race_line("static"))) != std::string::npos);
  CHECK(text.find("run 1 (as given): faulted") != std::string::npos);
  CHECK(text.find("run 2 (blocking launches): faulted") != std::string::npos);
  CHECK(text.find("run 3") == std::string::npos); // --repeats 1: one run of each
  CHECK(stray_process(find_built("race_target")).empty());
}

TEST_CASE("launch --verify: the user's experiment is set for its runs and compared") {
  const auto v = verify("race", {"--repeats", "1", "--experiment", "RACE_TARGET_SERIAL=1"});
  const auto& ver = verification(v);
  const auto& runs = ver["runs"];
  REQUIRE(runs.size() == 3);
  CHECK(runs[2]["experiment"] == "RACE_TARGET_SERIAL=1");
  CHECK(runs[2]["env"]["RACE_TARGET_SERIAL"] == "1");
  CHECK(runs[2]["env"].count("CUDA_LAUNCH_BLOCKING") == 0);
  CHECK(runs[2]["outcome"] == "exited"); // the program saw the variable and serialised
  CHECK(ver["verdict"]["id"] == "verify-async-race");
}

TEST_CASE("launch --verify: without a fault nothing runs again") {
  TempDir dir;
  const auto r =
      run_rocplay({"launch", "--verify", "--debugger", "gdb", "--format", "json", "-o",
                   dir.path() + "/r.json", "--", find_built("fault_target"), "exit", "0"},
                  60s);
  INFO("stderr: " << r.err);
  CHECK(r.exit_code == 0);
  const auto j = nlohmann::json::parse(read_file(dir.path() + "/r.json"), nullptr, false);
  REQUIRE_FALSE(j.is_discarded());
  CHECK(j["incident"]["verification"]["verdict"]["id"] == "verify-no-fault");
  CHECK(j["incident"]["verification"]["runs"].size() == 1);
}

TEST_CASE("launch --verify: its options are checked before anything runs") {
  const auto no_verify = run_rocplay(
      {"launch", "--experiment", "A=1", "--", find_built("race_target"), "static"}, 30s);
  CHECK(no_verify.exit_code == 64);
  CHECK(no_verify.err.find("--experiment is for --verify") != std::string::npos);
  const auto bad_name = run_rocplay({"launch", "--verify", "--debugger", "gdb", "--experiment",
                                     "1A=1", "--", find_built("race_target"), "static"},
                                    30s);
  CHECK(bad_name.exit_code == 64);
  CHECK(bad_name.err.find("not NAME=VALUE") != std::string::npos);
  const auto repeats = run_rocplay({"launch", "--verify", "--debugger", "gdb", "--repeats", "0",
                                    "--", find_built("race_target"), "static"},
                                   30s);
  CHECK(repeats.exit_code == 64);
  // No run started: the program's first line never came.
  CHECK(no_verify.out.find("race_target static") == std::string::npos);
  CHECK(bad_name.out.find("race_target static") == std::string::npos);
  CHECK(repeats.out.find("race_target static") == std::string::npos);
}
