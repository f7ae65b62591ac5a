#include "snapshot/amd_ids.hpp"

#include "snapshot/text.hpp"

#include <cstring>
#include <limits>

namespace rocplay::snapshot::amd {
namespace {

// A cursor over a target id. Every read of a number accepts `?` (unknown) and reports whether
// the text had the expected shape at all.
class Cursor {
public:
  explicit Cursor(std::string_view s) : s_(s) {}
  // Literals only, so the comparison is inlined (a wave's id is read seven pieces at a time).
  template <std::size_t N> bool eat(const char (&lit)[N]) {
    if (s_.size() - pos_ >= N - 1 && std::memcmp(s_.data() + pos_, lit, N - 1) == 0) {
      pos_ += N - 1;
      return true;
    }
    return false;
  }
  bool eat(char c) {
    if (pos_ < s_.size() && s_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  void skip_blanks() {
    while (pos_ < s_.size() && s_[pos_] == ' ') {
      ++pos_;
    }
  }
  // A decimal (optionally signed) or `?`. False when neither is there.
  template <class T> bool number(std::optional<T>& out) {
    if (pos_ < s_.size() && s_[pos_] == '?') {
      ++pos_;
      out.reset();
      return true;
    }
    std::size_t start = pos_;
    if (pos_ < s_.size() && s_[pos_] == '-') {
      ++pos_;
    }
    while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') {
      ++pos_;
    }
    auto digits = s_.substr(start, pos_ - start);
    const bool negative = !digits.empty() && digits.front() == '-';
    if (negative) {
      digits.remove_prefix(1);
    }
    // At most 18 digits: no overflow in the accumulation below (ids are small; 78,000 waves
    // each parse seven of them, so this avoids from_chars' generality).
    if (digits.empty() || digits.size() > 18 || (negative && !std::is_signed_v<T>)) {
      pos_ = start;
      return false;
    }
    std::uint64_t v = 0;
    for (char c : digits) {
      v = v * 10 + static_cast<std::uint64_t>(c - '0');
    }
    if constexpr (std::is_signed_v<T>) {
      out = static_cast<T>(negative ? -static_cast<std::int64_t>(v) : static_cast<std::int64_t>(v));
    } else {
      if (v > std::numeric_limits<T>::max()) {
        return false;
      }
      out = static_cast<T>(v);
    }
    return true;
  }
  // `A:Q:D:W`: numbers separated by `:`, one per out.
  template <class T, class... Rest> bool numbers(std::optional<T>& first, Rest&... rest) {
    return number(first) && ((eat(":") && number(rest)) && ...);
  }
  template <class T> bool triple(char open, char close, std::array<std::optional<T>, 3>& out) {
    if (!eat(open)) {
      return false;
    }
    for (int i = 0; i < 3; ++i) {
      if (i > 0 && !eat(",")) {
        return false;
      }
      if (!number(out[static_cast<std::size_t>(i)])) {
        return false;
      }
    }
    return eat(close);
  }
  bool at_end() const { return pos_ >= s_.size(); }

private:
  std::string_view s_;
  std::size_t pos_ = 0;
};

bool wave_prefix(Cursor& c) {
  return c.eat("AMDGPU Wave") || c.eat("AMDGPU Thread");
}

} // namespace

bool is_wave_id(std::string_view target_id) {
  return text::starts_with(target_id, "AMDGPU Wave") ||
         text::starts_with(target_id, "AMDGPU Thread");
}

std::optional<WaveId> parse_wave_id(std::string_view s) {
  Cursor c(s);
  WaveId w;
  if (!wave_prefix(c)) {
    return std::nullopt;
  }
  c.skip_blanks();
  if (!c.numbers(w.agent, w.queue, w.dispatch, w.wave)) {
    return std::nullopt;
  }
  c.skip_blanks();
  if (!c.triple('(', ')', w.workgroup) || !c.eat("/") || !c.number(w.wave_in_group)) {
    return std::nullopt;
  }
  return w;
}

std::optional<LaneId> parse_lane_id(std::string_view s) {
  Cursor c(s);
  LaneId l;
  if (!c.eat("AMDGPU Lane")) {
    return std::nullopt;
  }
  c.skip_blanks();
  if (!c.numbers(l.wave.agent, l.wave.queue, l.wave.dispatch, l.wave.wave) || !c.eat("/") ||
      !c.number(l.lane)) {
    return std::nullopt;
  }
  c.skip_blanks();
  if (!c.triple('(', ')', l.wave.workgroup)) {
    return std::nullopt;
  }
  if (!c.triple('[', ']', l.work_item)) {
    return std::nullopt;
  }
  return l;
}

std::optional<DispatchId> parse_dispatch_id(std::string_view s) {
  Cursor c(s);
  DispatchId d;
  if (!c.eat("AMDGPU Dispatch")) {
    return std::nullopt;
  }
  c.skip_blanks();
  if (!c.numbers(d.agent, d.queue, d.dispatch)) {
    return std::nullopt;
  }
  c.skip_blanks();
  if (c.eat("(PKID ")) {
    if (!c.number(d.packet_id) || !c.eat(")")) {
      return std::nullopt;
    }
  }
  return d;
}

std::optional<QueueId> parse_queue_id(std::string_view s) {
  Cursor c(s);
  QueueId q;
  if (!c.eat("AMDGPU Queue")) {
    return std::nullopt;
  }
  c.skip_blanks();
  if (!c.numbers(q.agent, q.queue)) {
    return std::nullopt;
  }
  c.skip_blanks();
  if (c.eat("(QID ")) {
    if (!c.number(q.os_qid) || !c.eat(")")) {
      return std::nullopt;
    }
  }
  return q;
}

std::optional<std::uint64_t> parse_agent_gpu_id(std::string_view s) {
  Cursor c(s);
  std::optional<std::uint64_t> id;
  if (!c.eat("AMDGPU Agent (GPUID ") || !c.number(id) || !c.eat(")")) {
    return std::nullopt;
  }
  return id;
}

std::optional<Fence> parse_fence(std::string_view s) {
  Fence f;
  s = text::trim(s);
  if (s.empty()) {
    return f;
  }
  std::size_t start = 0;
  while (start <= s.size()) {
    auto bar = s.find('|', start);
    auto part =
        s.substr(start, bar == std::string_view::npos ? std::string_view::npos : bar - start);
    if (part == "B") {
      f.barrier = true;
    } else if (part == "Aa") {
      f.acquire = FenceScope::Agent;
    } else if (part == "As") {
      f.acquire = FenceScope::System;
    } else if (part == "Ra") {
      f.release = FenceScope::Agent;
    } else if (part == "Rs") {
      f.release = FenceScope::System;
    } else {
      return std::nullopt;
    }
    if (bar == std::string_view::npos) {
      break;
    }
    start = bar + 1;
  }
  return f;
}

std::optional<std::vector<std::uint64_t>> parse_dims(std::string_view s) {
  s = text::trim(s);
  if (s.size() < 3 || s.front() != '[' || s.back() != ']') {
    return std::nullopt;
  }
  s = s.substr(1, s.size() - 2);
  std::vector<std::uint64_t> out;
  std::size_t start = 0;
  while (true) {
    auto comma = s.find(',', start);
    auto part = text::trim(
        s.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start));
    auto v = text::parse_u64(part);
    if (!v || out.size() == 3) {
      return std::nullopt;
    }
    out.push_back(*v);
    if (comma == std::string_view::npos) {
      break;
    }
    start = comma + 1;
  }
  return out;
}

QueueType parse_queue_type(std::string_view s) {
  return queue_type_from_string(text::trim(s));
}

std::optional<std::uint32_t> lanes_for_architecture(std::string_view a) {
  if (text::starts_with(a, "amdgcn:")) {
    a.remove_prefix(7);
  }
  if (!text::starts_with(a, "gfx") || a.size() < 4) {
    return std::nullopt;
  }
  // gfx9xx (3 digits after gfx, first 9 or lower) is GCN/CDNA: wave64. gfx10xx+ is RDNA.
  auto digits = a.substr(3);
  if (digits.size() >= 4 && digits[0] == '1') {
    return 32;
  }
  return 64;
}

} // namespace rocplay::snapshot::amd
