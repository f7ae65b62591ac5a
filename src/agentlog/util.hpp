// Small text helpers of the agent-log parser and analysis, beside the shared ones of
// core/text_scan.hpp. Internal to src/agentlog.
#pragma once

#include "core/text_scan.hpp"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace rocplay::agentlog::detail {

using text_scan::hex;
using text_scan::is_digit;
using text_scan::is_hex;
using text_scan::is_space;
using text_scan::lower;
using text_scan::parse_dec;
using text_scan::parse_hex;
using text_scan::parse_number;
using text_scan::trim;

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

// Printable ASCII only, bounded: what goes into messages and JSON from untrusted lines.
inline std::string sanitize(std::string_view s, std::size_t max = 512) {
  return text_scan::sanitize(s, max, '?');
}

} // namespace rocplay::agentlog::detail
