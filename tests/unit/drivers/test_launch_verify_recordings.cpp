// The real `launch --verify` recordings of fixtures/launch-verify (README) read back, through the
// post-mortem driver, to the verdicts their runs got live.
#include "rocplay/drivers/drivers.hpp"
#include "rocplay/heuristics/launch_verify.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>

using namespace rocplay;
using namespace rocplay::heuristics;

namespace {

const std::string kDir = std::string(ROCPLAY_SOURCE_DIR) + "/fixtures/launch-verify/";

int marker_line(const std::string& marker) {
  std::ifstream in(std::string(ROCPLAY_SOURCE_DIR) + "/tests/targets/race_target.cpp");
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    if (line.find("// FAULT: " + marker) != std::string::npos) {
      return n;
    }
  }
  return -1;
}

Incident read_dir(const std::string& name) {
  postmortem::Options options;
  options.paths = {kDir + name};
  options.jobs = 1;
  return drivers::read_inputs(options, {}, {}).incident;
}

} // namespace

TEST_CASE("launch --verify recordings: a race, a moved fault and a static one read back") {
  const Incident race = read_dir("race");
  REQUIRE(race.verification);
  CHECK(race.verification->id == kVerifyRace);
  REQUIRE(race.verify_runs.size() == 2);
  CHECK(race.verify_runs[0].run.experiment == kAsGiven);
  REQUIRE(race.verify_runs[0].fault);
  CHECK(race.verify_runs[0].fault->at.line == std::optional<std::uint32_t>(marker_line("victim")));
  CHECK(race.verify_runs[1].run.outcome == "exited");
  CHECK(race.verify_runs[1].run.env.at("CUDA_LAUNCH_BLOCKING") == "1");
  CHECK(race.verdict() == &*race.verification); // the incident leads with it

  const Incident moved = read_dir("moved");
  REQUIRE(moved.verification);
  CHECK(moved.verification->id == kVerifyMoved);
  REQUIRE(moved.verification->locations.size() == 2);
  CHECK(moved.verification->locations[0].line ==
        std::optional<std::uint32_t>(marker_line("moved-culprit")));
  CHECK(moved.verification->locations[1].line ==
        std::optional<std::uint32_t>(marker_line("victim")));

  const Incident fixed = read_dir("static");
  REQUIRE(fixed.verification);
  CHECK(fixed.verification->id == kVerifyStatic);
  CHECK(fixed.verification->title.find("read_past_end") != std::string::npos);
  CHECK(fixed.exit_code() == ExitCode::Findings);
}

// The same experiments with cuda-gdb 13.0 on an H200 (fixtures/launch-verify/README.md,
// tests/hardware/verify_faults.sh): two runs as given, two with blocking launches each.
TEST_CASE("launch --verify on a GPU: the reused buffer's victim, a static fault, PyTorch's "
          "index_copy_") {
  const Incident race = read_dir("h200-race");
  REQUIRE(race.verification);
  CHECK(race.verification->id == kVerifyRace);
  CHECK(race.verification->title.find("consume at stream_race.cu:28") != std::string::npos);
  REQUIRE(race.verify_runs.size() == 4);
  for (std::size_t i = 0; i < 4; ++i) {
    CAPTURE(i);
    CHECK(race.verify_runs[i].fault.has_value() == (i < 2)); // blocking launches: no fault
    CHECK(race.verify_runs[i].run.experiment == (i < 2 ? kAsGiven : "blocking launches"));
  }
  CHECK(race.verify_runs[0].fault->on_gpu);
  CHECK(race.verify_runs[0].fault->function == "consume");

  const Incident fixed = read_dir("h200-static");
  REQUIRE(fixed.verification);
  CHECK(fixed.verification->id == kVerifyStatic);
  CHECK(fixed.verification->title == "static fault in consume at stream_race.cu:28");
  REQUIRE(fixed.verify_runs.size() == 4);
  for (const auto& run : fixed.verify_runs) {
    CHECK(run.fault.has_value());
  }

  const Incident index_copy = read_dir("h200-index-copy");
  REQUIRE(index_copy.verification);
  CHECK(index_copy.verification->id == kVerifyStatic);
  CHECK(index_copy.verification->title.find("index_elementwise_kernel") != std::string::npos);
  // With blocking launches the fault is caught at the launching Python line.
  REQUIRE(index_copy.verify_runs.size() == 4);
  CHECK(index_copy.verify_runs[2].launch_line.find("index_copy_oob.py:11") != std::string::npos);
}

// A race between two kernels (stream_race.cu `kernels`, session 23): `produce` spins on one stream
// and then fills the table that `consume`, launched at once on another stream, reads. The runs
// with blocking launches traced where each kernel was launched.
TEST_CASE("launch --verify on a GPU: a kernel reading what a kernel on another stream still "
          "writes") {
  const Incident race = read_dir("h200-kernels");
  REQUIRE(race.verification);
  CHECK(race.verification->id == kVerifyRace);
  CHECK(race.verification->title.find("consume at stream_race.cu:32") != std::string::npos);
  REQUIRE(race.verify_runs.size() == 4);
  for (std::size_t i = 0; i < 4; ++i) {
    CAPTURE(i);
    CHECK(race.verify_runs[i].fault.has_value() == (i < 2)); // blocking launches: no fault
    CHECK(race.verify_runs[i].run.experiment == (i < 2 ? kAsGiven : "blocking launches"));
  }
  CHECK(race.verify_runs[0].fault->function == "consume");
  // The experiments traced the launches (two to warm up, the two that race), the first runs not.
  CHECK_FALSE(race.verify_runs[0].run.traced_launches.has_value());
  CHECK(race.verify_runs[2].run.traced_launches == std::optional<std::uint32_t>(4));
  // Both kernels by name and launching line: the victim at the fault, the writer still running.
  CHECK(race.verify_runs[0].launch_line == "race_of_kernels at stream_race.cu:65");
  const auto& running = race.verify_runs[0].concurrent;
  CHECK(std::find(running.begin(), running.end(),
                  "kernel produce (in flight; launched from race_of_kernels at "
                  "stream_race.cu:64)") != running.end());
  CHECK(race.verification->summary.find("(launched from race_of_kernels at stream_race.cu:65)") !=
        std::string::npos);
  CHECK(race.verification->next_step.find("kernel produce (in flight; launched from "
                                          "race_of_kernels at stream_race.cu:64)") !=
        std::string::npos);
}
