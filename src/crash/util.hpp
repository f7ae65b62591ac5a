// Small text helpers for the crash-evidence readers, beside the shared ones of
// core/text_scan.hpp. Internal to src/crash.
#pragma once

#include "core/text_scan.hpp"
#include "rocplay/mi/value.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace rocplay::crash::detail {

using text_scan::hex;
using text_scan::is_digit;
using text_scan::is_hex;
using text_scan::is_space;
using text_scan::parse_dec;
using text_scan::parse_hex;
using text_scan::parse_number;
using text_scan::trim;

inline bool is_ident(char c) {
  return is_digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

inline std::size_t indent_of(std::string_view s) {
  std::size_t i = 0;
  while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) {
    ++i;
  }
  return i;
}

// The token of hex digits (with an optional 0x) at the start of s.
inline std::string_view hex_token(std::string_view s) {
  std::size_t i = (s.starts_with("0x") || s.starts_with("0X")) ? 2 : 0;
  const std::size_t start = i;
  while (i < s.size() && is_hex(s[i]) && i - start < 17) {
    ++i;
  }
  return s.substr(0, i);
}
inline std::string_view digit_token(std::string_view s) {
  std::size_t i = 0;
  while (i < s.size() && is_digit(s[i]) && i < 19) {
    ++i;
  }
  return s.substr(0, i);
}

// The number right after `key` in s (`pid 4411`, `pasid:32770`, `pid=12`), if any.
inline std::optional<std::uint64_t> number_after(std::string_view s, std::string_view key) {
  const auto at = s.find(key);
  if (at == std::string_view::npos) {
    return std::nullopt;
  }
  auto rest = s.substr(at + key.size());
  const auto hex = hex_token(rest);
  if (hex.size() > 2 && (hex[1] == 'x' || hex[1] == 'X')) {
    return parse_hex(hex);
  }
  return parse_dec(digit_token(rest));
}

// The word (up to a space, comma or closing bracket, at most 256 bytes) right after `key`.
inline std::string_view word_after(std::string_view s, std::string_view key) {
  const auto at = s.find(key);
  if (at == std::string_view::npos) {
    return {};
  }
  auto rest = s.substr(at + key.size());
  std::size_t i = 0;
  while (i < rest.size() && !is_space(rest[i]) && rest[i] != ',' && rest[i] != ')' &&
         rest[i] != ']' && i < 256) {
    ++i;
  }
  return mi::utf8_prefix(rest, i); // the length cap may fall inside a character
}

// A tab becomes a space.
inline std::string sanitize(std::string_view s, std::size_t max = 400) {
  return text_scan::sanitize(s, max, ' ');
}

// Mostly non-text: NUL, or many control/high bytes in a short window.
inline bool looks_binary(std::string_view s) {
  std::size_t bad = 0;
  const std::size_t n = s.size() < 256 ? s.size() : 256;
  for (std::size_t i = 0; i < n; ++i) {
    const auto u = static_cast<unsigned char>(s[i]);
    if (u == 0) {
      return true;
    }
    bad += (u < 0x20 && u != '\t' && u != '\r' && u != 0x1b) ? 1 : 0;
  }
  return bad * 8 > n;
}

} // namespace rocplay::crash::detail
