// The code the stuck threads sit in: for each wave class and each host thread whose PC a
// debugger disassembled (Snapshot::code_windows), the instructions around the PC and the loop
// that holds it ("spin loop of 6 instructions: s_sleep, global_load_dword, ..."). A pure
// function of the snapshot, so live runs and post-mortems of recordings agree.
// Layer: src/snapshot/ (library rocplay_snapshot; docs/architecture.md).
#pragma once

#include "rocplay/isa/instructions.hpp"
#include "rocplay/snapshot/snapshot.hpp"

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace rocplay::snapshot {

struct CodeLoop {
  std::string subject;   // "waves at 0x7f..2c0 (allgather_vec)", "thread 3 (spin)"
  bool gpu = false;      // a wave class (true) or a host thread
  std::size_t count = 0; // waves of the class, or 1
  std::uint64_t pc = 0;
  std::string function;
  isa::Arch arch = isa::Arch::Unknown;
  std::vector<isa::Instruction> window; // up to 16 before the PC and 16 from it, branches known
  std::optional<isa::Loop> loop;
  // A host thread whose PC follows a `syscall`: it is inside a system call (asleep in futex_wait,
  // read, poll, ...), so a loop around it is a retry loop, never a spin (`loop->spin` is false).
  bool in_syscall = false;
  // "spin loop of 6 instructions: ...", or for a thread in a system call what that means.
  std::string describe() const;
  bool operator==(const CodeLoop&) const = default;
};

// One entry per wave class and per host thread whose PC lies in a code window, in that order.
std::vector<CodeLoop> code_loops(const Snapshot& snapshot);

nlohmann::json to_json(const CodeLoop& loop);

} // namespace rocplay::snapshot
