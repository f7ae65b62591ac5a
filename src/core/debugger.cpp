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

} // namespace rocplay
