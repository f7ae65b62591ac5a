// Small accessors of the typed model.
#include "rocplay/snapshot.hpp"

#include <charconv>

namespace rocplay {

std::string_view to_string(DebuggerKind kind) {
  switch (kind) {
  case DebuggerKind::Gdb:
    return "gdb";
  case DebuggerKind::RocGdb:
    return "rocgdb";
  case DebuggerKind::CudaGdb:
    return "cuda-gdb";
  case DebuggerKind::Unknown:
    break;
  }
  return "unknown";
}

DebuggerKind debugger_kind_from_string(std::string_view name) {
  if (name == "gdb") {
    return DebuggerKind::Gdb;
  }
  if (name == "rocgdb") {
    return DebuggerKind::RocGdb;
  }
  if (name == "cuda-gdb") {
    return DebuggerKind::CudaGdb;
  }
  return DebuggerKind::Unknown;
}

std::optional<std::uint32_t> agent_number(const Agent& agent) {
  if (agent.number) {
    return agent.number;
  }
  std::string_view id = agent.id;
  if (auto dot = id.rfind('.'); dot != std::string_view::npos) {
    id.remove_prefix(dot + 1);
  }
  std::uint32_t n = 0;
  auto [end, ec] = std::from_chars(id.data(), id.data() + id.size(), n);
  if (ec != std::errc() || end != id.data() + id.size() || id.empty()) {
    return std::nullopt;
  }
  return n;
}

const SourceLine* Snapshot::source_line(std::uint64_t pc) const {
  for (const auto& line : source_lines) {
    if (line.pc == pc) {
      return &line;
    }
  }
  return nullptr;
}

const Dispatch* Snapshot::dispatch_of(const Wave& wave) const {
  if (!wave.dispatch) {
    return nullptr;
  }
  for (const auto& d : dispatches) {
    if (d.dispatch_no != wave.dispatch) {
      continue;
    }
    // A coordinate unknown on either side does not rule the dispatch out.
    if (d.agent && wave.agent && *d.agent != *wave.agent) {
      continue;
    }
    if (d.queue && wave.queue && *d.queue != *wave.queue) {
      continue;
    }
    return &d;
  }
  return nullptr;
}

const Agent* Snapshot::agent(std::uint32_t number) const {
  for (const auto& a : agents) {
    if (agent_number(a) == number) {
      return &a;
    }
  }
  return nullptr;
}

} // namespace rocplay
