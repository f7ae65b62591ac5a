#include "rocplay/report/mi_json.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstring>
#include <vector>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace rocplay::report {
namespace {

constexpr char kHex[] = "0123456789abcdef";

// Length of the valid UTF-8 sequence at p[0..n), or 0 when it is not one (overlong forms,
// surrogates and code points past U+10FFFF included, as RFC 3629 says).
std::size_t utf8_sequence(const unsigned char* p, std::size_t n) {
  const unsigned char c = p[0];
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
  } else {
    return 0;
  }
  if (len > n) {
    return 0;
  }
  std::uint32_t cp = c & (0x7fu >> len);
  for (std::size_t k = 1; k < len; ++k) {
    if ((p[k] & 0xc0) != 0x80) {
      return 0;
    }
    cp = (cp << 6) | (p[k] & 0x3fu);
  }
  if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) {
    return 0;
  }
  return len;
}

// Index of the first byte below 0x20 or above 0x7f (or a quote or backslash: JSON escapes them),
// or n. Nearly every MI string is plain ASCII: it is copied as it is.
std::size_t plain_prefix(const char* s, std::size_t n) {
  std::size_t i = 0;
#if defined(__SSE2__)
  const __m128i space = _mm_set1_epi8(0x20);
  const __m128i quote = _mm_set1_epi8('"');
  const __m128i backslash = _mm_set1_epi8('\\');
  for (; i + 16 <= n; i += 16) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i));
    // Signed compare: bytes >= 0x80 are negative, so "below 0x20" catches them too.
    const __m128i bad =
        _mm_or_si128(_mm_cmplt_epi8(v, space),
                     _mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, backslash)));
    const int mask = _mm_movemask_epi8(bad);
    if (mask != 0) {
      return i + static_cast<std::size_t>(__builtin_ctz(static_cast<unsigned>(mask)));
    }
  }
#endif
  for (; i < n; ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x20 || c >= 0x80 || c == '"' || c == '\\') {
      return i;
    }
  }
  return n;
}

bool valid_utf8(std::string_view bytes) {
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  const std::size_t n = bytes.size();
  for (std::size_t i = 0; i < n;) {
    if (p[i] < 0x80) {
      ++i;
      continue;
    }
    const std::size_t len = utf8_sequence(p + i, n - i);
    if (len == 0) {
      return false;
    }
    i += len;
  }
  return true;
}

// The body of a JSON string (without quotes); invalid UTF-8 becomes U+FFFD.
void append_string_body(JsonBuffer& out, std::string_view bytes) {
  const char* s = bytes.data();
  const std::size_t n = bytes.size();
  std::size_t i = 0;
  while (i < n) {
    const std::size_t run = plain_prefix(s + i, n - i);
    out.append(s + i, run);
    i += run;
    if (i == n) {
      break;
    }
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x80) {
      const std::size_t len = utf8_sequence(reinterpret_cast<const unsigned char*>(s + i), n - i);
      if (len == 0) {
        out += "\xef\xbf\xbd";
        ++i;
      } else {
        out.append(s + i, len);
        i += len;
      }
      continue;
    }
    ++i;
    switch (c) {
    case '"':
      out += "\\\"";
      break;
    case '\\':
      out += "\\\\";
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
    default: {
      const char esc[6] = {'\\', 'u', '0', '0', kHex[c >> 4], kHex[c & 15]};
      out.append(esc, 6);
    }
    }
  }
}

void append_base64(JsonBuffer& out, std::string_view bytes) {
  static const char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::size_t i = 0;
  for (; i + 2 < bytes.size(); i += 3) {
    const auto n = (static_cast<unsigned char>(bytes[i]) << 16) |
                   (static_cast<unsigned char>(bytes[i + 1]) << 8) |
                   static_cast<unsigned char>(bytes[i + 2]);
    const char quad[4] = {kAlphabet[(n >> 18) & 63], kAlphabet[(n >> 12) & 63],
                          kAlphabet[(n >> 6) & 63], kAlphabet[n & 63]};
    out.append(quad, 4);
  }
  if (i + 1 == bytes.size()) {
    const auto n = static_cast<unsigned char>(bytes[i]) << 16;
    const char quad[4] = {kAlphabet[(n >> 18) & 63], kAlphabet[(n >> 12) & 63], '=', '='};
    out.append(quad, 4);
  } else if (i + 2 == bytes.size()) {
    const auto n = (static_cast<unsigned char>(bytes[i]) << 16) |
                   (static_cast<unsigned char>(bytes[i + 1]) << 8);
    const char quad[4] = {kAlphabet[(n >> 18) & 63], kAlphabet[(n >> 12) & 63],
                          kAlphabet[(n >> 6) & 63], '='};
    out.append(quad, 4);
  }
}

// memcpy, inline for the short strings that most MI values are (a call per value cost 7%).
[[gnu::always_inline]] inline void copy_bytes(char* d, const char* s, std::size_t n) {
  if (n > 16) {
    std::memcpy(d, s, n);
  } else if (n >= 8) {
    std::uint64_t a = 0;
    std::uint64_t b = 0;
    std::memcpy(&a, s, 8);
    std::memcpy(&b, s + n - 8, 8);
    std::memcpy(d, &a, 8);
    std::memcpy(d + n - 8, &b, 8);
  } else if (n >= 4) {
    std::uint32_t a = 0;
    std::uint32_t b = 0;
    std::memcpy(&a, s, 4);
    std::memcpy(&b, s + n - 4, 4);
    std::memcpy(d, &a, 4);
    std::memcpy(d + n - 4, &b, 4);
  } else if (n > 0) {
    d[0] = s[0];
    d[n / 2] = s[n / 2];
    d[n - 1] = s[n - 1];
  }
}

// `"text"` for text that needs no escaping.
[[gnu::always_inline]] inline void append_quoted(JsonBuffer& out, std::string_view text) {
  char* p = out.reserve(text.size() + 2);
  *p = '"';
  copy_bytes(p + 1, text.data(), text.size());
  p[text.size() + 1] = '"';
  out.commit(p + text.size() + 2);
}

// An escaped c-string body written straight as a JSON string, when every byte it stands for is
// ASCII (console text: `\n`, `\"`, `\t`). Returns false, having written nothing, for anything
// else (a byte above 0x7f, raw or octal): the caller then decodes it in full. Escapes are
// mi::unescape's.
bool append_escaped_ascii(JsonBuffer& out, std::string_view raw) {
  // Each body byte becomes at most 6 output bytes (`\u00XX`), plus the quotes.
  char* p = out.reserve(6 * raw.size() + 2);
  char* const first = p;
  *p++ = '"';
  auto put = [&p](unsigned char c) {
    switch (c) {
    case '"':
      *p++ = '\\';
      *p++ = '"';
      break;
    case '\\':
      *p++ = '\\';
      *p++ = '\\';
      break;
    case '\n':
      *p++ = '\\';
      *p++ = 'n';
      break;
    case '\t':
      *p++ = '\\';
      *p++ = 't';
      break;
    case '\r':
      *p++ = '\\';
      *p++ = 'r';
      break;
    case '\b':
      *p++ = '\\';
      *p++ = 'b';
      break;
    case '\f':
      *p++ = '\\';
      *p++ = 'f';
      break;
    default: // as append_string_body writes them, so both paths give the same text
      if (c < 0x20) {
        const char esc[6] = {'\\', 'u', '0', '0', kHex[c >> 4], kHex[c & 15]};
        std::memcpy(p, esc, 6);
        p += 6;
      } else {
        *p++ = static_cast<char>(c);
      }
    }
  };
  const std::size_t n = raw.size();
  for (std::size_t i = 0; i < n; ++i) {
    const auto c = static_cast<unsigned char>(raw[i]);
    if (c >= 0x80) {
      out.commit(first); // nothing written
      return false;
    }
    if (c != '\\' || i + 1 == n) {
      put(c);
      continue;
    }
    const char e = raw[++i];
    switch (e) {
    case 'n':
      put('\n');
      break;
    case 't':
      put('\t');
      break;
    case 'r':
      put('\r');
      break;
    case 'b':
      put('\b');
      break;
    case 'f':
      put('\f');
      break;
    case 'e':
      put(0x1b);
      break;
    case 'a':
      put(0x07);
      break;
    case 'v':
      put(0x0b);
      break;
    case 'x': {
      int value = 0;
      std::size_t digits = 0;
      while (digits < 2 && i + 1 < n && std::isxdigit(static_cast<unsigned char>(raw[i + 1]))) {
        const char d = raw[++i];
        value = value * 16 + (d <= '9' ? d - '0' : (d | 0x20) - 'a' + 10);
        ++digits;
      }
      if (digits == 0) {
        put('x');
      } else if (value >= 0x80) {
        out.commit(first);
        return false;
      } else {
        put(static_cast<unsigned char>(value));
      }
      break;
    }
    default:
      if (e >= '0' && e <= '7') {
        int value = e - '0';
        std::size_t digits = 1;
        while (digits < 3 && i + 1 < n && raw[i + 1] >= '0' && raw[i + 1] <= '7') {
          value = value * 8 + (raw[++i] - '0');
          ++digits;
        }
        if ((value & 0xff) >= 0x80) {
          out.commit(first);
          return false;
        }
        put(static_cast<unsigned char>(value & 0xff));
      } else {
        put(static_cast<unsigned char>(e)); // \\ \" and unknown escapes keep the character
      }
    }
  }
  *p++ = '"';
  out.commit(p);
  return true;
}

// A c-string value: its exact bytes when they are UTF-8, else base64 beside a display form.
// `clean`: the record's line has no control byte and no byte above 0x7f, so a string without
// escapes is plain ASCII with nothing to escape (its body holds no quote or backslash).
void append_mi_string(JsonBuffer& out, const mi::Value& v, bool clean) {
  const std::string_view raw = v.raw();
  if (!v.node().escaped) {
    if (clean || plain_prefix(raw.data(), raw.size()) == raw.size()) {
      append_quoted(out, raw);
      return;
    }
    if (valid_utf8(raw)) {
      out.push_back('"');
      append_string_body(out, raw);
      out.push_back('"');
      return;
    }
  }
  if (v.node().escaped && append_escaped_ascii(out, raw)) {
    return;
  }
  const std::string bytes = v.node().escaped ? mi::unescape(raw) : std::string(raw);
  if (valid_utf8(bytes)) {
    out.push_back('"');
    append_string_body(out, bytes);
    out.push_back('"');
    return;
  }
  out += "{\"$base64\":\"";
  append_base64(out, bytes);
  out += "\",\"utf8_lossy\":\"";
  append_string_body(out, bytes);
  out += "\"}";
}

// A result name: the parser takes only [A-Za-z0-9_.-] for one, so it is copied as it is.
void append_name(JsonBuffer& out, std::string_view name) {
  append_quoted(out, name);
}

// True when `line` has no byte below 0x20 and none above 0x7f: then no string in it needs a
// scan of its own.
bool ascii_clean(std::string_view line) {
  const char* s = line.data();
  const std::size_t n = line.size();
  std::size_t i = 0;
#if defined(__SSE2__)
  const __m128i space = _mm_set1_epi8(0x20);
  for (; i + 16 <= n; i += 16) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i));
    if (_mm_movemask_epi8(_mm_cmplt_epi8(v, space)) != 0) {
      return false;
    }
  }
#endif
  for (; i < n; ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x20 || c >= 0x80) {
      return false;
    }
  }
  return true;
}

void append_value(JsonBuffer& out, const mi::Value& value, bool clean);

// True when a tuple can be a plain JSON object: every child named, no name twice, none that
// looks like one of the tags.
bool plain_object(const mi::Value& tuple) {
  constexpr std::size_t kPairwise = 16;
  const std::size_t n = tuple.size();
  if (n <= kPairwise) {
    std::string_view names[kPairwise];
    std::size_t k = 0;
    for (const mi::Value child : tuple) {
      const std::string_view name = child.name();
      if (name.empty() || name[0] == '$') {
        return false;
      }
      for (std::size_t j = 0; j < k; ++j) {
        // Length and first byte first: names of one tuple nearly always differ there, and a
        // memcmp call per pair cost 4% of mi2json.
        if (names[j].size() == name.size() && names[j][0] == name[0] && names[j] == name) {
          return false;
        }
      }
      names[k++] = name;
    }
    return true;
  }
  std::vector<std::string_view> names;
  names.reserve(n);
  for (const mi::Value child : tuple) {
    const std::string_view name = child.name();
    if (name.empty() || name[0] == '$') {
      return false;
    }
    names.push_back(name);
  }
  std::sort(names.begin(), names.end());
  return std::adjacent_find(names.begin(), names.end()) == names.end();
}

bool any_named(const mi::Value& list) {
  for (const mi::Value child : list) {
    if (!child.name().empty()) {
      return true;
    }
  }
  return false;
}

// `{"$tuple":[["name",value],...]}` or `{"$list":[...]}`.
void append_pairs(JsonBuffer& out, const mi::Value& v, std::string_view tag, bool clean) {
  out += "{\"";
  out += tag;
  out += "\":[";
  bool first = true;
  for (const mi::Value child : v) {
    if (!first) {
      out.push_back(',');
    }
    first = false;
    out.push_back('[');
    append_name(out, child.name());
    out.push_back(',');
    append_value(out, child, clean);
    out.push_back(']');
  }
  out += "]}";
}

// A recording's time stamp is digits and `.eE+-` in any order: only a real JSON number is
// written as one.
bool json_number(std::string_view s) {
  std::size_t i = 0;
  auto digits = [&] {
    const std::size_t start = i;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') {
      ++i;
    }
    return i - start;
  };
  if (i < s.size() && s[i] == '-') {
    ++i;
  }
  const std::size_t int_start = i;
  const std::size_t int_digits = digits();
  if (int_digits == 0 || (int_digits > 1 && s[int_start] == '0')) {
    return false;
  }
  if (i < s.size() && s[i] == '.') {
    ++i;
    if (digits() == 0) {
      return false;
    }
  }
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) {
      ++i;
    }
    if (digits() == 0) {
      return false;
    }
  }
  return i == s.size();
}

void append_u64(JsonBuffer& out, std::uint64_t n) {
  char buf[24];
  const auto r = std::to_chars(buf, buf + sizeof buf, n);
  out.append(buf, static_cast<std::size_t>(r.ptr - buf));
}

void append_time(JsonBuffer& out, std::string_view time) {
  if (json_number(time)) {
    out += time;
  } else {
    out.push_back('"');
    append_string_body(out, time);
    out.push_back('"');
  }
}

} // namespace

void append_json_string(JsonBuffer& out, std::string_view bytes) {
  out.push_back('"');
  append_string_body(out, bytes);
  out.push_back('"');
}

namespace {

void append_value(JsonBuffer& out, const mi::Value& value, bool clean) {
  if (value.is_string()) {
    append_mi_string(out, value, clean);
    return;
  }
  if (value.is_list()) {
    if (any_named(value)) {
      append_pairs(out, value, "$list", clean);
      return;
    }
    out.push_back('[');
    bool first = true;
    for (const mi::Value child : value) {
      if (!first) {
        out.push_back(',');
      }
      first = false;
      append_value(out, child, clean);
    }
    out.push_back(']');
    return;
  }
  if (!value.is_tuple()) {
    out += "null"; // a missing value: never part of a parsed record
    return;
  }
  if (!plain_object(value)) {
    append_pairs(out, value, "$tuple", clean);
    return;
  }
  out.push_back('{');
  bool first = true;
  for (const mi::Value child : value) {
    if (!first) {
      out.push_back(',');
    }
    first = false;
    char* p = out.reserve(child.name().size() + 3);
    *p = '"';
    copy_bytes(p + 1, child.name().data(), child.name().size());
    p[child.name().size() + 1] = '"';
    p[child.name().size() + 2] = ':';
    out.commit(p + child.name().size() + 3);
    append_value(out, child, clean);
  }
  out.push_back('}');
}

} // namespace

void append_mi_value_json(JsonBuffer& out, const mi::Value& value) {
  append_value(out, value, false);
}

void append_mi_record_json(JsonBuffer& out, const mi::RecordView& record,
                           const RecordOrigin& origin) {
  out += "{\"line\":";
  append_u64(out, record.line_no());
  if (!origin.direction.empty()) {
    out += ",\"dir\":\"";
    out += origin.direction;
    out += "\",\"time\":";
    append_time(out, origin.time);
  }
  out += ",\"kind\":\"";
  out += mi::to_string(record.kind());
  out.push_back('"');
  if (!record.klass().empty()) {
    out += ",\"class\":";
    append_json_string(out, record.klass());
  }
  if (record.token()) {
    out += ",\"token\":";
    append_u64(out, *record.token());
  }
  switch (record.kind()) {
  case mi::RecordKind::Console:
  case mi::RecordKind::Target:
  case mi::RecordKind::Log:
    out += ",\"text\":";
    append_value(out, record.results(), ascii_clean(record.line()));
    break;
  case mi::RecordKind::Prompt:
  case mi::RecordKind::Error:
    break;
  default:
    out += ",\"values\":";
    append_value(out, record.results(), ascii_clean(record.line()));
  }
  out.push_back('}');
}

void append_sent_command_json(JsonBuffer& out, std::uint64_t line_no, std::string_view time,
                              std::optional<std::uint64_t> token, std::string_view command) {
  out += "{\"line\":";
  append_u64(out, line_no);
  out += ",\"dir\":\"sent\",\"time\":";
  append_time(out, time);
  out += ",\"kind\":\"command\"";
  if (token) {
    out += ",\"token\":";
    append_u64(out, *token);
  }
  out += ",\"command\":";
  append_json_string(out, command);
  out.push_back('}');
}

void append_note_json(JsonBuffer& out, std::uint64_t line_no, std::string_view time,
                      std::string_view text) {
  out += "{\"line\":";
  append_u64(out, line_no);
  out += ",\"time\":";
  append_time(out, time);
  out += ",\"kind\":\"note\",\"text\":";
  append_json_string(out, text);
  out.push_back('}');
}

void JsonBuffer::grow(std::size_t more) {
  const std::size_t want = std::max({size_ + more, 2 * capacity_, std::size_t{4096}});
  std::unique_ptr<char[]> bigger(new char[want]);
  if (size_ != 0) {
    std::memcpy(bigger.get(), data_.get(), size_);
  }
  data_ = std::move(bigger);
  capacity_ = want;
}

namespace {
// The std::string forms write through one reused buffer and append its text.
JsonBuffer& scratch() {
  thread_local JsonBuffer buffer;
  buffer.clear();
  return buffer;
}
} // namespace

void append_json_string(std::string& out, std::string_view bytes) {
  JsonBuffer& b = scratch();
  append_json_string(b, bytes);
  out.append(b.view());
}

void append_mi_value_json(std::string& out, const mi::Value& value) {
  JsonBuffer& b = scratch();
  append_mi_value_json(b, value);
  out.append(b.view());
}

void append_mi_record_json(std::string& out, const mi::RecordView& record,
                           const RecordOrigin& origin) {
  JsonBuffer& b = scratch();
  append_mi_record_json(b, record, origin);
  out.append(b.view());
}

void append_sent_command_json(std::string& out, std::uint64_t line_no, std::string_view time,
                              std::optional<std::uint64_t> token, std::string_view command) {
  JsonBuffer& b = scratch();
  append_sent_command_json(b, line_no, time, token, command);
  out.append(b.view());
}

void append_note_json(std::string& out, std::uint64_t line_no, std::string_view time,
                      std::string_view text) {
  JsonBuffer& b = scratch();
  append_note_json(b, line_no, time, text);
  out.append(b.view());
}

} // namespace rocplay::report
