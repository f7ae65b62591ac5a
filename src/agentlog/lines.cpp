// Line lexing for the agent-log parser (see agentlog/lines.hpp).
#include "agentlog/lines.hpp"

#include "agentlog/util.hpp"
#include "rocplay/core/source.hpp"

#include <algorithm>
#include <cctype>

namespace rocplay::agentlog::detail {

std::optional<int> small_int(std::string_view s) {
  if (s.empty() || s.size() > 6) {
    return std::nullopt;
  }
  auto v = parse_dec(s);
  return v ? std::optional<int>(static_cast<int>(*v)) : std::nullopt;
}

std::string_view digits_at(std::string_view s, std::size_t pos) {
  std::size_t end = pos;
  while (end < s.size() && is_digit(s[end]) && end - pos < 18) {
    ++end;
  }
  return s.substr(pos, end - pos);
}

// `2026-05-20T15:31:09.123456Z ` (docker logs -t, journald exports): stripped, not a stream.
std::string_view strip_timestamp(std::string_view s) {
  if (s.size() < 20 || !is_digit(s[0]) || !is_digit(s[3]) || s[4] != '-' || s[7] != '-' ||
      (s[10] != 'T' && s[10] != ' ') || s[13] != ':' || s[16] != ':') {
    return s;
  }
  std::size_t i = 19;
  while (i < s.size() && i < 48 && !detail::is_space(s[i])) {
    ++i;
  }
  if (i < s.size() && s[i] == ' ') {
    return s.substr(i + 1);
  }
  return s;
}

// The launcher prefix is source::launcher_prefix, the one rule the crash reader uses too; the
// stream is named as the agent log always named it: `[1,3]`, `[rank3]`, `VllmWorker rank=3 pid=7`.
Prefix split_prefix(std::string_view line) {
  Prefix p;
  line = strip_timestamp(line);
  p.rest = line;
  const auto lp = source::launcher_prefix(line);
  if (!lp) {
    return p;
  }
  if (lp->key.starts_with("(")) {
    p.key = sanitize(lp->key.substr(1, lp->key.size() - 2), 128);
  } else {
    p.key = std::string(lp->key.substr(0, lp->key.find(']') + 1));
  }
  p.rank = lp->rank;
  p.pid = lp->pid;
  p.rest = line.substr(lp->length);
  return p;
}

// Position of `wave_N: pc=0x` in s, or npos.
std::size_t find_wave_line(std::string_view s) {
  std::size_t pos = 0;
  while ((pos = s.find("wave_", pos)) != std::string_view::npos) {
    std::size_t i = pos + 5;
    const std::size_t digits_begin = i;
    while (i < s.size() && is_digit(s[i])) {
      ++i;
    }
    if (i > digits_begin && s.substr(i).starts_with(": pc=0x")) {
      return pos;
    }
    pos += 5;
  }
  return std::string_view::npos;
}

bool has_wave_tail(std::string_view s) {
  return s.find("(stopped, reason:") != std::string_view::npos ||
         s.find("(running)") != std::string_view::npos;
}

bool is_separator(std::string_view t) {
  return t.size() >= 20 && std::all_of(t.begin(), t.end(), [](char c) { return c == '-'; });
}

bool valid_register_name(std::string_view n) {
  if (n.empty() || n.size() > 32 || std::isalpha(static_cast<unsigned char>(n.front())) == 0) {
    return false;
  }
  return std::all_of(n.begin(), n.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' || c == '.';
  });
}

// `scalar registers:` -> `scalar`
std::optional<std::string> register_class_header(std::string_view t) {
  constexpr std::string_view kSuffix = " registers:";
  if (!t.ends_with(kSuffix) || t.size() > 48) {
    return std::nullopt;
  }
  const auto name = t.substr(0, t.size() - kSuffix.size());
  if (name.empty() || !std::all_of(name.begin(), name.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' || c == ' ';
      })) {
    return std::nullopt;
  }
  return std::string(name);
}

std::vector<std::string_view> split_ws(std::string_view s, std::size_t max_tokens) {
  std::vector<std::string_view> out;
  std::size_t i = 0;
  while (i < s.size() && out.size() < max_tokens) {
    while (i < s.size() && detail::is_space(s[i])) {
      ++i;
    }
    const std::size_t start = i;
    while (i < s.size() && !detail::is_space(s[i])) {
      ++i;
    }
    if (i > start) {
      out.push_back(s.substr(start, i - start));
    }
  }
  return out;
}

// ` => 0x7f20f5e534c4 <+3012>:    s_endpgm`
std::optional<Instruction> parse_instruction(std::string_view t) {
  Instruction ins;
  if (t.starts_with("=>")) {
    ins.at_pc = true;
    t = trim(t.substr(2));
  }
  if (!t.starts_with("0x")) {
    return std::nullopt;
  }
  std::size_t used = 0;
  const auto addr = take_hex(t, used);
  if (!addr || used <= 2) {
    return std::nullopt;
  }
  ins.address = *addr;
  t = t.substr(used);
  t = trim(t);
  if (t.starts_with("<")) {
    const auto close = t.find('>');
    if (close == std::string_view::npos || close > 32) {
      return std::nullopt;
    }
    auto off = t.substr(1, close - 1);
    bool negative = false;
    if (off.starts_with("+")) {
      off.remove_prefix(1);
    } else if (off.starts_with("-")) {
      negative = true;
      off.remove_prefix(1);
    }
    if (auto v = parse_dec(off)) {
      ins.offset = negative ? -static_cast<std::int64_t>(*v) : static_cast<std::int64_t>(*v);
    }
    t = t.substr(close + 1);
  }
  if (!t.starts_with(":")) {
    return std::nullopt;
  }
  ins.text = sanitize(trim(t.substr(1)), 512);
  return ins;
}

std::optional<std::pair<std::uint64_t, std::uint64_t>> parse_loaded_at(std::string_view t) {
  const auto open = t.find('[');
  const auto dash = t.find('-', open == std::string_view::npos ? 0 : open);
  const auto close = t.find(']');
  if (open == std::string_view::npos || dash == std::string_view::npos ||
      close == std::string_view::npos || !(open < dash && dash < close)) {
    return std::nullopt;
  }
  auto lo = parse_hex(trim(t.substr(open + 1, dash - open - 1)));
  auto hi = parse_hex(trim(t.substr(dash + 1, close - dash - 1)));
  if (!lo || !hi) {
    return std::nullopt;
  }
  return std::pair{*lo, *hi};
}

std::optional<std::size_t> find_ci(std::string_view hay, std::string_view needle) {
  if (needle.size() > hay.size()) {
    return std::nullopt;
  }
  for (std::size_t i = 0; i + needle.size() <= hay.size(); ++i) {
    bool ok = true;
    for (std::size_t j = 0; j < needle.size(); ++j) {
      if (std::tolower(static_cast<unsigned char>(hay[i + j])) != needle[j]) {
        ok = false;
        break;
      }
    }
    if (ok) {
      return i;
    }
  }
  return std::nullopt;
}

// The one file-name rule (source::rank_in_file_name).
std::optional<int> rank_from_name(std::string_view name) {
  if (name.size() > 4096) {
    return std::nullopt;
  }
  if (auto named = source::rank_in_file_name(std::string(name))) {
    return named->second;
  }
  return std::nullopt;
}

} // namespace rocplay::agentlog::detail
