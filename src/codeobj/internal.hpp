// Shared between the code-object reader's files; not part of the public interface.
#pragma once

#include "rocplay/codeobj/codeobj.hpp"

#include <cstdint>
#include <span>

namespace rocplay::codeobj {

// Parses an NT_AMDGPU_METADATA note (msgpack) into co.target and co.kernels. A malformed note
// adds a warning to co and leaves what was read before the fault.
void read_metadata_note(std::span<const std::uint8_t> note, CodeObject& co, const Limits& limits);

} // namespace rocplay::codeobj
