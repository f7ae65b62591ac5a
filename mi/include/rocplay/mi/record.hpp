// GDB/MI output records and the parser's errors.
#pragma once

#include "rocplay/mi/value.hpp"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace rocplay::mi {

enum class RecordKind : std::uint8_t {
  Result,  // ^done ^running ^connected ^error ^exit
  Exec,    // *stopped *running
  Status,  // +download
  Notify,  // =thread-created ...
  Console, // ~"text"
  Target,  // @"text"
  Log,     // &"text"
  Prompt,  // (gdb)
  Error,   // a line that is not MI: see Record::error()
};

std::string_view to_string(RecordKind kind);

enum class Errc : std::uint8_t {
  None,
  LineTooLong,        // the line exceeds Limits::max_line_bytes
  DepthExceeded,      // tuples/lists nested deeper than Limits::max_depth
  TooManyValues,      // more values than Limits::max_values_per_record
  TotalSizeExceeded,  // more input than Limits::max_total_bytes
  UnterminatedString, // a c-string without its closing quote
  UnexpectedChar,     // a byte the grammar does not allow here
  UnexpectedEnd,      // the line ended inside a tuple, list or result
  BadRecordClass,     // `^` or `*` not followed by a class name
  NotMi,              // a line that starts like no MI record (inferior output, junk)
};

std::string_view to_string(Errc errc);

struct ParseError {
  Errc errc = Errc::None;
  std::uint64_t line = 0;      // 1-based line number in the input
  std::uint32_t column = 0;    // 1-based byte column
  std::string excerpt;         // a few bytes around the column, made printable
  std::string message() const; // "line 3, column 17: unterminated string near `...`"
};

// A parsed line. RecordView points into storage owned by someone else (the parser's buffer or a
// Record); it is valid until that storage changes. Record owns its bytes.
class RecordView {
public:
  RecordView() = default;
  RecordView(RecordKind kind, std::string_view line, const Node* nodes, std::uint32_t node_count,
             std::uint64_t line_no, const ParseError* error)
      : kind_(kind), line_(line), nodes_(nodes), node_count_(node_count), line_no_(line_no),
        error_(error) {}

  RecordKind kind() const { return kind_; }
  // The token before `^`, `*`, `+` or `=`, if any.
  std::optional<std::uint64_t> token() const {
    return has_token_ ? std::optional<std::uint64_t>(token_value_) : std::nullopt;
  }
  // `done`, `stopped`, `thread-created` ...; empty for streams and the prompt.
  std::string_view klass() const { return klass_; }
  // The line as read, without the line ending.
  std::string_view line() const { return line_; }
  std::uint64_t line_no() const { return line_no_; }

  // The results (`name=value,...`) as a tuple. For stream records, the one c-string value.
  Value results() const;
  // Shorthand for results()[key].
  Value operator[](std::string_view key) const { return results()[key]; }
  // Stream records: the decoded text.
  std::string stream_text() const;

  bool is_error() const { return kind_ == RecordKind::Error; }
  const ParseError& error() const;

  const Node* nodes() const { return nodes_; }
  std::uint32_t node_count() const { return node_count_; }

  // Set by the parser; not part of the public contract. The token is two plain fields, not an
  // optional: an optional is copied with one 16-byte load of its two smaller stores (see assign).
  std::uint64_t token_value_ = 0;
  bool has_token_ = false;
  std::string_view klass_;
  void set_token(std::optional<std::uint64_t> token) {
    has_token_ = token.has_value();
    token_value_ = token.value_or(0);
  }
  // The parser fills the view where its caller keeps it: a view written field by field and then
  // copied is read back with 16-byte loads that span several smaller stores, and each such load
  // waits for the stores to retire (a failed store-to-load forward, per line parsed).
  void assign(RecordKind kind, std::string_view line, const Node* nodes, std::uint32_t node_count,
              std::uint64_t line_no, const ParseError* error) {
    kind_ = kind;
    line_ = line;
    nodes_ = nodes;
    node_count_ = node_count;
    line_no_ = line_no;
    error_ = error;
  }

private:
  RecordKind kind_ = RecordKind::Error;
  std::string_view line_;
  const Node* nodes_ = nullptr;
  std::uint32_t node_count_ = 0;
  std::uint64_t line_no_ = 0;
  const ParseError* error_ = nullptr;
};

// An owned record: a copy of the line and its nodes. Node offsets are relative to the line, so
// copying needs no fix-ups. 96 bytes: an exchange's records are moved as its vector grows and as
// exchanges are handed on, so the error (of Error records only) lives behind a pointer.
class Record {
public:
  Record() = default;
  explicit Record(const RecordView& view);
  // Takes the node table the view points into instead of copying it: for a multi-MB record the
  // copy (and the fresh pages it touches) costs as much as parsing did.
  Record(const RecordView& view, NodeTable&& nodes);
  Record(const Record& other);
  Record& operator=(const Record& other);
  Record(Record&&) noexcept = default;
  Record& operator=(Record&&) noexcept = default;
  ~Record() = default;
  RecordView view() const;

  RecordKind kind() const { return kind_; }
  std::optional<std::uint64_t> token() const {
    return has_token_ ? std::optional<std::uint64_t>(token_value_) : std::nullopt;
  }
  std::string_view klass() const { return line().substr(klass_off_, klass_len_); }
  std::string_view line() const;
  std::uint64_t line_no() const { return line_no_; }
  Value results() const { return view().results(); }
  Value operator[](std::string_view key) const { return results()[key]; }
  std::string stream_text() const { return view().stream_text(); }
  bool is_error() const { return kind_ == RecordKind::Error; }
  const ParseError& error() const;

private:
  RecordKind kind_ = RecordKind::Error;
  bool has_token_ = false;
  std::uint32_t klass_off_ = 0;
  std::uint32_t klass_len_ = 0;
  std::uint32_t node_count_ = 0;
  std::uint64_t token_value_ = 0;
  // The nodes and then the line's bytes, one allocation per record; a record that took the
  // parser's table keeps its line in line_ instead.
  NodeTable nodes_;
  std::vector<char, UninitAllocator<char>> line_;
  std::uint32_t line_size_ = 0;
  std::uint64_t line_no_ = 0;
  std::unique_ptr<ParseError> error_; // a view's error, when it had one
};

// Joins the text of consecutive console (`~`) records starting at `first`: cuda-gdb splits one
// sentence over several records. Returns the text and the index after the last one joined.
std::pair<std::string, std::size_t> join_console(const std::vector<Record>& records,
                                                 std::size_t first = 0);
// All console text of the records, joined.
std::string console_text(const std::vector<Record>& records);

// An MI table (`hdr=[{col_name=...},...],body=[Row={...},...]`, as cuda-gdb's -cuda-info-* and
// GDB's -break-list return). Each row is a tuple whose fields are named by the columns.
struct Table {
  std::vector<std::string_view> columns; // col_name of each header entry
  std::vector<Value> rows;
};
Result<Table> as_table(const Value& table);

} // namespace rocplay::mi
