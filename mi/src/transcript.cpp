#include "rocplay/mi/transcript.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdlib>
#include <cstring>

namespace rocplay::mi {

namespace {

constexpr std::string_view kHeader = "# rocplay-transcript";
constexpr std::string_view kMeta = "# meta ";

bool starts_with(std::string_view s, std::string_view prefix) {
  return s.size() >= prefix.size() && s.compare(0, prefix.size(), prefix) == 0;
}

} // namespace

// The time is converted only where it is used (commands, notes, results), not for every record.
// The writer's `%.6f` (digits, a point, digits) is read exactly without strtod: at most 15
// significant digits make an integer a double holds exactly, and dividing it by an exact power
// of ten rounds once, so the result is strtod's (the classic fast path). Anything else (an
// exponent, a sign, more digits) goes to strtod.
double EventLine::seconds() const {
  static constexpr double kPow10[] = {1e0, 1e1, 1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                      1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15};
  std::uint64_t mantissa = 0;
  std::size_t digits = 0;
  std::size_t fraction = 0;
  bool point = false;
  bool fast = !time.empty() && time.size() <= 16;
  for (std::size_t i = 0; fast && i < time.size(); ++i) {
    const char c = time[i];
    if (c >= '0' && c <= '9') {
      mantissa = mantissa * 10 + static_cast<std::uint64_t>(c - '0');
      ++digits;
      fraction += point ? 1 : 0;
    } else if (c == '.' && !point) {
      point = true;
    } else {
      fast = false;
    }
  }
  if (fast && digits > 0 && digits <= 15) {
    return static_cast<double>(mantissa) / kPow10[fraction];
  }
  char buf[33];
  std::memcpy(buf, time.data(), time.size());
  buf[time.size()] = '\0';
  return std::strtod(buf, nullptr);
}

namespace {
// The bytes a recording's time may hold: digits, a point, an exponent and its sign.
constexpr std::array<bool, 256> make_time_table() {
  std::array<bool, 256> t{};
  for (int c = '0'; c <= '9'; ++c) {
    t[c] = true;
  }
  t['.'] = t['e'] = t['-'] = t['+'] = true;
  return t;
}
constexpr std::array<bool, 256> kTimeChar = make_time_table();
constexpr std::size_t kMaxTimeBytes = 32;
} // namespace

// Once per line of a recording: one table look-up per byte of the time, and the views built from
// pointers (substr() checks its bounds and was not inlined).
bool parse_event_line(std::string_view line, EventLine& out) {
  const char* const s = line.data();
  const std::size_t n = line.size();
  if (n < 3 || (s[0] != '>' && s[0] != '<' && s[0] != '!') || s[1] != ' ') {
    return false;
  }
  const std::size_t limit = std::min(n, 2 + kMaxTimeBytes + 1);
  std::size_t space = 2;
  while (space < limit && s[space] != ' ') {
    if (!kTimeChar[static_cast<unsigned char>(s[space])]) {
      return false;
    }
    ++space;
  }
  const std::size_t time_size = space - 2;
  if (time_size == 0 || time_size > kMaxTimeBytes) {
    return false;
  }
  out.direction = s[0];
  out.time = std::string_view(s + 2, time_size);
  if (space >= n) {
    out.payload = std::string_view(s + n, 0);
    out.payload_column = n;
  } else {
    out.payload = std::string_view(s + space + 1, n - space - 1);
    out.payload_column = space + 1;
  }
  return true;
}

std::optional<EventLine> parse_event_line(std::string_view line) {
  std::optional<EventLine> out(std::in_place);
  if (!parse_event_line(line, *out)) {
    out.reset();
  }
  return out;
}

TranscriptReader::TranscriptReader(Limits limits)
    : limits_(limits), lines_(limits), assembler_(limits.max_exchange_bytes) {}

void TranscriptReader::feed(std::string_view chunk) {
  lines_.feed(chunk);
}

void TranscriptReader::finish() {
  lines_.finish();
  LineSplitter::Line line;
  while (lines_.next(line)) {
    take_line(line);
  }
  if (assembler_.open()) {
    const Exchange& last = assembler_.exchanges().back();
    if (!last.complete() && (!last.records.empty() || !last.command.empty())) {
      info_.truncated = true;
    }
    assembler_.close();
    take_closed();
  }
  info_.lines = lines_.lines();
  info_.bytes = lines_.bytes();
}

std::optional<Exchange> TranscriptReader::next() {
  while (ready_pos_ >= ready_.size()) {
    ready_.clear();
    ready_pos_ = 0;
    LineSplitter::Line line;
    if (!lines_.next(line)) {
      info_.lines = lines_.lines();
      info_.bytes = lines_.bytes();
      return std::nullopt;
    }
    take_line(line);
  }
  return std::move(ready_[ready_pos_++]);
}

void TranscriptReader::take_closed() {
  info_.exchanges += assembler_.take_closed(ready_);
}

void TranscriptReader::take_line(const LineSplitter::Line& line) {
  auto count_error = [&](const ParseError& error) {
    ++info_.parse_errors;
    if (info_.first_errors.size() < TranscriptInfo::kMaxKeptErrors) {
      info_.first_errors.push_back(error);
    }
  };
  if (line.error != Errc::None) {
    ParseError error;
    error.errc = line.error;
    error.line = line.number;
    error.column = 1;
    count_error(error);
    return;
  }
  // Read as two scalars: LineSplitter::next() wrote them as two, and a 16-byte copy of the view
  // would wait for both stores to retire (a failed store-to-load forward, once per line).
  const char* const text_data = line.text.data();
  const std::size_t text_size = line.text.size();
  const std::string_view text(text_data, text_size);
  if (text.empty()) {
    return;
  }
  if (line.unterminated) {
    // A last line without its newline that does not parse: the writer died mid-record.
    NodeTable scratch;
    ParseError error;
    const std::string_view payload = info_.format == TranscriptFormat::Recording && text.size() > 2
                                         ? text.substr(std::min(text.size(), text.find(' ', 2) + 1))
                                         : text;
    if (parse_line(payload, line.number, scratch, error, limits_).is_error()) {
      info_.truncated = true;
    }
  }
  if (text[0] == '#') {
    if (starts_with(text, kHeader)) {
      info_.format = TranscriptFormat::Recording;
    } else if (starts_with(text, kMeta)) {
      info_.meta_json = std::string(text.substr(kMeta.size()));
    }
    return; // comments: `# reconstructed from ...`
  }
  // Filled in place, not returned in an optional: see RecordView::assign.
  EventLine ev;
  const EventLine* event = nullptr;
  if (info_.format != TranscriptFormat::RawMi) {
    event = parse_event_line(text, ev) ? &ev : nullptr;
    if (event != nullptr && info_.format == TranscriptFormat::Unknown) {
      info_.format = TranscriptFormat::Recording;
    }
  }
  if (info_.format == TranscriptFormat::Unknown) {
    info_.format = TranscriptFormat::RawMi;
  }
  if (info_.format == TranscriptFormat::RawMi || event == nullptr) {
    RecordView rec = parse_line(text, line.number, scratch_, scratch_error_, limits_);
    if (rec.is_error()) {
      count_error(rec.error());
      return;
    }
    take_record(rec, 0);
    return;
  }
  switch (event->direction) {
  case '>': {
    const std::string_view payload(event->payload.data(), event->payload.size()); // see above
    std::size_t digits = 0;
    while (digits < payload.size() && payload[digits] >= '0' && payload[digits] <= '9') {
      ++digits;
    }
    std::optional<std::uint64_t> token;
    if (digits > 0) {
      std::uint64_t t = 0;
      std::from_chars(payload.data(), payload.data() + digits, t);
      token = t;
    }
    assembler_.command(std::string(payload.substr(digits)), token, event->seconds());
    take_closed();
    return;
  }
  case '!':
    assembler_.note(std::string(event->payload), event->seconds());
    return;
  default: {
    RecordView rec = parse_line(event->payload, line.number, scratch_, scratch_error_, limits_);
    if (rec.is_error()) {
      ParseError error = rec.error();
      error.column += static_cast<std::uint32_t>(event->payload_column);
      count_error(error);
      return;
    }
    // The time is converted only where it is used: prompts and records that may open an
    // exchange or close one.
    take_record(rec, rec.kind() == RecordKind::Prompt || rec.kind() == RecordKind::Result ||
                             !assembler_.open()
                         ? event->seconds()
                         : 0);
    return;
  }
  }
}

void TranscriptReader::take_record(const RecordView& rec, double at) {
  if (rec.kind() == RecordKind::Prompt) {
    assembler_.prompt(at);
    return;
  }
  ++info_.records;
  // A big record takes the parser's table (the next line gets a fresh one); small ones are
  // cheaper to copy than to allocate for.
  constexpr std::uint32_t kTakeTableNodes = 4096;
  if (rec.node_count() >= kTakeTableNodes && rec.nodes() == scratch_.data()) {
    assembler_.add(rec, std::move(scratch_), at);
    scratch_ = NodeTable();
  } else {
    assembler_.add(rec, at);
  }
  if (!assembler_.open()) {
    take_closed();
  }
}

std::vector<Exchange> read_transcript(std::string_view text, TranscriptInfo* info,
                                      const Limits& limits) {
  TranscriptReader reader(limits);
  std::vector<Exchange> out;
  reader.feed(text);
  while (auto ex = reader.next()) {
    out.push_back(std::move(*ex));
  }
  reader.finish();
  while (auto ex = reader.next()) {
    out.push_back(std::move(*ex));
  }
  if (info != nullptr) {
    *info = reader.info();
  }
  return out;
}

TranscriptWriter::TranscriptWriter(std::FILE* out, std::string_view meta_json) : out_(out) {
  std::fprintf(out_, "%.*s 1\n", static_cast<int>(kHeader.size()), kHeader.data());
  std::fprintf(out_, "%.*s%.*s\n", static_cast<int>(kMeta.size()), kMeta.data(),
               static_cast<int>(meta_json.size()), meta_json.data());
}

void TranscriptWriter::sent(double at, std::uint64_t token, std::string_view command) {
  std::fprintf(out_, "> %.6f %llu%.*s\n", at, static_cast<unsigned long long>(token),
               static_cast<int>(command.size()), command.data());
}

void TranscriptWriter::received(double at, std::string_view line) {
  std::fprintf(out_, "< %.6f %.*s\n", at, static_cast<int>(line.size()), line.data());
}

void TranscriptWriter::note(double at, std::string_view text) {
  std::string flat(text);
  for (char& c : flat) {
    if (c == '\n' || c == '\r') {
      c = ' ';
    }
  }
  std::fprintf(out_, "! %.6f %s\n", at, flat.c_str());
}

void TranscriptWriter::flush() {
  std::fflush(out_);
}

} // namespace rocplay::mi
