#include "rocplay/mi/record.hpp"

#include <cstring>
#include <string>

namespace rocplay::mi {

std::string_view to_string(RecordKind kind) {
  switch (kind) {
  case RecordKind::Result:
    return "result";
  case RecordKind::Exec:
    return "exec";
  case RecordKind::Status:
    return "status";
  case RecordKind::Notify:
    return "notify";
  case RecordKind::Console:
    return "console";
  case RecordKind::Target:
    return "target";
  case RecordKind::Log:
    return "log";
  case RecordKind::Prompt:
    return "prompt";
  case RecordKind::Error:
    return "error";
  }
  return "error";
}

std::string_view to_string(Errc errc) {
  switch (errc) {
  case Errc::None:
    return "none";
  case Errc::LineTooLong:
    return "line too long";
  case Errc::DepthExceeded:
    return "nesting too deep";
  case Errc::TooManyValues:
    return "too many values in one record";
  case Errc::TotalSizeExceeded:
    return "input larger than the size limit";
  case Errc::UnterminatedString:
    return "unterminated string";
  case Errc::UnexpectedChar:
    return "unexpected character";
  case Errc::UnexpectedEnd:
    return "line ends too early";
  case Errc::BadRecordClass:
    return "missing record class";
  case Errc::NotMi:
    return "not an MI record";
  }
  return "unknown error";
}

std::string ParseError::message() const {
  std::string out = "line " + std::to_string(line) + ", column " + std::to_string(column) + ": " +
                    std::string(to_string(errc));
  if (!excerpt.empty()) {
    out += " near `" + excerpt + "`";
  }
  return out;
}

Value RecordView::results() const {
  if (node_count_ == 0) {
    return {};
  }
  return Value(line_.data(), nodes_, 0);
}

std::string RecordView::stream_text() const {
  if (kind_ != RecordKind::Console && kind_ != RecordKind::Target && kind_ != RecordKind::Log) {
    return {};
  }
  return results().bytes();
}

const ParseError& RecordView::error() const {
  static const ParseError kNone;
  return error_ != nullptr ? *error_ : kNone;
}

Record::Record(const RecordView& view) : Record(view, NodeTable()) {}

Record::Record(const RecordView& view, NodeTable&& nodes)
    : kind_(view.kind()), has_token_(view.has_token_), token_value_(view.token_value_),
      line_no_(view.line_no()) {
  if (const ParseError& error = view.error(); error.errc != Errc::None) {
    error_ = std::make_unique<ParseError>(error);
  }
  const std::string_view line = view.line();
  node_count_ = view.node_count();
  line_size_ = static_cast<std::uint32_t>(line.size());
  if (nodes.data() == view.nodes() && nodes.size() >= view.node_count() && node_count_ != 0) {
    // A big record: its table is taken (its slots past the record's nodes dropped), and the
    // line gets a buffer of its own.
    nodes_ = std::move(nodes);
    nodes_.resize(node_count_);
    if (!line.empty()) {
      line_.resize(line.size());
      std::memcpy(line_.data(), line.data(), line.size());
    }
  } else {
    // One allocation for the nodes and, after them, the line's bytes (resize() + memcpy: the
    // buffers' allocator constructs element by element otherwise). memcpy wants non-null
    // pointers even for 0 bytes.
    const std::size_t line_nodes = (line.size() + sizeof(Node) - 1) / sizeof(Node);
    if (node_count_ + line_nodes != 0) {
      nodes_ = NodeTable(node_count_ + line_nodes); // sized at birth: no out-of-line resize
    }
    if (node_count_ != 0) {
      std::memcpy(nodes_.data(), view.nodes(), node_count_ * sizeof(Node));
    }
    if (!line.empty()) {
      std::memcpy(static_cast<void*>(nodes_.data() + node_count_), line.data(), line.size());
    }
  }
  const std::string_view klass = view.klass();
  if (!klass.empty()) {
    klass_off_ = static_cast<std::uint32_t>(klass.data() - line.data());
    klass_len_ = static_cast<std::uint32_t>(klass.size());
  }
}

std::string_view Record::line() const {
  if (!line_.empty()) {
    return {line_.data(), line_.size()};
  }
  if (line_size_ == 0) {
    return {};
  }
  return {reinterpret_cast<const char*>(nodes_.data() + node_count_), line_size_};
}

Record::Record(const Record& other)
    : kind_(other.kind_), has_token_(other.has_token_), klass_off_(other.klass_off_),
      klass_len_(other.klass_len_), node_count_(other.node_count_),
      token_value_(other.token_value_), nodes_(other.nodes_), line_(other.line_),
      line_size_(other.line_size_), line_no_(other.line_no_),
      error_(other.error_ ? std::make_unique<ParseError>(*other.error_) : nullptr) {}

Record& Record::operator=(const Record& other) {
  if (this != &other) {
    Record copy(other);
    *this = std::move(copy);
  }
  return *this;
}

const ParseError& Record::error() const {
  static const ParseError kNone;
  return error_ ? *error_ : kNone;
}

RecordView Record::view() const {
  RecordView v(kind_, line(), nodes_.data(), node_count_, line_no_,
               kind_ == RecordKind::Error ? &error() : nullptr);
  v.has_token_ = has_token_;
  v.token_value_ = token_value_;
  v.klass_ = klass();
  return v;
}

std::pair<std::string, std::size_t> join_console(const std::vector<Record>& records,
                                                 std::size_t first) {
  std::string text;
  std::size_t i = first;
  while (i < records.size() && records[i].kind() == RecordKind::Console) {
    text += records[i].stream_text();
    ++i;
  }
  return {text, i};
}

std::string console_text(const std::vector<Record>& records) {
  std::string text;
  for (const Record& r : records) {
    if (r.kind() == RecordKind::Console) {
      text += r.stream_text();
    }
  }
  return text;
}

Result<Table> as_table(const Value& table) {
  if (!table.is_tuple()) {
    return AccessError{table.path(), "expected an MI table (a tuple with hdr and body)"};
  }
  const Value hdr = table["hdr"];
  const Value body = table["body"];
  if (!hdr.is_list() || !body.is_list()) {
    return AccessError{table.path(), "expected an MI table with hdr=[...] and body=[...]"};
  }
  Table out;
  for (const Value column : hdr) {
    out.columns.push_back(column["col_name"].str_or(column["colhdr"].str_or()));
  }
  for (const Value row : body) {
    if (!row.is_tuple()) {
      return AccessError{row.path(), "expected a row tuple"};
    }
    out.rows.push_back(row);
  }
  return out;
}

} // namespace rocplay::mi
