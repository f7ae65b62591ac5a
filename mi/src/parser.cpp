#include "rocplay/mi/parser.hpp"

#include <algorithm>
#include <array>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace rocplay::mi {

namespace {

constexpr std::size_t kExcerptBytes = 24;
constexpr std::size_t kKeptPrefixBytes = 64; // of an over-long line, for its error excerpt

constexpr std::array<bool, 256> make_name_table() {
  std::array<bool, 256> t{};
  for (int c = 0; c < 256; ++c) {
    t[c] = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '_' || c == '.';
  }
  return t;
}
constexpr std::array<bool, 256> kNameChar = make_name_table();

bool is_name_char(char c) {
  return kNameChar[static_cast<unsigned char>(c)];
}

#if defined(__SSE2__)
__m128i load16(const char* p) {
  return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
}

// Bit i set when byte i of the 16 is a '"' or a '\\'.
__attribute__((always_inline)) inline unsigned quote_or_backslash_bits(__m128i chunk) {
  return static_cast<unsigned>(_mm_movemask_epi8(_mm_or_si128(
      _mm_cmpeq_epi8(chunk, _mm_set1_epi8('"')), _mm_cmpeq_epi8(chunk, _mm_set1_epi8('\\')))));
}

// Bit i set when byte i of the 16 lies in [lo, hi]: one add moves the range to the bottom of
// the signed bytes, where one compare bounds it.
template <char lo, char hi> __attribute__((always_inline)) inline __m128i in_range(__m128i chunk) {
  constexpr int kShift = 0x80 - static_cast<unsigned char>(lo);
  constexpr int kLimit = -0x80 + (static_cast<unsigned char>(hi) - static_cast<unsigned char>(lo));
  const __m128i shifted = _mm_add_epi8(chunk, _mm_set1_epi8(static_cast<char>(kShift)));
  return _mm_cmpgt_epi8(_mm_set1_epi8(static_cast<char>(kLimit + 1)), shifted);
}

// Bit i set when byte i of the 16 can be part of a result name ([A-Za-z0-9_.-]).
__attribute__((always_inline)) inline unsigned name_char_bits(__m128i chunk) {
  const __m128i folded = _mm_or_si128(chunk, _mm_set1_epi8(0x20)); // 'A'-'Z' to 'a'-'z'
  // '-' '.' and the digits are 0x2d-0x39 but for '/'.
  const __m128i punct_digit =
      _mm_andnot_si128(_mm_cmpeq_epi8(chunk, _mm_set1_epi8('/')), in_range<'-', '9'>(chunk));
  const __m128i ok = _mm_or_si128(_mm_or_si128(in_range<'a', 'z'>(folded), punct_digit),
                                  _mm_cmpeq_epi8(chunk, _mm_set1_epi8('_')));
  return static_cast<unsigned>(_mm_movemask_epi8(ok));
}
#endif

// The first '"' or '\\' in [p, end), or end. C-strings are short and rarely escaped, so this one
// scan replaces a memchr for the quote plus another for backslashes.
__attribute__((always_inline)) inline const char* find_quote_or_backslash(const char* p,
                                                                          const char* end) {
#if defined(__SSE2__)
  // 32 bytes a step: most values (addresses, names, paths' tails) end within one step, so the
  // loop's exit is predictable.
  while (end - p >= 32) {
    const unsigned mask =
        quote_or_backslash_bits(load16(p)) | (quote_or_backslash_bits(load16(p + 16)) << 16);
    if (mask != 0) {
      return p + __builtin_ctz(mask);
    }
    p += 32;
  }
  if (end - p >= 16) {
    const unsigned mask = quote_or_backslash_bits(load16(p));
    if (mask != 0) {
      return p + __builtin_ctz(mask);
    }
    p += 16;
  }
#endif
  while (p < end && *p != '"' && *p != '\\') {
    ++p;
  }
  return p;
}

// The first byte in [p, end) that cannot be part of a result name, or end. Names are a few
// bytes of unpredictable length: a 16-byte classification and a count of trailing ones replace
// a byte loop whose exit branch mispredicted on most names.
__attribute__((always_inline)) inline const char* find_name_end(const char* p, const char* end) {
#if defined(__SSE2__)
  while (end - p >= 16) {
    const unsigned stop = ~name_char_bits(load16(p)) & 0xffffu;
    if (stop != 0) {
      return p + __builtin_ctz(stop);
    }
    p += 16;
  }
#endif
  while (p < end && is_name_char(*p)) {
    ++p;
  }
  return p;
}

std::string printable_excerpt(std::string_view line, std::size_t at) {
  const std::size_t begin = at > kExcerptBytes / 2 ? at - kExcerptBytes / 2 : 0;
  const std::string_view part = line.substr(begin, kExcerptBytes);
  std::string out;
  for (const char ch : part) {
    const auto c = static_cast<unsigned char>(ch);
    if (c >= 0x20 && c < 0x7f) {
      out.push_back(ch);
    } else {
      static const char kHex[] = "0123456789abcdef";
      out += "\\x";
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  return out;
}

// Recursive descent over one line; nodes are appended to `nodes_` with offsets into `s_`.
class LineParser {
public:
  LineParser(std::string_view s, std::uint64_t line_no, NodeTable& table, ParseError& error,
             const Limits& limits)
      : s_(s), n_(s.size()), table_(table), error_(error), limits_(limits), line_no_(line_no) {}

  RecordView parse() {
    table_.clear();
    if (n_ > 0xfffffff0u) {
      return fail(Errc::LineTooLong, 0);
    }
    // Every value but the root owns two bytes no other value owns (its quotes or brackets), so
    // a line of n bytes has at most n/2 + 1 nodes. Real MI values average 15-25 bytes: start
    // at n/8, which a multi-MB -thread-info never outgrows, and double up to the bound for
    // dense lines. The allocator leaves the slots uninitialised.
    max_nodes_ = std::min<std::size_t>(n_ / 2 + 2, limits_.max_values_per_record);
    capacity_ = std::min<std::size_t>(n_ / 8 + 64, max_nodes_);
    table_.resize(capacity_);
    nodes_ = table_.data();
    const RecordView view = parse_record();
    table_.resize(count_);
    return view;
  }

private:
  RecordView parse_record() {
    if (is_prompt()) {
      return make(RecordKind::Prompt, {});
    }
    // Workaround (cuda-gdb 13.0, fixtures/cuda-gdb/splitk-clean-h200.mi line 30): readline's
    // prompt markers \001/\002 can precede a record when the debugger's terminal state leaks
    // into the MI stream. They carry no meaning; skip them.
    std::size_t i = 0;
    while (i < n_ && (s_[i] == '\x01' || s_[i] == '\x02')) {
      ++i;
    }
    // Optional token: the digits before the record's first character.
    std::optional<std::uint64_t> token;
    if (i < n_ && s_[i] >= '0' && s_[i] <= '9') {
      std::uint64_t t = 0;
      while (i < n_ && s_[i] >= '0' && s_[i] <= '9') {
        if (t > (UINT64_MAX - 9) / 10) {
          return fail(Errc::UnexpectedChar, i);
        }
        t = t * 10 + static_cast<std::uint64_t>(s_[i] - '0');
        ++i;
      }
      token = t;
    }
    if (i >= n_) {
      return fail(Errc::NotMi, 0);
    }
    RecordKind kind{};
    switch (s_[i]) {
    case '^':
      kind = RecordKind::Result;
      break;
    case '*':
      kind = RecordKind::Exec;
      break;
    case '+':
      kind = RecordKind::Status;
      break;
    case '=':
      kind = RecordKind::Notify;
      break;
    case '~':
      kind = RecordKind::Console;
      break;
    case '@':
      kind = RecordKind::Target;
      break;
    case '&':
      kind = RecordKind::Log;
      break;
    default:
      return fail(Errc::NotMi, token ? i : 0);
    }
    ++i;
    if (kind == RecordKind::Console || kind == RecordKind::Target || kind == RecordKind::Log) {
      if (i >= n_ || s_[i] != '"') {
        return fail(i >= n_ ? Errc::UnexpectedEnd : Errc::UnexpectedChar, i);
      }
      const char* const after = parse_string(s_.data() + i, s_.data() + i + 1, s_.data(), 0);
      if (after == nullptr) {
        return failed();
      }
      i = offset(after);
      skip_trailing_blanks(i);
      if (i != n_) {
        return fail(Errc::UnexpectedChar, i);
      }
      RecordView view = make(kind, {});
      view.token_ = token;
      return view;
    }
    const std::size_t class_begin = i;
    i = static_cast<std::size_t>(find_name_end(s_.data() + i, s_.data() + n_) - s_.data());
    if (i == class_begin) {
      return fail(Errc::BadRecordClass, i);
    }
    const std::string_view klass = s_.substr(class_begin, i - class_begin);
    // The results hang off a root tuple so `record["frame"]` is an ordinary lookup.
    const std::uint32_t root = add_node(NodeKind::Tuple, s_.data(), 0, 0, 0, false);
    if (root == Node::kNone) {
      return failed();
    }
    skip_trailing_blanks(i);
    if (i < n_) {
      if (s_[i] != ',') {
        return fail(Errc::UnexpectedChar, i);
      }
      if (parse_items<'\0'>(s_.data() + i + 1, root, 1) == nullptr) {
        return failed();
      }
    }
    RecordView view = make(kind, klass);
    view.token_ = token;
    return view;
  }

  bool is_prompt() const {
    // `(gdb)`, `(gdb) `, and other debuggers' `(cuda-gdb)`.
    if (n_ < 5 || s_[0] != '(') {
      return false;
    }
    std::size_t close = s_.find(')');
    if (close == std::string_view::npos || close < 4 || s_.substr(close - 3, 3) != "gdb") {
      return false;
    }
    for (std::size_t k = 1; k < close; ++k) {
      if (!is_name_char(s_[k])) {
        return false;
      }
    }
    for (std::size_t k = close + 1; k < n_; ++k) {
      if (s_[k] != ' ') {
        return false;
      }
    }
    return true;
  }

  void skip_trailing_blanks(std::size_t& i) const {
    std::size_t k = i;
    while (k < n_ && (s_[k] == ' ' || s_[k] == '\t')) {
      ++k;
    }
    if (k == n_) {
      i = k;
    }
  }

  RecordView make(RecordKind kind, std::string_view klass) {
    RecordView view(kind, s_, nodes_, count_, line_no_, nullptr);
    view.klass_ = klass;
    return view;
  }

  RecordView fail(Errc errc, std::size_t at) {
    set_error(errc, at);
    return failed();
  }

  void set_error(Errc errc, std::size_t at) {
    if (error_.errc != Errc::None) {
      return; // keep the first (innermost) error
    }
    error_.errc = errc;
    error_.line = line_no_;
    error_.column = static_cast<std::uint32_t>(at + 1);
    error_.excerpt = printable_excerpt(s_, at);
  }

  RecordView failed() {
    count_ = 0;
    return RecordView(RecordKind::Error, s_, nullptr, 0, line_no_, &error_);
  }

  // Hot: one call per value. Every field is written: the table's slots are uninitialised. A
  // container's `end` starts as that of an empty one; parse_items() moves it past the children.
  __attribute__((always_inline)) std::uint32_t add_node(NodeKind kind, const char* name,
                                                        std::size_t name_len,
                                                        std::uint32_t text_off, std::size_t size,
                                                        bool escaped) {
    if (count_ >= capacity_ && !grow()) [[unlikely]] {
      set_error(Errc::TooManyValues, offset(name));
      return Node::kNone;
    }
    Node& node = nodes_[count_];
    node.name_off = static_cast<std::uint32_t>(offset(name));
    node.text_off = text_off;
    node.size = static_cast<std::uint32_t>(size);
    node.end = static_cast<std::uint32_t>(count_ + 1);
    node.name_len = static_cast<std::uint16_t>(name_len);
    node.kind = kind;
    node.escaped = escaped;
    return static_cast<std::uint32_t>(count_++);
  }

  // Callers hold node indexes, never references, across add_node(): this moves the table.
  __attribute__((noinline, cold)) bool grow() {
    if (capacity_ >= max_nodes_) {
      return false;
    }
    table_.resize(count_); // only the written nodes are copied
    capacity_ = std::min(max_nodes_, capacity_ * 2);
    table_.resize(capacity_);
    nodes_ = table_.data();
    return true;
  }

  std::size_t offset(const char* p) const { return static_cast<std::size_t>(p - s_.data()); }

  // The parse functions take a position and return the one after what they read, or nullptr
  // once the error is set. A position passed as `const char*&` could alias the line's own
  // pointer, and the compiler would reload that after every item.

  // Comma-separated `[name=]value` items up to `close` (or the end of the line for '\0').
  // Counts children in a local, so the loop keeps its state in registers.
  // One instance per closer: a list's items are mostly bare values and a tuple's are named, so
  // each loop's branches predict well for their own kind of container.
  template <char close>
  const char* parse_items(const char* p, std::uint32_t parent, std::uint32_t depth) {
    const char* const end = s_.data() + n_;
    std::uint32_t count = 0;
    const auto finish = [&](const char* after) {
      nodes_[parent].size = count;
      nodes_[parent].end = static_cast<std::uint32_t>(count_);
      return after;
    };
    for (;;) {
      if (p >= end) {
        if (close == '\0') {
          return finish(end);
        }
        set_error(Errc::UnexpectedEnd, offset(p));
        return nullptr;
      }
      p = parse_item(p, end, depth);
      if (p == nullptr) {
        return nullptr;
      }
      ++count;
      if (p >= end) {
        continue; // the end of the line: fine at top level, reported above otherwise
      }
      if (*p == ',') {
        ++p;
        continue;
      }
      if (close != '\0' && *p == close) {
        return finish(p + 1);
      }
      if (close == '\0') {
        std::size_t i = offset(p);
        skip_trailing_blanks(i);
        if (i == n_) {
          p = end;
          continue;
        }
      }
      set_error(Errc::UnexpectedChar, offset(p));
      return nullptr;
    }
  }

  // One `[name=]value` item.
  __attribute__((always_inline)) const char* parse_item(const char* p, const char* end,
                                                        std::uint32_t depth) {
    const char* const name = p; // a bare value (list items, legacy `bkpt={..},{..}`) has no name
#if defined(__SSE2__)
    // The common items, `name="text"` within 32 bytes and `name={` or `name=[`, are told apart
    // from one pair of loads. For a string, the next item's position depends only on the quotes
    // (the first opens it, the second closes it); the name is checked beside that chain.
    if (end - p >= 32) {
      const __m128i lo = load16(p);
      const __m128i hi = load16(p + 16);
      const unsigned stops = quote_or_backslash_bits(lo) | (quote_or_backslash_bits(hi) << 16);
      const auto len = static_cast<unsigned>(__builtin_ctz(~name_char_bits(lo))); // <= 16
      // Bit 31 stands in for a missing stop; p[31] is then no quote.
      const auto open = static_cast<unsigned>(__builtin_ctz(stops | 0x80000000u));
      const auto close = static_cast<unsigned>(__builtin_ctz((stops & (stops - 1)) | 0x80000000u));
      if (len != 0 && p[len] == '=') {
        if (open == len + 1 && p[open] == '"') {
          if (p[close] == '"') {
            if (add_node(NodeKind::String, name, len,
                         static_cast<std::uint32_t>(offset(p + open + 1)), close - open - 1,
                         false) == Node::kNone) {
              return nullptr;
            }
            return p + close + 1;
          }
          // A longer string, or one with escapes: the scan goes on from the first byte this
          // window did not clear.
          return parse_string(p + open, p + close, name, len);
        }
        if (p[len + 1] == '{' || p[len + 1] == '[') {
          return parse_container(p + len + 1, name, len, depth);
        }
      }
    }
#endif
    std::size_t name_len = 0;
    if (*p != '"' && *p != '{' && *p != '[') {
      p = find_name_end(p, end);
      name_len = static_cast<std::size_t>(p - name);
      if (name_len == 0 || p >= end || *p != '=') {
        set_error(p >= end ? Errc::UnexpectedEnd : Errc::UnexpectedChar, offset(p));
        return nullptr;
      }
      if (name_len > Node::kMaxNameBytes) [[unlikely]] {
        set_error(Errc::UnexpectedChar, offset(name) + Node::kMaxNameBytes);
        return nullptr;
      }
      ++p; // '='
      if (p >= end) {
        set_error(Errc::UnexpectedEnd, offset(p));
        return nullptr;
      }
    }
    if (*p == '"') {
      return parse_string(p, p + 1, name, name_len);
    }
    if (*p == '{' || *p == '[') {
      return parse_container(p, name, name_len, depth);
    }
    set_error(Errc::UnexpectedChar, offset(p));
    return nullptr;
  }

  // `p` is at the opening bracket.
  const char* parse_container(const char* p, const char* name, std::size_t name_len,
                              std::uint32_t depth) {
    if (depth >= limits_.max_depth) {
      set_error(Errc::DepthExceeded, offset(p));
      return nullptr;
    }
    const char close = *p == '{' ? '}' : ']';
    const std::uint32_t out =
        add_node(*p == '{' ? NodeKind::Tuple : NodeKind::List, name, name_len, 0, 0, false);
    if (out == Node::kNone) {
      return nullptr;
    }
    ++p;
    if (p < s_.data() + n_ && *p == close) {
      return p + 1;
    }
    return close == '}' ? parse_items<'}'>(p, out, depth + 1) : parse_items<']'>(p, out, depth + 1);
  }

  // `open` is at the opening quote; no '"' or '\\' lies in (open, scan_from).
  __attribute__((always_inline)) const char* parse_string(const char* open, const char* scan_from,
                                                          const char* name, std::size_t name_len) {
    const char* const end = s_.data() + n_;
    const char* q = scan_from;
    bool escaped = false;
    for (;;) {
      q = find_quote_or_backslash(q, end);
      if (q == end) {
        set_error(Errc::UnterminatedString, offset(open));
        return nullptr;
      }
      if (*q == '"') {
        break;
      }
      escaped = true;
      q += 2; // the backslash and the byte it escapes
      if (q > end) {
        set_error(Errc::UnterminatedString, offset(open));
        return nullptr;
      }
    }
    if (add_node(NodeKind::String, name, name_len, static_cast<std::uint32_t>(offset(open + 1)),
                 static_cast<std::size_t>(q - (open + 1)), escaped) == Node::kNone) {
      return nullptr;
    }
    return q + 1;
  }

  std::string_view s_;
  std::size_t n_;
  NodeTable& table_;
  Node* nodes_ = nullptr;
  std::size_t count_ = 0; // not uint32_t: stores to a Node's fields could alias it
  std::size_t capacity_ = 0;
  std::size_t max_nodes_ = 0;
  ParseError& error_;
  const Limits& limits_;
  std::uint64_t line_no_;
};

} // namespace

RecordView parse_line(std::string_view line, std::uint64_t line_no, NodeTable& scratch,
                      ParseError& error_out, const Limits& limits) {
  error_out.errc = Errc::None; // cheap reset: keeps the excerpt's buffer
  error_out.excerpt.clear();
  if (line.size() > limits.max_line_bytes) {
    error_out.errc = Errc::LineTooLong;
    error_out.line = line_no;
    error_out.column =
        static_cast<std::uint32_t>(std::min<std::size_t>(limits.max_line_bytes, 0xffffffffu) + 1);
    error_out.excerpt = printable_excerpt(line, 0);
    scratch.clear();
    return RecordView(RecordKind::Error, line.substr(0, kKeptPrefixBytes), nullptr, 0, line_no,
                      &error_out);
  }
  return LineParser(line, line_no, scratch, error_out, limits).parse();
}

void LineSplitter::feed(std::string_view chunk) {
  if (total_exceeded_) {
    return;
  }
  if (total_bytes_ + chunk.size() > limits_.max_total_bytes) {
    chunk = chunk.substr(0, limits_.max_total_bytes - total_bytes_);
    total_exceeded_ = true;
  }
  total_bytes_ += chunk.size();
  chunk_ = chunk;
  pos_ = 0;
}

std::optional<LineSplitter::Line> LineSplitter::next() {
  if (carry_emitted_) {
    carry_.clear();
    carry_emitted_ = false;
  }
  auto finish_line = [&](std::string_view text, Errc error) {
    if (!text.empty() && text.back() == '\r') {
      text.remove_suffix(1);
    }
    return Line{text, ++line_no_, error};
  };
  for (;;) {
    if (pos_ >= chunk_.size()) {
      chunk_ = {};
      pos_ = 0;
      if (total_exceeded_) {
        if (total_reported_) {
          return std::nullopt;
        }
        total_reported_ = true;
        carry_.clear();
        return Line{{}, line_no_ + 1, Errc::TotalSizeExceeded};
      }
      if (finished_ && (!carry_.empty() || skipping_)) {
        const Errc error = skipping_ ? Errc::LineTooLong : Errc::None;
        skipping_ = false;
        carry_emitted_ = true;
        Line last = finish_line(carry_, error);
        last.unterminated = true;
        return last;
      }
      return std::nullopt;
    }
    const char* base = chunk_.data() + pos_;
    const std::size_t left = chunk_.size() - pos_;
    const void* nl = std::memchr(base, '\n', left);
    if (nl == nullptr) {
      // The line continues in the next chunk.
      if (!skipping_) {
        if (carry_.size() + left > limits_.max_line_bytes) {
          carry_.append(base, std::min(left, kKeptPrefixBytes > carry_.size()
                                                 ? kKeptPrefixBytes - carry_.size()
                                                 : 0));
          skipping_ = true;
        } else {
          carry_.append(base, left);
        }
      }
      pos_ = chunk_.size();
      continue;
    }
    const std::size_t len = static_cast<std::size_t>(static_cast<const char*>(nl) - base);
    pos_ += len + 1;
    if (skipping_) {
      skipping_ = false;
      carry_emitted_ = true;
      return finish_line(carry_, Errc::LineTooLong);
    }
    if (carry_.empty()) {
      const std::string_view text(base, len);
      if (len > limits_.max_line_bytes) {
        return finish_line(text.substr(0, kKeptPrefixBytes), Errc::LineTooLong);
      }
      return finish_line(text, Errc::None); // zero-copy: the line lies inside the chunk
    }
    if (carry_.size() + len > limits_.max_line_bytes) {
      // The same prefix as when the line arrives in one chunk, wherever it was split.
      if (carry_.size() < kKeptPrefixBytes) {
        carry_.append(base, std::min(len, kKeptPrefixBytes - carry_.size()));
      } else {
        carry_.resize(kKeptPrefixBytes);
      }
      carry_emitted_ = true;
      return finish_line(carry_, Errc::LineTooLong);
    }
    carry_.append(base, len);
    carry_emitted_ = true;
    return finish_line(carry_, Errc::None);
  }
}

void Parser::feed(std::string_view chunk) {
  lines_.feed(chunk);
}

void Parser::finish() {
  lines_.finish();
}

std::optional<RecordView> Parser::next() {
  for (;;) {
    auto line = lines_.next();
    if (!line) {
      return std::nullopt;
    }
    if (line->error != Errc::None) {
      ++errors_;
      error_ = ParseError{};
      error_.errc = line->error;
      error_.line = line->number;
      error_.column = line->error == Errc::LineTooLong
                          ? static_cast<std::uint32_t>(
                                std::min<std::size_t>(limits_.max_line_bytes, 0xfffffffeu) + 1)
                          : 1;
      error_.excerpt = printable_excerpt(line->text, 0);
      nodes_.clear();
      return RecordView(RecordKind::Error, line->text, nullptr, 0, line->number, &error_);
    }
    if (line->text.empty()) {
      continue;
    }
    RecordView view = parse_line(line->text, line->number, nodes_, error_, limits_);
    if (view.is_error()) {
      ++errors_;
    }
    return view;
  }
}

std::vector<Record> parse_all(std::string_view text, const Limits& limits) {
  Parser parser(limits);
  std::vector<Record> out;
  parser.feed(text);
  parser.finish();
  while (auto rec = parser.next()) {
    out.emplace_back(*rec);
  }
  return out;
}

} // namespace rocplay::mi
