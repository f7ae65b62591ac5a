#include "rocplay/mi/value.hpp"

#include <array>
#include <charconv>
#include <cstring>
#include <new>
#include <optional>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace rocplay::mi {

namespace {

// Digits in `base` (10 or 16) to a value; nullopt for anything else, an empty string, or an
// overflow. A loop over a lookup table: std::from_chars' general path took 3% of a batch
// post-mortem, which reads an address for every wave.
std::optional<std::uint64_t> parse_digits(std::string_view s, unsigned base) {
  static constexpr auto kDigit = [] {
    std::array<std::uint8_t, 256> t{};
    t.fill(0xff);
    for (int c = 0; c < 10; ++c) {
      t['0' + c] = static_cast<std::uint8_t>(c);
    }
    for (int c = 0; c < 6; ++c) {
      t['a' + c] = t['A' + c] = static_cast<std::uint8_t>(10 + c);
    }
    return t;
  }();
  // Up to 16 hex or 19 decimal digits cannot overflow; longer ones take the careful path.
  if (s.empty() || s.size() > (base == 16 ? 16u : 19u)) {
    std::uint64_t v = 0;
    const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v, static_cast<int>(base));
    if (s.empty() || ec != std::errc() || p != s.data() + s.size()) {
      return std::nullopt;
    }
    return v;
  }
  std::uint64_t v = 0;
  for (const char c : s) {
    const unsigned d = kDigit[static_cast<unsigned char>(c)];
    if (d >= base) {
      return std::nullopt;
    }
    v = v * base + d;
  }
  return v;
}

int hex_digit(char c) {
  if (c >= '0' && c <= '9') {
    return c - '0';
  }
  if (c >= 'a' && c <= 'f') {
    return c - 'a' + 10;
  }
  if (c >= 'A' && c <= 'F') {
    return c - 'A' + 10;
  }
  return -1;
}

// Quoted and shortened for error messages.
std::string quoted_excerpt(std::string_view raw) {
  constexpr std::size_t kMax = 40;
  std::string out = "\"";
  out += lossy_utf8(raw.substr(0, kMax));
  if (raw.size() > kMax) {
    out += "...";
  }
  out += "\"";
  return out;
}

} // namespace

namespace detail {

void* allocate_large(std::size_t bytes) {
#if defined(__linux__)
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    throw std::bad_alloc();
  }
  madvise(p, bytes, MADV_HUGEPAGE); // a hint: without THP the pages are ordinary ones
  return p;
#else
  return ::operator new(bytes);
#endif
}

void deallocate_large(void* p, std::size_t bytes) noexcept {
#if defined(__linux__)
  munmap(p, bytes);
#else
  ::operator delete(p, bytes);
#endif
}

} // namespace detail

std::string unescape(std::string_view body) {
  std::string out;
  out.reserve(body.size());
  for (std::size_t i = 0; i < body.size(); ++i) {
    const char c = body[i];
    if (c != '\\' || i + 1 == body.size()) {
      out.push_back(c);
      continue;
    }
    const char e = body[++i];
    switch (e) {
    case 'n':
      out.push_back('\n');
      break;
    case 't':
      out.push_back('\t');
      break;
    case 'r':
      out.push_back('\r');
      break;
    case 'b':
      out.push_back('\b');
      break;
    case 'f':
      out.push_back('\f');
      break;
    case 'e':
      out.push_back('\x1b');
      break;
    case 'a':
      out.push_back('\a');
      break;
    case 'v':
      out.push_back('\v');
      break;
    case 'x': {
      // lldb-mi writes \xNN; take up to two hex digits.
      int value = 0;
      std::size_t digits = 0;
      while (digits < 2 && i + 1 < body.size() && hex_digit(body[i + 1]) >= 0) {
        value = value * 16 + hex_digit(body[++i]);
        ++digits;
      }
      if (digits == 0) {
        out.push_back('x');
      } else {
        out.push_back(static_cast<char>(value));
      }
      break;
    }
    default:
      if (e >= '0' && e <= '7') {
        // GDB prints any other unprintable byte as octal \NNN: decode to the exact byte.
        int value = e - '0';
        std::size_t digits = 1;
        while (digits < 3 && i + 1 < body.size() && body[i + 1] >= '0' && body[i + 1] <= '7') {
          value = value * 8 + (body[++i] - '0');
          ++digits;
        }
        out.push_back(static_cast<char>(value & 0xff));
      } else {
        out.push_back(e); // \\ \" and unknown escapes keep the character
      }
    }
  }
  return out;
}

std::string_view utf8_prefix(std::string_view s, std::size_t max) {
  if (s.size() <= max) {
    return s;
  }
  std::size_t n = max;
  while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xc0) == 0x80) {
    --n;
  }
  return s.substr(0, n);
}

std::string lossy_utf8(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  const std::size_t n = bytes.size();
  std::size_t i = 0;
  while (i < n) {
    const unsigned char c = p[i];
    if (c < 0x80) {
      out.push_back(static_cast<char>(c));
      ++i;
      continue;
    }
    std::size_t len = 0;
    std::uint32_t min = 0;
    if ((c & 0xe0) == 0xc0) {
      len = 2;
      min = 0x80;
    } else if ((c & 0xf0) == 0xe0) {
      len = 3;
      min = 0x800;
    } else if ((c & 0xf8) == 0xf0) {
      len = 4;
      min = 0x10000;
    }
    bool ok = len != 0 && i + len <= n;
    std::uint32_t cp = 0;
    if (ok) {
      cp = c & (0x7f >> len);
      for (std::size_t k = 1; k < len; ++k) {
        if ((p[i + k] & 0xc0) != 0x80) {
          ok = false;
          break;
        }
        cp = (cp << 6) | (p[i + k] & 0x3f);
      }
      ok = ok && cp >= min && cp <= 0x10ffff && !(cp >= 0xd800 && cp <= 0xdfff);
    }
    if (ok) {
      out.append(bytes.substr(i, len));
      i += len;
    } else {
      out += "\xef\xbf\xbd"; // U+FFFD
      ++i;
    }
  }
  return out;
}

std::string escape(std::string_view bytes) {
  static const char kDigits[] = "01234567";
  std::string out;
  out.reserve(bytes.size() + 8);
  for (const char ch : bytes) {
    const auto c = static_cast<unsigned char>(ch);
    switch (c) {
    case '\\':
      out += "\\\\";
      break;
    case '"':
      out += "\\\"";
      break;
    case '\n':
      out += "\\n";
      break;
    case '\t':
      out += "\\t";
      break;
    case '\r':
      out += "\\r";
      break;
    case '\b':
      out += "\\b";
      break;
    case '\f':
      out += "\\f";
      break;
    case 0x1b:
      out += "\\e";
      break;
    case '\a':
      out += "\\a";
      break;
    case '\v':
      out += "\\v";
      break;
    default:
      if (c < 0x20 || c >= 0x7f) {
        out.push_back('\\');
        out.push_back(kDigits[(c >> 6) & 7]);
        out.push_back(kDigits[(c >> 3) & 7]);
        out.push_back(kDigits[c & 7]);
      } else {
        out.push_back(ch);
      }
    }
  }
  return out;
}

std::string Value::bytes() const {
  if (!is_string()) {
    return {};
  }
  return node().escaped ? unescape(raw()) : std::string(raw());
}

Value Value::at(std::size_t i) const {
  if (i >= size()) {
    return {};
  }
  std::uint32_t c = index_ + 1;
  while (i-- > 0) {
    c = nodes_[c].end;
  }
  return {line_, nodes_, c};
}

Value Value::operator[](std::string_view key) const {
  // A string's and a missing value's children are the empty range after them.
  for (std::uint32_t c = index_ + 1; c != node().end; c = nodes_[c].end) {
    const Node& n = nodes_[c];
    if (n.name_len == key.size() && std::memcmp(line_ + n.name_off, key.data(), key.size()) == 0) {
      return {line_, nodes_, c};
    }
  }
  return {};
}

std::vector<Value> Value::all(std::string_view key) const {
  std::vector<Value> out;
  for (const Value child : *this) {
    if (child.name() == key) {
      out.push_back(child);
    }
  }
  return out;
}

AccessError Value::error(std::string message) const {
  return {path(), std::move(message)};
}

Result<std::uint64_t> Value::as_u64() const {
  if (!valid()) {
    return error("missing");
  }
  if (!is_string()) {
    return error("expected unsigned integer, got a tuple or list");
  }
  const std::string_view s = raw();
  const bool hex = s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X');
  const auto v = parse_digits(s.substr(hex ? 2 : 0), hex ? 16 : 10);
  if (!v) {
    return error("expected unsigned integer, got " + quoted_excerpt(s));
  }
  return *v;
}

Result<std::int64_t> Value::as_i64() const {
  if (!valid()) {
    return error("missing");
  }
  if (!is_string()) {
    return error("expected integer, got a tuple or list");
  }
  const std::string_view s = raw();
  std::int64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v, 10);
  if (ec != std::errc() || p != s.data() + s.size() || s.empty()) {
    auto u = as_u64();
    if (u.ok() && u.value() <= static_cast<std::uint64_t>(INT64_MAX)) {
      return static_cast<std::int64_t>(u.value());
    }
    return error("expected integer, got " + quoted_excerpt(s));
  }
  return v;
}

Result<std::uint64_t> Value::as_address() const {
  if (!valid()) {
    return error("missing");
  }
  const std::string_view s = raw();
  if (!is_string() || s.size() < 3 || s[0] != '0' || (s[1] != 'x' && s[1] != 'X')) {
    return error("expected hex integer, got " +
                 (is_string() ? quoted_excerpt(s) : "a tuple or list"));
  }
  const auto v = parse_digits(s.substr(2), 16);
  if (!v) {
    return error("expected hex integer, got " + quoted_excerpt(s));
  }
  return *v;
}

Result<std::string> Value::as_string() const {
  if (!valid()) {
    return error("missing");
  }
  if (!is_string()) {
    return error("expected string, got a tuple or list");
  }
  return bytes();
}

std::string Value::path() const {
  if (!valid()) {
    return "<missing>";
  }
  // Node 0 is the record's root tuple, which holds every other node; each step goes down to
  // the child whose subtree holds this value.
  std::string out;
  std::uint32_t at = 0;
  while (at != index_) {
    const Node& parent = nodes_[at];
    std::size_t pos = 0;
    std::uint32_t c = at + 1;
    while (nodes_[c].end <= index_) {
      c = nodes_[c].end;
      ++pos;
    }
    const Node& n = nodes_[c];
    if (parent.kind == NodeKind::List || n.name_len == 0) {
      out += "[" + std::to_string(pos) + "]";
    } else {
      out += (at == 0 ? "" : ".") + std::string(line_ + n.name_off, n.name_len);
    }
    at = c;
  }
  return out.empty() ? "<record>" : out;
}

std::string Value::to_mi() const {
  if (!valid()) {
    return {};
  }
  std::string out;
  if (node().name_len != 0) {
    out.append(name());
    out.push_back('=');
  }
  switch (node().kind) {
  case NodeKind::String:
    out.push_back('"');
    out.append(raw());
    out.push_back('"');
    break;
  case NodeKind::Tuple:
  case NodeKind::List: {
    out.push_back(node().kind == NodeKind::Tuple ? '{' : '[');
    bool first = true;
    for (const Value child : *this) {
      if (!first) {
        out.push_back(',');
      }
      first = false;
      out += child.to_mi();
    }
    out.push_back(node().kind == NodeKind::Tuple ? '}' : ']');
    break;
  }
  case NodeKind::Missing:
    break;
  }
  return out;
}

} // namespace rocplay::mi
