// GDB/MI values: a read-only view over a parsed record's node table.
//
// A record's values live in a flat node array whose strings are (offset, length) pairs into the
// record's line, so a Value is two pointers and an index: cheap to copy, never allocating until a
// c-string with escapes is decoded. A Value is valid while the record it came from lives.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace rocplay::mi {

// `Missing` is never parsed: it marks the one node a Value without a value points at.
enum class NodeKind : std::uint8_t { String, Tuple, List, Missing };

// One value in a record, 20 bytes. Nodes are stored in pre-order: a container's children
// follow it, each child's subtree whole, so a node's next sibling (when it has one) is the node
// at its `end`. The parser fills every field of every node it writes, which lets the table be
// allocated uninitialised.
struct Node {
  std::uint32_t name_off; // result name (empty for a bare value in a list or legacy shape)
  std::uint32_t text_off; // strings: the body between the quotes, still escaped
  std::uint32_t size;     // strings: body length; tuples and lists: number of children
  std::uint32_t end;      // one past the last node of this node's subtree
  std::uint16_t name_len;
  NodeKind kind;
  bool escaped; // body holds at least one backslash escape

  static constexpr std::uint32_t kNone = 0xffffffffu;
  static constexpr std::uint32_t kMaxNameBytes = 0xffffu;
};
static_assert(sizeof(Node) == 20);

namespace detail {
// What a Value that names nothing points at, so that asking it anything costs no null check.
// Its `end` of 1 makes it an empty container to iterate.
inline constexpr Node kMissingNode{0, 0, 0, 1, 0, NodeKind::Missing, false};

// Large blocks come straight from mmap with transparent huge pages requested: filling a
// multi-MB node table 4 KiB page by page cost as much as parsing it (one fault per page).
void* allocate_large(std::size_t bytes);
void deallocate_large(void* p, std::size_t bytes) noexcept;
// Per-file buffers of a batch post-mortem (~1 MB lines) stay below this: mmap, munmap and
// 2 MB zeroed pages per file cost more than they save there.
constexpr std::size_t kLargeBytes = std::size_t{32} << 20;
} // namespace detail

// The allocator of the parser's buffers. It leaves trivially constructible elements
// uninitialised on resize() (the parser sizes its node table ahead of a line and writes only the
// nodes it uses), and takes large blocks from detail::allocate_large.
template <class T> struct UninitAllocator {
  using value_type = T;
  UninitAllocator() = default;
  template <class U> UninitAllocator(const UninitAllocator<U>&) noexcept {}
  T* allocate(std::size_t n) {
    if (n * sizeof(T) >= detail::kLargeBytes) {
      return static_cast<T*>(detail::allocate_large(n * sizeof(T)));
    }
    return std::allocator<T>().allocate(n);
  }
  void deallocate(T* p, std::size_t n) noexcept {
    if (n * sizeof(T) >= detail::kLargeBytes) {
      detail::deallocate_large(p, n * sizeof(T));
    } else {
      std::allocator<T>().deallocate(p, n);
    }
  }
  template <class U> void construct(U* p) noexcept { ::new (static_cast<void*>(p)) U; }
  template <class U, class... Args> void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
  template <class U> bool operator==(const UninitAllocator<U>&) const noexcept { return true; }
};

using NodeTable = std::vector<Node, UninitAllocator<Node>>;

// An error from a typed accessor; `path` names the value (`threads[3].frame.addr`).
struct AccessError {
  std::string path;
  std::string message; // "expected hex integer, got \"??\""
  std::string what() const { return path + ": " + message; }
};

// A value or the reason there is none. Minimal stand-in for C++23 std::expected.
template <class T> class [[nodiscard]] Result {
public:
  Result(T value) : v_(std::move(value)) {}
  Result(AccessError error) : v_(std::move(error)) {}
  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }
  const T& value() const { return std::get<0>(v_); }
  const T& operator*() const { return value(); }
  const AccessError& error() const { return std::get<1>(v_); }
  T value_or(T fallback) const { return ok() ? value() : fallback; }
  std::optional<T> to_optional() const { return ok() ? std::optional<T>(value()) : std::nullopt; }

private:
  std::variant<T, AccessError> v_;
};

// Decodes a c-string body (without the quotes). GDB's escapes `\\ \" \n \t \r \b \f \e \a \v`,
// octal `\NNN` (1-3 digits) to the exact byte, and lldb-mi's `\xNN`. Bytes are returned as they
// are: they need not be UTF-8. An unknown escape keeps the escaped character.
std::string unescape(std::string_view body);

// Replaces invalid UTF-8 sequences with U+FFFD, for display.
std::string lossy_utf8(std::string_view bytes);

// At most max bytes of s, never ending inside a UTF-8 sequence: a cut that keeps valid text valid.
std::string_view utf8_prefix(std::string_view s, std::size_t max);

// Encodes bytes as an MI c-string body (the inverse of unescape; used by tests and the writer).
std::string escape(std::string_view bytes);

class Value {
public:
  // A missing value: every query answers "nothing", so lookups chain safely.
  Value() = default;
  // `index` names a node of `nodes`.
  Value(const char* line, const Node* nodes, std::uint32_t index)
      : line_(line), nodes_(nodes), index_(index) {}

  bool valid() const { return node().kind != NodeKind::Missing; }
  explicit operator bool() const { return valid(); }
  bool is_string() const { return node().kind == NodeKind::String; }
  bool is_tuple() const { return node().kind == NodeKind::Tuple; }
  bool is_list() const { return node().kind == NodeKind::List; }

  // The result name this value was given (`frame` in `frame={...}`); empty when bare.
  std::string_view name() const {
    return valid() ? std::string_view(line_ + node().name_off, node().name_len)
                   : std::string_view();
  }
  // The c-string body as written (escapes undecoded); empty for tuples and lists.
  std::string_view raw() const {
    return is_string() ? std::string_view(line_ + node().text_off, node().size)
                       : std::string_view();
  }
  // The c-string decoded to exact bytes. For a value without escapes this is raw().
  std::string bytes() const;
  // Decoded and made valid UTF-8 for display.
  std::string text() const { return lossy_utf8(bytes()); }
  // The string when it is one and has no escapes (the common case), else the fallback.
  std::string_view str_or(std::string_view fallback = {}) const {
    return is_string() && !node().escaped ? raw() : fallback;
  }

  // Children of a tuple or list, in order, duplicates kept.
  std::size_t size() const { return is_tuple() || is_list() ? node().size : 0; }
  Value at(std::size_t i) const;
  // The first child named `key`; an invalid Value when there is none, so chains are safe.
  Value operator[](std::string_view key) const;
  Value operator[](std::size_t i) const { return at(i); }
  std::vector<Value> all(std::string_view key) const;

  // Typed reads. Decimal or 0x-hex accepted by as_u64/as_i64; as_address wants hex.
  Result<std::uint64_t> as_u64() const;
  Result<std::int64_t> as_i64() const;
  Result<std::uint64_t> as_address() const;
  Result<std::string> as_string() const;

  // `threads[3].frame.addr`, found by descending from the record's root.
  std::string path() const;
  // The value in MI syntax (names included), for logs and round-trip tests.
  std::string to_mi() const;

  class iterator {
  public:
    iterator(const char* line, const Node* nodes, std::uint32_t i)
        : line_(line), nodes_(nodes), i_(i) {}
    Value operator*() const { return Value(line_, nodes_, i_); }
    iterator& operator++() {
      i_ = nodes_[i_].end;
      return *this;
    }
    bool operator==(const iterator& o) const { return i_ == o.i_; }

  private:
    const char* line_;
    const Node* nodes_;
    std::uint32_t i_;
  };
  // The children lie between this node and its `end`: none for a string.
  iterator begin() const { return iterator(line_, nodes_, index_ + 1); }
  iterator end() const { return iterator(line_, nodes_, node().end); }

  const Node& node() const { return nodes_[index_]; }

private:
  AccessError error(std::string message) const;

  const char* line_ = "";
  const Node* nodes_ = &detail::kMissingNode;
  std::uint32_t index_ = 0;
};

} // namespace rocplay::mi
