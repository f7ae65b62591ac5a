// Kernel family and category names (rocplay/core/names.hpp tables): the `family` and `category`
// of kernel JSON and the report's kernel lines, written out so a changed name fails.
#include "rocplay/core/names.hpp"
#include "rocplay/kernels/kernel_names.hpp"

#include <catch2/catch.hpp>

using namespace rocplay;

TEST_CASE("kernel families keep their names", "[kernels][names]") {
  constexpr NameTable<KernelFamily, 8> expected{{
      {KernelFamily::Unknown, "unknown"},
      {KernelFamily::Triton, "triton"},
      {KernelFamily::Tensile, "tensile"},
      {KernelFamily::CkTile, "ck_tile"},
      {KernelFamily::Aten, "aten"},
      {KernelFamily::Collective, "collective"},
      {KernelFamily::Aiter, "aiter"},
      {KernelFamily::HipCpp, "hip_cpp"},
  }};
  static_assert(names_cover(expected, KernelFamily::HipCpp));
  for (const auto& [value, name] : expected) {
    CHECK(to_string(value) == name);
    CHECK(value_of(expected, to_string(value)) == value);
  }
}

TEST_CASE("kernel categories keep their names", "[kernels][names]") {
  constexpr NameTable<KernelCategory, 12> expected{{
      {KernelCategory::Unknown, "unknown"},
      {KernelCategory::Attention, "attention"},
      {KernelCategory::Gemm, "gemm"},
      {KernelCategory::MoeGemm, "moe_gemm"},
      {KernelCategory::Layernorm, "layernorm"},
      {KernelCategory::Softmax, "softmax"},
      {KernelCategory::Elementwise, "elementwise"},
      {KernelCategory::Reduce, "reduce"},
      {KernelCategory::Router, "router"},
      {KernelCategory::KvCache, "kv_cache"},
      {KernelCategory::Collective, "collective"},
      {KernelCategory::Copy, "copy"},
  }};
  static_assert(names_cover(expected, KernelCategory::Copy));
  for (const auto& [value, name] : expected) {
    CHECK(to_string(value) == name);
    CHECK(value_of(expected, to_string(value)) == value);
  }
}
