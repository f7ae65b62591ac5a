// Small text helpers shared by the agent-log parser and analysis. Internal to src/agentlog.
#pragma once

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace rocplay::agentlog::detail {

inline bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v';
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

inline bool is_hex(char c) {
  return std::isxdigit(static_cast<unsigned char>(c)) != 0;
}
inline bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

// `0x7f20f5e534c4`, `00007f20f5e534c4`: at most 16 hex digits, nothing else.
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
    const int d = is_digit(c) ? c - '0' : (std::tolower(static_cast<unsigned char>(c)) - 'a' + 10);
    v = (v << 4) | static_cast<std::uint64_t>(d);
  }
  return v;
}

inline std::optional<std::uint64_t> parse_dec(std::string_view s) {
  if (s.empty() || s.size() > 19) {
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

// Like strtoul(..., 0): `0x..` hex, otherwise decimal.
inline std::optional<std::uint64_t> parse_number(std::string_view s) {
  if (s.starts_with("0x") || s.starts_with("0X")) {
    return parse_hex(s);
  }
  return parse_dec(s);
}

// Leading hex digits of s (after an optional 0x), and how many characters they took.
inline std::optional<std::uint64_t> take_hex(std::string_view s, std::size_t& used) {
  std::size_t i = 0;
  if (s.starts_with("0x") || s.starts_with("0X")) {
    i = 2;
  }
  const std::size_t start = i;
  while (i < s.size() && is_hex(s[i]) && i - start < 17) {
    ++i;
  }
  used = i;
  return parse_hex(s.substr(start, i - start));
}

inline std::string hex(std::uint64_t v) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  do {
    out.insert(out.begin(), kDigits[v & 0xF]);
    v >>= 4;
  } while (v != 0);
  return "0x" + out;
}

inline std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return out;
}

// Printable ASCII only, bounded: what goes into messages and JSON from untrusted lines.
inline std::string sanitize(std::string_view s, std::size_t max = 512) {
  std::string out;
  out.reserve(std::min(s.size(), max));
  for (char c : s) {
    if (out.size() >= max) {
      out += "...";
      break;
    }
    const auto u = static_cast<unsigned char>(c);
    out.push_back(u >= 0x20 && u < 0x7f ? c : '?');
  }
  return out;
}

} // namespace rocplay::agentlog::detail
