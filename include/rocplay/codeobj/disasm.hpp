// Disassembly of AMDGPU code from a saved code object, in process, through the LLVM C
// disassembler API. libLLVM is opened on first use (dlopen), not linked: linking it costs every
// start of rocplay about 60 ms, and rocplay without it still reads metadata and fit.
// Layer: src/codeobj/ (library rocplay_codeobj; docs/architecture.md).
#pragma once

#include "rocplay/codeobj/codeobj.hpp"
#include "rocplay/isa/instructions.hpp"

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace rocplay::codeobj {

struct DisassemblyResult {
  std::vector<isa::Instruction> instructions;
  std::string decoder;          // "LLVM 14 C API, gfx90a": what decoded them
  std::optional<Problem> error; // why nothing (or less than asked) was decoded
};

// Whether the in-process decoder knows the architecture (LLVM 14 stops at gfx1035 and knows no
// gfx94x/gfx95x/gfx11/gfx12; asking it for one aborts the process, so this is checked first).
bool decoder_knows(std::string_view arch);

// Decodes up to max_count instructions of `bytes`, the first at `address`.
DisassemblyResult disassemble(std::string_view arch, std::span<const std::uint8_t> bytes,
                              std::uint64_t address, std::size_t max_count);

// The window around pc in the function that holds it: up to `before` instructions before pc
// (decoded from the function's start, as AMDGPU encodings are 4 or 8 bytes long) and `after`
// from pc on. Instructions carry their function, offset and branch targets.
DisassemblyResult window_at(const CodeObject& co, std::uint64_t pc, std::size_t before,
                            std::size_t after);

// All of one function (bounded).
DisassemblyResult disassemble_function(const CodeObject& co, const Function& f,
                                       std::size_t max_count = 100000);

} // namespace rocplay::codeobj
