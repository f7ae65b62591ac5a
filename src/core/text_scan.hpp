// The small text and number helpers the log readers share (crash evidence, agent logs, code-object
// URIs, /proc files): ASCII classes, trimming, fields, bounded number parsing, `0x` hex and
// sanitising untrusted lines. Header-only; internal to src/ (layer core, docs/architecture.md).
#pragma once

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace rocplay::text_scan {

inline bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v';
}
inline bool is_digit(char c) {
  return c >= '0' && c <= '9';
}
inline bool is_hex(char c) {
  return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
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

// The next field of `line` from `pos`, fields separated by blanks and tabs; advances `pos` past
// it. Empty at the end.
inline std::string_view next_field(std::string_view line, std::size_t& pos) {
  while (pos < line.size() && (line[pos] == ' ' || line[pos] == '\t')) {
    ++pos;
  }
  const std::size_t start = pos;
  while (pos < line.size() && line[pos] != ' ' && line[pos] != '\t') {
    ++pos;
  }
  return line.substr(start, pos - start);
}

inline std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') {
      c = static_cast<char>(c - 'A' + 'a');
    }
  }
  return out;
}

// All of s as a number in `base`: digits only (no sign, no space), and it fits in 64 bits.
inline std::optional<std::uint64_t> parse_digits(std::string_view s, int base) {
  std::uint64_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v, base);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size()) {
    return std::nullopt;
  }
  return v;
}
// `0x7f20f5e534c4`, `00007f20f5e534c4`.
inline std::optional<std::uint64_t> parse_hex(std::string_view s) {
  if (s.starts_with("0x") || s.starts_with("0X")) {
    s.remove_prefix(2);
  }
  return parse_digits(s, 16);
}
inline std::optional<std::uint64_t> parse_dec(std::string_view s) {
  return parse_digits(s, 10);
}
// Like strtoull(..., 0) without octal: `0x..` hex, otherwise decimal.
inline std::optional<std::uint64_t> parse_number(std::string_view s) {
  if (s.starts_with("0x") || s.starts_with("0X")) {
    return parse_hex(s);
  }
  return parse_dec(s);
}

inline std::string hex(std::uint64_t v) {
  static constexpr char kDigits[] = "0123456789abcdef";
  char buf[18];
  char* p = buf + sizeof buf;
  do {
    *--p = kDigits[v & 0xF];
    v >>= 4;
  } while (v != 0);
  *--p = 'x';
  *--p = '0';
  return std::string(p, buf + sizeof buf);
}

// Printable ASCII only, at most `max` bytes (then `...`): what goes into messages and JSON from
// untrusted lines. A tab becomes `tab`, any other byte outside printable ASCII `?`.
inline std::string sanitize(std::string_view s, std::size_t max, char tab) {
  std::string out;
  out.reserve(s.size() < max ? s.size() : max);
  for (char c : s) {
    if (out.size() >= max) {
      out += "...";
      break;
    }
    const auto u = static_cast<unsigned char>(c);
    out.push_back(u >= 0x20 && u < 0x7f ? c : (c == '\t' ? tab : '?'));
  }
  return out;
}

// Levenshtein distance, for "did you mean" hints. Names are short; anything over 64 bytes is no
// misspelling worth suggesting for and counts as wholly different.
inline std::size_t edit_distance(std::string_view a, std::string_view b) {
  if (a.size() > 64 || b.size() > 64) {
    return std::max(a.size(), b.size());
  }
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) {
    row[j] = j;
  }
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diag = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t up = row[j];
      const std::size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + cost});
      diag = up;
    }
  }
  return row[b.size()];
}

// A duration as people write it in options and playbooks: seconds (`30`, `2.5`) or a number with
// a unit (`500ms`, `30s`, `2m`, `2min`).
struct Duration {
  std::optional<double> ms; // nullopt: no number, or a unit not known
  std::string_view unit;    // what followed the number, when there was one
};
inline Duration parse_duration(std::string_view text) {
  Duration d;
  double value = 0;
  const char* begin = text.data();
  const char* end = begin + text.size();
  const auto [p, ec] = std::from_chars(begin, end, value);
  if (ec != std::errc() || p == begin) {
    return d;
  }
  d.unit = std::string_view(p, static_cast<std::size_t>(end - p));
  if (d.unit.empty() || d.unit == "s") {
    d.ms = value * 1000;
  } else if (d.unit == "ms") {
    d.ms = value;
  } else if (d.unit == "m" || d.unit == "min") {
    d.ms = value * 60'000;
  }
  return d;
}

} // namespace rocplay::text_scan
