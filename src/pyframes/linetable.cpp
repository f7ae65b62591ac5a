// Location tables of CPython code objects, and the text cleaning every string read from the target
// goes through (include/rocplay/pyframes/pyframes.hpp).
//
// 3.11+ (CPython's Objects/locations.md, and Objects/codeobject.c: advance, get_line_delta,
// scan_varint, scan_signed_varint): a sequence of entries, each starting with a byte whose top
// bit is set; bits 3-6 are the code, bits 0-2 the length in code units less one.
//   15: no location; 14: long form (line delta as a signed varint, then end line delta, column + 1
//   and end column + 1 as varints); 13: no columns (line delta as a signed varint); 10-12: one line
//   form (line delta = code - 10, then two column bytes); 0-9: short form (same line, one byte).
// Varints are 6-bit chunks, low first, 0x40 = more follows; a signed varint's low bit is the sign.
// 3.10 (Objects/lnotab_notes.txt of 3.10, codeobject.c's advance): pairs of (bytecode delta in
// bytes, line delta as a signed byte); -128 means the range has no line.
#include "rocplay/pyframes/pyframes.hpp"

#include <algorithm>
#include <limits>

namespace rocplay::pyframes {

namespace {

class Cursor {
public:
  explicit Cursor(std::span<const std::uint8_t> t) : t_(t) {}
  bool done() const { return i_ >= t_.size(); }
  bool byte(std::uint8_t& b) {
    if (i_ >= t_.size()) {
      return false;
    }
    b = t_[i_++];
    return true;
  }
  bool skip(std::size_t n) {
    if (t_.size() - i_ < n) {
      return false;
    }
    i_ += n;
    return true;
  }
  bool varint(std::uint64_t& v) {
    v = 0;
    unsigned shift = 0;
    std::uint8_t b = 0;
    do {
      if (!byte(b) || shift > 57) {
        return false;
      }
      v |= static_cast<std::uint64_t>(b & 63U) << shift;
      shift += 6;
    } while ((b & 64U) != 0);
    return true;
  }
  bool svarint(std::int64_t& v) {
    std::uint64_t u = 0;
    if (!varint(u)) {
      return false;
    }
    const auto magnitude = static_cast<std::int64_t>(u >> 1U);
    v = (u & 1U) != 0 ? -magnitude : magnitude;
    return true;
  }

private:
  std::span<const std::uint8_t> t_;
  std::size_t i_ = 0;
};

// Lines stay within what an int holds in CPython; a table that walks outside is malformed.
bool add_line(std::int64_t& line, std::int64_t delta) {
  constexpr std::int64_t kMax = std::numeric_limits<std::int32_t>::max();
  if (delta > kMax || delta < -kMax) {
    return false;
  }
  line += delta;
  return line <= kMax && line >= -kMax;
}

} // namespace

std::optional<std::int64_t> line_311(std::span<const std::uint8_t> table, std::int64_t first_line,
                                     std::int64_t index) {
  if (index < 0) {
    return first_line; // PyCode_Addr2Line: not started yet
  }
  Cursor c(table);
  std::int64_t line = first_line;
  std::int64_t address = 0;
  while (!c.done()) {
    std::uint8_t first = 0;
    c.byte(first);
    if ((first & 0x80U) == 0) {
      return std::nullopt; // not the start of an entry: malformed
    }
    const unsigned code = (first >> 3U) & 15U;
    const std::int64_t length = (first & 7U) + 1;
    std::int64_t delta = 0;
    bool ok = true;
    switch (code) {
    case 15: // no location
      break;
    case 14: { // long form
      std::uint64_t skip = 0;
      ok = c.svarint(delta) && c.varint(skip) && c.varint(skip) && c.varint(skip);
      break;
    }
    case 13: // no columns
      ok = c.svarint(delta);
      break;
    case 10:
    case 11:
    case 12: // one line form
      delta = static_cast<std::int64_t>(code) - 10;
      ok = c.skip(2);
      break;
    default: // short form
      ok = c.skip(1);
      break;
    }
    if (!ok || !add_line(line, delta)) {
      return std::nullopt;
    }
    if (index < address + length) {
      return code == 15 ? std::nullopt : std::optional<std::int64_t>(line);
    }
    address += length;
  }
  return std::nullopt;
}

std::optional<std::int64_t> line_310(std::span<const std::uint8_t> table, std::int64_t first_line,
                                     std::int64_t offset) {
  if (offset < 0) {
    return first_line;
  }
  std::int64_t line = first_line;
  std::int64_t end = 0;
  for (std::size_t i = 0; i + 1 < table.size(); i += 2) {
    end += table[i];
    const auto delta = static_cast<std::int8_t>(table[i + 1]);
    const bool none = delta == -128;
    if (!none && !add_line(line, delta)) {
      return std::nullopt;
    }
    if (offset < end) {
      return none ? std::nullopt : std::optional<std::int64_t>(line);
    }
  }
  return std::nullopt;
}

std::string clean_text(std::string_view s, std::size_t max) {
  std::string out;
  out.reserve(std::min(s.size(), max));
  std::size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    std::size_t n = 0;
    std::uint32_t cp = 0;
    if (c < 0x80) {
      n = 1;
      cp = c;
    } else if ((c & 0xE0U) == 0xC0U) {
      n = 2;
      cp = c & 0x1FU;
    } else if ((c & 0xF0U) == 0xE0U) {
      n = 3;
      cp = c & 0x0FU;
    } else if ((c & 0xF8U) == 0xF0U) {
      n = 4;
      cp = c & 0x07U;
    }
    bool valid = n > 0 && i + n <= s.size();
    for (std::size_t k = 1; valid && k < n; ++k) {
      const auto cc = static_cast<unsigned char>(s[i + k]);
      valid = (cc & 0xC0U) == 0x80U;
      cp = (cp << 6U) | (cc & 0x3FU);
    }
    // Overlong forms, surrogates and code points past U+10FFFF are not valid UTF-8.
    valid = valid && !(n == 2 && cp < 0x80) && !(n == 3 && cp < 0x800) &&
            !(n == 4 && (cp < 0x10000 || cp > 0x10FFFF)) && !(cp >= 0xD800 && cp <= 0xDFFF);
    std::string_view piece = valid ? s.substr(i, n) : std::string_view("?");
    if (valid && n == 1 && (cp < 0x20 || cp == 0x7F)) {
      piece = "?"; // one line, no control characters
    }
    if (out.size() + piece.size() > max) {
      break;
    }
    out += piece;
    i += valid ? n : 1;
  }
  return out;
}

std::optional<std::uint32_t> handler_depth(std::span<const std::uint8_t> table,
                                           std::int64_t index) {
  if (index < 0) {
    return std::nullopt;
  }
  const auto at = static_cast<std::uint64_t>(index);
  std::size_t pos = 0;
  // Six bits a byte, most significant first; bit 6 says another byte follows.
  auto varint = [&](std::uint64_t& out) {
    if (pos >= table.size()) {
      return false;
    }
    std::uint8_t b = table[pos++];
    out = b & 63U;
    for (int more = 0; (b & 64U) != 0; ++more) {
      if (pos >= table.size() || more == 8) {
        return false;
      }
      b = table[pos++];
      out = (out << 6U) | (b & 63U);
    }
    return true;
  };
  while (pos < table.size()) {
    if ((table[pos] & 0x80U) == 0) {
      return std::nullopt; // bit 7 marks an entry's first byte
    }
    std::uint64_t start = 0, length = 0, target = 0, depth_lasti = 0;
    if (!varint(start) || !varint(length) || !varint(target) || !varint(depth_lasti)) {
      return std::nullopt;
    }
    if (start > at) {
      return std::nullopt; // entries come in order of their start
    }
    if (at - start < length) {
      return static_cast<std::uint32_t>(std::min<std::uint64_t>(depth_lasti >> 1U, UINT32_MAX));
    }
  }
  return std::nullopt;
}

} // namespace rocplay::pyframes
