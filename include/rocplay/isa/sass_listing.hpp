// nvdisasm's listing of a CUDA device ELF, read into instructions. cuda-gdb keeps each device
// ELF the driver gave it, relocated to the addresses the code runs at, so `nvdisasm -c` of that
// file prints the live addresses (`/*7f51bb7ac2c0*/  ISETP.GE.AND P0, PT, R6, 0x1, PT ;`).
// Pure text in, instructions out: no process is run here.
// Layer: src/isa/ (library rocplay_isa; docs/architecture.md).
#pragma once

#include "rocplay/isa/instructions.hpp"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace rocplay::isa {

struct SassListing {
  std::vector<Instruction> instructions;
  std::vector<std::string> problems; // lines that looked like code and did not read
};

// The instructions of `function` (a linkage name: the section `.text.FUNCTION`), or of every
// function when it is empty, in listing order. Labels used as branch targets (`` `(.L_x_1) ``)
// are replaced by the address they mark, as cuda-gdb prints them, so annotate_branches finds
// the loops; the statement's `;` is dropped. At most max_instructions are read.
// `load_address`: the listing is of a cubin as linked (its addresses are offsets in each section)
// and the function's section runs at this address; its instructions and label targets are moved
// there, as in a listing of cuda-gdb's copy of the loaded module.
SassListing read_nvdisasm_listing(std::string_view listing, std::string_view function = {},
                                  std::size_t max_instructions = 100'000,
                                  std::optional<std::uint64_t> load_address = std::nullopt);

} // namespace rocplay::isa
