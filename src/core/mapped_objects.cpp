// /proc/PID/maps read into the files a process has mapped (rocplay/core/mapped_objects.hpp).
#include "rocplay/core/mapped_objects.hpp"
#include "core/text_scan.hpp"
#include "rocplay/core/proc_file.hpp"

#include <algorithm>
#include <charconv>
#include <map>

namespace rocplay::process {

namespace {

// All of `s` as hex digits (no `0x`), into `out`.
bool parse_hex(std::string_view s, std::uint64_t& out) {
  const auto v = text_scan::parse_digits(s, 16);
  out = v.value_or(0);
  return v.has_value();
}

} // namespace

std::vector<MapEntry> parse_map_entries(std::string_view text) {
  std::vector<MapEntry> out;
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t eol = text.find('\n', pos);
    if (eol == std::string_view::npos) {
      eol = text.size();
    }
    const std::string_view line = text.substr(pos, eol - pos);
    pos = eol + 1;
    // `start-end perms offset dev inode   path`; the path is the rest of the line.
    std::size_t at = 0;
    const auto range = text_scan::next_field(line, at);
    const auto perms = text_scan::next_field(line, at);
    const auto offset = text_scan::next_field(line, at);
    const auto dev = text_scan::next_field(line, at);
    const auto inode = text_scan::next_field(line, at);
    const std::size_t dash = range.find('-');
    MapEntry e;
    if (dash == std::string_view::npos || perms.size() < 4 || dev.empty() || inode.empty() ||
        !parse_hex(range.substr(0, dash), e.start) || !parse_hex(range.substr(dash + 1), e.end) ||
        !parse_hex(offset, e.offset) || e.end <= e.start) {
      continue;
    }
    e.readable = perms[0] == 'r';
    e.writable = perms[1] == 'w';
    while (at < line.size() && (line[at] == ' ' || line[at] == '\t')) {
      ++at;
    }
    std::string_view path = line.substr(at);
    while (!path.empty() && (path.back() == ' ' || path.back() == '\r')) {
      path.remove_suffix(1);
    }
    e.path = std::string(path);
    out.push_back(std::move(e));
  }
  return out;
}

std::vector<MappedObject> parse_maps(std::string_view text) {
  std::vector<MappedObject> out;
  std::map<std::string, std::size_t> seen;
  for (auto& e : parse_map_entries(text)) {
    const std::string_view path = e.path;
    // Files only: not anonymous or pseudo (`[heap]`, `[anon:...]`), not deleted since mapped, not a
    // device, memfd, /proc file or SysV segment.
    constexpr std::string_view kDeleted = " (deleted)";
    if (!path.starts_with("/") ||
        (path.size() >= kDeleted.size() &&
         path.substr(path.size() - kDeleted.size()) == kDeleted) ||
        path.starts_with("/dev/") || path.starts_with("/memfd:") || path.starts_with("/proc/") ||
        path.starts_with("/SYSV")) {
      continue;
    }
    const auto it = seen.find(e.path);
    if (it == seen.end()) {
      seen.emplace(e.path, out.size());
      out.push_back(MappedObject{std::move(e.path), e.offset == 0 ? e.start : 0});
    } else if (e.offset == 0 && out[it->second].base == 0) {
      out[it->second].base = e.start;
    }
  }
  return out;
}

std::optional<std::vector<MappedObject>> read_mapped_objects(std::int64_t pid) {
  if (pid <= 0) {
    return std::nullopt;
  }
  constexpr std::size_t kMaxBytes = std::size_t{64} << 20;
  const auto text = read_proc_file("/proc/" + std::to_string(pid) + "/maps", kMaxBytes);
  if (!text) {
    return std::nullopt;
  }
  return parse_maps(*text);
}

} // namespace rocplay::process
