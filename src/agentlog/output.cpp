// Fault reports out: versioned JSON, a person's text (verdict first), and rocplay::Finding so
// the shared SARIF writer covers faults too.
#include "rocplay/agentlog.hpp"

#include "agentlog/util.hpp"
#include "rocplay/kernel_report.hpp"

#include <algorithm>
#include <ostream>
#include <set>

namespace rocplay::agentlog {

using detail::hex;
using nlohmann::json;

namespace {

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

json opt_hex(const std::optional<std::uint64_t>& v) {
  return v ? json(hex(*v)) : json(nullptr);
}

template <typename T> json opt(const std::optional<T>& v) {
  return v ? json(*v) : json(nullptr);
}

json instruction_json(const Instruction& i) {
  return {{"address", hex(i.address)},
          {"offset", opt(i.offset)},
          {"text", i.text},
          {"at_pc", i.at_pc},
          {"line", i.line}};
}

json saved_object_json(const SavedObjectView& v) {
  json window = json::array();
  for (const auto& in : v.window) {
    window.push_back(isa::to_json(in));
  }
  return {{"path", v.path},
          {"arch", v.arch},
          {"function", v.function},
          {"pc", hex(v.pc)},
          {"window", window},
          {"loop", v.loop ? isa::to_json(*v.loop) : json(nullptr)},
          {"trap", v.trap},
          {"trap_address", opt_hex(v.trap_address)},
          {"assert_confirmed", v.assert_confirmed},
          {"kernel", v.kernel},
          {"fit", v.fit ? report::fit_to_json(*v.fit) : json(nullptr)},
          {"decoder", v.decoder},
          {"problem", v.problem.empty() ? json(nullptr) : json(v.problem)},
          {"hint", v.hint.empty() ? json(nullptr) : json(v.hint)}};
}

void write_saved_object(std::ostream& out, const SavedObjectView& v) {
  const std::string pad = "           ";
  out << "  saved    " << v.path << (v.arch.empty() ? "" : " (" + v.arch + ")") << "\n";
  if (!v.problem.empty()) {
    out << pad << "cannot decode: " << v.problem << "\n";
    if (!v.hint.empty()) {
      out << pad << "hint: " << v.hint << "\n";
    }
  }
  if (!v.window.empty()) {
    out << pad << "the faulting instruction and the " << (v.window.size() > 1 ? "ones" : "one")
        << " before it, from the file:\n";
    report::write_window_text(out, v.window, v.pc, v.loop, pad);
  }
  if (v.assert_confirmed) {
    out << pad << "s_trap 2 at " << hex(*v.trap_address)
        << " just before the PC: a device-side assert, confirmed in the code object\n";
  } else if (v.trap) {
    out << pad << "s_trap 2 at " << hex(*v.trap_address) << " just before the PC\n";
  }
  if (v.loop) {
    out << pad << "the PC is in a " << v.loop->describe() << "\n";
  }
  if (v.fit) {
    out << pad << "kernel " << v.kernel << ":\n";
    report::write_fit_text(out, *v.fit, pad);
  }
}

json code_object_json(const CodeObject& co) {
  return {{"uri", co.uri},
          {"protocol", co.protocol},
          {"path", co.path},
          {"pid", opt(co.pid)},
          {"offset", opt_hex(co.offset)},
          {"size", opt(co.size)},
          {"saved_name", co.saved_name}};
}

json host_fault_json(const HostFault& f) {
  return {{"kind", f.kind}, {"text", f.text},     {"address", opt_hex(f.address)},
          {"gpu", f.gpu},   {"reason", f.reason}, {"stream", f.stream},
          {"line", f.line}};
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

// Per wave: the address range, and which lanes reached the page the runtime named.
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

} // namespace

json group_to_json(const FaultGroup& g) {
  json j;
  j["id"] = finding_id(g);
  j["kernel"] = {{"name", g.kernel.name},
                 {"linkage_name", g.kernel.linkage_name},
                 {"short_name", g.kernel.short_name},
                 {"family", to_string(g.kernel.family)},
                 {"category", to_string(g.kernel.category)},
                 {"op", g.kernel.op},
                 {"dtype", g.kernel.dtype_hint},
                 {"source", g.kernel.source_hint},
                 {"test", g.kernel.test_hint},
                 {"named_by", g.kernel_source}};
  j["reason"] = g.reason;
  j["reason_known"] = g.reason_info.known;
  j["fault"] = g.reason_info.fault;
  j["severity"] = to_string(g.reason_info.severity);
  j["meaning"] = g.meaning;
  j["next_step"] = g.reason_info.next_step;
  j["kernel_offset"] = opt(g.kernel_offset);
  json pcs = json::array();
  for (auto pc : g.pcs) {
    pcs.push_back(hex(pc));
  }
  j["pcs"] = pcs;
  j["wave_count"] = g.wave_count;
  j["dump_count"] = g.dump_count;
  json waves = json::array();
  for (const auto& w : g.waves) {
    waves.push_back({{"log", w.log},
                     {"dump", w.dump},
                     {"wave", w.wave},
                     {"pc", hex(w.pc)},
                     {"line", w.line},
                     {"rank", opt(w.rank)},
                     {"pid", opt(w.pid)}});
  }
  j["waves"] = waves;
  j["ranks"] = g.ranks;
  j["pids"] = g.pids;
  j["instruction"] = g.instruction ? instruction_json(*g.instruction) : json(nullptr);
  json context = json::array();
  for (const auto& i : g.context) {
    context.push_back(instruction_json(i));
  }
  j["context"] = context;
  j["code_object"] = g.code_object ? code_object_json(*g.code_object) : json(nullptr);
  j["load_base"] = opt_hex(g.load_base);
  j["elf_address"] = opt_hex(g.elf_address);
  j["saved_file"] = g.saved_file;
  j["saved_file_found"] = g.saved_file_found;
  j["saved_object"] = g.saved_object ? saved_object_json(*g.saved_object) : json(nullptr);
  j["commands"] = {
      {"objdump", g.objdump_command}, {"grep", g.grep_command}, {"extract", g.extract_command}};
  j["exec"] = {{"waves_with_exec", g.exec.waves_with_exec},
               {"mask", opt_hex(g.exec.mask)},
               {"active_lanes", g.exec.active_lanes},
               {"lane_count", g.exec.lane_count}};
  json regs = json::array();
  for (const auto& r : g.registers) {
    json samples = json::array();
    for (const auto& s : r.samples) {
      samples.push_back({{"wave", s.wave}, {"lane", s.lane}, {"value", hex32(s.value)}});
    }
    json values = json::array();
    for (auto v : r.active_values) {
      values.push_back(hex32(v));
    }
    regs.push_back({{"name", r.name},
                    {"waves", r.waves},
                    {"basis", r.basis},
                    {"active_values", values},
                    {"active_distinct", r.active_distinct},
                    {"active_min", r.active_min ? json(hex32(*r.active_min)) : json(nullptr)},
                    {"active_max", r.active_max ? json(hex32(*r.active_max)) : json(nullptr)},
                    {"other_min", r.other_min ? json(hex32(*r.other_min)) : json(nullptr)},
                    {"other_max", r.other_max ? json(hex32(*r.other_max)) : json(nullptr)},
                    {"off_pattern", r.off_pattern},
                    {"stands_out", r.stands_out},
                    {"samples", samples}});
  }
  j["registers"] = regs;
  if (g.access) {
    const auto& a = *g.access;
    json addrs = json::array();
    for (const auto& x : a.addresses) {
      addrs.push_back({{"wave", x.wave},
                       {"lane", x.lane},
                       {"address", hex(x.address)},
                       {"in_fault_page", x.in_fault_page}});
    }
    j["access"] = {{"instruction", instruction_json(a.instruction)},
                   {"at_pc", a.at_pc},
                   {"kind", a.kind},
                   {"store", a.store},
                   {"address_operand", a.address_operand},
                   {"base_operand", a.base_operand},
                   {"immediate_offset", a.immediate_offset},
                   {"addresses", addrs},
                   {"note", a.note}};
  } else {
    j["access"] = nullptr;
  }
  j["host_fault"] = g.host_fault ? host_fault_json(*g.host_fault) : json(nullptr);
  j["caveats"] = g.caveats;
  j["notes"] = g.notes;
  return j;
}

json report_to_json(const Report& report) {
  json j;
  j["schema"] = "rocplay.agent-log";
  j["schema_version"] = kJsonSchemaVersion;
  j["sources"] = report.sources;
  std::size_t faulting = 0;
  std::size_t fault_groups = 0;
  for (const auto& g : report.groups) {
    if (g.reason_info.fault) {
      ++fault_groups;
      faulting += g.wave_count;
    }
  }
  j["summary"] = {{"dumps", report.dumps},
                  {"waves", report.waves},
                  {"waves_dropped", report.waves_dropped},
                  {"groups", report.groups.size()},
                  {"fault_groups", fault_groups},
                  {"faulting_waves", faulting}};
  json groups = json::array();
  for (const auto& g : report.groups) {
    groups.push_back(group_to_json(g));
  }
  j["groups"] = groups;
  json faults = json::array();
  for (const auto& f : report.host_faults) {
    faults.push_back(host_fault_json(f));
  }
  j["host_faults"] = faults;
  json warnings = json::array();
  for (const auto& [source, w] : report.warnings) {
    warnings.push_back({{"source", source}, {"line", w.line}, {"message", w.message}});
  }
  j["warnings"] = warnings;
  j["warnings_dropped"] = report.warnings_dropped;
  if (report.dumps == 0) {
    j["message"] = kNoDumpsMessage;
    j["hint"] = kNoDumpsHint;
  }
  return j;
}

std::vector<Finding> to_findings(const Report& report) {
  std::vector<Finding> out;
  for (const auto& g : report.groups) {
    if (!g.reason_info.fault) {
      continue;
    }
    Finding f;
    f.id = std::string(finding_id(g));
    f.title = g.reason + " in " + kernel_title(g) + ": " + std::to_string(g.wave_count) +
              (g.wave_count == 1 ? " wave" : " waves");
    f.severity = g.reason_info.severity;
    double confidence = g.kernel.name.empty() ? 0.5 : (g.instruction ? 0.9 : 0.75);
    if (g.kernel.family == KernelFamily::Triton || g.kernel_source == "disassembly") {
      confidence = std::min(confidence, 0.6);
    }
    f.confidence = confidence;
    f.summary = g.meaning;
    if (!g.kernel.name.empty()) {
      f.evidence.push_back("kernel: " + short_kernel(g.kernel.name, 300) + " [" +
                           std::string(to_string(g.kernel.family)) + ", " +
                           std::string(to_string(g.kernel.category)) + "]");
    }
    f.evidence.push_back("where: " + where_text(g));
    if (g.instruction) {
      f.evidence.push_back("instruction: " + g.instruction->text);
    }
    if (g.exec.mask) {
      f.evidence.push_back("exec " + hex(*g.exec.mask) + ": lanes " +
                           lanes_text(g.exec.active_lanes) + " active");
    }
    for (const auto& r : g.registers) {
      f.evidence.push_back(register_line(r));
    }
    if (g.access) {
      f.evidence.push_back("access: " + g.access->instruction.text);
      for (const auto& line : access_summary(*g.access, 4)) {
        f.evidence.push_back("  " + line);
      }
    }
    if (g.host_fault) {
      f.evidence.push_back("runtime: " + g.host_fault->text);
    }
    for (const auto& c : g.caveats) {
      f.evidence.push_back("caveat: " + c);
    }
    f.details = group_to_json(g);
    f.next_step = std::string(g.reason_info.next_step);
    if (!g.objdump_command.empty()) {
      f.next_step += "; disassemble: " + g.objdump_command;
      if (!g.grep_command.empty()) {
        f.next_step += " && " + g.grep_command;
      }
    }
    Location loc;
    if (!g.waves.empty()) {
      const auto& w = g.waves.front();
      if (w.log < report.sources.size()) {
        loc.file = report.sources[w.log];
      }
      loc.line = static_cast<std::uint32_t>(w.line);
      loc.pc = w.pc;
      f.rank = g.ranks.size() == 1 ? std::optional<int>(g.ranks.front()) : std::nullopt;
    }
    loc.function = g.kernel.name;
    f.locations.push_back(std::move(loc));
    out.push_back(std::move(f));
  }
  return out;
}

void write_text(std::ostream& out, const Report& report, const TextOptions& options) {
  const auto bold = [&](const std::string& s) {
    return options.color ? "\x1b[1m" + s + "\x1b[0m" : s;
  };
  std::size_t fault_groups = 0;
  std::size_t faulting = 0;
  for (const auto& g : report.groups) {
    if (g.reason_info.fault) {
      ++fault_groups;
      faulting += g.wave_count;
    }
  }
  std::string sources;
  for (const auto& s : report.sources) {
    sources += (sources.empty() ? "" : ", ") + s;
  }
  if (report.dumps == 0) {
    out << "rocplay agent-log: " << kNoDumpsMessage << " in " << sources << "\n";
    out << "  hint: " << kNoDumpsHint << "\n";
  } else {
    out << "rocplay agent-log: "
        << bold(std::to_string(fault_groups) + (fault_groups == 1 ? " fault" : " faults")) << " ("
        << faulting << " of " << report.waves << " waves) in " << report.dumps
        << (report.dumps == 1 ? " dump" : " dumps") << " from " << sources << "\n";
  }
  std::size_t shown = 0;
  const std::size_t name_max = options.verbose ? 100000 : 200;
  std::vector<const FaultGroup*> others;
  for (const auto& g : report.groups) {
    if (!g.reason_info.fault) {
      others.push_back(&g); // running waves, breakpoints: context, not faults
      continue;
    }
    if (shown++ >= options.max_groups) {
      out << "\n... more fault groups (--format json has them all)\n";
      break;
    }
    out << "\n" << bold(g.reason + "  " + kernel_title(g)) << "\n";
    if (!g.kernel.name.empty()) {
      out << "  kernel   " << short_kernel(g.kernel.name, name_max) << "\n";
      out << "           [" << to_string(g.kernel.family) << ", " << to_string(g.kernel.category)
          << (g.kernel_source == "disassembly" ? ", named by the disassembly" : "") << "]\n";
    }
    out << "  means    " << g.meaning << "\n";
    out << "  where    " << where_text(g) << "\n";
    out << "  waves    " << g.wave_count << " in " << g.dump_count
        << (g.dump_count == 1 ? " dump" : " dumps");
    if (!g.ranks.empty()) {
      out << ", rank" << (g.ranks.size() == 1 ? " " : "s ") << ints_text(g.ranks);
    }
    if (!g.pids.empty()) {
      out << ", pid" << (g.pids.size() == 1 ? " " : "s ");
      for (std::size_t i = 0; i < g.pids.size() && i < 8; ++i) {
        out << (i ? "," : "") << g.pids[i];
      }
      if (g.pids.size() > 8) {
        out << ",...";
      }
    }
    out << ":";
    for (std::size_t i = 0; i < g.waves.size() && i < 4; ++i) {
      const auto& w = g.waves[i];
      out << (i ? ", " : " ") << "wave_" << w.wave << " (";
      if (report.sources.size() > 1 && w.log < report.sources.size()) {
        out << report.sources[w.log] << ":";
      } else {
        out << "line ";
      }
      out << w.line << ")";
    }
    if (g.wave_count > 4) {
      out << ", ...";
    }
    out << "\n";
    if (!g.context.empty()) {
      bool first = true;
      for (const auto& i : g.context) {
        const bool here = g.instruction && i.address == g.instruction->address;
        out << (first ? "  instr " : "        ") << (here ? "=> " : "   ") << hex(i.address);
        if (i.offset) {
          out << " <" << (*i.offset >= 0 ? "+" : "") << *i.offset << ">";
        }
        out << ":  " << i.text << "\n";
        first = false;
      }
    }
    if (g.exec.waves_with_exec > 0) {
      out << "  lanes    exec ";
      if (g.exec.mask) {
        out << hex(*g.exec.mask) << ": lanes " << lanes_text(g.exec.active_lanes) << " active ("
            << g.exec.active_lanes.size() << " of " << g.exec.lane_count << ")";
      } else {
        out << "differs across waves; lanes active in any: " << lanes_text(g.exec.active_lanes);
      }
      out << "\n";
    }
    bool first_register = g.exec.waves_with_exec == 0;
    for (const auto& r : g.registers) {
      out << (first_register ? "  lanes    " : "           ") << register_line(r) << "\n";
      first_register = false;
    }
    if (g.access) {
      const auto& a = *g.access;
      out << "  access   " << a.instruction.text << "  [" << a.kind << (a.store ? " store" : "")
          << (a.address_operand.empty() ? "" : ", address in " + a.address_operand)
          << (a.base_operand.empty() ? "" : " + " + a.base_operand) << "]\n";
      if (!a.note.empty()) {
        out << "           " << a.note << "\n";
      }
      for (const auto& line : access_summary(a, options.verbose ? 1000 : 4)) {
        out << "           " << line << "\n";
      }
    }
    if (g.host_fault) {
      out << "  runtime  line " << g.host_fault->line << ": " << g.host_fault->text << "\n";
    }
    if (!g.kernel.source_hint.empty()) {
      out << "  source   " << g.kernel.source_hint << "\n";
    }
    if (!g.kernel.test_hint.empty()) {
      out << "  test     " << g.kernel.test_hint << "\n";
    }
    if (g.code_object) {
      out << "  code obj " << g.code_object->uri << "\n";
      out << "           saved by --save-code-objects as " << g.saved_file
          << (g.saved_file_found ? "" : " (in that directory)") << "\n";
    }
    if (g.saved_object) {
      write_saved_object(out, *g.saved_object);
    }
    if (!g.reason_info.next_step.empty()) {
      out << "  next     " << g.reason_info.next_step << "\n";
    }
    if (!g.extract_command.empty()) {
      out << "           " << g.extract_command << "\n";
    }
    if (!g.objdump_command.empty()) {
      out << "           " << g.objdump_command << "\n";
    }
    if (!g.grep_command.empty()) {
      out << "           " << g.grep_command << "\n";
    }
    bool first = true;
    for (const auto& c : g.caveats) {
      out << (first ? "  caveats  - " : "           - ") << c << "\n";
      first = false;
    }
    for (const auto& n : g.notes) {
      out << "  note     " << n << "\n";
    }
  }
  if (!others.empty()) {
    out << "\nother waves in the dumps (not faults):\n";
    for (const auto* g : others) {
      out << "  " << g->wave_count << " " << g->reason << " in "
          << short_kernel(
                 g->kernel.name.empty() ? std::string("an unnamed kernel") : g->kernel.name, 120)
          << " at " << where_text(*g) << "\n";
    }
  }
  if (!report.warnings.empty()) {
    out << "\nwarnings (" << report.warnings.size() + report.warnings_dropped << "):\n";
    const std::size_t n = options.verbose ? report.warnings.size()
                                          : std::min<std::size_t>(report.warnings.size(), 20);
    for (std::size_t i = 0; i < n; ++i) {
      const auto& [source, w] = report.warnings[i];
      out << "  " << source << ":" << w.line << ": " << w.message << "\n";
    }
    if (n < report.warnings.size() + report.warnings_dropped) {
      out << "  ... " << report.warnings.size() + report.warnings_dropped - n << " more\n";
    }
  }
}

} // namespace rocplay::agentlog
