// The data-only pickle reader (rocplay/collectives/pickle.hpp). Opcode values and their meaning
// follow CPython's Lib/pickletools.py; what PyTorch writes follows its jit Pickler.
#include "rocplay/collectives/pickle.hpp"

#include <fmt/format.h>

#include <bit>
#include <cstring>
#include <optional>
#include <unordered_map>

namespace rocplay::collectives::pickle {

std::string_view to_string(Value::Kind kind) {
  switch (kind) {
  case Value::Kind::None:
    return "None";
  case Value::Kind::Bool:
    return "bool";
  case Value::Kind::Int:
    return "int";
  case Value::Kind::Float:
    return "float";
  case Value::Kind::Str:
    return "str";
  case Value::Kind::Bytes:
    return "bytes";
  case Value::Kind::List:
    return "list";
  case Value::Kind::Tuple:
    return "tuple";
  case Value::Kind::Dict:
    return "dict";
  case Value::Kind::Set:
    return "set";
  }
  return "?";
}

const Value* Value::get(std::string_view key) const {
  if (kind != Kind::Dict) {
    return nullptr;
  }
  for (const auto& [k, v] : entries) {
    if (k && k->kind == Kind::Str && k->text == key) {
      return v;
    }
  }
  return nullptr;
}

bool looks_like_pickle(std::string_view head) {
  return head.size() >= 3 && static_cast<unsigned char>(head[0]) == 0x80 &&
         static_cast<unsigned char>(head[1]) >= 2 && static_cast<unsigned char>(head[1]) <= 5;
}

namespace {

// Opcodes that name or run code: refused, by name, so the error says what the file asked for.
const char* code_opcode_name(unsigned char op) {
  switch (op) {
  case 'c':
    return "GLOBAL";
  case 0x93:
    return "STACK_GLOBAL";
  case 'R':
    return "REDUCE";
  case 'b':
    return "BUILD";
  case 'i':
    return "INST";
  case 'o':
    return "OBJ";
  case 0x81:
    return "NEWOBJ";
  case 0x92:
    return "NEWOBJ_EX";
  case 'P':
    return "PERSID";
  case 'Q':
    return "BINPERSID";
  case 0x82:
    return "EXT1";
  case 0x83:
    return "EXT2";
  case 0x84:
    return "EXT4";
  case 0x97:
    return "NEXT_BUFFER";
  case 0x98:
    return "READONLY_BUFFER";
  default:
    return nullptr;
  }
}

class Reader {
public:
  Reader(std::string_view data, const Limits& limits) : data_(data), limits_(limits) {}

  Result run() {
    Result out;
    if (data_.size() > limits_.max_input_bytes) {
      out.error = fmt::format("{} bytes: more than the {} a pickle may have here", data_.size(),
                              limits_.max_input_bytes);
      return out;
    }
    while (error_.empty()) {
      if (pos_ >= data_.size()) {
        fail(pos_, "the pickle ends before its STOP opcode (cut off?)");
        break;
      }
      op_at_ = pos_;
      const auto op = static_cast<unsigned char>(data_[pos_++]);
      if (op == '.') { // STOP
        if (stack_.size() != 1 || !marks_.empty()) {
          fail(op_at_, fmt::format("STOP with {} values on the stack and {} open MARKs (expected "
                                   "one value)",
                                   stack_.size(), marks_.size()));
          break;
        }
        out.root = stack_.back();
        out.protocol = protocol_;
        out.document = std::move(doc_);
        return out;
      }
      step(op);
    }
    out.error = error_;
    out.offset = error_at_;
    out.protocol = protocol_;
    return out;
  }

private:
  void fail(std::size_t at, std::string what) {
    if (error_.empty()) {
      error_at_ = at;
      error_ = fmt::format("offset {}: {}", at, what);
    }
  }

  Value* make(Value::Kind kind) {
    if (doc_->values.size() >= limits_.max_values) {
      fail(op_at_, fmt::format("more than {} values", limits_.max_values));
      return nullptr;
    }
    Value& v = doc_->values.emplace_back();
    v.kind = kind;
    return &v;
  }

  bool push(Value* v) {
    if (!v) {
      return false;
    }
    if (stack_.size() >= limits_.max_stack) {
      fail(op_at_, fmt::format("stack deeper than {}", limits_.max_stack));
      return false;
    }
    stack_.push_back(v);
    return true;
  }

  std::optional<std::string_view> take(std::uint64_t n) {
    if (n > data_.size() - pos_) {
      fail(op_at_, fmt::format("opcode 0x{:02x} needs {} bytes; {} are left", op(), n,
                               data_.size() - pos_));
      return std::nullopt;
    }
    auto s = data_.substr(pos_, static_cast<std::size_t>(n));
    pos_ += static_cast<std::size_t>(n);
    return s;
  }

  unsigned char op() const { return static_cast<unsigned char>(data_[op_at_]); }

  template <typename T> std::optional<T> little() {
    auto s = take(sizeof(T));
    if (!s) {
      return std::nullopt;
    }
    std::make_unsigned_t<T> u = 0;
    for (std::size_t i = 0; i < sizeof(T); ++i) {
      u |= static_cast<std::make_unsigned_t<T>>(static_cast<unsigned char>((*s)[i])) << (8 * i);
    }
    return static_cast<T>(u);
  }

  std::optional<std::string_view> line() { // text opcodes' argument, up to '\n'
    const auto nl = data_.find('\n', pos_);
    if (nl == std::string_view::npos || nl - pos_ > 64) {
      fail(op_at_, fmt::format("opcode '{}' without its newline-terminated argument",
                               static_cast<char>(op())));
      return std::nullopt;
    }
    auto s = data_.substr(pos_, nl - pos_);
    pos_ = nl + 1;
    return s;
  }

  std::optional<std::size_t> pop_mark() {
    if (marks_.empty()) {
      fail(op_at_, fmt::format("opcode 0x{:02x} without a MARK before it", op()));
      return std::nullopt;
    }
    const std::size_t m = marks_.back();
    marks_.pop_back();
    if (m > stack_.size()) {
      fail(op_at_, "a MARK above the stack");
      return std::nullopt;
    }
    return m;
  }

  const Value* pop() {
    if (stack_.size() <= floor()) {
      fail(op_at_, fmt::format("opcode 0x{:02x} on an empty stack", op()));
      return nullptr;
    }
    const Value* v = stack_.back();
    stack_.pop_back();
    return v;
  }

  std::size_t floor() const { return marks_.empty() ? 0 : marks_.back(); }

  Value* top_of(Value::Kind a, Value::Kind b, std::size_t below = 0) {
    if (stack_.size() <= below || stack_.size() - below - 1 < floor()) {
      fail(op_at_, fmt::format("opcode 0x{:02x}: no container on the stack", op()));
      return nullptr;
    }
    Value* v = stack_[stack_.size() - below - 1];
    if (v->kind != a && v->kind != b) {
      fail(op_at_, fmt::format("opcode 0x{:02x} on a {}", op(), to_string(v->kind)));
      return nullptr;
    }
    return v;
  }

  void memo_put(std::uint64_t id) {
    if (stack_.empty()) {
      fail(op_at_, "memo store from an empty stack");
      return;
    }
    if (memo_.size() >= limits_.max_memo && !memo_.contains(id)) {
      fail(op_at_, fmt::format("more than {} memo slots", limits_.max_memo));
      return;
    }
    memo_[id] = stack_.back();
  }

  void memo_get(std::uint64_t id) {
    auto it = memo_.find(id);
    if (it == memo_.end()) {
      fail(op_at_, fmt::format("memo slot {} read before it was written", id));
      return;
    }
    push(it->second);
  }

  void string_value(Value::Kind kind, std::uint64_t n) {
    if (n > limits_.max_string_bytes) {
      fail(op_at_, fmt::format("a string of {} bytes: more than {}", n, limits_.max_string_bytes));
      return;
    }
    auto s = take(n);
    if (!s) {
      return;
    }
    auto v = make(kind);
    if (v) {
      v->text.assign(s->data(), s->size());
      push(v);
    }
  }

  void int_value(std::int64_t n) {
    if (auto v = make(Value::Kind::Int)) {
      v->integer = n;
      push(v);
    }
  }

  // LONG1/LONG4: little-endian two's complement of n bytes. Wider than 64 bits reads as None
  // (no Flight Recorder field is); the bytes are still consumed.
  void long_value(std::uint64_t n) {
    if (n > limits_.max_string_bytes) {
      fail(op_at_, fmt::format("an integer of {} bytes", n));
      return;
    }
    auto s = take(n);
    if (!s) {
      return;
    }
    if (n > 8) {
      push(make(Value::Kind::None));
      return;
    }
    std::uint64_t u = 0;
    for (std::size_t i = 0; i < n; ++i) {
      u |= static_cast<std::uint64_t>(static_cast<unsigned char>((*s)[i])) << (8 * i);
    }
    if (n > 0 && n < 8 && (static_cast<unsigned char>((*s)[n - 1]) & 0x80)) {
      u |= ~std::uint64_t{0} << (8 * n); // sign-extend
    }
    int_value(static_cast<std::int64_t>(u));
  }

  void sequence_from_mark(Value::Kind kind) {
    auto m = pop_mark();
    if (!m) {
      return;
    }
    auto v = make(kind);
    if (!v) {
      return;
    }
    v->items.assign(stack_.begin() + static_cast<std::ptrdiff_t>(*m), stack_.end());
    stack_.resize(*m);
    push(v);
  }

  void tuple_of(std::size_t n) {
    if (stack_.size() < floor() + n) {
      fail(op_at_, fmt::format("TUPLE{} with fewer than {} values on the stack", n, n));
      return;
    }
    auto v = make(Value::Kind::Tuple);
    if (!v) {
      return;
    }
    v->items.assign(stack_.end() - static_cast<std::ptrdiff_t>(n), stack_.end());
    stack_.resize(stack_.size() - n);
    push(v);
  }

  void set_items(std::size_t from) { // SETITEMS / SETITEM: pairs from `from` into the dict below
    const std::size_t n = stack_.size() - from;
    if (n % 2 != 0) {
      fail(op_at_, "SETITEMS with an odd number of values (a key without its value)");
      return;
    }
    if (from == 0 || from - 1 < (marks_.empty() ? 0 : marks_.back())) {
      fail(op_at_, "SETITEMS without a dict below its items");
      return;
    }
    Value* d = mutable_at(from - 1);
    if (d->kind != Value::Kind::Dict) {
      fail(op_at_, fmt::format("SETITEMS on a {}", to_string(d->kind)));
      return;
    }
    for (std::size_t i = from; i + 1 < stack_.size(); i += 2) {
      d->entries.emplace_back(stack_[i], stack_[i + 1]);
    }
    stack_.resize(from);
  }

  void append_items(std::size_t from, bool set) { // APPENDS / ADDITEMS / APPEND
    if (from == 0 || from - 1 < (marks_.empty() ? 0 : marks_.back())) {
      fail(op_at_, "APPENDS without a list below its items");
      return;
    }
    Value* l = mutable_at(from - 1);
    const Value::Kind want = set ? Value::Kind::Set : Value::Kind::List;
    if (l->kind != want) {
      fail(op_at_, fmt::format("{} on a {}", set ? "ADDITEMS" : "APPENDS", to_string(l->kind)));
      return;
    }
    l->items.insert(l->items.end(), stack_.begin() + static_cast<std::ptrdiff_t>(from),
                    stack_.end());
    stack_.resize(from);
  }

  void step(unsigned char op) {
    if (const char* name = code_opcode_name(op)) {
      fail(op_at_, fmt::format("{} (0x{:02x}): this pickle names or calls code; rocplay reads "
                               "data-only pickles and never runs anything",
                               name, op));
      return;
    }
    switch (op) {
    case 0x80: { // PROTO
      auto v = little<std::uint8_t>();
      if (v && *v > 5) {
        fail(op_at_, fmt::format("pickle protocol {}: newer than 5", *v));
      } else if (v) {
        protocol_ = *v;
      }
      return;
    }
    case 0x95: // FRAME: a length hint only
      take(8);
      return;
    case '(': // MARK
      if (marks_.size() >= limits_.max_marks) {
        fail(op_at_, fmt::format("more than {} MARKs open (nesting too deep)", limits_.max_marks));
        return;
      }
      marks_.push_back(stack_.size());
      return;
    case '0': // POP
      pop();
      return;
    case '1': { // POP_MARK
      if (auto m = pop_mark()) {
        stack_.resize(*m);
      }
      return;
    }
    case '2': // DUP
      if (stack_.size() <= floor()) {
        fail(op_at_, "DUP on an empty stack");
        return;
      }
      push(stack_.back());
      return;
    case 'N':
      push(make(Value::Kind::None));
      return;
    case 0x88:
    case 0x89: {
      if (auto v = make(Value::Kind::Bool)) {
        v->boolean = op == 0x88;
        push(v);
      }
      return;
    }
    case 'K':
      if (auto v = little<std::uint8_t>()) {
        int_value(*v);
      }
      return;
    case 'M':
      if (auto v = little<std::uint16_t>()) {
        int_value(*v);
      }
      return;
    case 'J':
      if (auto v = little<std::int32_t>()) {
        int_value(*v);
      }
      return;
    case 0x8a: // LONG1
      if (auto n = little<std::uint8_t>()) {
        long_value(*n);
      }
      return;
    case 0x8b: // LONG4
      if (auto n = little<std::int32_t>()) {
        if (*n < 0) {
          fail(op_at_, "LONG4 with a negative length");
          return;
        }
        long_value(static_cast<std::uint64_t>(*n));
      }
      return;
    case 'I': { // INT (text; `01`/`00` are True/False in protocols 0 and 1)
      auto s = line();
      if (!s) {
        return;
      }
      if (*s == "01" || *s == "00") {
        if (auto v = make(Value::Kind::Bool)) {
          v->boolean = *s == "01";
          push(v);
        }
        return;
      }
      std::int64_t n = 0;
      bool neg = false;
      std::size_t i = 0;
      if (!s->empty() && (*s)[0] == '-') {
        neg = true;
        i = 1;
      }
      if (i == s->size() || s->size() - i > 18) {
        fail(op_at_, "INT with a malformed or too long number");
        return;
      }
      for (; i < s->size(); ++i) {
        if ((*s)[i] < '0' || (*s)[i] > '9') {
          fail(op_at_, "INT with a malformed number");
          return;
        }
        n = n * 10 + ((*s)[i] - '0');
      }
      int_value(neg ? -n : n);
      return;
    }
    case 'G': { // BINFLOAT, big-endian IEEE 754 double
      auto s = take(8);
      if (!s) {
        return;
      }
      std::uint64_t u = 0;
      for (std::size_t i = 0; i < 8; ++i) {
        u = (u << 8) | static_cast<unsigned char>((*s)[i]);
      }
      if (auto v = make(Value::Kind::Float)) {
        v->real = std::bit_cast<double>(u);
        push(v);
      }
      return;
    }
    case 'X': // BINUNICODE
      if (auto n = little<std::uint32_t>()) {
        string_value(Value::Kind::Str, *n);
      }
      return;
    case 0x8c: // SHORT_BINUNICODE
      if (auto n = little<std::uint8_t>()) {
        string_value(Value::Kind::Str, *n);
      }
      return;
    case 0x8d: // BINUNICODE8
      if (auto n = little<std::uint64_t>()) {
        string_value(Value::Kind::Str, *n);
      }
      return;
    case 'T': // BINSTRING (Python 2 str): kept as text
      if (auto n = little<std::int32_t>()) {
        if (*n < 0) {
          fail(op_at_, "BINSTRING with a negative length");
          return;
        }
        string_value(Value::Kind::Str, static_cast<std::uint64_t>(*n));
      }
      return;
    case 'U': // SHORT_BINSTRING
      if (auto n = little<std::uint8_t>()) {
        string_value(Value::Kind::Str, *n);
      }
      return;
    case 'B': // BINBYTES
      if (auto n = little<std::uint32_t>()) {
        string_value(Value::Kind::Bytes, *n);
      }
      return;
    case 'C': // SHORT_BINBYTES
      if (auto n = little<std::uint8_t>()) {
        string_value(Value::Kind::Bytes, *n);
      }
      return;
    case 0x8e: // BINBYTES8
    case 0x96: // BYTEARRAY8
      if (auto n = little<std::uint64_t>()) {
        string_value(Value::Kind::Bytes, *n);
      }
      return;
    case '}':
      push(make(Value::Kind::Dict));
      return;
    case ']':
      push(make(Value::Kind::List));
      return;
    case ')':
      push(make(Value::Kind::Tuple));
      return;
    case 0x8f:
      push(make(Value::Kind::Set));
      return;
    case 0x85:
      tuple_of(1);
      return;
    case 0x86:
      tuple_of(2);
      return;
    case 0x87:
      tuple_of(3);
      return;
    case 't':
      sequence_from_mark(Value::Kind::Tuple);
      return;
    case 'l':
      sequence_from_mark(Value::Kind::List);
      return;
    case 0x91: // FROZENSET
      sequence_from_mark(Value::Kind::Set);
      return;
    case 'd': { // DICT: key/value pairs above the MARK
      auto m = pop_mark();
      if (!m) {
        return;
      }
      if ((stack_.size() - *m) % 2 != 0) {
        fail(op_at_, "DICT with an odd number of values");
        return;
      }
      auto v = make(Value::Kind::Dict);
      if (!v) {
        return;
      }
      for (std::size_t i = *m; i + 1 < stack_.size(); i += 2) {
        v->entries.emplace_back(stack_[i], stack_[i + 1]);
      }
      stack_.resize(*m);
      push(v);
      return;
    }
    case 's': // SETITEM
      if (stack_.size() < floor() + 3) {
        fail(op_at_, "SETITEM without a dict, key and value on the stack");
        return;
      }
      set_items(stack_.size() - 2);
      return;
    case 'u': { // SETITEMS
      auto m = pop_mark();
      if (m) {
        set_items(*m);
      }
      return;
    }
    case 'a': // APPEND
      if (stack_.size() < floor() + 2) {
        fail(op_at_, "APPEND without a list and a value on the stack");
        return;
      }
      append_items(stack_.size() - 1, false);
      return;
    case 'e': { // APPENDS
      auto m = pop_mark();
      if (m) {
        append_items(*m, false);
      }
      return;
    }
    case 0x90: { // ADDITEMS
      auto m = pop_mark();
      if (m) {
        append_items(*m, true);
      }
      return;
    }
    case 'q':
      if (auto id = little<std::uint8_t>()) {
        memo_put(*id);
      }
      return;
    case 'r':
      if (auto id = little<std::uint32_t>()) {
        memo_put(*id);
      }
      return;
    case 0x94: // MEMOIZE
      memo_put(memo_.size());
      return;
    case 'h':
      if (auto id = little<std::uint8_t>()) {
        memo_get(*id);
      }
      return;
    case 'j':
      if (auto id = little<std::uint32_t>()) {
        memo_get(*id);
      }
      return;
    case 'p':
    case 'g': { // PUT / GET (text)
      auto s = line();
      if (!s) {
        return;
      }
      std::uint64_t id = 0;
      if (s->empty() || s->size() > 10) {
        fail(op_at_, "PUT/GET with a malformed memo id");
        return;
      }
      for (char c : *s) {
        if (c < '0' || c > '9') {
          fail(op_at_, "PUT/GET with a malformed memo id");
          return;
        }
        id = id * 10 + static_cast<std::uint64_t>(c - '0');
      }
      if (op == 'p') {
        memo_put(id);
      } else {
        memo_get(id);
      }
      return;
    }
    default:
      if (op >= 0x20 && op < 0x7f) {
        fail(op_at_, fmt::format("opcode '{}' (0x{:02x}) is not one a data-only pickle of "
                                 "protocol 2 to 5 uses",
                                 static_cast<char>(op), op));
      } else {
        fail(op_at_, fmt::format("byte 0x{:02x} is not a pickle opcode", op));
      }
      return;
    }
  }

  std::string_view data_;
  Limits limits_;
  std::size_t pos_ = 0;
  std::size_t op_at_ = 0;
  int protocol_ = 0;
  // Values are made here, so the stack and the memo may point at them as mutable (APPEND and
  // SETITEMS change the container below their items).
  Value* mutable_at(std::size_t i) { return stack_[i]; }

  std::shared_ptr<Document> doc_ = std::make_shared<Document>();
  std::vector<Value*> stack_;
  std::vector<std::size_t> marks_;
  std::unordered_map<std::uint64_t, Value*> memo_;
  std::string error_;
  std::size_t error_at_ = 0;
};

} // namespace

Result read(std::string_view data, const Limits& limits) {
  return Reader(data, limits).run();
}

} // namespace rocplay::collectives::pickle
