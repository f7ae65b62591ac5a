// What `rocplay launch` reads from cuda-gdb's own output when a kernel's fault ends the program
// without an exception stop: the real H100 recordings of fixtures/cuda-gdb/h100-launch/.
#include "rocplay/launch.hpp"
#include "rocplay/mi/transcript.hpp"

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
  const auto errors = session::cuda_api_errors(exchanges);
  REQUIRE(errors.size() == 2);
  CHECK(errors[0] == "Returning 715 (CUDA_ERROR_ILLEGAL_INSTRUCTION) from cuCtxSynchronize_v2");
  CHECK(errors[1] == "cudaDeviceSynchronize returned cudaErrorIllegalInstruction(CUresult=715): an "
                     "illegal instruction was encountered");
  CHECK(session::cuda_api_errors(exchanges, 1).size() == 1);
}

TEST_CASE("launch evidence: a fault stop is not a lost program") {
  // The device assert stopped on CUDA_EXCEPTION_12; with `api_failures stop` the same
  // out-of-bounds store stopped on CUDA_EXCEPTION_4 after the failing call was reported.
  const auto assert_stop = exchanges_of("device_assert.rec");
  CHECK_FALSE(session::program_lost(assert_stop));
  CHECK(session::cuda_api_errors(assert_stop).empty());
  const auto api_stop = exchanges_of("oob_store_api_failures.rec");
  CHECK_FALSE(session::program_lost(api_stop));
}
