// Device code decoded after the detach. cuda-gdb's first disassembly of device code costs about
// 0.5 s of its own CPU, inside the stop. But cuda-gdb keeps each device ELF it was given, at the
// addresses the code runs at, and `info symbol ADDR` names that file at no cost. So in the stop
// rocplay asks `info symbol` and keeps the file; after the detach nvdisasm decodes it, and the
// windows go into the recording as rocplay's own notes, which the snapshot builder reads like
// any `-data-disassemble` answer (docs/transcript-format.md, "Code decoded after the detach").
// Layer: src/snapshot/ (library rocplay_snapshot; docs/architecture.md).
#pragma once

#include "rocplay/isa/instructions.hpp"
#include "rocplay/snapshot/snapshot.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace rocplay::snapshot {

// GDB's `info symbol ADDR`: `NAME + 192 in section .text._Z4spinv of /tmp/cuda-dbg/..../elf.o`
// (no `+ N` at the symbol's start, no `of FILE` in the main executable).
struct SymbolAnswer {
  std::string name; // as printed (demangled)
  std::uint64_t offset = 0;
  std::string section; // `.text._Z4spinv`
  std::string object;  // the file holding it; empty for the main executable
};
std::optional<SymbolAnswer> parse_info_symbol(std::string_view answer);

// The note that opens a window: `code window for SUBJECT at 0xPC, decoded after the detach by
// DECODER from OBJECT`; SUBJECT is the CUDA focus the PC was read under.
std::string code_window_note(std::string_view subject, std::uint64_t pc, std::string_view decoder,
                             std::string_view object);
// One instruction of the window opened last: `code 0xADDR FUNCTION+OFFSET: TEXT`.
std::string code_instruction_note(const isa::Instruction& instruction);

// Reads the notes of the two kinds above, in recording order, into windows: a header opens a
// window, an instruction joins the one opened last. Bounded as -data-disassemble answers are.
class CodeNoteReader {
public:
  // False for any other note.
  bool take(std::string_view note, std::vector<CodeWindow>& windows);

private:
  bool open_ = false; // the last header opened a window (none past the bound)
};

} // namespace rocplay::snapshot
