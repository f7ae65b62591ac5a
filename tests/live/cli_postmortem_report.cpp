// `rocplay postmortem` text output: one input gets the live run's full report; several keep the
// summary (with --details, every input's report too); cross-rank events say how their ranks were
// told (file names, --one-event).
#include "cli_util.hpp"

#include <catch2/catch.hpp>

#include <filesystem>

using namespace rocplay::testing;
namespace fs = std::filesystem;

namespace {
const fs::path kFixtures = fs::path(ROCPLAY_SOURCE_DIR) / "fixtures";
} // namespace

TEST_CASE("rocplay postmortem of one input prints the full report") {
  const CliRun r = run_rocplay({"postmortem",
                                (kFixtures / "rocgdb/splitk-clean-two-queues/snapshot.mi").string(),
                                "--no-progress"},
                               std::chrono::seconds(60), {"COLUMNS=100"});
  INFO(r.out << r.err);
  CHECK(r.exit_code == 1);
  CHECK(r.out.rfind("VERDICT  [error 0.85] 2 split-K `_clean` kernels", 0) == 0);
  // The title names every `_clean` kernel involved.
  CHECK(
      r.out.find(
          "(bf16gemm_fp32bf16_tn_96x64_splitk_clean, bf16gemm_fp32bf16_tn_256x64_splitk_clean)") !=
      std::string::npos);
  CHECK(r.out.find("Evidence for the verdict") != std::string::npos);
  CHECK(r.out.find("Dispatches in flight (2)") != std::string::npos);
  CHECK(r.out.find("rocplay postmortem: 1 inputs") == std::string::npos);
}

TEST_CASE("rocplay postmortem of several inputs: the incident, the summary, and details adds each "
          "report") {
  const std::string a = (kFixtures / "rocgdb/splitk-clean-two-queues/snapshot.mi").string();
  const std::string b = (kFixtures / "rocgdb/host-mutex-deadlock/snapshot.mi").string();
  const CliRun plain =
      run_rocplay({"postmortem", a, b, "--no-progress"}, std::chrono::seconds(60), {"COLUMNS=200"});
  INFO(plain.out << plain.err);
  // Incident first (schema v2): where each input stands, one line per place, then the summary.
  CHECK(plain.out.rfind("INCIDENT  2 inputs, 2 read: no cross-rank pattern; the inputs stand in 2 "
                        "places\n",
                        0) == 0);
  const std::string head = plain.out.substr(0, plain.out.find("\n\n"));
  CHECK(head.find("      2 split-K `_clean` kernels") != std::string::npos); // a's verdict
  CHECK(head.find("      host deadlock: threads") != std::string::npos);     // b's
  CHECK(plain.out.find("\n\nrocplay postmortem: 2 inputs") != std::string::npos);
  CHECK(plain.out.find("VERDICT") == std::string::npos);
  const CliRun details = run_rocplay({"postmortem", a, b, "--details", "--no-progress"});
  INFO(details.out);
  CHECK(details.out.find("=== " + a) != std::string::npos);
  CHECK(details.out.find("=== " + b) != std::string::npos);
  CHECK(details.out.find("host deadlock: threads") != std::string::npos);
  CHECK(details.out.find("rocplay postmortem: 2 inputs") != std::string::npos);
}

TEST_CASE("rocplay postmortem: one-event ranks are named in the report") {
  TempDir dir;
  const fs::path nccl = kFixtures / "cuda-gdb/h200x2-rocplay";
  fs::copy_file(nccl / "nccl-rank0.rec", dir.path() + "/first.rec");
  fs::copy_file(nccl / "nccl-rank1.rec", dir.path() + "/second.rec");
  const CliRun one = run_rocplay({"postmortem", dir.path() + "/first.rec",
                                  dir.path() + "/second.rec", "--one-event", "--no-progress"});
  INFO(one.out << one.err);
  CHECK(one.out.find("ranks from meta RANK") != std::string::npos);
  CHECK(one.out.find("[missing-rank]") != std::string::npos);
  CHECK(one.out.find("[collective-wait]") == std::string::npos); // a per-input finding
}

TEST_CASE("rocplay postmortem of cuda-gdb's device-assert stop: Where is the kernel's line") {
  // Real recording (H100): the stop is in cuda-gdb's __assert_fail; check_values called it.
  const CliRun r =
      run_rocplay({"postmortem", (kFixtures / "cuda-gdb/h100-launch/device_assert.rec").string(),
                   "--no-progress"},
                  std::chrono::seconds(60), {"COLUMNS=100"});
  INFO(r.out << r.err);
  CHECK(r.out.rfind("VERDICT  [critical 1.00] GPU fault: assert (CUDA_EXCEPTION_12, Warp Assert) "
                    "in check_values",
                    0) == 0);
  CHECK(r.out.find("  Where:   check_values at device_assert.cu:9 ") != std::string::npos);
  CHECK(r.out.find("kernel check_values: hip_cpp") != std::string::npos);
  CHECK(r.out.find("triton") == std::string::npos);
}
