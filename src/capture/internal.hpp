// The pure parts of the capture (src/capture/): the mappings it copies or names, the merge of
// copied memory into the core's regions, /proc/PID/task/TID/syscall. Separate from the ptrace code
// so the unit tests reach them. Layer: src/capture/ (library rocplay_capture).
#pragma once

#include "rocplay/capture/capture.hpp"
#include "rocplay/core/mapped_objects.hpp"

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace rocplay::capture::detail {

// A range of target memory to copy.
struct Range {
  std::uint64_t start = 0;
  std::uint64_t end = 0;
};

// One line of /proc/PID/maps (core's reader).
using MapEntry = process::MapEntry;

// The mappings the core's NT_FILE note names: backed by a file still there (not `(deleted)`), and
// not a device, memfd, SysV segment or /proc file (the debugger would read those as the file).
std::vector<FileMapping> file_mappings(const std::vector<MapEntry>& maps);

// The writable data of the C runtime that libthread_db reads to list a core's threads: the
// file-backed read-write mappings of the dynamic linker (the path mapped at `ld_base`, AT_BASE;
// `_rtld_global` holds the thread lists), of libc and of libpthread (glibc before 2.34). Each at
// most `max_bytes`.
std::vector<Range> runtime_data(const std::vector<MapEntry>& maps, std::uint64_t ld_base,
                                std::uint64_t max_bytes);

// The index of the entry of `maps` (sorted, as parse_map_entries returns it) holding `address`; -1
// when none does.
long find_mapping(const std::vector<MapEntry>& maps, std::uint64_t address);

// /proc/PID/task/TID/syscall of a blocked thread: the system call it is in (-1: blocked outside
// one), its six arguments (the registers rdi, rsi, rdx, r10, r8, r9 on x86-64; zero outside a
// call), its stack pointer and PC.
struct SyscallState {
  long number = -1;
  std::array<std::uint64_t, 6> args{};
  std::uint64_t sp = 0;
  std::uint64_t pc = 0;
};
// nullopt for `running` (the thread was on a CPU) and for text in neither of the kernel's forms
// (`NR ARG1 ... ARG6 SP PC`, `-1 SP PC`).
std::optional<SyscallState> parse_syscall_file(std::string_view text);

// Sorts `ranges` and merges the ones that overlap or touch; empty ranges are dropped.
std::vector<Range> merge_ranges(std::vector<Range> ranges);

// The union of `low` and `high` as disjoint regions in ascending order: where two overlap, the
// bytes of `high` win (memory copied in the stop over memory copied before it).
std::vector<Region> merge_regions(std::vector<Region> low, std::vector<Region> high);

} // namespace rocplay::capture::detail
