// What `rocplay kernel-info` and `agent-log --code-objects` know about code objects: the
// kernels read, their ISA fit per architecture, and disassembly windows around PCs with the loop
// that holds each. Built from files only; rendering is in src/report/ (rocplay/report/report.hpp).
// Layer: src/codeobj/ (library rocplay_codeobj; docs/architecture.md).
#pragma once

#include "rocplay/codeobj/codeobj.hpp"
#include "rocplay/codeobj/disasm.hpp"
#include "rocplay/codeobj/fit.hpp"
#include "rocplay/isa/instructions.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace rocplay::codeobj {

struct KernelInfoRequest {
  std::vector<std::string> inputs; // paths or code-object URIs
  std::string saved_dir;           // where --save-code-objects put memory:// objects
  std::string kernel;              // only kernels whose name or symbol is (or contains) this
  std::vector<std::string> archs;  // fit targets; empty: each object's own architecture
  std::optional<unsigned> workgroup_size;
  std::optional<std::uint64_t> pc; // a window around this address
  std::size_t before = 16;
  std::size_t after = 16;
  bool fit = true;
};

struct KernelEntry {
  std::size_t object = 0; // index into KernelInfo::objects
  std::size_t kernel = 0; // index into that object's kernels
  std::vector<Fit> fits;
  std::vector<std::string> fit_notes; // an architecture with no fit table, and why
};

struct PcWindow {
  std::size_t object = 0;
  std::uint64_t pc = 0;
  std::string function;
  DisassemblyResult disassembly;
  std::optional<isa::Loop> loop;
  // `s_trap 2` at or just before the PC (the last 4 instructions): a device assert or abort.
  bool trap = false;
  std::optional<std::uint64_t> trap_address;
};

struct KernelInfo {
  std::vector<CodeObject> objects;
  std::vector<Problem> problems;
  std::vector<KernelEntry> kernels;
  std::vector<PcWindow> windows;
};

KernelInfo kernel_info(const KernelInfoRequest& request);

// One object's window around pc, with the loop and the trap check filled in.
PcWindow pc_window(const CodeObject& co, std::size_t object_index, std::uint64_t pc,
                   std::size_t before, std::size_t after);

} // namespace rocplay::codeobj
