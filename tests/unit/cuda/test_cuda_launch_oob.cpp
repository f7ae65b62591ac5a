// The out-of-bounds store launched under cuda-gdb with `--set 'cuda api_failures stop'` on an H100
// (fixtures/cuda-gdb/h100-launch/oob_store_api_failures.rec): the exception's own PC and line
// (the store at oob_store.cu:8), not the frame's, which lies past it at line 10.
#include "../snapshot/support.hpp"

#include "rocplay/core/fault.hpp"
#include "rocplay/heuristics/heuristics.hpp"

#include <catch2/catch.hpp>

using namespace rocplay;

TEST_CASE("cuda launch (H100): the out-of-bounds store's fault at the store's own line") {
  const Snapshot s = test::load("cuda-gdb/h100-launch/oob_store_api_failures.rec");
  REQUIRE(s.fault);
  CHECK(s.fault->kind == FaultKind::IllegalInstruction);
  CHECK(s.fault->signal == "CUDA_EXCEPTION_4");
  CHECK(s.fault->on_gpu);
  CHECK(s.fault->pc == 0x7ffddb7adc40u); // the exception's pc; the frame's is 0x...dc60
  CHECK(s.fault->line == 8u);
  CHECK(s.fault->file == "/home/dev/repro/oob_store.cu");
  CHECK(s.fault->function == "oob_store");
  CHECK(s.fault->block == "(2,0,0)");
  const auto findings = heuristics::run(s);
  REQUIRE_FALSE(findings.empty());
  CHECK(findings.front().id == "gpu-fault");
  CHECK(findings.front().title.find("oob_store") != std::string::npos);
  REQUIRE_FALSE(findings.front().locations.empty());
  CHECK(findings.front().locations.front().line == 8);
}
