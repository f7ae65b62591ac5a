// /proc/PID/maps read into the files a process has mapped (rocplay/core/mapped_objects.hpp).
#include "rocplay/core/mapped_objects.hpp"
#include "rocplay/core/proc_file.hpp"

#include <algorithm>
#include <charconv>
#include <map>

namespace rocplay::process {

namespace {

// `start-end perms offset dev inode   path` split at blanks, for the first five fields.
std::vector<std::string_view> maps_fields(std::string_view s) {
  std::vector<std::string_view> out;
  std::size_t i = 0;
  while (i < s.size() && out.size() < 6) {
    while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) {
      ++i;
    }
    const std::size_t start = i;
    while (i < s.size() && s[i] != ' ' && s[i] != '\t') {
      ++i;
    }
    if (i > start) {
      out.push_back(s.substr(start, i - start));
    }
  }
  return out;
}

} // namespace

std::vector<MappedObject> parse_maps(std::string_view text) {
  std::vector<MappedObject> out;
  std::map<std::string, std::size_t> seen;
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) {
      end = text.size();
    }
    const std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    // `start-end perms offset dev inode   path`; the path is the rest of the line.
    const auto fields = maps_fields(line);
    if (fields.size() < 6) {
      continue;
    }
    // The fields are views into `line`: the path starts after the inode's end.
    const auto inode_end =
        static_cast<std::size_t>(fields[4].data() + fields[4].size() - line.data());
    const std::size_t path_at = line.find('/', inode_end);
    if (path_at == std::string_view::npos) {
      continue;
    }
    std::string_view path = line.substr(path_at);
    while (!path.empty() && (path.back() == ' ' || path.back() == '\r')) {
      path.remove_suffix(1);
    }
    constexpr std::string_view kDeleted = " (deleted)";
    if (path.size() >= kDeleted.size() && path.substr(path.size() - kDeleted.size()) == kDeleted) {
      continue;
    }
    if (path.rfind("/dev/", 0) == 0 || path.rfind("/memfd:", 0) == 0 ||
        path.rfind("/proc/", 0) == 0 || path.rfind("/SYSV", 0) == 0) {
      continue;
    }
    const std::string_view range = fields[0];
    const std::size_t dash = range.find('-');
    std::uint64_t start = 0;
    std::uint64_t offset = 0;
    const auto r1 = std::from_chars(range.data(), range.data() + dash, start, 16);
    const auto r2 =
        std::from_chars(fields[2].data(), fields[2].data() + fields[2].size(), offset, 16);
    if (dash == std::string_view::npos || r1.ec != std::errc{} || r2.ec != std::errc{}) {
      continue;
    }
    const std::string key(path);
    const auto it = seen.find(key);
    if (it == seen.end()) {
      seen.emplace(key, out.size());
      out.push_back(MappedObject{key, offset == 0 ? start : 0});
    } else if (offset == 0 && out[it->second].base == 0) {
      out[it->second].base = start;
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
