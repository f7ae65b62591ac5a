// The files a process has mapped, from /proc/PID/maps: the session (light symbols) and the Python
// frame reader (where `_PyRuntime` is) both ask.
// Layer: src/core/ (library rocplay_core).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace rocplay::process {

// An ELF file the process has mapped (a shared library, the executable), from /proc/PID/maps:
// each file once, with the address of its offset-0 mapping (its load base for a shared object).
struct MappedObject {
  std::string path;
  std::uint64_t base = 0;
};
// Parses /proc/PID/maps text. Skips anonymous and pseudo mappings (`[heap]`, `/dev/...`,
// `/memfd:...`) and files deleted since they were mapped.
std::vector<MappedObject> parse_maps(std::string_view text);
std::optional<std::vector<MappedObject>> read_mapped_objects(std::int64_t pid);

} // namespace rocplay::process
