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

// The first '"' or '\\' in [p, end), or end. C-strings are short and rarely escaped, so this one
// scan replaces a memchr for the quote plus another for backslashes.
const char* find_quote_or_backslash(const char* p, const char* end) {
#if defined(__SSE2__)
  const __m128i quote = _mm_set1_epi8('"');
  const __m128i slash = _mm_set1_epi8('\\');
  while (end - p >= 16) {
    const __m128i chunk = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    const int mask =
        _mm_movemask_epi8(_mm_or_si128(_mm_cmpeq_epi8(chunk, quote), _mm_cmpeq_epi8(chunk, slash)));
    if (mask != 0) {
      return p + __builtin_ctz(static_cast<unsigned>(mask));
    }
    p += 16;
  }
#endif
  while (p < end && *p != '"' && *p != '\\') {
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
  LineParser(std::string_view s, std::uint64_t line_no, std::vector<Node>& nodes, ParseError& error,
             const Limits& limits)
      : s_(s), n_(s.size()), nodes_(nodes), error_(error), limits_(limits), line_no_(line_no) {}

  RecordView parse() {
    nodes_.clear();
    if (n_ > 0xfffffff0u) {
      return fail(Errc::LineTooLong, 0);
    }
    // A value takes at least 3 bytes (`"",`), so this bounds the nodes of the line: a multi-MB
    // -thread-info then never regrows the table (each regrowth copied all of it). Pages of the
    // reservation that are never written stay virtual.
    if (n_ > (64u << 10)) {
      nodes_.reserve(std::min<std::size_t>(n_ / 3 + 2, limits_.max_values_per_record));
    }
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
      std::uint32_t index = 0;
      if (!parse_string(i, Node::kNone, 0, 0, index)) {
        return failed();
      }
      skip_trailing_blanks(i);
      if (i != n_) {
        return fail(Errc::UnexpectedChar, i);
      }
      RecordView view = make(kind, {});
      view.token_ = token;
      return view;
    }
    const std::size_t class_begin = i;
    while (i < n_ && is_name_char(s_[i])) {
      ++i;
    }
    if (i == class_begin) {
      return fail(Errc::BadRecordClass, i);
    }
    const std::string_view klass = s_.substr(class_begin, i - class_begin);
    // The results hang off a root tuple so `record["frame"]` is an ordinary lookup.
    const std::uint32_t root = add_node(NodeKind::Tuple, 0, 0, Node::kNone);
    if (root == Node::kNone) {
      return failed();
    }
    skip_trailing_blanks(i);
    if (i < n_) {
      if (s_[i] != ',') {
        return fail(Errc::UnexpectedChar, i);
      }
      ++i;
      if (!parse_items(i, root, '\0', 1)) {
        return failed();
      }
    }
    RecordView view = make(kind, klass);
    view.token_ = token;
    return view;
  }

private:
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
    RecordView view(kind, s_, nodes_.data(), static_cast<std::uint32_t>(nodes_.size()), line_no_,
                    nullptr);
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
    nodes_.clear();
    return RecordView(RecordKind::Error, s_, nullptr, 0, line_no_, &error_);
  }

  // Hot: one call per value.
  __attribute__((always_inline)) std::uint32_t
  add_node(NodeKind kind, std::size_t name_off, std::size_t name_len, std::uint32_t parent) {
    if (nodes_.size() >= limits_.max_values_per_record) [[unlikely]] {
      set_error(Errc::TooManyValues, name_off);
      return Node::kNone;
    }
    Node& node = nodes_.emplace_back();
    node.kind = kind;
    node.name_off = static_cast<std::uint32_t>(name_off);
    node.name_len = static_cast<std::uint32_t>(name_len);
    node.parent = parent;
    return static_cast<std::uint32_t>(nodes_.size() - 1);
  }

  // Comma-separated `[name=]value` items up to `close` (or the end of the line for '\0').
  bool parse_items(std::size_t& i, std::uint32_t parent, char close, std::uint32_t depth) {
    std::uint32_t last = Node::kNone;
    for (;;) {
      if (i >= n_) {
        if (close == '\0') {
          return true;
        }
        set_error(Errc::UnexpectedEnd, i);
        return false;
      }
      std::size_t name_off = i;
      std::size_t name_len = 0;
      const char c = s_[i];
      if (c != '"' && c != '{' && c != '[') {
        while (i < n_ && is_name_char(s_[i])) {
          ++i;
        }
        name_len = i - name_off;
        if (name_len == 0 || i >= n_ || s_[i] != '=') {
          set_error(i >= n_ ? Errc::UnexpectedEnd : Errc::UnexpectedChar, i);
          return false;
        }
        ++i; // '='
      } else {
        name_off = i; // a bare value: legacy `bkpt={..},{..}`, `+download,{..}`, list items
      }
      std::uint32_t child = Node::kNone;
      if (!parse_value(i, parent, name_off, name_len, depth, child)) {
        return false;
      }
      if (last == Node::kNone) {
        nodes_[parent].first_child = child;
      } else {
        nodes_[last].next = child;
      }
      last = child;
      ++nodes_[parent].child_count;
      if (i >= n_) {
        continue; // reported above unless at top level
      }
      if (s_[i] == ',') {
        ++i;
        continue;
      }
      if (close != '\0' && s_[i] == close) {
        ++i;
        return true;
      }
      if (close == '\0') {
        const std::size_t before = i;
        skip_trailing_blanks(i);
        if (i == n_) {
          return true;
        }
        i = before;
      }
      set_error(Errc::UnexpectedChar, i);
      return false;
    }
  }

  bool parse_value(std::size_t& i, std::uint32_t parent, std::size_t name_off, std::size_t name_len,
                   std::uint32_t depth, std::uint32_t& out) {
    if (i >= n_) {
      set_error(Errc::UnexpectedEnd, i);
      return false;
    }
    const char c = s_[i];
    if (c == '"') {
      return parse_string(i, parent, name_off, name_len, out);
    }
    if (c != '{' && c != '[') {
      set_error(Errc::UnexpectedChar, i);
      return false;
    }
    if (depth >= limits_.max_depth) {
      set_error(Errc::DepthExceeded, i);
      return false;
    }
    const char close = c == '{' ? '}' : ']';
    out = add_node(c == '{' ? NodeKind::Tuple : NodeKind::List, name_off, name_len, parent);
    if (out == Node::kNone) {
      return false;
    }
    ++i;
    if (i < n_ && s_[i] == close) {
      ++i;
      return true;
    }
    return parse_items(i, out, close, depth + 1);
  }

  bool parse_string(std::size_t& i, std::uint32_t parent, std::size_t name_off,
                    std::size_t name_len, std::uint32_t& out) {
    const std::size_t open = i;
    const std::size_t body = i + 1;
    const char* base = s_.data();
    const char* end = base + n_;
    const char* p = base + body;
    bool escaped = false;
    for (;;) {
      p = find_quote_or_backslash(p, end);
      if (p == end) {
        set_error(Errc::UnterminatedString, open);
        return false;
      }
      if (*p == '"') {
        break;
      }
      escaped = true;
      p += 2; // the backslash and the byte it escapes
      if (p > end) {
        set_error(Errc::UnterminatedString, open);
        return false;
      }
    }
    const std::size_t q = static_cast<std::size_t>(p - base);
    out = add_node(NodeKind::String, name_off, name_len, parent);
    if (out == Node::kNone) {
      return false;
    }
    Node& node = nodes_[out];
    node.text_off = static_cast<std::uint32_t>(body);
    node.text_len = static_cast<std::uint32_t>(q - body);
    node.escaped = escaped;
    i = q + 1;
    return true;
  }

  std::string_view s_;
  std::size_t n_;
  std::vector<Node>& nodes_;
  ParseError& error_;
  const Limits& limits_;
  std::uint64_t line_no_;
};

} // namespace

RecordView parse_line(std::string_view line, std::uint64_t line_no, std::vector<Node>& scratch,
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
