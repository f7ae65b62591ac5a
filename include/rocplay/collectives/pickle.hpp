// A reader for the subset of Python's pickle protocol (versions 2 to 5) that data-only files use:
// dicts, lists, tuples, sets, str and bytes, ints, floats, bools, None, and the memo. PyTorch's
// Flight Recorder dumps are such files (torch/csrc/jit/serialization/pickler.cpp writes them).
//
// Nothing is ever executed: the opcodes that name or call code (GLOBAL, STACK_GLOBAL, REDUCE,
// BUILD, INST, OBJ, NEWOBJ, NEWOBJ_EX, PERSID, BINPERSID, EXT1/2/4, the out-of-band buffers) are
// refused with an error naming the opcode and its byte offset. The input is untrusted: its size,
// the stack, the memo, nesting, string lengths and the number of values are bounded (Limits);
// a memo reference may share one value in several places, so readers of the tree bound their own
// walk (Walk).
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace rocplay::collectives::pickle {

struct Limits {
  std::size_t max_input_bytes = 256u << 20; // a Flight Recorder dump of 20000 entries is ~40 MB
  std::size_t max_values = 8u << 20;        // values made, in all
  std::size_t max_stack = 1u << 20;         // stack entries
  std::size_t max_marks = 256;              // MARKs open at once (nesting of tuples/lists/dicts)
  std::size_t max_memo = 4u << 20;          // memo slots
  std::size_t max_string_bytes = 64u << 20; // one str or bytes
};

struct Value {
  enum class Kind : std::uint8_t { None, Bool, Int, Float, Str, Bytes, List, Tuple, Dict, Set };
  Kind kind = Kind::None;
  bool boolean = false;
  std::int64_t integer = 0;
  double real = 0;
  std::string text; // Str (UTF-8 as written) and Bytes
  // Elements are owned by the Document; a memo reference may put one value in several places,
  // or (as Python's own pickler can) a container inside itself.
  std::vector<const Value*> items;                            // List, Tuple, Set
  std::vector<std::pair<const Value*, const Value*>> entries; // Dict, in insertion order

  bool is(Kind k) const { return kind == k; }
  bool is_sequence() const { return kind == Kind::List || kind == Kind::Tuple; }
  // The value of a Dict under a Str key (first match); nullptr if none or not a Dict.
  const Value* get(std::string_view key) const;
};
std::string_view to_string(Value::Kind kind);

// Every value read, owned in one place (values may refer to each other in cycles).
struct Document {
  std::deque<Value> values;
};

struct Result {
  std::shared_ptr<const Document> document;
  const Value* root = nullptr; // nullptr on error; owned by `document`
  std::string error;           // what went wrong, with the byte offset: `offset 17: GLOBAL ...`
  std::size_t offset = 0;      // where it went wrong
  int protocol = 0;            // from PROTO; 0 when the stream has none (protocol 0/1 text)
  bool ok() const { return root != nullptr; }
};

// Reads one pickle (up to its STOP). Bytes after STOP are ignored (PyTorch writes none).
Result read(std::string_view data, const Limits& limits = {});

// True when `head` starts like a pickle of protocol 2 to 5 (PROTO n, then an opcode).
bool looks_like_pickle(std::string_view head);

// A budget for one walk over a tree read by `read`: memo references can make it a DAG (or, with
// Python's own pickler, a cycle), so every visit is counted and nesting is bounded.
struct Walk {
  std::size_t visits_left = 16u << 20;
  std::size_t max_depth = 64;
  bool spent() const { return visits_left == 0; }
  bool visit() {
    if (visits_left == 0) {
      return false;
    }
    --visits_left;
    return true;
  }
};

} // namespace rocplay::collectives::pickle
