// The dtype readers and the keyword lookup over the kernel tables (see
// kernels/rules.hpp).
#include "kernels/rules.hpp"

#include "kernels/name_parts.hpp"

#include <algorithm>
#include <cctype>

namespace rocplay::kernels {

KernelCategory category_from_keywords(std::string_view lowered) {
  for (const auto& rule : kCategoryRules) {
    if (contains(lowered, rule.needle)) {
      return rule.category;
    }
  }
  return KernelCategory::Unknown;
}

std::string opaque_type_hint(std::string_view name) {
  constexpr std::string_view kOpaque = "OpaqueType<";
  const auto pos = name.find(kOpaque);
  if (pos == std::string_view::npos) {
    return {};
  }
  std::size_t i = pos + kOpaque.size();
  int bytes = 0;
  while (i < name.size() && std::isdigit(static_cast<unsigned char>(name[i])) != 0 &&
         bytes < 1000) {
    bytes = bytes * 10 + (name[i] - '0');
    ++i;
  }
  switch (bytes) {
  case 1:
    return "1-byte dtype (int8/uint8/bool/float8)";
  case 2:
    return "2-byte dtype (float16/bfloat16/int16)";
  case 4:
    return "4-byte dtype (int32/float32)";
  case 8:
    return "8-byte dtype (int64/float64)";
  case 16:
    return "16-byte dtype (complex128)";
  default:
    return bytes > 0 ? std::to_string(bytes) + "-byte dtype" : std::string{};
  }
}

std::string functor_dtype(std::string_view name) {
  constexpr std::array<std::pair<std::string_view, std::string_view>, 8> kScalars = {{
      {"float", "float32"},
      {"double", "float64"},
      {"int", "int32"},
      {"long", "int64"},
      {"bool", "bool"},
      {"signed char", "int8"},
      {"unsigned char", "uint8"},
      {"short", "int16"},
  }};
  for (std::string_view marker : {std::string_view("Functor<"), std::string_view("Functor_")}) {
    auto pos = name.find(marker);
    if (pos == std::string_view::npos) {
      continue;
    }
    pos = name.find('<', pos);
    if (pos == std::string_view::npos) {
      continue;
    }
    const auto end = name.find_first_of(",>", pos + 1);
    const auto arg = trim(name.substr(pos + 1, end == std::string_view::npos ? 0 : end - pos - 1));
    for (const auto& [type, dtype] : kScalars) {
      if (arg == type) {
        return std::string(dtype);
      }
    }
  }
  return {};
}

std::string dtype_from_tokens(std::string_view name) {
  for (const auto& token : kDtypeTokens) {
    if (contains(name, token.needle)) {
      return std::string(token.dtype);
    }
  }
  return {};
}

std::string dtype_from_underscored(std::string_view name) {
  constexpr std::array<std::string_view, 12> kMarkers = {
      "mxfp4", "mxfp8", "bf16", "fp16", "f16", "fp8", "e4m3", "e5m2", "fp32", "f32", "int8", "i8"};
  std::size_t start = 0;
  while (start <= name.size()) {
    auto end = name.find('_', start);
    if (end == std::string_view::npos) {
      end = name.size();
    }
    const auto token = name.substr(start, end - start);
    for (auto marker : kMarkers) {
      if (!token.empty() && contains(token, marker)) {
        return std::string(token);
      }
    }
    start = end + 1;
  }
  return {};
}

} // namespace rocplay::kernels
