// A small /proc file read whole: the process scan (session/procfs.cpp) and the maps reader
// (core/mapped_objects.cpp) both need it.
// Layer: src/core/ (library rocplay_core).
#pragma once

#include <cstddef>
#include <optional>
#include <string>

namespace rocplay::process {

// /proc files report size 0, so this reads to the end, at most `max_bytes` (the rest is left);
// nullopt when the file cannot be opened or read.
std::optional<std::string> read_proc_file(const std::string& path, std::size_t max_bytes);

} // namespace rocplay::process
