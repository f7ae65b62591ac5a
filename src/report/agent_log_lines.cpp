// The lines an agent-log fault group is described with (agent_log_lines.hpp).
#include "report/agent_log_lines.hpp"

#include "core/text_scan.hpp"

#include <algorithm>

namespace rocplay::report::agent_log_lines {

using namespace agentlog;
using text_scan::hex;

std::string_view finding_id(const FaultGroup& g) {
  if (g.reason.find("ASSERT_TRAP") != std::string::npos) {
    return "fault-device-assert";
  }
  if (g.reason.find("MEMORY_VIOLATION") != std::string::npos ||
      g.reason.find("ADDRESS_ERROR") != std::string::npos) {
    return "fault-memory-violation";
  }
  if (g.reason.find("ILLEGAL_INSTRUCTION") != std::string::npos ||
      g.reason.find("INVALID_OPCODE") != std::string::npos) {
    return "fault-illegal-instruction";
  }
  return "fault-gpu-exception";
}

std::string lanes_text(const std::vector<std::uint32_t>& lanes) {
  std::string out;
  for (std::size_t i = 0; i < lanes.size();) {
    std::size_t j = i;
    while (j + 1 < lanes.size() && lanes[j + 1] == lanes[j] + 1) {
      ++j;
    }
    if (!out.empty()) {
      out += ',';
    }
    out += std::to_string(lanes[i]);
    if (j > i) {
      out += "-" + std::to_string(lanes[j]);
    }
    i = j + 1;
  }
  return out;
}

std::string ints_text(const std::vector<int>& v) {
  std::vector<std::uint32_t> u;
  for (int x : v) {
    u.push_back(static_cast<std::uint32_t>(x));
  }
  return lanes_text(u);
}

std::string hex32(std::uint32_t v) {
  return hex(v);
}

std::string short_kernel(const std::string& name, std::size_t max) {
  if (name.size() <= max) {
    return name;
  }
  return name.substr(0, max) + "...";
}

std::string kernel_title(const FaultGroup& g) {
  if (g.kernel.name.empty()) {
    return "an unnamed kernel";
  }
  std::string t = g.kernel.op.empty() ? g.kernel.short_name : g.kernel.op;
  if (!g.kernel.dtype_hint.empty()) {
    t += ", " + g.kernel.dtype_hint;
  }
  return t;
}

std::string where_text(const FaultGroup& g) {
  std::string s;
  if (!g.pcs.empty()) {
    s = "pc " + hex(g.pcs.front());
    if (g.pcs.size() > 1) {
      s += " (+" + std::to_string(g.pcs.size() - 1) + " more, one per process)";
    }
  }
  if (g.kernel_offset) {
    s += " = kernel+" + std::to_string(*g.kernel_offset);
  }
  if (g.elf_address) {
    s += " (ELF " + hex(*g.elf_address) + ")";
  }
  return s;
}

std::string register_line(const RegisterSummary& r) {
  std::string s = r.name + ": ";
  s += r.basis == "exec" ? "active lanes hold " : "lanes off the pattern hold ";
  if (r.active_min && r.active_max) {
    s += *r.active_min == *r.active_max ? hex32(*r.active_min)
                                        : hex32(*r.active_min) + ".." + hex32(*r.active_max);
  }
  s += " (" + std::to_string(r.active_distinct) + " distinct)";
  if (r.other_min && r.other_max) {
    s += ", other lanes " + hex32(*r.other_min) + ".." + hex32(*r.other_max);
  }
  if (r.stands_out) {
    s += "  <- outside the other lanes' range";
  }
  return s;
}

std::vector<std::string> access_summary(const MemoryAccess& a, std::size_t max_waves) {
  std::vector<std::string> out;
  std::vector<std::uint64_t> wave_order;
  for (const auto& x : a.addresses) {
    if (std::find(wave_order.begin(), wave_order.end(), x.wave) == wave_order.end()) {
      wave_order.push_back(x.wave);
    }
  }
  for (std::size_t k = 0; k < wave_order.size() && k < max_waves; ++k) {
    std::uint64_t lo = ~0ULL;
    std::uint64_t hi = 0;
    std::vector<std::uint32_t> in_page;
    std::vector<std::uint32_t> lanes;
    for (const auto& x : a.addresses) {
      if (x.wave != wave_order[k]) {
        continue;
      }
      lo = std::min(lo, x.address);
      hi = std::max(hi, x.address);
      lanes.push_back(x.lane);
      if (x.in_fault_page) {
        in_page.push_back(x.lane);
      }
    }
    std::string line = "wave_" + std::to_string(wave_order[k]);
    if (a.kind != "scalar") {
      line += " lanes " + lanes_text(lanes);
    }
    line += ": " + hex(lo) + (hi != lo ? ".." + hex(hi) : "");
    if (!in_page.empty()) {
      line += "; in the faulting page: " +
              (a.kind == "scalar" ? std::string("yes") : "lanes " + lanes_text(in_page));
    }
    out.push_back(std::move(line));
  }
  if (wave_order.size() > max_waves) {
    out.push_back("... " + std::to_string(wave_order.size() - max_waves) + " more waves");
  }
  return out;
}

} // namespace rocplay::report::agent_log_lines
