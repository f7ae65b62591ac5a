// From parsed waves to fault reports: group by (kernel, offset in kernel, reason), explain the
// reason, find the instruction and the per-lane values that matter, and say how to look deeper.
#include "rocplay/agentlog/agentlog.hpp"

#include "agentlog/code_objects.hpp"
#include "agentlog/util.hpp"

#include <algorithm>
#include <array>
#include <map>
#include <set>

namespace rocplay::agentlog {

using detail::hex;
using detail::parse_dec;
using detail::parse_number;
using detail::trim;

namespace {

struct ReasonRow {
  std::string_view name;
  bool fault;
  Severity severity;
  std::string_view meaning;
  std::string_view next_step;
};

constexpr std::array kReasons = {
    ReasonRow{"ASSERT_TRAP", true, Severity::Error,
              "a device-side assert failed: the kernel executed `s_trap 2` (the lowering of "
              "assert()/CUDA_KERNEL_ASSERT)",
              "find the lanes and values that failed the check (below); for PyTorch, rebuilding "
              "with TORCH_USE_HIP_DSA=1 prints the assert text"},
    ReasonRow{"MEMORY_VIOLATION", true, Severity::Critical,
              "a real out-of-bounds or unmapped memory access: the access at (or just before) the "
              "PC used an address no allocation covers; the address is in its registers",
              "read the address from the access's address registers (below) and compare it with "
              "the tensors the kernel was given (data_ptr() and size)"},
    ReasonRow{"ADDRESS_ERROR", true, Severity::Critical,
              "a malformed address (misaligned or outside the legal aperture) in a memory "
              "instruction",
              "read the address registers of the instruction at the PC"},
    ReasonRow{"ILLEGAL_INSTRUCTION", true, Severity::Critical,
              "the wave executed an invalid opcode: the code object in memory is corrupted "
              "(usually an allocator stomp on the kernel binary) or the PC jumped into data",
              "compare the saved code object with the one on disk; look for a stray write into "
              "code memory"},
    ReasonRow{"INVALID_OPCODE", true, Severity::Critical,
              "the wave executed an invalid opcode: the code object in memory is corrupted "
              "(usually an allocator stomp on the kernel binary) or the PC jumped into data",
              "compare the saved code object with the one on disk; look for a stray write into "
              "code memory"},
    ReasonRow{"TRAP", true, Severity::Error,
              "the kernel executed a trap that is not an assert (__builtin_trap(), abort())",
              "look at the instructions before the PC for the s_trap and the branch to it"},
    ReasonRow{"FATAL_HALT", true, Severity::Critical,
              "the wave halted fatally (hardware or trap-handler error)",
              "check dmesg for amdgpu errors; retry on another GPU to rule out hardware"},
    ReasonRow{"ECC_ERROR", true, Severity::Critical,
              "an uncorrectable ECC error in GPU memory: hardware, not the kernel",
              "check `rocm-smi --showrasinfo` and dmesg; drain the GPU"},
    ReasonRow{"FP_INPUT_DENORMAL", true, Severity::Warning,
              "a floating-point exception (input denormal) was enabled and raised",
              "find the operation at the PC and its inputs"},
    ReasonRow{"FP_DIVIDE_BY_0", true, Severity::Warning,
              "a floating-point divide by zero was enabled and raised",
              "find the divisor of the operation at the PC"},
    ReasonRow{"FP_OVERFLOW", true, Severity::Warning,
              "a floating-point overflow was enabled and raised",
              "find the operation at the PC and its inputs"},
    ReasonRow{"FP_UNDERFLOW", true, Severity::Warning,
              "a floating-point underflow was enabled and raised",
              "find the operation at the PC and its inputs"},
    ReasonRow{"FP_INEXACT", true, Severity::Warning,
              "a floating-point inexact result was enabled and raised",
              "find the operation at the PC and its inputs"},
    ReasonRow{"FP_INVALID_OPERATION", true, Severity::Warning,
              "a floating-point invalid operation (NaN-producing) was enabled and raised",
              "find the operation at the PC and its inputs"},
    ReasonRow{"INT_DIVIDE_BY_0", true, Severity::Warning, "an integer divide by zero",
              "find the divisor of the operation at the PC"},
    ReasonRow{"BREAKPOINT", false, Severity::Info, "the wave hit a breakpoint", ""},
    ReasonRow{"WATCHPOINT", false, Severity::Info, "the wave hit a watchpoint", ""},
    ReasonRow{"SINGLE_STEP", false, Severity::Info, "the wave completed a single step", ""},
    ReasonRow{"DEBUG_TRAP", false, Severity::Info, "a debug trap (the agent resumes these)", ""},
    ReasonRow{"NONE", false, Severity::Info, "no stop reason", ""},
    ReasonRow{"running", false, Severity::Info,
              "the wave was running, not stopped (printed because the agent ran with --all)", ""},
};

bool is_memory_mnemonic(std::string_view m) {
  for (std::string_view p :
       {"global_", "flat_", "buffer_", "tbuffer_", "scratch_", "s_load", "s_buffer_load", "s_store",
        "s_buffer_store", "s_atomic", "s_buffer_atomic", "s_scratch_", "ds_"}) {
    if (m.starts_with(p)) {
      return true;
    }
  }
  return false;
}

std::string_view mnemonic(std::string_view text) {
  text = trim(text);
  return text.substr(0, text.find(' '));
}

// `v[0:1]` -> (v, 0, 2); `v6` -> (v, 6, 1); `s[4:5]` -> (s, 4, 2).
struct RegRef {
  char file = 0;
  std::uint32_t first = 0;
  std::uint32_t count = 0;
};

std::optional<RegRef> parse_reg(std::string_view op) {
  op = trim(op);
  if (op.size() < 2 || (op[0] != 'v' && op[0] != 's')) {
    return std::nullopt;
  }
  RegRef r;
  r.file = op[0];
  if (op[1] == '[') {
    const auto colon = op.find(':');
    const auto close = op.find(']');
    if (colon == std::string_view::npos || close == std::string_view::npos || close < colon) {
      return std::nullopt;
    }
    auto lo = parse_dec(op.substr(2, colon - 2));
    auto hi = parse_dec(op.substr(colon + 1, close - colon - 1));
    if (!lo || !hi || *hi < *lo || *hi - *lo > 16) {
      return std::nullopt;
    }
    r.first = static_cast<std::uint32_t>(*lo);
    r.count = static_cast<std::uint32_t>(*hi - *lo + 1);
    return r;
  }
  auto n = parse_dec(op.substr(1));
  if (!n || *n > 1024) {
    return std::nullopt;
  }
  r.first = static_cast<std::uint32_t>(*n);
  r.count = 1;
  return r;
}

std::string reg_name(char file, std::uint32_t n) {
  return std::string(1, file) + std::to_string(n);
}

// Lanes active in a wave, from its exec register, for a wave of `lanes` lanes.
std::optional<std::vector<bool>> active_lanes(const Wave& w, std::size_t lanes) {
  const Register* exec = w.find_register("exec");
  if (exec == nullptr) {
    exec = w.find_register("exec_lo");
  }
  if (exec == nullptr || exec->vector) {
    return std::nullopt;
  }
  std::vector<bool> out(lanes, false);
  for (std::size_t i = 0; i < lanes && i < 64; ++i) {
    out[i] = ((exec->value >> i) & 1U) != 0;
  }
  return out;
}

// Lanes whose value breaks the register's lane-to-lane pattern: the longest run of lanes that
// step by the dominant stride defines the pattern; lanes off that progression are flagged (a
// run of 5 active lanes holding other indices, or one lane with a stray address).
std::vector<bool> off_stride(const Register& r) {
  const std::size_t n = r.lanes.size();
  std::vector<bool> off(n, false);
  std::map<std::uint32_t, std::size_t> diffs;
  for (std::size_t i = 1; i < n; ++i) {
    if (r.present[i] && r.present[i - 1]) {
      ++diffs[r.lanes[i] - r.lanes[i - 1]];
    }
  }
  if (diffs.empty()) {
    return off;
  }
  const auto stride =
      std::max_element(diffs.begin(), diffs.end(), [](const auto& a, const auto& b) {
        return a.second < b.second;
      })->first;
  std::size_t best_begin = 0;
  std::size_t best_len = 0;
  for (std::size_t i = 0; i < n;) {
    if (!r.present[i]) {
      ++i;
      continue;
    }
    std::size_t j = i;
    while (j + 1 < n && r.present[j + 1] && r.lanes[j + 1] - r.lanes[j] == stride) {
      ++j;
    }
    if (j - i + 1 > best_len) {
      best_begin = i;
      best_len = j - i + 1;
    }
    i = j + 1;
  }
  const std::uint32_t base = r.lanes[best_begin];
  for (std::size_t i = 0; i < n; ++i) {
    if (!r.present[i]) {
      continue;
    }
    const auto steps = static_cast<std::uint32_t>(i) - static_cast<std::uint32_t>(best_begin);
    off[i] = r.lanes[i] != static_cast<std::uint32_t>(base + stride * steps);
  }
  return off;
}

struct RegisterAccumulator {
  std::string name;
  std::size_t waves = 0;
  std::set<std::uint32_t> active;
  std::optional<std::uint32_t> other_min, other_max;
  std::size_t off_pattern = 0;
  std::vector<LaneSample> samples;
  bool exec_basis = true;
};

std::uint32_t reg_number(std::string_view name) {
  auto v = parse_dec(name.substr(1));
  return v ? static_cast<std::uint32_t>(*v) : 0xFFFFFFFFU;
}

void summarise_lanes(const std::vector<const Wave*>& waves, FaultGroup& g,
                     std::size_t max_registers) {
  std::size_t lanes = 0;
  for (const auto* w : waves) {
    for (const auto& cls : w->registers) {
      for (const auto& r : cls.registers) {
        if (r.vector) {
          lanes = std::max(lanes, r.lanes.size());
        }
      }
    }
  }
  // Wave64 unless nothing says so: a lane above 31 printed, or exec bits above 31.
  bool wide = lanes > 32;
  for (const auto* w : waves) {
    const Register* exec = w->find_register("exec");
    wide = wide || (exec != nullptr && !exec->vector && (exec->value >> 32) != 0);
  }
  g.exec.lane_count = wide || lanes == 0 ? 64 : 32;
  std::set<std::uint32_t> union_lanes;
  std::set<std::uint64_t> masks;
  std::map<std::string, RegisterAccumulator> acc;
  std::vector<std::string> order;
  for (const auto* w : waves) {
    const auto active = active_lanes(*w, g.exec.lane_count);
    if (active) {
      ++g.exec.waves_with_exec;
      const Register* exec = w->find_register("exec");
      if (exec == nullptr) {
        exec = w->find_register("exec_lo");
      }
      masks.insert(exec->value);
      for (std::size_t i = 0; i < active->size(); ++i) {
        if ((*active)[i]) {
          union_lanes.insert(static_cast<std::uint32_t>(i));
        }
      }
    }
    for (const auto& cls : w->registers) {
      for (const auto& r : cls.registers) {
        if (!r.vector || r.lanes.empty()) {
          continue;
        }
        auto [it, inserted] = acc.try_emplace(r.name);
        if (inserted) {
          if (order.size() >= 1024) {
            acc.erase(it);
            continue;
          }
          it->second.name = r.name;
          order.push_back(r.name);
        }
        auto& a = it->second;
        ++a.waves;
        const auto off = off_stride(r);
        std::vector<bool> chosen;
        if (active) {
          chosen = *active;
        } else {
          a.exec_basis = false;
          const auto n = static_cast<std::size_t>(std::count(off.begin(), off.end(), true));
          chosen = n * 2 <= r.lanes.size() ? off : std::vector<bool>(r.lanes.size(), false);
        }
        for (std::size_t i = 0; i < r.lanes.size(); ++i) {
          if (!r.present[i]) {
            continue;
          }
          const auto v = r.lanes[i];
          if (i < chosen.size() && chosen[i]) {
            if (a.active.size() < 4096) {
              a.active.insert(v);
            }
            if (off[i]) {
              ++a.off_pattern;
              if (a.samples.size() < 8) {
                a.samples.push_back({w->id, static_cast<std::uint32_t>(i), v});
              }
            }
          } else {
            a.other_min = std::min(a.other_min.value_or(v), v);
            a.other_max = std::max(a.other_max.value_or(v), v);
          }
        }
      }
    }
  }
  g.exec.active_lanes.assign(union_lanes.begin(), union_lanes.end());
  if (masks.size() == 1) {
    g.exec.mask = *masks.begin();
  }
  std::vector<RegisterSummary> out;
  for (const auto& name : order) {
    const auto& a = acc.at(name);
    if (a.off_pattern == 0 || a.active.empty()) {
      continue; // every lane follows the register's pattern: nothing stands out
    }
    RegisterSummary s;
    s.name = a.name;
    s.waves = a.waves;
    s.active_distinct = a.active.size();
    for (auto v : a.active) {
      if (s.active_values.size() >= 16) {
        break;
      }
      s.active_values.push_back(v);
    }
    s.active_min = *a.active.begin();
    s.active_max = *a.active.rbegin();
    s.other_min = a.other_min;
    s.other_max = a.other_max;
    s.off_pattern = a.off_pattern;
    s.stands_out = a.other_min && a.other_max &&
                   std::all_of(a.active.begin(), a.active.end(), [&](std::uint32_t v) {
                     return v < *a.other_min || v > *a.other_max;
                   });
    s.samples = a.samples;
    s.basis = a.exec_basis ? "exec" : "stride";
    out.push_back(std::move(s));
  }
  std::stable_sort(out.begin(), out.end(), [](const RegisterSummary& a, const RegisterSummary& b) {
    if (a.stands_out != b.stands_out) {
      return a.stands_out;
    }
    if (a.name[0] != b.name[0]) {
      return a.name[0] == 'v';
    }
    return reg_number(a.name) < reg_number(b.name);
  });
  if (out.size() > max_registers) {
    g.notes.push_back(std::to_string(out.size() - max_registers) +
                      " more vector registers have lanes off their pattern (see JSON)");
    out.resize(max_registers);
  }
  g.registers = std::move(out);
}

std::optional<std::int64_t> parse_offset_modifier(std::string_view text) {
  const auto pos = text.find("offset:");
  if (pos == std::string_view::npos) {
    return std::nullopt;
  }
  auto rest = text.substr(pos + 7);
  bool negative = false;
  if (rest.starts_with("-")) {
    negative = true;
    rest.remove_prefix(1);
  }
  const auto end = rest.find_first_of(" ,");
  auto v = parse_number(rest.substr(0, end));
  if (!v) {
    return std::nullopt;
  }
  return negative ? -static_cast<std::int64_t>(*v) : static_cast<std::int64_t>(*v);
}

std::vector<std::string_view> operands(std::string_view text) {
  text = trim(text);
  const auto sp = text.find(' ');
  std::vector<std::string_view> ops;
  if (sp == std::string_view::npos) {
    return ops;
  }
  auto rest = text.substr(sp + 1);
  while (!rest.empty() && ops.size() < 8) {
    const auto comma = rest.find(',');
    auto op = trim(rest.substr(0, comma));
    // The last operand carries modifiers (`off offset:16 glc`).
    if (comma == std::string_view::npos) {
      op = op.substr(0, op.find(' '));
    }
    ops.push_back(op);
    if (comma == std::string_view::npos) {
      break;
    }
    rest.remove_prefix(comma + 1);
  }
  return ops;
}

std::optional<std::uint64_t> sgpr_pair(const Wave& w, const RegRef& r) {
  const Register* lo = w.find_register(reg_name('s', r.first));
  const Register* hi = w.find_register(reg_name('s', r.first + 1));
  if (lo == nullptr || hi == nullptr) {
    return std::nullopt;
  }
  return (lo->value & 0xFFFFFFFFULL) | ((hi->value & 0xFFFFFFFFULL) << 32);
}

void decode_access(const std::vector<const Wave*>& waves, const Disassembly& dis, std::uint64_t pc,
                   FaultGroup& g) {
  const Instruction* chosen = nullptr;
  bool at_pc = false;
  for (const auto& ins : dis.instructions) {
    if (ins.address == pc && is_memory_mnemonic(mnemonic(ins.text))) {
      chosen = &ins;
      at_pc = true;
      break;
    }
  }
  if (chosen == nullptr) {
    for (const auto& ins : dis.instructions) {
      if (ins.address < pc && is_memory_mnemonic(mnemonic(ins.text)) &&
          (chosen == nullptr || ins.address > chosen->address)) {
        chosen = &ins;
      }
    }
  }
  if (chosen == nullptr) {
    g.notes.push_back("no memory instruction at or before the PC in the agent's disassembly "
                      "window: disassemble the code object (command below) and look before the "
                      "PC for the access");
    return;
  }
  MemoryAccess a;
  a.instruction = *chosen;
  a.at_pc = at_pc;
  const auto m = mnemonic(chosen->text);
  const auto ops = operands(chosen->text);
  a.store = m.find("_store") != std::string_view::npos;
  const bool atomic = m.find("atomic") != std::string_view::npos;
  const bool returns = atomic && (chosen->text.find(" glc") != std::string::npos ||
                                  chosen->text.find(" sc0") != std::string::npos);
  a.immediate_offset = parse_offset_modifier(chosen->text).value_or(0);
  if (!at_pc) {
    a.note = "the PC is past the access: memory faults are reported when the access completes, "
             "unless the agent ran with --precise-memory (-p); this is the nearest memory "
             "instruction before the PC";
  }
  std::optional<RegRef> vaddr;
  std::optional<RegRef> base;
  if (m.starts_with("global_") || m.starts_with("flat_")) {
    a.kind = m.starts_with("global_") ? "global" : "flat";
    const std::size_t addr_index = (a.store || (atomic && !returns)) ? 0 : 1;
    if (ops.size() > addr_index) {
      a.address_operand = std::string(ops[addr_index]);
      vaddr = parse_reg(ops[addr_index]);
    }
    if (a.kind == "global" && ops.size() > 2 && ops[2] != "off") {
      a.base_operand = std::string(ops[2]);
      base = parse_reg(ops[2]);
    }
  } else if (m.starts_with("s_load") || m.starts_with("s_store") || m.starts_with("s_atomic") ||
             m.starts_with("s_buffer")) {
    a.kind = "scalar";
    if (ops.size() > 1) {
      a.base_operand = std::string(ops[1]);
      base = parse_reg(ops[1]);
      if (ops.size() > 2) {
        if (auto imm = parse_number(ops[2])) {
          a.immediate_offset = static_cast<std::int64_t>(*imm);
        }
      }
    }
    if (m.starts_with("s_buffer")) {
      base.reset(); // a buffer descriptor, not an address
      a.note += std::string(a.note.empty() ? "" : "; ") +
                "scalar buffer access: the base is a resource descriptor in " + a.base_operand;
    }
  } else {
    a.kind = m.starts_with("ds_") ? "lds" : m.starts_with("scratch_") ? "scratch" : "buffer";
    a.address_operand = ops.size() > 1 ? std::string(ops[1]) : std::string{};
    a.note += std::string(a.note.empty() ? "" : "; ") + "the address of a " + a.kind +
              " access depends on a descriptor or aperture the dump does not decode";
  }
  // Plain values, not std::optional: GCC 12 -O2 misreports the optional as uninitialized.
  const bool has_fault_page = g.host_fault && g.host_fault->address;
  const std::uint64_t fault_page = has_fault_page ? (*g.host_fault->address & ~0xFFFULL) : 0;
  const auto in_page = [&](std::uint64_t addr) {
    return has_fault_page && (addr & ~0xFFFULL) == fault_page;
  };
  constexpr std::size_t kMaxAddresses = 256; // four wave64s
  for (const auto* w : waves) {
    if (a.addresses.size() >= kMaxAddresses) {
      break;
    }
    std::optional<std::uint64_t> sbase;
    if (base && base->file == 's' && base->count == 2) {
      sbase = sgpr_pair(*w, *base);
      if (!sbase) {
        continue;
      }
    }
    if (a.kind == "scalar") {
      if (sbase) {
        const auto addr = *sbase + static_cast<std::uint64_t>(a.immediate_offset);
        a.addresses.push_back({w->id, 0, addr, in_page(addr)});
      }
      continue;
    }
    if (!vaddr || vaddr->file != 'v') {
      continue;
    }
    const Register* lo = w->find_register(reg_name('v', vaddr->first));
    const Register* hi =
        vaddr->count >= 2 ? w->find_register(reg_name('v', vaddr->first + 1)) : nullptr;
    if (lo == nullptr || (!sbase && hi == nullptr)) {
      continue;
    }
    const auto active = active_lanes(*w, lo->lanes.size());
    for (std::size_t i = 0; i < lo->lanes.size() && a.addresses.size() < kMaxAddresses; ++i) {
      if (active && !(*active)[i]) {
        continue;
      }
      const auto l = lo->lane(i);
      if (!l) {
        continue;
      }
      std::uint64_t addr = 0;
      if (sbase) {
        addr = *sbase + *l;
      } else {
        const auto h = hi->lane(i);
        if (!h) {
          continue;
        }
        addr = (static_cast<std::uint64_t>(*h) << 32) | *l;
      }
      addr += static_cast<std::uint64_t>(a.immediate_offset);
      a.addresses.push_back({w->id, static_cast<std::uint32_t>(i), addr, in_page(addr)});
    }
  }
  g.access = std::move(a);
}

bool shell_safe(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' || c == '-' || c == '.' ||
           c == '/' || c == '+' || c == ',' || c == ':' || c == '@' || c == '%';
  });
}

std::string quote(std::string_view s) {
  if (shell_safe(s)) {
    return std::string(s);
  }
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out.push_back(c);
    }
  }
  return out + "'";
}

void commands(const AnalyzeOptions& options, FaultGroup& g) {
  if (!g.code_object) {
    return;
  }
  const auto& co = *g.code_object;
  const std::string dir = options.code_object_dir.empty() ? "." : options.code_object_dir;
  std::string path;
  for (const auto& f : options.saved_code_objects) {
    if (f == co.saved_name) {
      g.saved_file = f;
      g.saved_file_found = true;
      break;
    }
    if (f.size() > co.saved_name.size() + 1 && f.ends_with(co.saved_name) &&
        f[f.size() - co.saved_name.size() - 1] == '_') {
      const auto prefix = std::string_view(f).substr(0, f.size() - co.saved_name.size() - 1);
      if (!prefix.empty() && std::all_of(prefix.begin(), prefix.end(), detail::is_digit)) {
        g.saved_file = f;
        g.saved_file_found = true;
        break;
      }
    }
  }
  if (g.saved_file_found) {
    path = quote(dir + "/" + g.saved_file);
  } else if (shell_safe(co.saved_name)) {
    // Some agent builds prefix the saved name with an index (`7_memory___...`).
    g.saved_file = "*" + co.saved_name;
    path = quote(dir) + "/" + g.saved_file;
  } else {
    g.saved_file = co.saved_name;
    path = quote(dir + "/" + co.saved_name);
  }
  g.objdump_command = quote(options.objdump) + " --disassemble-all " + path + " > fault.s";
  if (g.elf_address) {
    const std::string digits = hex(*g.elf_address).substr(2);
    g.grep_command = "grep -n -i -E -B 12 -A 4 '(^|[^0-9a-f])0*" + digits + ":' fault.s";
  }
  if (co.protocol == "file" && !co.path.empty() && co.size && *co.size > 0) {
    g.extract_command = "tail -c +" + std::to_string(co.offset.value_or(0) + 1) + " " +
                        quote(co.path) + " | head -c " + std::to_string(*co.size) +
                        " > code_object.elf";
  }
}

std::string join_reasons(const Wave& w) {
  if (w.reasons.empty()) {
    return w.running ? "running" : "UNKNOWN";
  }
  std::string out;
  for (const auto& r : w.reasons) {
    if (!out.empty()) {
      out += '|';
    }
    out += r;
  }
  return out;
}

const HostFault* nearest_host_fault(const AgentLog& log, const Dump& d) {
  const HostFault* best = nullptr;
  std::size_t best_distance = 0;
  constexpr std::size_t kWindow = 500; // lines around the dump
  for (const auto& f : log.host_faults) {
    if (f.stream != d.stream && !f.stream.empty() && !d.stream.empty()) {
      continue;
    }
    std::size_t distance = 0;
    if (f.line < d.first_line) {
      distance = d.first_line - f.line;
    } else if (f.line > d.last_line) {
      distance = f.line - d.last_line;
    }
    if (distance > kWindow) {
      continue;
    }
    // A memory-access fault line names the address; prefer it over a queue abort.
    const bool better = best == nullptr || distance < best_distance ||
                        (distance == best_distance && f.address && !best->address);
    if (better) {
      best = &f;
      best_distance = distance;
    }
  }
  return best;
}

bool is_index_op(const KernelInfo& k) {
  return k.family == KernelFamily::Aten &&
         (k.op.find("index") != std::string::npos || k.op.find("scatter") != std::string::npos ||
          k.op.find("gather") != std::string::npos || k.op.find("embedding") != std::string::npos ||
          k.op.find("tensor[") != std::string::npos);
}

void caveats(FaultGroup& g, bool kernel_from_disassembly, bool inferred_disassembly) {
  const bool assert_trap = g.reason.find("ASSERT_TRAP") != std::string::npos;
  if (assert_trap) {
    bool endpgm = g.instruction && mnemonic(g.instruction->text) == "s_endpgm";
    bool trap_before = false;
    for (const auto& ins : g.context) {
      if (g.instruction && ins.address < g.instruction->address &&
          trim(ins.text).starts_with("s_trap 2")) {
        trap_before = true;
      }
    }
    if (endpgm || trap_before) {
      g.caveats.push_back(
          "the PC is on s_endpgm after `s_trap 2` (the assert lowering): the failed check is "
          "about 10 instructions earlier; look for the s_cbranch_* that jumps to s_trap 2 (the "
          "grep below prints 12 lines before the PC)");
    } else {
      g.caveats.push_back("an assert lowers to `s_trap 2; s_endpgm`, so the condition that failed "
                          "was tested before the reported PC");
    }
  }
  if (g.kernel.family == KernelFamily::Triton) {
    g.caveats.push_back("Triton kernel: PCs can be misattributed across waves (a sibling or "
                        "downstream kernel's fault reported here); confirm by disabling this "
                        "kernel's call and re-running before trusting the name");
  }
  if (g.reason_info.fault && g.reason.find("ECC") == std::string::npos) {
    g.caveats.push_back("if HIP_LAUNCH_BLOCKING=1 makes it disappear, it is an async race and "
                        "this kernel may be the victim, not the cause: bisect the other kernels "
                        "on the stream; torch.cuda.synchronize() is a workaround, not a fix");
  }
  if (kernel_from_disassembly) {
    g.caveats.push_back("the agent did not name the kernel on the wave line; the name is the "
                        "function symbol around the PC from the disassembly, which may be a "
                        "non-inlined callee rather than the kernel");
  }
  if (inferred_disassembly) {
    g.caveats.push_back("the disassembly was printed once for the fault, not per wave; it was "
                        "matched to these waves by address");
  }
}

} // namespace

ReasonInfo explain_reason(std::string_view reason) {
  for (const auto& row : kReasons) {
    if (row.name == reason) {
      return ReasonInfo{row.name, true, row.fault, row.severity, row.meaning, row.next_step};
    }
  }
  return ReasonInfo{reason,
                    false,
                    true,
                    Severity::Warning,
                    "a stop reason this version of rocplay does not know",
                    "read the wave's registers and the instruction at the PC"};
}

Report analyze(const std::vector<AgentLog>& logs, const AnalyzeOptions& options) {
  Report report;
  struct Member {
    std::size_t log;
    std::size_t dump;
    const Wave* wave;
  };
  std::map<std::string, std::vector<Member>> groups;
  std::vector<std::string> order;
  for (std::size_t li = 0; li < logs.size(); ++li) {
    const auto& log = logs[li];
    report.sources.push_back(log.source);
    report.dumps += log.dumps.size();
    report.waves_dropped += log.waves_dropped;
    report.warnings_dropped += log.warnings_dropped;
    for (const auto& w : log.warnings) {
      report.warnings.emplace_back(log.source, w);
    }
    for (const auto& f : log.host_faults) {
      report.host_faults.push_back(f);
    }
    for (std::size_t di = 0; di < log.dumps.size(); ++di) {
      const auto& d = log.dumps[di];
      for (const auto& w : d.waves) {
        ++report.waves;
        std::string kernel = w.kernel;
        const Disassembly* dis = w.disassembly && *w.disassembly < d.disassemblies.size()
                                     ? &d.disassemblies[*w.disassembly]
                                     : nullptr;
        if (kernel.empty() && dis != nullptr) {
          kernel = dis->function;
        }
        std::string where;
        if (w.kernel_code_entry && w.pc >= *w.kernel_code_entry) {
          where = "+" + std::to_string(w.pc - *w.kernel_code_entry);
        } else if (dis != nullptr && dis->at_pc() != nullptr && dis->at_pc()->address == w.pc &&
                   dis->at_pc()->offset) {
          where = "+" + std::to_string(*dis->at_pc()->offset);
        } else {
          where = hex(w.pc);
        }
        std::string key = kernel;
        key += '\x1f';
        key += join_reasons(w);
        key += '\x1f';
        key += where;
        auto [it, inserted] = groups.try_emplace(key);
        if (inserted) {
          order.push_back(key);
        }
        it->second.push_back({li, di, &w});
      }
    }
  }

  for (const auto& key : order) {
    const auto& members = groups.at(key);
    FaultGroup g;
    const auto& first = *members.front().wave;
    const auto& first_dump = logs[members.front().log].dumps[members.front().dump];
    g.reason = join_reasons(first);
    g.reason_info = explain_reason(first.reasons.size() == 1 ? std::string_view(first.reasons[0])
                                   : first.reasons.empty()   ? std::string_view(g.reason)
                                                             : std::string_view(first.reasons[0]));
    if (first.reasons.size() > 1) {
      // Several reasons at once: the most severe one speaks for the group.
      for (const auto& r : first.reasons) {
        const auto info = explain_reason(r);
        if (info.severity > g.reason_info.severity) {
          g.reason_info = info;
        }
      }
    }
    std::string kernel = first.kernel;
    bool kernel_from_disassembly = false;
    const Wave* rep = nullptr; // the representative: has a disassembly, preferably its own
    for (const auto& m : members) {
      const auto& d = logs[m.log].dumps[m.dump];
      if (m.wave->disassembly && *m.wave->disassembly < d.disassemblies.size()) {
        if (rep == nullptr || (rep->disassembly_inferred && !m.wave->disassembly_inferred)) {
          rep = m.wave;
        }
      }
    }
    const Dump* rep_dump = &first_dump;
    if (rep != nullptr) {
      for (const auto& m : members) {
        if (m.wave == rep) {
          rep_dump = &logs[m.log].dumps[m.dump];
        }
      }
    }
    const Disassembly* dis = rep != nullptr ? &rep_dump->disassemblies[*rep->disassembly] : nullptr;
    if (kernel.empty() && dis != nullptr && !dis->function.empty()) {
      kernel = dis->function;
      kernel_from_disassembly = true;
    }
    if (!kernel.empty()) {
      g.kernel = classify_kernel(kernel);
      g.kernel_source = kernel_from_disassembly ? "disassembly" : "wave line";
    }
    if (first.kernel_code_entry && first.pc >= *first.kernel_code_entry) {
      g.kernel_offset = first.pc - *first.kernel_code_entry;
    } else if (dis != nullptr && dis->at_pc() != nullptr && dis->at_pc()->address == first.pc &&
               dis->at_pc()->offset && *dis->at_pc()->offset >= 0) {
      g.kernel_offset = static_cast<std::uint64_t>(*dis->at_pc()->offset);
    }

    std::set<std::pair<std::size_t, std::size_t>> dumps;
    std::set<int> ranks;
    std::set<std::int64_t> pids;
    std::vector<const Wave*> waves;
    std::size_t truncated = 0;
    std::size_t dropped_vectors = 0;
    for (const auto& m : members) {
      const auto& d = logs[m.log].dumps[m.dump];
      dumps.insert({m.log, m.dump});
      if (d.rank) {
        ranks.insert(*d.rank);
      }
      if (d.pid) {
        pids.insert(*d.pid);
      }
      if (std::find(g.pcs.begin(), g.pcs.end(), m.wave->pc) == g.pcs.end() && g.pcs.size() < 16) {
        g.pcs.push_back(m.wave->pc);
      }
      if (g.waves.size() < options.max_wave_refs) {
        g.waves.push_back({m.log, m.dump, m.wave->id, m.wave->pc, m.wave->line, d.rank, d.pid});
      }
      truncated += m.wave->truncated ? 1 : 0;
      dropped_vectors += m.wave->vector_registers_dropped ? 1 : 0;
      waves.push_back(m.wave);
    }
    g.wave_count = members.size();
    g.dump_count = dumps.size();
    g.ranks.assign(ranks.begin(), ranks.end());
    g.pids.assign(pids.begin(), pids.end());
    if (truncated > 0) {
      g.notes.push_back(std::to_string(truncated) + " of " + std::to_string(members.size()) +
                        " waves were cut off mid-dump; their registers are partial");
    }
    if (dropped_vectors > 0) {
      g.notes.push_back(std::to_string(dropped_vectors) +
                        " waves' vector registers were not kept (over the lane-value budget)");
    }

    if (const auto* hf = nearest_host_fault(logs[members.front().log], first_dump)) {
      g.host_fault = *hf;
    }

    if (dis != nullptr) {
      const std::uint64_t pc = rep->pc;
      for (const auto& ins : dis->instructions) {
        if (ins.address == pc) {
          g.instruction = ins;
        }
      }
      g.context = dis->instructions;
      g.code_object = dis->code_object;
      g.load_base = dis->load_begin;
      if (dis->load_begin && pc >= *dis->load_begin) {
        g.elf_address = pc - *dis->load_begin;
      }
      if (g.reason.find("MEMORY_VIOLATION") != std::string::npos ||
          g.reason.find("ADDRESS_ERROR") != std::string::npos) {
        decode_access(waves, *dis, pc, g);
      }
    } else if (g.reason_info.fault) {
      g.notes.push_back("the agent printed no disassembly for these waves (it found no code "
                        "object containing the PC)");
    }
    summarise_lanes(waves, g, options.max_registers);
    commands(options, g);

    g.meaning = std::string(g.reason_info.meaning);
    if (g.reason.find("ASSERT_TRAP") != std::string::npos && is_index_op(g.kernel)) {
      g.meaning += "; in " + g.kernel.op +
                   " this is the index bound check 0 <= idx < self.size(dim): some index is out "
                   "of range for the tensor it indexes";
    }
    caveats(g, kernel_from_disassembly, rep != nullptr && rep->disassembly_inferred);
    report.groups.push_back(std::move(g));
  }
  std::stable_sort(report.groups.begin(), report.groups.end(),
                   [](const FaultGroup& a, const FaultGroup& b) {
                     if (a.reason_info.fault != b.reason_info.fault) {
                       return a.reason_info.fault;
                     }
                     if (a.reason_info.severity != b.reason_info.severity) {
                       return a.reason_info.severity > b.reason_info.severity;
                     }
                     return a.wave_count > b.wave_count;
                   });
  if (options.read_code_objects) {
    read_saved_objects(options, report);
  }
  return report;
}

} // namespace rocplay::agentlog
