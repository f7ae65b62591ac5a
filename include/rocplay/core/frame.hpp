// One stack frame as a debugger listed it (-stack-list-frames, `bt`): a host thread's, a wave's,
// or cuda-gdb's focus thread's. Shared by the snapshot model (HostThread::frames) and the fault
// model (Fault::frames).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace rocplay {

struct Frame {
  std::uint32_t level = 0;
  std::optional<std::uint64_t> pc;
  std::string function;     // demangled
  std::string linkage_name; // the mangled name, when the debugger printed one
  std::string file;
  std::optional<std::uint32_t> line;
  std::string from; // shared object when there is no file
  // A Python frame read from the interpreter's memory (rocplay/snapshot/python_stacks.hpp):
  // `function` is the qualified name, `file` and `line` the Python source; no PC.
  bool python = false;
  // A Python frame's `with` blocks hold these threading.Lock objects (their addresses).
  std::vector<std::uint64_t> held_locks;
  bool operator==(const Frame&) const = default;
};

} // namespace rocplay
