// Helpers the collective-record readers share. Internal to src/collectives/.
#pragma once

#include "core/text_scan.hpp"
#include "rocplay/collectives/collectives.hpp"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace rocplay::collectives::detail {

// Untrusted text kept for a report: printable ASCII, bounded.
inline std::string clean(std::string_view s, std::size_t max) {
  return text_scan::sanitize(s, max, ' ');
}

// `[0, 1, 2]` or `0,1,2` (pg_config's `ranks`): the numbers, at most `max` of them.
inline std::vector<int> parse_rank_list(std::string_view s, std::size_t max) {
  std::vector<int> out;
  std::size_t i = 0;
  while (i < s.size() && out.size() < max) {
    if (!text_scan::is_digit(s[i])) {
      ++i;
      continue;
    }
    std::size_t j = i;
    while (j < s.size() && text_scan::is_digit(s[j])) {
      ++j;
    }
    if (auto n = text_scan::parse_dec(s.substr(i, j - i)); n && *n < (1u << 24)) {
      out.push_back(static_cast<int>(*n));
    }
    i = j;
  }
  return out;
}

// The number after `key` in `s` (decimal, or hex with base 16 and an optional `0x`).
inline std::optional<std::uint64_t> number_after(std::string_view s, std::string_view key,
                                                 int base = 10) {
  const auto p = s.find(key);
  if (p == std::string_view::npos) {
    return std::nullopt;
  }
  std::size_t i = p + key.size();
  if (base == 16 && s.substr(i, 2) == "0x") {
    i += 2;
  }
  std::size_t j = i;
  while (j < s.size() && j - i < 20 &&
         (base == 16 ? text_scan::is_hex(s[j]) : text_scan::is_digit(s[j]))) {
    ++j;
  }
  if (j == i) {
    return std::nullopt;
  }
  return text_scan::parse_digits(s.substr(i, j - i), base);
}

// The word after `key`, up to a blank, `,`, `)` or `]`, cleaned.
inline std::string word_after(std::string_view s, std::string_view key, std::size_t max) {
  const auto p = s.find(key);
  if (p == std::string_view::npos) {
    return {};
  }
  const std::size_t i = p + key.size();
  std::size_t j = i;
  while (j < s.size() && s[j] != ' ' && s[j] != ',' && s[j] != ')' && s[j] != ']' && s[j] != '\t') {
    ++j;
  }
  return clean(s.substr(i, j - i), max);
}

// A frame of PyTorch's own collective plumbing or of the interpreter: not the user's line.
inline bool library_frame(std::string_view file) {
  static constexpr std::string_view kLibrary[] = {"torch/distributed/", "torch/_",
                                                  "/threading.py",      "<frozen",
                                                  "torch/nn/parallel/", "torch/utils/"};
  if (file.empty()) {
    return true;
  }
  for (auto lib : kLibrary) {
    if (file.find(lib) != std::string_view::npos) {
      return true;
    }
  }
  return false;
}

// Brackets nested deeper than `max` outside strings: JSON that would cost more than it says.
inline bool json_nesting_within(std::string_view s, std::size_t max) {
  std::size_t depth = 0;
  bool in_string = false;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > max) {
        return false;
      }
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return true;
}

} // namespace rocplay::collectives::detail
