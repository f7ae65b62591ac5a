// How `rocplay launch` tells that cuda-gdb lost the program (a kernel's fault ended it without an
// exception stop): the real H100 recordings of fixtures/cuda-gdb/h100-launch/. The CUDA API errors
// of the same recordings are read by the snapshot (tests/unit/heuristics/test_fault.cpp).
#include "rocplay/mi/transcript.hpp"
#include "rocplay/session/launch.hpp"

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

using namespace rocplay;

namespace {

std::vector<mi::Exchange> exchanges_of(const std::string& name) {
  const auto path =
      std::filesystem::path(ROCPLAY_SOURCE_DIR) / "fixtures/cuda-gdb/h100-launch" / name;
  std::ifstream in(path, std::ios::binary);
  REQUIRE(in);
  std::ostringstream text;
  text << in.rdbuf();
  return mi::read_transcript(text.str());
}

} // namespace

TEST_CASE("launch evidence: the out-of-bounds store cuda-gdb did not stop on") {
  const auto exchanges = exchanges_of("oob_store.rec");
  // The main thread ended, cuda-gdb said "No unwaited-for children left" and stopped bare.
  CHECK(session::program_lost(exchanges));
}

TEST_CASE("launch evidence: a fault stop is not a lost program") {
  // The device assert stopped on CUDA_EXCEPTION_12; with `api_failures stop` the same
  // out-of-bounds store stopped on CUDA_EXCEPTION_4 after the failing call was reported.
  const auto assert_stop = exchanges_of("device_assert.rec");
  CHECK_FALSE(session::program_lost(assert_stop));
  const auto api_stop = exchanges_of("oob_store_api_failures.rec");
  CHECK_FALSE(session::program_lost(api_stop));
}
