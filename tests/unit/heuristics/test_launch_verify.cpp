// Culprit or victim (heuristics::compare_verify_runs): the comparison's rules on runs no live
// program gives on demand (a fault that comes and goes under every experiment); the real runs are
// tests/live/launch_verify_run.cpp and tests/unit/drivers/test_launch_verify_recordings.cpp.
#include "rocplay/heuristics/launch_verify.hpp"

#include <catch2/catch.hpp>

#include <string>

using namespace rocplay;
using namespace rocplay::heuristics;

namespace {

VerifyRun run(std::uint32_t index, const std::string& experiment,
              std::optional<std::uint32_t> fault_line) {
  VerifyRun r;
  r.run.index = index;
  r.run.experiment = experiment;
  r.run.outcome = fault_line ? "faulted" : "exited";
  r.run.exit_code = fault_line ? std::nullopt : std::optional<int>(0);
  if (fault_line) {
    FaultSite s;
    s.function = "kern";
    s.at = {"/src/k.cu", *fault_line, "kern", std::nullopt};
    s.on_gpu = true;
    s.signal = "CUDA_EXCEPTION_14";
    r.fault = s;
  }
  return r;
}

} // namespace

TEST_CASE("compare_verify_runs: the rules between the clear cases") {
  SECTION("no fault in the first runs as given: nothing to compare") {
    const auto f = compare_verify_runs({run(1, "as given", std::nullopt)});
    CHECK(f.id == kVerifyNoFault);
    CHECK(f.severity == Severity::Info);
  }
  SECTION("fewer faults with an experiment, but some: intermittent, every tally named") {
    const auto f = compare_verify_runs({run(1, "as given", 9), run(2, "as given", std::nullopt),
                                        run(3, "blocking launches", 9),
                                        run(4, "blocking launches", std::nullopt)});
    CHECK(f.id == kVerifyIntermittent);
    CHECK(f.title.find("as given 1 of 2 runs") != std::string::npos);
    CHECK(f.title.find("blocking launches 1 of 2 runs") != std::string::npos);
  }
  SECTION("a second place wins over a run with no fault: both are named") {
    const auto f = compare_verify_runs({run(1, "as given", 9), run(2, "blocking launches", 20),
                                        run(3, "serialised kernels", std::nullopt)});
    CHECK(f.id == kVerifyMoved);
    CHECK(f.title.find("k.cu:20 with blocking launches") != std::string::npos);
  }
  SECTION("a race needs every run of one experiment without a fault") {
    const auto f = compare_verify_runs({run(1, "as given", 9), run(2, "as given", 9),
                                        run(3, "blocking launches", std::nullopt),
                                        run(4, "blocking launches", std::nullopt)});
    CHECK(f.id == kVerifyRace);
    CHECK(f.kernel == "kern");
    CHECK(f.confidence == Approx(0.8));
  }
  SECTION("one run only: static, with less confidence (no experiment ran)") {
    const auto f = compare_verify_runs({run(1, "as given", 9)});
    CHECK(f.id == kVerifyStatic);
    CHECK(f.confidence < 0.9);
    CHECK(f.summary.find("no experiment ran") != std::string::npos);
  }
  SECTION("a static fault's next step fits its kind: an access, a failed check, arithmetic") {
    auto with_kind = [](VerifyRun r, FaultKind kind) {
      r.fault->kind = kind;
      return r;
    };
    const auto access = compare_verify_runs(
        {with_kind(run(1, "as given", 9), FaultKind::MemoryViolation),
         with_kind(run(2, "blocking launches", 9), FaultKind::MemoryViolation)});
    CHECK(access.id == kVerifyStatic);
    CHECK(access.next_step.find("index or pointer") != std::string::npos);
    const auto check =
        compare_verify_runs({with_kind(run(1, "as given", 9), FaultKind::Assert),
                             with_kind(run(2, "blocking launches", 9), FaultKind::Assert)});
    CHECK(check.id == kVerifyStatic);
    CHECK(check.next_step.find("check that fails at kern at k.cu:9") != std::string::npos);
    CHECK(check.next_step.find("index or pointer") == std::string::npos);
    const auto arithmetic =
        compare_verify_runs({with_kind(run(1, "as given", 9), FaultKind::Arithmetic)});
    CHECK(arithmetic.next_step.find("division by zero") != std::string::npos);
  }
  SECTION("the evidence has one line per run, in order") {
    const auto f = compare_verify_runs({run(1, "as given", 9), run(2, "blocking launches", 9)});
    REQUIRE(f.evidence.size() == 2);
    CHECK(f.evidence[0].starts_with(
        "run 1 (as given): faulted: CUDA_EXCEPTION_14 in kern at k.cu:9"));
    CHECK(f.evidence[1].starts_with("run 2 (blocking launches): faulted"));
  }
}
