// Small text helpers for the crash-evidence readers. Internal to src/crash.
#pragma once

#include "rocplay/mi/value.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace rocplay::crash::detail {

inline bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v';
}
inline bool is_digit(char c) {
  return c >= '0' && c <= '9';
}
inline bool is_hex(char c) {
  return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}
inline bool is_ident(char c) {
  return is_digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

inline std::string_view trim(std::string_view s) {
  while (!s.empty() && is_space(s.front())) {
    s.remove_prefix(1);
  }
  while (!s.empty() && is_space(s.back())) {
    s.remove_suffix(1);
  }
  return s;
}

inline std::size_t indent_of(std::string_view s) {
  std::size_t i = 0;
  while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) {
    ++i;
  }
  return i;
}

// `0x7f..`, `00007f..`: at most 16 hex digits.
inline std::optional<std::uint64_t> parse_hex(std::string_view s) {
  if (s.starts_with("0x") || s.starts_with("0X")) {
    s.remove_prefix(2);
  }
  if (s.empty() || s.size() > 16) {
    return std::nullopt;
  }
  std::uint64_t v = 0;
  for (char c : s) {
    if (!is_hex(c)) {
      return std::nullopt;
    }
    const int d = is_digit(c) ? c - '0' : ((c | 0x20) - 'a' + 10);
    v = (v << 4) | static_cast<std::uint64_t>(d);
  }
  return v;
}

inline std::optional<std::uint64_t> parse_dec(std::string_view s) {
  if (s.empty() || s.size() > 18) {
    return std::nullopt;
  }
  std::uint64_t v = 0;
  for (char c : s) {
    if (!is_digit(c)) {
      return std::nullopt;
    }
    v = v * 10 + static_cast<std::uint64_t>(c - '0');
  }
  return v;
}

inline std::optional<std::uint64_t> parse_number(std::string_view s) {
  if (s.starts_with("0x") || s.starts_with("0X")) {
    return parse_hex(s);
  }
  return parse_dec(s);
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

inline std::string hex(std::uint64_t v) {
  static constexpr char kDigits[] = "0123456789abcdef";
  char buf[19];
  int n = 18;
  do {
    buf[n--] = kDigits[v & 0xF];
    v >>= 4;
  } while (v != 0);
  buf[n--] = 'x';
  buf[n] = '0';
  return std::string(buf + n, buf + 19);
}

// Printable ASCII only, bounded: what goes into messages and JSON from untrusted lines.
inline std::string sanitize(std::string_view s, std::size_t max = 400) {
  std::string out;
  out.reserve(s.size() < max ? s.size() : max);
  for (char c : s) {
    if (out.size() >= max) {
      out += "...";
      break;
    }
    const auto u = static_cast<unsigned char>(c);
    out.push_back(u >= 0x20 && u < 0x7f ? c : (c == '\t' ? ' ' : '?'));
  }
  return out;
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
