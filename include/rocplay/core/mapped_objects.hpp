// A process's mappings, from /proc/PID/maps: every line (the capture's copy), and the files mapped
// (the session's light symbols, the Python frame reader's search for `_PyRuntime`).
// Layer: src/core/ (library rocplay_core).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace rocplay::process {

// One line of /proc/PID/maps.
struct MapEntry {
  std::uint64_t start = 0;
  std::uint64_t end = 0;
  std::uint64_t offset = 0; // bytes into the file
  bool readable = false;
  bool writable = false;
  std::string path; // empty for an anonymous mapping; `[stack]`, `[vdso]` for the pseudo ones
};
// Every well-formed line of /proc/PID/maps text, in its order (ascending addresses); a malformed
// line is skipped.
std::vector<MapEntry> parse_map_entries(std::string_view text);

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
