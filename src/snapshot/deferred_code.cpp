// Device code decoded after the detach (see rocplay/snapshot/deferred_code.hpp).
#include "rocplay/snapshot/deferred_code.hpp"

#include "snapshot/text.hpp"

#include <fmt/format.h>

namespace rocplay::snapshot {

namespace {

constexpr std::string_view kWindowPrefix = "code window for ";
constexpr std::string_view kInstructionPrefix = "code 0x";
constexpr std::string_view kDecodedBy = ", decoded after the detach by ";
// As for -data-disassemble answers (gdb.cpp): windows per snapshot, instructions per window.
constexpr std::size_t kMaxWindows = 256;
constexpr std::size_t kMaxInstructions = 4096;

// A recording's notes are its bytes, and what they give ends up in JSON reports: valid UTF-8,
// at most `max` bytes.
std::string note_field(std::string_view s, std::size_t max) {
  return mi::lossy_utf8(mi::utf8_prefix(s, max));
}

std::string_view trim_end(std::string_view s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) {
    s.remove_suffix(1);
  }
  return s;
}

} // namespace

std::optional<SymbolAnswer> parse_info_symbol(std::string_view answer) {
  answer = trim_end(answer);
  constexpr std::string_view kInSection = " in section ";
  const auto in = answer.rfind(kInSection);
  if (in == std::string_view::npos || in == 0) {
    return std::nullopt; // `No symbol matches ...`
  }
  SymbolAnswer a;
  std::string_view name = answer.substr(0, in);
  if (auto plus = name.rfind(" + "); plus != std::string_view::npos) {
    auto offset = text::parse_u64(name.substr(plus + 3));
    if (!offset) {
      return std::nullopt;
    }
    a.offset = *offset;
    name = name.substr(0, plus);
  }
  a.name = std::string(name);
  std::string_view rest = answer.substr(in + kInSection.size());
  const auto of = rest.find(" of ");
  a.section = std::string(rest.substr(0, of));
  if (of != std::string_view::npos) {
    a.object = std::string(rest.substr(of + 4));
  }
  if (a.section.empty() || a.section.find(' ') != std::string::npos) {
    return std::nullopt;
  }
  return a;
}

std::string code_window_note(std::string_view subject, std::uint64_t pc, std::string_view decoder,
                             std::string_view object) {
  return fmt::format("{}{} at {:#x}{}{} from {}", kWindowPrefix, subject, pc, kDecodedBy, decoder,
                     object);
}

std::string code_instruction_note(const isa::Instruction& instruction) {
  return fmt::format("code {:#x} {}+{}: {}", instruction.address, instruction.function,
                     instruction.offset.value_or(0), instruction.text);
}

bool CodeNoteReader::take(std::string_view note, std::vector<CodeWindow>& windows) {
  if (note.starts_with(kWindowPrefix)) {
    const std::string_view rest = note.substr(kWindowPrefix.size());
    const auto at = rest.rfind(" at 0x");
    const auto by = rest.find(kDecodedBy, at);
    open_ = at != std::string_view::npos && by != std::string_view::npos &&
            windows.size() < kMaxWindows;
    if (open_) {
      CodeWindow w;
      w.thread = note_field(rest.substr(0, at), 1024);
      const std::string_view decoder = rest.substr(by + kDecodedBy.size());
      w.decoded_by = note_field(decoder.substr(0, decoder.find(' ')), 64);
      windows.push_back(std::move(w));
    }
    return true;
  }
  if (!note.starts_with(kInstructionPrefix)) {
    return false;
  }
  // `code 0x7f51bb7ac2c0 _Z13allgather_vecPViiPKfPf+192: ISETP.GE.AND P0, PT, R6, 0x1, PT`
  std::string_view rest = note.substr(5);
  const auto space = rest.find(' ');
  const auto colon = rest.find(": ");
  if (!open_ || windows.empty() || space == std::string_view::npos ||
      colon == std::string_view::npos || colon < space ||
      windows.back().instructions.size() >= kMaxInstructions) {
    return true; // ours, but without a window to join or beyond the bound
  }
  auto address = text::parse_hex(rest.substr(0, space));
  const std::string_view where = rest.substr(space + 1, colon - space - 1);
  const auto plus = where.rfind('+');
  if (!address || plus == std::string_view::npos) {
    return true;
  }
  isa::Instruction in;
  in.address = *address;
  in.function = note_field(where.substr(0, plus), 1024);
  in.offset = text::parse_u64(where.substr(plus + 1));
  in.text = note_field(rest.substr(colon + 2), 512);
  windows.back().instructions.push_back(std::move(in));
  return true;
}

} // namespace rocplay::snapshot
