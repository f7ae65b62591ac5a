// A streaming, bounded GDB/MI output parser.
//
//   mi::Parser parser;
//   parser.feed(chunk);                       // any split: mid-line, mid-escape
//   while (auto rec = parser.next()) { ... }  // rec valid until the next next()/feed()
//   parser.finish();                          // a last line without a newline
//   while (auto rec = parser.next()) { ... }
//
// Complete lines inside a chunk are parsed in place (zero-copy); only a line that spans chunks is
// copied into the parser's carry buffer. A malformed line becomes an Error record with its line
// number, column and excerpt, and parsing continues with the next line.
#pragma once

#include "rocplay/mi/record.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace rocplay::mi {

struct Limits {
  // A node-wide `-thread-info` with ~78,000 waves is a few tens of MB on one line.
  std::size_t max_line_bytes = std::size_t{256} << 20;
  std::uint32_t max_depth = 64;
  std::uint32_t max_values_per_record = 16u << 20;
  std::uint64_t max_total_bytes = std::uint64_t{64} << 30;
  // Transcripts: an exchange (one command's records) larger than this is closed early.
  std::size_t max_exchange_bytes = std::size_t{1} << 30;
};

// Parses one line (without its line ending). Nodes go into the first node_count() slots of
// `scratch`, which the returned view points into (the table keeps the size of the longest line
// so far, so it may hold more); `error_out` receives the error of an Error record.
RecordView parse_line(std::string_view line, std::uint64_t line_no, NodeTable& scratch,
                      ParseError& error_out, const Limits& limits = {});

namespace detail {
// The instruction sets the parser has code for. parse_line() takes the last of simd_paths(), the
// fastest this CPU runs; tests and the fuzzer run each to prove they agree.
enum class SimdPath { Baseline, Avx2 };
std::vector<SimdPath> simd_paths();
RecordView parse_line(SimdPath path, std::string_view line, std::uint64_t line_no,
                      NodeTable& scratch, ParseError& error_out, const Limits& limits = {});
// parse_line() writing into `out` (see RecordView::assign), and the path it uses.
void parse_line_into(SimdPath path, std::string_view line, std::uint64_t line_no,
                     NodeTable& scratch, ParseError& error_out, const Limits& limits,
                     RecordView& out);
SimdPath fastest_path();
} // namespace detail

// Splits a byte stream fed in chunks into lines (LF or CRLF), bounded by Limits. Lines inside a
// chunk are returned in place; a line that spans chunks is assembled in a carry buffer.
class LineSplitter {
public:
  struct Line {
    std::string_view text; // without the line ending; valid until the next next()/feed()
    std::uint64_t number = 0;
    Errc error = Errc::None;   // LineTooLong (text is the kept prefix) or TotalSizeExceeded
    bool unterminated = false; // the input ended without this line's newline
  };

  explicit LineSplitter(Limits limits = {}) : limits_(limits) {}
  // Call only once next() has returned nullopt for the previous chunk.
  void feed(std::string_view chunk);
  void finish() { finished_ = true; }
  std::optional<Line> next() {
    std::optional<Line> out(std::in_place);
    if (!next(*out)) {
      out.reset();
    }
    return out;
  }
  // The same, written into `out` (no copy of a just-written Line: see RecordView::assign);
  // false where next() returns nullopt.
  bool next(Line& out);
  std::uint64_t lines() const { return line_no_; }
  std::uint64_t bytes() const { return total_bytes_; }

private:
  Limits limits_;
  std::string_view chunk_;
  std::size_t pos_ = 0;
  std::string carry_;
  bool skipping_ = false; // inside an over-long line, dropping bytes up to its newline
  bool finished_ = false;
  bool total_exceeded_ = false;
  bool total_reported_ = false;
  bool carry_emitted_ = false; // carry_ was handed out; clear it on the next call
  std::uint64_t line_no_ = 0;
  std::uint64_t total_bytes_ = 0;
};

class Parser {
public:
  explicit Parser(Limits limits = {}) : limits_(limits) {}

  // Hands the parser the next bytes. The chunk must stay alive until next() returns nullopt.
  void feed(std::string_view chunk);
  // Marks the end of input: a final line without a newline becomes a record.
  void finish();
  // The next record, or nullopt when the fed input has no further complete line.
  std::optional<RecordView> next();

  std::uint64_t lines() const { return lines_.lines(); }
  std::uint64_t bytes() const { return lines_.bytes(); }
  std::uint64_t errors() const { return errors_; }
  const Limits& limits() const { return limits_; }

private:
  bool next_into(RecordView& out);

  Limits limits_;
  LineSplitter lines_{limits_};
  std::uint64_t errors_ = 0;
  NodeTable nodes_;
  ParseError error_;
};

// Parses a whole buffer into owned records (convenience for tests and small inputs).
std::vector<Record> parse_all(std::string_view text, const Limits& limits = {});

} // namespace rocplay::mi
