#include "rocplay/mi/parser.hpp"

#include <algorithm>
#include <array>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define ROCPLAY_MI_HAS_AVX2_PATH 1
#include <immintrin.h>
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

// The first '\n' in [p, p + n), or nullptr. Most lines are short (records, prompts, event lines
// of a recording): their first 64 bytes are scanned inline, which saves memchr's call and set-up
// for each of them; the rest of a longer line goes to memchr.
const void* find_newline(const char* p, std::size_t n) {
  std::size_t i = 0;
#if defined(__SSE2__)
  const __m128i newline = _mm_set1_epi8('\n');
  for (; i + 16 <= n && i < 64; i += 16) {
    const auto mask = static_cast<unsigned>(_mm_movemask_epi8(
        _mm_cmpeq_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + i)), newline)));
    if (mask != 0) {
      return p + i + __builtin_ctz(mask);
    }
  }
#endif
  return i < n ? std::memchr(p + i, '\n', n - i) : nullptr;
}

// What the item parser reads and writes while it parses one line: nodes are appended to `nodes_`
// with offsets into `s_`.
struct LineState {
  LineState(std::string_view s, std::uint64_t line_no, NodeTable& table, ParseError& error,
            const Limits& limits)
      : s_(s), n_(s.size()), table_(table), error_(error), limits_(limits), line_no_(line_no) {}

  const char* end() const { return s_.data() + n_; }
  std::size_t offset(const char* p) const { return static_cast<std::size_t>(p - s_.data()); }

  void skip_trailing_blanks(std::size_t& i) const {
    std::size_t k = i;
    while (k < n_ && (s_[k] == ' ' || s_[k] == '\t')) {
      ++k;
    }
    if (k == n_) {
      i = k;
    }
  }

  __attribute__((noinline, cold)) void set_error(Errc errc, std::size_t at) {
    if (error_.errc != Errc::None) {
      return; // keep the first (innermost) error
    }
    error_.errc = errc;
    error_.line = line_no_;
    error_.column = static_cast<std::uint32_t>(at + 1);
    error_.excerpt = printable_excerpt(s_, at);
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

// The entry points of one instance of item_parser.inc.
struct ItemParser {
  // A record's results after its class and comma, as children of node `root`.
  const char* (*results)(LineState& st, const char* p, std::uint32_t root);
  // The c-string of a stream record (`~"..."`), `open` at its opening quote.
  const char* (*stream_text)(LineState& st, const char* open);
};

namespace baseline {
#define ROCPLAY_MI_AVX2 0
#define ROCPLAY_MI_TARGET
#include "item_parser.inc"
#undef ROCPLAY_MI_TARGET
#undef ROCPLAY_MI_AVX2
} // namespace baseline

#if defined(ROCPLAY_MI_HAS_AVX2_PATH)
namespace avx2 {
#define ROCPLAY_MI_AVX2 1
#define ROCPLAY_MI_TARGET __attribute__((target("avx2,bmi")))
#include "item_parser.inc"
#undef ROCPLAY_MI_TARGET
#undef ROCPLAY_MI_AVX2
} // namespace avx2
#endif

const ItemParser& item_parser(detail::SimdPath path) {
#if defined(ROCPLAY_MI_HAS_AVX2_PATH)
  if (path == detail::SimdPath::Avx2) {
    return avx2::kItemParser;
  }
#endif
  (void)path;
  return baseline::kItemParser;
}

// One line: the record's kind, token and class here, its results in an ItemParser.
class LineParser : LineState {
public:
  LineParser(std::string_view s, std::uint64_t line_no, NodeTable& table, ParseError& error,
             const Limits& limits, const ItemParser& items, RecordView& out)
      : LineState(s, line_no, table, error, limits), items_(items), out_(out) {}

  // Writes the record into `out` (see RecordView::assign).
  void parse() {
    if (n_ > 0xfffffff0u) {
      table_.clear();
      fail(Errc::LineTooLong, 0);
      return;
    }
    // Every value but the root owns two bytes no other value owns (its quotes or brackets), so
    // a line of n bytes has at most n/2 + 1 nodes. Real MI values average 15-25 bytes: start
    // at n/8, which a multi-MB -thread-info never outgrows, and double up to the bound for
    // dense lines. The allocator leaves the slots uninitialised.
    max_nodes_ = std::min<std::size_t>(n_ / 2 + 2, limits_.max_values_per_record);
    capacity_ = std::min<std::size_t>(n_ / 8 + 64, max_nodes_);
    // The table keeps the size the longest line so far gave it: sizing it again for every line
    // (an out-of-line resize, twice a line) was 1.7% of a transcript's streaming. Only the
    // view's node_count() nodes are this line's.
    if (table_.size() < capacity_) {
      table_.clear(); // nothing to copy into the larger block
      table_.resize(capacity_);
    } else {
      capacity_ = std::min(table_.size(), max_nodes_);
    }
    nodes_ = table_.data();
    parse_record();
  }

private:
  void parse_record() {
    if (is_prompt()) {
      return make(RecordKind::Prompt, {}, false, 0);
    }
    // Workaround (cuda-gdb 13.0, fixtures/cuda-gdb/splitk-clean-h200.mi line 30): readline's
    // prompt markers \001/\002 can precede a record when the debugger's terminal state leaks
    // into the MI stream. They carry no meaning; skip them.
    std::size_t i = 0;
    while (i < n_ && (s_[i] == '\x01' || s_[i] == '\x02')) {
      ++i;
    }
    // Optional token: the digits before the record's first character.
    bool has_token = false;
    std::uint64_t token = 0;
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
      has_token = true;
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
      return fail(Errc::NotMi, has_token ? i : 0);
    }
    ++i;
    if (kind == RecordKind::Console || kind == RecordKind::Target || kind == RecordKind::Log) {
      if (i >= n_ || s_[i] != '"') {
        return fail(i >= n_ ? Errc::UnexpectedEnd : Errc::UnexpectedChar, i);
      }
      const char* const after = items_.stream_text(*this, s_.data() + i);
      if (after == nullptr) {
        return failed();
      }
      i = offset(after);
      skip_trailing_blanks(i);
      if (i != n_) {
        return fail(Errc::UnexpectedChar, i);
      }
      return make(kind, {}, has_token, token);
    }
    const std::size_t class_begin = i;
    i = static_cast<std::size_t>(baseline::find_name_end(s_.data() + i, end()) - s_.data());
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
      if (items_.results(*this, s_.data() + i + 1, root) == nullptr) {
        return failed();
      }
    }
    return make(kind, klass, has_token, token);
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

  void make(RecordKind kind, std::string_view klass, bool has_token, std::uint64_t token) {
    out_.assign(kind, s_, nodes_, static_cast<std::uint32_t>(count_), line_no_, nullptr);
    out_.klass_ = klass;
    out_.has_token_ = has_token;
    out_.token_value_ = token;
  }

  void fail(Errc errc, std::size_t at) {
    set_error(errc, at);
    failed();
  }

  void failed() {
    count_ = 0;
    out_.assign(RecordKind::Error, s_, nullptr, 0, line_no_, &error_);
    out_.klass_ = {};
    out_.has_token_ = false;
  }

  const ItemParser& items_;
  RecordView& out_;
};

} // namespace

namespace detail {

std::vector<SimdPath> simd_paths() {
  std::vector<SimdPath> paths{SimdPath::Baseline};
#if defined(ROCPLAY_MI_HAS_AVX2_PATH)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("bmi")) {
    paths.push_back(SimdPath::Avx2);
  }
#endif
  return paths;
}

void parse_line_into(SimdPath path, std::string_view line, std::uint64_t line_no,
                     NodeTable& scratch, ParseError& error_out, const Limits& limits,
                     RecordView& out) {
  error_out.errc = Errc::None; // cheap reset: keeps the excerpt's buffer
  error_out.excerpt.clear();
  if (line.size() > limits.max_line_bytes) {
    error_out.errc = Errc::LineTooLong;
    error_out.line = line_no;
    error_out.column =
        static_cast<std::uint32_t>(std::min<std::size_t>(limits.max_line_bytes, 0xffffffffu) + 1);
    error_out.excerpt = printable_excerpt(line, 0);
    scratch.clear();
    out.assign(RecordKind::Error, line.substr(0, kKeptPrefixBytes), nullptr, 0, line_no,
               &error_out);
    out.klass_ = {};
    out.has_token_ = false;
    return;
  }
  LineParser(line, line_no, scratch, error_out, limits, item_parser(path), out).parse();
}

RecordView parse_line(SimdPath path, std::string_view line, std::uint64_t line_no,
                      NodeTable& scratch, ParseError& error_out, const Limits& limits) {
  RecordView out(RecordKind::Error, {}, nullptr, 0, 0, nullptr); // no `rep stos` (see next())
  parse_line_into(path, line, line_no, scratch, error_out, limits, out);
  return out;
}

SimdPath fastest_path() {
  static const SimdPath fastest = simd_paths().back();
  return fastest;
}

} // namespace detail

RecordView parse_line(std::string_view line, std::uint64_t line_no, NodeTable& scratch,
                      ParseError& error_out, const Limits& limits) {
  RecordView out(RecordKind::Error, {}, nullptr, 0, 0, nullptr); // no `rep stos` (see next())
  detail::parse_line_into(detail::fastest_path(), line, line_no, scratch, error_out, limits, out);
  return out;
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

bool LineSplitter::next(Line& out) {
  if (carry_emitted_) {
    carry_.clear();
    carry_emitted_ = false;
  }
  // Fields written one by one into the caller's Line (see RecordView::assign).
  auto finish_line = [&](std::string_view text, Errc error) {
    if (!text.empty() && text.back() == '\r') {
      text.remove_suffix(1);
    }
    out.text = text;
    out.number = ++line_no_;
    out.error = error;
    out.unterminated = false;
    return true;
  };
  for (;;) {
    if (pos_ >= chunk_.size()) {
      chunk_ = {};
      pos_ = 0;
      if (total_exceeded_) {
        if (total_reported_) {
          return false;
        }
        total_reported_ = true;
        carry_.clear();
        out.text = {};
        out.number = line_no_ + 1;
        out.error = Errc::TotalSizeExceeded;
        out.unterminated = false;
        return true;
      }
      if (finished_ && (!carry_.empty() || skipping_)) {
        const Errc error = skipping_ ? Errc::LineTooLong : Errc::None;
        skipping_ = false;
        carry_emitted_ = true;
        finish_line(carry_, error);
        out.unterminated = true;
        return true;
      }
      return false;
    }
    const char* base = chunk_.data() + pos_;
    const std::size_t left = chunk_.size() - pos_;
    const void* nl = find_newline(base, left);
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
  // One object for every outcome, so that it is built in the caller's slot and filled in place
  // (see RecordView::assign). Built from values: a default-built view or optional is zeroed with
  // `rep stos`, slow for its size.
  std::optional<RecordView> out(std::in_place, RecordKind::Error, std::string_view(), nullptr, 0, 0,
                                nullptr);
  if (!next_into(*out)) {
    out.reset();
  }
  return out;
}

bool Parser::next_into(RecordView& out) {
  LineSplitter::Line the_line;
  const LineSplitter::Line* line = &the_line;
  do {
    if (!lines_.next(the_line)) {
      return false;
    }
  } while (line->error == Errc::None && line->text.empty());
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
    out.assign(RecordKind::Error, line->text, nullptr, 0, line->number, &error_);
    return true;
  }
  detail::parse_line_into(detail::fastest_path(), line->text, line->number, nodes_, error_, limits_,
                          out);
  if (out.is_error()) {
    ++errors_;
  }
  return true;
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
