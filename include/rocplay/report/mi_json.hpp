// GDB/MI records and values as JSON, lossless (docs/mi.md, "JSON shape"): result order, repeated
// names, bare values and the two kinds of list survive, so the MI can be written back exactly.
// Written straight into a byte buffer: `rocplay mi2json` streams hundreds of MB through it.
// Layer: src/report/ (library rocplay_report; docs/architecture.md).
#pragma once

#include "rocplay/mi/record.hpp"

#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace rocplay::report {

// An append-only byte buffer for JSON text. Appends are inline and unchecked beyond one
// capacity test, unlike std::string's (which also write a terminator each time): the writer
// appends a few bytes per MI value, tens of millions of times in a large log.
class JsonBuffer {
public:
  std::string_view view() const { return {data_.get(), size_}; }
  const char* data() const { return data_.get(); }
  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  void clear() { size_ = 0; }
  [[gnu::always_inline]] void push_back(char c) {
    if (size_ == capacity_) {
      grow(1);
    }
    data_[size_++] = c;
  }
  [[gnu::always_inline]] void append(const char* s, std::size_t n) {
    if (capacity_ - size_ < n) {
      grow(n);
    }
    std::memcpy(data_.get() + size_, s, n);
    size_ += n;
  }
  // Room for `n` more bytes: write them at the returned pointer, then commit() the end.
  [[gnu::always_inline]] char* reserve(std::size_t n) {
    if (capacity_ - size_ < n) {
      grow(n);
    }
    return data_.get() + size_;
  }
  void commit(const char* end) { size_ = static_cast<std::size_t>(end - data_.get()); }
  void append(std::string_view s) { append(s.data(), s.size()); }
  JsonBuffer& operator+=(std::string_view s) {
    append(s);
    return *this;
  }

private:
  void grow(std::size_t more);
  std::unique_ptr<char[]> data_;
  std::size_t size_ = 0;
  std::size_t capacity_ = 0;
};

// Appends `bytes` as a JSON string. Bytes that are not valid UTF-8 become U+FFFD; use
// append_mi_string_json where the exact bytes matter.
void append_json_string(std::string& out, std::string_view bytes);
void append_json_string(JsonBuffer& out, std::string_view bytes);

// Appends one MI value:
//   c-string                   -> "text"   (not UTF-8: {"$base64":"...","utf8_lossy":"..."})
//   tuple, names unique        -> {"name":value,...} in MI order
//   other tuples               -> {"$tuple":[["name",value],...]}  ("" for a bare value)
//   list of values             -> [value,...]
//   list of results            -> {"$list":[["name",value],...]}
// A name starting with `$` also takes the tagged form, so a plain object is never mistaken for a
// tag.
void append_mi_value_json(std::string& out, const mi::Value& value);
void append_mi_value_json(JsonBuffer& out, const mi::Value& value);

// Where a record came from in a rocplay recording (`< 0.031 LINE`): empty for a raw MI log.
struct RecordOrigin {
  std::string_view direction; // "received"
  std::string_view time;      // seconds as written in the recording
};

// One record as a JSON object (no newline):
//   {"line":N[,"dir":..,"time":..],"kind":K[,"class":C][,"token":T],"values":{...}|"text":".."}
void append_mi_record_json(std::string& out, const mi::RecordView& record,
                           const RecordOrigin& origin = {});
void append_mi_record_json(JsonBuffer& out, const mi::RecordView& record,
                           const RecordOrigin& origin = {});

// A recording's other lines: a command rocplay sent (`> 0.012 12-thread-info`) and one of its
// notes (`! 0.040 detached from pid 42`).
//   {"line":N,"dir":"sent","time":T,"kind":"command"[,"token":K],"command":"-thread-info"}
//   {"line":N,"time":T,"kind":"note","text":"..."}
void append_sent_command_json(std::string& out, std::uint64_t line_no, std::string_view time,
                              std::optional<std::uint64_t> token, std::string_view command);
void append_sent_command_json(JsonBuffer& out, std::uint64_t line_no, std::string_view time,
                              std::optional<std::uint64_t> token, std::string_view command);
void append_note_json(std::string& out, std::uint64_t line_no, std::string_view time,
                      std::string_view text);
void append_note_json(JsonBuffer& out, std::uint64_t line_no, std::string_view time,
                      std::string_view text);

} // namespace rocplay::report
