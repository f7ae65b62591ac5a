// The agent-log model's accessors, and code-object URIs as the agent prints them.
#include "rocplay/agentlog/agentlog.hpp"
#include "rocplay/codeobj/codeobj.hpp"

#include "agentlog/util.hpp"

namespace rocplay::agentlog {

using detail::parse_dec;
using detail::trim;

std::optional<std::uint32_t> Register::lane(std::size_t i) const {
  if (i < lanes.size() && i < present.size() && present[i]) {
    return lanes[i];
  }
  return std::nullopt;
}

const Instruction* Disassembly::at_pc() const {
  for (const auto& ins : instructions) {
    if (ins.at_pc) {
      return &ins;
    }
  }
  return nullptr;
}

const Register* Wave::find_register(std::string_view name) const {
  for (const auto& cls : registers) {
    for (const auto& reg : cls.registers) {
      if (reg.name == name) {
        return &reg;
      }
    }
  }
  return nullptr;
}

std::size_t AgentLog::wave_count() const {
  std::size_t n = 0;
  for (const auto& d : dumps) {
    n += d.waves.size();
  }
  return n;
}

// Any protocol is kept (codeobj::parse_uri takes only file:// and memory://), and a memory://
// URI whose PID does not read is still the object the dump names.
std::optional<CodeObject> parse_code_object_uri(std::string_view uri) {
  uri = trim(uri);
  auto parts = codeobj::split_uri(uri);
  if (!parts) {
    return std::nullopt;
  }
  CodeObject co;
  co.uri = std::string(uri);
  co.protocol = std::move(parts->protocol);
  if (co.protocol == "memory") {
    if (auto pid = parse_dec(parts->path)) {
      co.pid = static_cast<std::int64_t>(*pid);
    }
  } else {
    co.path = codeobj::percent_decode(parts->path); // as the agent does before opening it
  }
  co.offset = parts->offset;
  co.size = parts->size;
  co.saved_name = std::move(parts->saved_name);
  return co;
}

} // namespace rocplay::agentlog
