// Disassembled instructions, from any source (a saved code object, or a debugger's
// -data-disassemble), and the loop that holds a PC. Pure functions: no debugger, no files.
// Layer: src/isa/ (library rocplay_isa; docs/architecture.md).
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace rocplay::isa {

// Which instruction set the text is in: branch syntax differs.
enum class Arch { Amdgpu, Sass, X86_64, Unknown };
std::string_view to_string(Arch arch);
// From a gdb `arch` field or an architecture name: `amdgcn:gfx90a`, `gfx942`, `i386:x86-64`,
// `sm_90`, `nvptx`.
Arch arch_from_name(std::string_view name);

struct Instruction {
  std::uint64_t address = 0;
  std::uint32_t size = 0;              // bytes, when known
  std::string text;                    // mnemonic and operands, as the disassembler printed them
  std::string bytes;                   // the encoding in hex, when known
  std::string function;                // the function holding it, when known
  std::optional<std::uint64_t> offset; // from the function's start
  std::string file;                    // source position, when the debugger gave one
  std::optional<int> line;
  std::optional<std::uint64_t> branch_target; // filled by annotate_branches
  bool conditional = false;                   // a conditional branch
  bool operator==(const Instruction&) const = default;
};

// The mnemonic: the first word, after a SASS predicate (`@!P0`) and an x86 prefix (`lock`,
// `rep`).
std::string mnemonic(std::string_view text);

// Sets branch_target and conditional from the text: AMDGPU `s_branch`/`s_cbranch_*` (the
// signed 16-bit word offset LLVM prints, or an address the debugger appended), x86 `j*`/`loop*`
// and SASS `BRA` with a hexadecimal target.
void annotate_branches(std::vector<Instruction>& instructions, Arch arch);

struct Loop {
  std::size_t first = 0; // indexes into the window: the branch target ...
  std::size_t last = 0;  // ... and the backward branch
  std::uint64_t start = 0;
  std::uint64_t branch = 0;
  std::size_t count = 0;
  bool spin = false; // short, and it polls: a load, an atomic, a sleep or a pause
  // A wait on time: it reads a clock and touches no memory (PyTorch's `_sleep` spin_kernel, a
  // backoff). Whichever instruction of it a thread is caught at, the thread has done no work.
  bool clock_wait = false;
  std::vector<std::string> mnemonics;
  // "spin loop of 6 instructions: s_sleep, global_load_dword, ..."
  std::string describe(std::size_t max_listed = 12) const;
  bool operator==(const Loop&) const = default;
};

// The innermost loop holding pc: a backward branch at or after pc whose target is at or before
// pc, both inside the window. Empty when the window holds none.
std::optional<Loop> find_loop(const std::vector<Instruction>& window, std::uint64_t pc);

// The one JSON shape of an instruction and of a loop, for every report that shows code (a
// snapshot's code loops, kernel-info, agent-log): addresses as `0x` hex, absent values left out.
nlohmann::json to_json(const Instruction& instruction);
nlohmann::json to_json(const Loop& loop);

} // namespace rocplay::isa
