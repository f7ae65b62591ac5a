// Branch targets and loops over disassembled instructions (see rocplay/isa/instructions.hpp).
#include "rocplay/isa/instructions.hpp"

#include "rocplay/core/names.hpp"

#include <algorithm>
#include <cctype>
#include <limits>

namespace rocplay::isa {

namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return out;
}

std::string_view skip_space(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) {
    s.remove_prefix(1);
  }
  return s;
}

std::string_view first_word(std::string_view s) {
  s = skip_space(s);
  std::size_t n = 0;
  while (n < s.size() && s[n] != ' ' && s[n] != '\t' && s[n] != ',' && s[n] != ';') {
    ++n;
  }
  return s.substr(0, n);
}

// The first `0x...` number in s (a hex address), if any.
std::optional<std::uint64_t> first_hex(std::string_view s) {
  for (std::size_t i = 0; i + 2 < s.size(); ++i) {
    if (s[i] == '0' && (s[i + 1] == 'x' || s[i + 1] == 'X') &&
        (i == 0 || !std::isalnum(static_cast<unsigned char>(s[i - 1])))) {
      std::uint64_t v = 0;
      std::size_t j = i + 2;
      std::size_t digits = 0;
      for (; j < s.size() && std::isxdigit(static_cast<unsigned char>(s[j])); ++j) {
        if (++digits > 16) {
          return std::nullopt;
        }
        const char c = static_cast<char>(std::tolower(static_cast<unsigned char>(s[j])));
        v = v * 16 + static_cast<std::uint64_t>(c <= '9' ? c - '0' : c - 'a' + 10);
      }
      if (digits > 0) {
        return v;
      }
    }
  }
  return std::nullopt;
}

std::optional<std::int64_t> first_decimal(std::string_view s) {
  s = skip_space(s);
  bool negative = false;
  if (!s.empty() && s.front() == '-') {
    negative = true;
    s.remove_prefix(1);
  }
  std::int64_t v = 0;
  std::size_t n = 0;
  for (; n < s.size() && std::isdigit(static_cast<unsigned char>(s[n])); ++n) {
    if (n >= 10) {
      return std::nullopt;
    }
    v = v * 10 + (s[n] - '0');
  }
  if (n == 0 || (n < s.size() && s[n] == 'x')) {
    return std::nullopt;
  }
  return negative ? -v : v;
}

bool is_poll(std::string_view m) {
  static constexpr std::string_view kPolls[] = {
      "s_sleep", "global_load", "flat_load", "buffer_load", "scratch_load", "s_load",
      "s_buffer_load", "global_atomic", "flat_atomic", "buffer_atomic", "ds_read", "ds_load",
      "s_memtime", "s_memrealtime", "s_sendmsg",
      // x86
      "pause", "cmpxchg", "xchg", "mov", "cmp", "call", "syscall",
      // SASS
      "ld", "ldg", "lds", "atom", "atoms", "red", "nanosleep", "yield"};
  const auto lm = lower(m);
  for (auto p : kPolls) {
    if (lm == p || (lm.starts_with(p) && (lm[p.size()] == '_' || lm[p.size()] == '.'))) {
      return true;
    }
  }
  return false;
}

// A read of a cycle counter or timer: SASS `CS2R R4, SR_CLOCKLO` / `S2R`/`S2UR` of SR_CLOCKLO,
// SR_CLOCKHI or SR_GLOBALTIMER*, AMDGPU s_memtime/s_memrealtime, x86 rdtsc(p).
bool is_clock_read(std::string_view m, std::string_view text) {
  const auto lm = lower(m);
  if (lm == "s_memtime" || lm == "s_memrealtime" || lm == "rdtsc" || lm == "rdtscp") {
    return true;
  }
  return (lm == "cs2r" || lm == "s2r" || lm == "s2ur") &&
         (text.find("SR_CLOCK") != std::string_view::npos ||
          text.find("SR_GLOBALTIMER") != std::string_view::npos);
}

// Loads, stores and atomics of every kind (the clock reads above are not memory).
bool touches_memory(std::string_view m) {
  const auto lm = lower(m);
  static constexpr std::string_view kMemory[] = {
      // AMDGPU
      "global_", "flat_", "buffer_", "scratch_", "ds_", "s_load", "s_buffer_", "s_store",
      // SASS
      "ld", "st", "atom", "red", "cctl",
      // x86: any instruction with a memory operand would count; a clock loop has none but the
      // counter compare, so only the explicit ones are listed
      "lock", "xchg", "cmpxchg"};
  for (auto p : kMemory) {
    if (lm.starts_with(p)) {
      return true;
    }
  }
  return false;
}

} // namespace

constexpr NameTable<Arch, 4> kArchNames{{
    {Arch::Amdgpu, "amdgpu"},
    {Arch::Sass, "sass"},
    {Arch::X86_64, "x86-64"},
    {Arch::Unknown, "unknown"},
}};
static_assert(names_cover(kArchNames, Arch::Unknown));

std::string_view to_string(Arch arch) {
  return name_of(kArchNames, arch, "unknown");
}

Arch arch_from_name(std::string_view name) {
  const auto n = lower(name);
  if (n.find("amdgcn") != std::string::npos || n.starts_with("gfx") ||
      n.find(":gfx") != std::string::npos) {
    return Arch::Amdgpu;
  }
  if (n.find("x86-64") != std::string::npos || n.find("x86_64") != std::string::npos ||
      n == "i386") {
    return Arch::X86_64;
  }
  if (n.starts_with("sm_") || n.find("nvptx") != std::string::npos ||
      n.find("sass") != std::string::npos || n.find("cuda") != std::string::npos) {
    return Arch::Sass;
  }
  return Arch::Unknown;
}

std::string mnemonic(std::string_view text) {
  auto s = skip_space(text);
  if (!s.empty() && s.front() == '@') { // SASS predicate
    s.remove_prefix(first_word(s).size());
  }
  auto word = first_word(s);
  static constexpr std::string_view kPrefixes[] = {"lock",  "rep",    "repz",    "repnz", "repe",
                                                   "repne", "data16", "notrack", "bnd"};
  for (int guard = 0; guard < 4; ++guard) {
    const auto lw = lower(word);
    if (std::find(std::begin(kPrefixes), std::end(kPrefixes), lw) == std::end(kPrefixes)) {
      break;
    }
    s = skip_space(s.substr(word.size()));
    word = first_word(s);
  }
  return std::string(word);
}

void annotate_branches(std::vector<Instruction>& instructions, Arch arch) {
  for (auto& in : instructions) {
    in.branch_target.reset();
    in.conditional = false;
    const auto m = lower(mnemonic(in.text));
    const auto text = std::string_view(in.text);
    const auto pos = lower(text).find(m);
    const auto operands =
        pos == std::string::npos ? std::string_view() : text.substr(pos + m.size());
    if (arch == Arch::Amdgpu || (arch == Arch::Unknown && m.starts_with("s_"))) {
      if (m != "s_branch" && !m.starts_with("s_cbranch_")) {
        continue;
      }
      in.conditional = m != "s_branch";
      // A debugger may append the resolved address (`# 0x... <f+8>`); prefer it.
      if (auto hex = first_hex(operands); hex && *hex > 0xffff) {
        in.branch_target = *hex;
        continue;
      }
      if (auto imm = first_decimal(operands)) {
        // SOPP simm16: a signed count of 4-byte words from the next instruction.
        const auto simm = static_cast<std::int16_t>(static_cast<std::uint16_t>(*imm & 0xffff));
        in.branch_target = in.address + 4 + static_cast<std::uint64_t>(std::int64_t{simm} * 4);
      } else if (auto hex = first_hex(operands)) {
        const auto simm = static_cast<std::int16_t>(static_cast<std::uint16_t>(*hex & 0xffff));
        in.branch_target = in.address + 4 + static_cast<std::uint64_t>(std::int64_t{simm} * 4);
      }
    } else if (arch == Arch::X86_64 || arch == Arch::Unknown) {
      if (!(m.starts_with("j") || m.starts_with("loop"))) {
        continue;
      }
      in.conditional = m != "jmp" && m != "jmpq";
      if (operands.find('*') != std::string_view::npos) {
        continue; // indirect
      }
      in.branch_target = first_hex(operands);
    } else if (arch == Arch::Sass) {
      if (m != "bra" && m != "brx" && m != "jmp" && m != "bra.u" && !m.starts_with("bra.")) {
        continue;
      }
      in.conditional =
          skip_space(text).starts_with("@") && !lower(skip_space(text)).starts_with("@pt ");
      in.branch_target = first_hex(operands);
    }
  }
}

std::string Loop::describe(std::size_t max_listed) const {
  std::string out = spin ? "spin loop of " : "loop of ";
  out += std::to_string(count) + (count == 1 ? " instruction" : " instructions");
  if (!mnemonics.empty()) {
    out += ": ";
    for (std::size_t i = 0; i < mnemonics.size() && i < max_listed; ++i) {
      out += (i ? ", " : "") + mnemonics[i];
    }
    if (mnemonics.size() > max_listed) {
      out += ", ...";
    }
  }
  return out;
}

std::optional<Loop> find_loop(const std::vector<Instruction>& window, std::uint64_t pc) {
  if (window.empty()) {
    return std::nullopt;
  }
  const std::uint64_t lo = window.front().address;
  std::optional<Loop> best;
  std::uint64_t best_span = std::numeric_limits<std::uint64_t>::max();
  for (std::size_t i = 0; i < window.size(); ++i) {
    const auto& b = window[i];
    if (b.address < pc || !b.branch_target || *b.branch_target > pc || *b.branch_target < lo) {
      continue;
    }
    const std::uint64_t span = b.address - *b.branch_target;
    if (span >= best_span) {
      continue;
    }
    auto first = std::find_if(window.begin(), window.end(), [&](const Instruction& in) {
      return in.address >= *b.branch_target;
    });
    if (first == window.end() || first->address != *b.branch_target) {
      continue; // the target is not an instruction boundary of this window
    }
    Loop loop;
    loop.first = static_cast<std::size_t>(first - window.begin());
    loop.last = i;
    loop.start = *b.branch_target;
    loop.branch = b.address;
    loop.count = i - loop.first + 1;
    bool polls = false;
    bool clock = false;
    bool memory = false;
    for (std::size_t j = loop.first; j <= i; ++j) {
      loop.mnemonics.push_back(mnemonic(window[j].text));
      const bool reads_clock = is_clock_read(loop.mnemonics.back(), window[j].text);
      polls = polls || is_poll(loop.mnemonics.back());
      clock = clock || reads_clock;
      memory = memory || touches_memory(loop.mnemonics.back());
    }
    loop.spin = polls && loop.count <= 32;
    loop.clock_wait = clock && !memory && loop.count <= 32;
    best = std::move(loop);
    best_span = span;
  }
  return best;
}

} // namespace rocplay::isa
