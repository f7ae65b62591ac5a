// A C call that never returns, for the wait-for graph's Python shapes
// (tests/targets/py_gil_ccall.py): called through ctypes.PyDLL it keeps the GIL, so every other
// Python thread waits in take_gil. Each round runs two stages of equal cost at different depths
// (stage_b calls stage_c), so the innermost frames differ from sample to sample while the call
// itself (rocplay_tokenize_forever, and its Python caller) stays: "moving" to a frame-0 comparison,
// one call that never returns to the wait-for graph.
#include <cstdint>

namespace {

volatile std::uint64_t sink = 0;

__attribute__((noinline)) std::uint64_t churn(std::uint64_t x, int rounds) {
  for (int i = 0; i < rounds; ++i) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
  }
  return x;
}

__attribute__((noinline)) std::uint64_t stage_a(std::uint64_t x) {
  return churn(x, 4000000);
}

__attribute__((noinline)) std::uint64_t stage_c(std::uint64_t x) {
  for (int i = 0; i < 4000000; ++i) {
    x = (x ^ (x >> 7)) * 0x9E3779B97F4A7C15ULL;
  }
  return x;
}

__attribute__((noinline)) std::uint64_t stage_b(std::uint64_t x) {
  return stage_c(x + 1);
}

} // namespace

extern "C" __attribute__((visibility("default"))) void rocplay_tokenize_forever() {
  std::uint64_t x = 1;
  for (;;) {
    x = stage_a(x); // rocplay-test: busy call line
    x = stage_b(x);
    sink = x;
  }
}
