// `rocplay agent-log`'s fault groups as a person reads them (verdict first), and as findings for
// the JSON Lines and SARIF writers and the post-mortem.
#include "rocplay/report/agent_log.hpp"

#include "core/text_scan.hpp"
#include "report/agent_log_lines.hpp"
#include "rocplay/report/kernel_report.hpp"

#include <algorithm>

namespace rocplay::report {
namespace agent_log_text {
namespace {

using namespace agentlog;
using text_scan::hex;

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

} // namespace

using namespace agent_log_lines;

std::vector<Finding> findings(const Report& report) {
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
    f.details = fault_group_to_json(g);
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

void write(std::ostream& out, const Report& report, const AgentLogTextOptions& options) {
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
} // namespace agent_log_text

std::vector<Finding> agent_log_findings(const agentlog::Report& report) {
  return agent_log_text::findings(report);
}

void write_agent_log_text(std::ostream& out, const agentlog::Report& report,
                          const AgentLogTextOptions& options) {
  agent_log_text::write(out, report, options);
}

} // namespace rocplay::report
