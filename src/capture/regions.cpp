// The mappings the capture copies or names, the merge of copied memory, /proc/PID/task/TID/syscall
// and the stack fingerprint (src/capture/internal.hpp, rocplay/capture/capture.hpp).
#include "capture/internal.hpp"
#include "core/text_scan.hpp"

#include <algorithm>
#include <charconv>
#include <cstddef>
#include <cstring>
#include <functional>
#include <string>
#include <string_view>

#if defined(__linux__) && defined(__x86_64__)
#include <sys/syscall.h>
#include <sys/user.h>
#endif

namespace rocplay::capture::detail {

std::vector<FileMapping> file_mappings(const std::vector<MapEntry>& maps) {
  std::vector<FileMapping> out;
  constexpr std::string_view kDeleted = " (deleted)";
  for (const auto& m : maps) {
    const std::string_view p = m.path;
    if (p.empty() || p[0] != '/') {
      continue;
    }
    if (p.size() >= kDeleted.size() && p.substr(p.size() - kDeleted.size()) == kDeleted) {
      continue;
    }
    if (p.starts_with("/dev/") || p.starts_with("/memfd:") || p.starts_with("/proc/") ||
        p.starts_with("/SYSV") || p.starts_with("/sys/")) {
      continue;
    }
    out.push_back(FileMapping{m.start, m.end, m.offset, m.path});
  }
  return out;
}

std::vector<Range> runtime_data(const std::vector<MapEntry>& maps, std::uint64_t ld_base,
                                std::uint64_t max_bytes) {
  std::vector<Range> out;
  const long ld = ld_base != 0 ? find_mapping(maps, ld_base) : -1;
  const std::string ld_path = ld >= 0 ? maps[static_cast<std::size_t>(ld)].path : std::string();
  for (const auto& m : maps) {
    if (!m.readable || !m.writable || m.path.empty() || m.path[0] != '/' ||
        m.end - m.start > max_bytes) {
      continue;
    }
    const std::string_view p = m.path;
    const std::string_view base = p.substr(p.rfind('/') + 1);
    // libc.so.6, libc-2.31.so; libpthread.so.0, libpthread-2.31.so.
    const bool runtime = base.starts_with("libc.so") || base.starts_with("libc-") ||
                         base.starts_with("libpthread.so") || base.starts_with("libpthread-");
    if (runtime || (!ld_path.empty() && m.path == ld_path)) {
      out.push_back({m.start, m.end});
    }
  }
  return out;
}

long find_mapping(const std::vector<MapEntry>& maps, std::uint64_t address) {
  // The first entry ending above `address`: it holds it when it also starts at or below it.
  const auto it = std::upper_bound(maps.begin(), maps.end(), address,
                                   [](std::uint64_t a, const MapEntry& m) { return a < m.end; });
  if (it == maps.end() || it->start > address) {
    return -1;
  }
  return static_cast<long>(it - maps.begin());
}

std::vector<Range> merge_ranges(std::vector<Range> ranges) {
  ranges.erase(
      std::remove_if(ranges.begin(), ranges.end(), [](const Range& r) { return r.end <= r.start; }),
      ranges.end());
  std::sort(ranges.begin(), ranges.end(),
            [](const Range& a, const Range& b) { return a.start < b.start; });
  std::vector<Range> out;
  for (const auto& r : ranges) {
    if (!out.empty() && r.start <= out.back().end) {
      out.back().end = std::max(out.back().end, r.end);
    } else {
      out.push_back(r);
    }
  }
  return out;
}

std::vector<Region> merge_regions(std::vector<Region> low, std::vector<Region> high) {
  std::vector<Range> ranges;
  ranges.reserve(low.size() + high.size());
  bool disjoint = true; // the common case: nothing to copy, the regions move as they are
  for (const auto* list : {&low, &high}) {
    for (const auto& r : *list) {
      if (!r.bytes.empty()) {
        ranges.push_back({r.address, r.address + r.bytes.size()});
      }
    }
  }
  auto merged = merge_ranges(ranges);
  disjoint = merged.size() == ranges.size();
  std::vector<Region> out;
  out.reserve(merged.size());
  if (disjoint) {
    for (auto* list : {&low, &high}) {
      for (auto& r : *list) {
        if (!r.bytes.empty()) {
          out.push_back(std::move(r));
        }
      }
    }
    std::sort(out.begin(), out.end(),
              [](const Region& a, const Region& b) { return a.address < b.address; });
    return out;
  }
  for (const auto& m : merged) {
    Region r;
    r.address = m.start;
    r.bytes.assign(m.end - m.start, '\0');
    out.push_back(std::move(r));
  }
  // Low first, then high over it.
  for (const auto* list : {&low, &high}) {
    for (const auto& r : *list) {
      if (r.bytes.empty()) {
        continue;
      }
      const auto it =
          std::upper_bound(out.begin(), out.end(), r.address, [](std::uint64_t a, const Region& o) {
            return a < o.address + o.bytes.size();
          });
      // Every byte of `r` lies in one merged region, by construction.
      std::memcpy(it->bytes.data() + (r.address - it->address), r.bytes.data(), r.bytes.size());
    }
  }
  return out;
}

std::optional<SyscallState> parse_syscall_file(std::string_view text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == '\0')) {
    text.remove_suffix(1);
  }
  std::vector<std::string_view> fields;
  for (std::size_t pos = 0;;) {
    const std::string_view f = text_scan::next_field(text, pos);
    if (f.empty()) {
      break;
    }
    if (fields.size() == 9) {
      return std::nullopt; // more fields than either form
    }
    fields.push_back(f);
  }
  if (fields.size() != 3 && fields.size() != 9) {
    return std::nullopt;
  }
  SyscallState out;
  const std::string_view nr = fields[0];
  const bool negative = !nr.empty() && nr[0] == '-';
  long number = 0;
  const auto r = std::from_chars(nr.data() + (negative ? 1 : 0), nr.data() + nr.size(), number);
  if (r.ec != std::errc{} || r.ptr != nr.data() + nr.size() || (negative && number != 1) ||
      (fields.size() == 3) != negative) {
    return std::nullopt;
  }
  out.number = negative ? -1 : number;
  auto hex = [](std::string_view f, std::uint64_t& value) {
    const auto v = f.starts_with("0x") ? text_scan::parse_digits(f.substr(2), 16) : std::nullopt;
    value = v.value_or(0);
    return v.has_value();
  };
  for (std::size_t i = 1; i + 2 < fields.size(); ++i) {
    if (!hex(fields[i], out.args[i - 1])) {
      return std::nullopt;
    }
  }
  if (!hex(fields[fields.size() - 2], out.sp) || !hex(fields.back(), out.pc)) {
    return std::nullopt;
  }
  return out;
}

} // namespace rocplay::capture::detail

namespace rocplay::capture {

#if defined(__linux__) && defined(__x86_64__)
namespace {

// Where an interrupted timed wait writes the time it had left: a thread napping in a loop is
// caught in a fresh sleep each sample with only that value different, and the unwinder never
// reads it (it is the syscall's output, not a saved register or return address). The registers
// must be those of a thread stopped inside the syscall (orig_rax is its number, -1 otherwise).
struct Span {
  std::uint64_t address = 0;
  std::uint64_t bytes = 0;
};
Span time_left_written(const user_regs_struct& regs) {
  constexpr std::uint64_t kTimespec = 16; // struct timespec and struct timeval on x86-64
  switch (static_cast<long>(regs.orig_rax)) {
  case SYS_nanosleep:
    return {regs.rsi, kTimespec};
  case SYS_clock_nanosleep:
    return {regs.r10, kTimespec};
  case SYS_select:
  case SYS_pselect6:
    return {regs.r8, kTimespec};
  case SYS_ppoll:
    return {regs.rdx, kTimespec};
  default:
    return {};
  }
}

} // namespace
#endif

std::uint64_t stack_fingerprint(const Capture& capture, const Thread& thread) {
#if defined(__linux__) && defined(__x86_64__)
  constexpr std::uint64_t kRedZone = 128;
  if (thread.prstatus_regs.size() < sizeof(user_regs_struct)) {
    return 0;
  }
  user_regs_struct regs;
  std::memcpy(&regs, thread.prstatus_regs.data(), sizeof regs);
  const std::uint64_t from = regs.rsp >= kRedZone ? regs.rsp - kRedZone : 0;
  // The regions are sorted by address and disjoint (merge_regions).
  auto it = std::upper_bound(capture.memory.begin(), capture.memory.end(), regs.rsp,
                             [](std::uint64_t a, const Region& r) { return a < r.address; });
  if (it == capture.memory.begin()) {
    return 0;
  }
  --it;
  std::uint64_t end = it->address + it->bytes.size();
  if (regs.rsp >= end) {
    return 0;
  }
  // A thread's control block sits above its stack in the same mapping (glibc); in it the kernel
  // rewrites the rseq area's CPU number each time the thread moves to another CPU.
  if (regs.fs_base > regs.rsp && regs.fs_base < end) {
    end = regs.fs_base;
  }
  const std::uint64_t start = std::max(from, it->address);
  const std::string_view stack = std::string_view(it->bytes).substr(
      static_cast<std::size_t>(start - it->address), static_cast<std::size_t>(end - start));
  // Hashed in two parts around the time left (the second empty when there is none); where the
  // cut falls follows from the registers, which are hashed too.
  std::size_t cut = stack.size();
  std::size_t cut_bytes = 0;
  if (const Span left = time_left_written(regs);
      left.bytes != 0 && left.address >= start && left.address < end) {
    cut = static_cast<std::size_t>(left.address - start);
    cut_bytes = std::min<std::size_t>(left.bytes, stack.size() - cut);
  }
  const std::hash<std::string_view> hash;
  const std::uint64_t parts =
      hash(stack.substr(0, cut)) ^ (hash(stack.substr(cut + cut_bytes)) * 0xff51afd7ed558ccdULL);
  return parts ^ (hash(thread.prstatus_regs) * 0x9e3779b97f4a7c15ULL);
#else
  (void)capture;
  (void)thread;
  return 0;
#endif
}

} // namespace rocplay::capture
