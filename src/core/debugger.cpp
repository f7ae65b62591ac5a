// Debugger kinds: their names and the one banner-to-kind rule.
#include "rocplay/core/debugger.hpp"

#include "rocplay/core/names.hpp"

#include <filesystem>

namespace rocplay {

namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') {
      c = static_cast<char>(c - 'A' + 'a');
    }
  }
  return out;
}

bool contains(const std::string& hay, std::string_view needle) {
  return hay.find(needle) != std::string::npos;
}

} // namespace

constexpr NameTable<DebuggerKind, 4> kDebuggerNames{{
    {DebuggerKind::Unknown, "unknown"},
    {DebuggerKind::Gdb, "gdb"},
    {DebuggerKind::RocGdb, "rocgdb"},
    {DebuggerKind::CudaGdb, "cuda-gdb"},
}};
static_assert(names_cover(kDebuggerNames, DebuggerKind::CudaGdb));

std::string_view to_string(DebuggerKind kind) {
  return name_of(kDebuggerNames, kind, "unknown");
}

DebuggerKind debugger_kind_from_string(std::string_view name) {
  return value_of(kDebuggerNames, name).value_or(DebuggerKind::Unknown);
}

DebuggerKind debugger_kind_from_banner(std::string_view banner, std::string_view path) {
  const std::string b = lower(banner);
  const std::string name = lower(std::filesystem::path(std::string(path)).filename().string());
  if (contains(b, "cuda-gdb") || contains(b, "cuda debugger") || contains(b, "nvidia")) {
    return DebuggerKind::CudaGdb;
  }
  if (contains(b, "rocm") || contains(b, "rocgdb")) {
    return DebuggerKind::RocGdb;
  }
  if (contains(name, "rocgdb")) {
    return DebuggerKind::RocGdb;
  }
  if (contains(name, "cuda-gdb")) {
    return DebuggerKind::CudaGdb;
  }
  if (contains(b, "gnu gdb") || contains(name, "gdb")) {
    return DebuggerKind::Gdb;
  }
  return DebuggerKind::Unknown;
}

std::string_view without_light_sysroot(std::string_view path) {
  const std::string marker = "/" + std::string(kLightSysrootPrefix) + "-";
  for (auto at = path.find(marker); at != std::string_view::npos; at = path.find(marker, at + 1)) {
    // PREFIX-PID-SUFFIX: digits, a dash, a suffix without slashes, then the path inside.
    std::size_t i = at + marker.size();
    const std::size_t digits = i;
    while (i < path.size() && path[i] >= '0' && path[i] <= '9') {
      ++i;
    }
    if (i == digits || i >= path.size() || path[i] != '-') {
      continue;
    }
    const auto inside = path.find('/', i + 1);
    if (inside != std::string_view::npos && inside > i + 1) {
      return path.substr(inside);
    }
  }
  return path;
}

} // namespace rocplay
