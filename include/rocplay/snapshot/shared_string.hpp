// An immutable string that is cheap to copy: up to 38 bytes live inside the object, longer ones
// in one reference-counted buffer that every copy shares.
//
// A node-wide snapshot holds tens of thousands of waves, and almost all of them repeat a handful
// of function names and files while their own target ids are short. As std::string each wave
// cost three heap blocks, and a post-mortem batch spent nearly 30% of its time allocating,
// copying and freeing them. With SharedString a wave's strings are inline or shared (Interner).
// Layer: src/snapshot/ (library rocplay_snapshot; docs/architecture.md).
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <atomic>
#include <compare>
#include <cstdint>
#include <cstring>
#include <fmt/format.h>
#include <functional>
#include <iosfwd>
#include <string>
#include <string_view>
#include <unordered_map>

namespace rocplay {

class SharedString {
public:
  static constexpr std::size_t kInlineBytes = 38;

  SharedString() noexcept { set_inline_size(0); }
  SharedString(std::string_view text) { assign(text); }
  SharedString(const std::string& text) : SharedString(std::string_view(text)) {}
  SharedString(const char* text) : SharedString(std::string_view(text)) {}
  SharedString(const SharedString& other) noexcept { copy_from(other); }
  SharedString(SharedString&& other) noexcept {
    std::memcpy(static_cast<void*>(this), &other, sizeof *this);
    other.set_inline_size(0);
  }
  SharedString& operator=(const SharedString& other) noexcept {
    if (this != &other) {
      release();
      copy_from(other);
    }
    return *this;
  }
  SharedString& operator=(SharedString&& other) noexcept {
    if (this != &other) {
      release();
      std::memcpy(static_cast<void*>(this), &other, sizeof *this);
      other.set_inline_size(0);
    }
    return *this;
  }
  SharedString& operator=(std::string_view text) { return *this = SharedString(text); }
  SharedString& operator=(const std::string& text) { return *this = SharedString(text); }
  SharedString& operator=(const char* text) { return *this = SharedString(text); }
  ~SharedString() { release(); }

  const char* data() const noexcept { return is_inline() ? bytes_ : block()->chars(); }
  // NUL-terminated, like std::string::c_str().
  const char* c_str() const noexcept { return data(); }
  std::size_t size() const noexcept { return is_inline() ? tag_ : block()->size; }
  std::size_t length() const noexcept { return size(); }
  bool empty() const noexcept { return size() == 0; }
  std::string_view view() const noexcept { return {data(), size()}; }
  operator std::string_view() const noexcept { return view(); }
  std::string str() const { return std::string(view()); }

  const char* begin() const noexcept { return data(); }
  const char* end() const noexcept { return data() + size(); }
  char operator[](std::size_t i) const noexcept { return data()[i]; }
  char front() const noexcept { return *data(); }
  char back() const noexcept { return data()[size() - 1]; }
  std::size_t find(std::string_view s, std::size_t pos = 0) const noexcept {
    return view().find(s, pos);
  }
  std::size_t find(char c, std::size_t pos = 0) const noexcept { return view().find(c, pos); }
  std::size_t rfind(std::string_view s, std::size_t pos = std::string_view::npos) const noexcept {
    return view().rfind(s, pos);
  }
  std::size_t rfind(char c, std::size_t pos = std::string_view::npos) const noexcept {
    return view().rfind(c, pos);
  }
  std::string_view substr(std::size_t pos, std::size_t n = std::string_view::npos) const {
    return view().substr(pos, n);
  }
  bool starts_with(std::string_view s) const noexcept { return view().starts_with(s); }
  bool ends_with(std::string_view s) const noexcept { return view().ends_with(s); }

  // True when both share one buffer (the same interned text): equal without comparing bytes.
  bool same_buffer(const SharedString& other) const noexcept {
    return !is_inline() && !other.is_inline() && block() == other.block();
  }

  friend bool operator==(const SharedString& a, const SharedString& b) noexcept {
    return a.same_buffer(b) || a.view() == b.view();
  }
  friend std::strong_ordering operator<=>(const SharedString& a, const SharedString& b) noexcept {
    return a.view() <=> b.view();
  }
  friend bool operator==(const SharedString& a, std::string_view b) noexcept {
    return a.view() == b;
  }
  friend std::strong_ordering operator<=>(const SharedString& a, std::string_view b) noexcept {
    return a.view() <=> b;
  }
  friend bool operator==(const SharedString& a, const std::string& b) noexcept {
    return a.view() == std::string_view(b);
  }
  friend std::strong_ordering operator<=>(const SharedString& a, const std::string& b) noexcept {
    return a.view() <=> std::string_view(b);
  }
  friend bool operator==(const SharedString& a, const char* b) noexcept {
    return a.view() == std::string_view(b);
  }
  friend std::string operator+(std::string a, const SharedString& b) { return a.append(b.view()); }
  friend std::string operator+(const SharedString& a, std::string_view b) {
    return std::string(a.view()).append(b);
  }
  friend std::string operator+(const char* a, const SharedString& b) {
    return std::string(a).append(b.view());
  }

private:
  struct Block {
    std::atomic<std::uint32_t> refs;
    std::uint32_t size;
    char* chars() noexcept { return reinterpret_cast<char*>(this + 1); }
  };
  static constexpr unsigned char kHeapTag = 0xff;

  bool is_inline() const noexcept { return tag_ != kHeapTag; }
  Block* block() const noexcept {
    Block* b = nullptr;
    std::memcpy(&b, bytes_, sizeof b);
    return b;
  }
  void set_inline_size(std::size_t n) noexcept {
    tag_ = static_cast<unsigned char>(n);
    bytes_[n] = '\0';
  }
  void assign(std::string_view text);
  void copy_from(const SharedString& other) noexcept {
    std::memcpy(static_cast<void*>(this), &other, sizeof *this);
    if (!is_inline()) {
      block()->refs.fetch_add(1, std::memory_order_relaxed);
    }
  }
  void release() noexcept {
    if (!is_inline()) {
      release_block();
    }
  }
  void release_block() noexcept;

  char bytes_[kInlineBytes + 1]; // inline text and its NUL, or the Block pointer
  unsigned char tag_;            // inline size, or kHeapTag
};

static_assert(sizeof(SharedString) == 40);

// Hands out one SharedString per distinct text, so the waves of a snapshot share their
// function names and files instead of each holding a copy. Not thread-safe: one per builder.
class Interner {
public:
  SharedString get(std::string_view text);

private:
  // Keys view the text of the mapped SharedString, whose buffer never moves.
  std::unordered_map<std::string_view, SharedString> strings_;
};

std::ostream& operator<<(std::ostream& out, const SharedString& text);
void to_json(nlohmann::json& json, const SharedString& text);
void from_json(const nlohmann::json& json, SharedString& text);

} // namespace rocplay

template <> struct std::hash<rocplay::SharedString> {
  std::size_t operator()(const rocplay::SharedString& s) const noexcept {
    return std::hash<std::string_view>()(s.view());
  }
};

template <> struct fmt::formatter<rocplay::SharedString> : fmt::formatter<fmt::string_view> {
  template <class Context> auto format(const rocplay::SharedString& s, Context& ctx) const {
    return fmt::formatter<fmt::string_view>::format(fmt::string_view(s.data(), s.size()), ctx);
  }
};
