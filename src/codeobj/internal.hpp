// Shared between the code-object reader's files; not part of the public interface.
#pragma once

#include "rocplay/codeobj/codeobj.hpp"

#include <gelf.h>
#include <libelf.h>

#include <cstdint>
#include <cstring>
#include <mutex>
#include <span>
#include <string>

namespace rocplay::codeobj {

// Parses an NT_AMDGPU_METADATA note (msgpack) into co.target and co.kernels. A malformed note
// adds a warning to co and leaves what was read before the fault.
void read_metadata_note(std::span<const std::uint8_t> note, CodeObject& co, const Limits& limits);

inline void init_libelf() {
  static std::once_flag once;
  std::call_once(once, [] { elf_version(EV_CURRENT); });
}

// A name from a string table, cut at the limit (a missing terminator cannot run past the table:
// libelf checks that).
inline std::string bounded_name(const char* s, std::size_t max) {
  if (s == nullptr) {
    return {};
  }
  return std::string(s, ::strnlen(s, max));
}

struct ElfCloser {
  void operator()(Elf* e) const { elf_end(e); }
};

} // namespace rocplay::codeobj
