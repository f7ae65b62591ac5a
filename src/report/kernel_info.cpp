// kernel-info's text and JSON, the ASCII fit view and disassembly listings.
#include "rocplay/kernels/kernel_names.hpp"
#include "rocplay/report/kernel_report.hpp"

#include <algorithm>
#include <cstdio>

namespace rocplay::report {

namespace kernel_info_detail {

std::string hex(std::uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

// Writes `text` after `first` and wraps it at `width`, continuing lines with `rest`.
void wrap(std::ostream& out, const std::string& first, const std::string& rest,
          const std::string& text, std::size_t width) {
  std::string line = first;
  std::size_t pos = 0;
  bool line_has_words = false;
  while (pos < text.size()) {
    auto next = text.find(' ', pos);
    if (next == std::string::npos) {
      next = text.size();
    }
    const std::string word = text.substr(pos, next - pos);
    if (line_has_words && line.size() + 1 + word.size() > width) {
      out << line << "\n";
      line = rest;
      line_has_words = false;
    }
    if (line_has_words) {
      line += ' ';
    }
    line += word.size() > width ? word.substr(0, width - std::min(width, line.size())) : word;
    line_has_words = true;
    pos = next + 1;
  }
  out << line << "\n";
}

std::string fit_line_cut(std::string s, std::size_t width) {
  if (s.size() > width) {
    s.resize(width > 3 ? width - 3 : width);
    s += "...";
  }
  return s;
}

std::string opt(const std::optional<std::uint32_t>& v) {
  return v ? std::to_string(*v) : "?";
}

nlohmann::json opt_json(const std::optional<std::uint32_t>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

std::string display_name(const std::string& name) {
  const auto d = rocplay::demangle(name);
  return d.empty() ? name : d;
}

} // namespace kernel_info_detail

using namespace kernel_info_detail;

void write_fit_text(std::ostream& out, const codeobj::Fit& fit, const std::string& indent,
                    std::size_t width) {
  std::string head = indent + "ISA fit on " + fit.arch + " (" + fit.family + ", wave" +
                     std::to_string(fit.wave_size) + "), not measured occupancy" +
                     (fit.what_if ? " [what-if]" : "");
  out << fit_line_cut(head, width) << "\n";
  for (const auto& r : fit.resources) {
    std::string bar = "[";
    for (unsigned i = 0; i < fit.max_waves; ++i) {
      bar += i < r.waves ? '#' : '.';
    }
    bar += "]";
    char row[64];
    std::snprintf(row, sizeof row, "%-11s%s %2u ", r.resource.c_str(), bar.c_str(), r.waves);
    out << fit_line_cut(indent + "  " + row + r.uses + (r.limiting ? "  <- limit" : ""), width)
        << "\n";
  }
  std::string verdict = "=> " + std::to_string(fit.waves) + " of " + std::to_string(fit.max_waves) +
                        " waves per SIMD";
  verdict +=
      fit.limited_by.empty() ? ", the architecture's maximum" : ", limited by " + fit.limited_by;
  wrap(out, indent + "  ", indent + "     ", verdict, width);
  for (const auto& s : fit.spills) {
    wrap(out, indent + "  spills: ", indent + "     ", s, width);
  }
  wrap(out, indent + "  left on the table: ", indent + "     ", fit.left_on_the_table, width);
}

nlohmann::json fit_to_json(const codeobj::Fit& fit) {
  nlohmann::json resources = nlohmann::json::array();
  for (const auto& r : fit.resources) {
    resources.push_back(
        {{"resource", r.resource}, {"uses", r.uses}, {"waves", r.waves}, {"limiting", r.limiting}});
  }
  return {{"kind", "isa_fit"},
          {"note", "ISA fit from code-object metadata, not measured occupancy"},
          {"arch", fit.arch},
          {"family", fit.family},
          {"what_if", fit.what_if},
          {"wave_size", fit.wave_size},
          {"workgroup_size", fit.workgroup_size},
          {"workgroup_assumed", fit.workgroup_assumed},
          {"waves_per_workgroup", fit.waves_per_workgroup},
          {"max_waves_per_simd", fit.max_waves},
          {"waves_per_simd", fit.waves},
          {"limited_by",
           fit.limited_by.empty() ? nlohmann::json(nullptr) : nlohmann::json(fit.limited_by)},
          {"resources", resources},
          {"spills", fit.spills},
          {"left_on_the_table", fit.left_on_the_table},
          {"caveats", fit.caveats}};
}

void write_window_text(std::ostream& out, const std::vector<isa::Instruction>& window,
                       std::optional<std::uint64_t> pc, const std::optional<isa::Loop>& loop,
                       const std::string& indent, std::size_t width) {
  for (std::size_t i = 0; i < window.size(); ++i) {
    const auto& in = window[i];
    const bool at_pc = pc && in.address <= *pc && *pc < in.address + std::max(in.size, 1u);
    std::string mark = at_pc ? "=>" : "  ";
    char loop_mark = ' ';
    if (loop && i >= loop->first && i <= loop->last) {
      loop_mark = i == loop->last ? '^' : '|';
    }
    std::string where = hex(in.address);
    if (!in.function.empty() && in.offset) {
      where += " <" + display_name(in.function) + "+" + std::to_string(*in.offset) + ">";
      if (where.size() > 40) {
        where = hex(in.address) + " <+" + std::to_string(*in.offset) + ">";
      }
    }
    std::string line = indent + mark + " " + loop_mark + " " + where + "  " + in.text;
    if (in.branch_target && !loop) {
      line += "  -> " + hex(*in.branch_target);
    } else if (in.branch_target && loop && i == loop->last) {
      line += "  -> " + hex(*in.branch_target) + " (loop)";
    }
    out << fit_line_cut(line, width) << "\n";
  }
}

namespace kernel_info_detail {

void write_kernel(std::ostream& out, const codeobj::CodeObject& co, const codeobj::Kernel& k,
                  const codeobj::KernelEntry& e, bool verbose) {
  const auto& m = k.metadata;
  const std::string name = display_name(k.name);
  out << "  " << fit_line_cut(name, kKernelInfoWidth - 2) << "\n";
  std::string facts = "VGPRs " + opt(m.vgpr_count);
  if (m.agpr_count && *m.agpr_count > 0) {
    facts += " (AGPRs " + std::to_string(*m.agpr_count) + ")";
  }
  facts += ", SGPRs " + opt(m.sgpr_count) + ", spills " + opt(m.vgpr_spill_count) + " VGPR / " +
           opt(m.sgpr_spill_count) + " SGPR, LDS " + opt(m.group_segment_fixed_size) +
           " B, scratch " + opt(m.private_segment_fixed_size) + " B/item, wave" +
           std::to_string(k.wavefront_size(co.arch)) +
           ", workgroup <= " + opt(m.max_flat_workgroup_size) + ", kernarg " +
           opt(m.kernarg_segment_size) + " B";
  if (!k.has_metadata) {
    facts = "no metadata note entry; from the kernel descriptor only";
  }
  wrap(out, "    ", "    ", facts, kKernelInfoWidth);
  if (verbose || !k.has_metadata) {
    std::string where;
    if (k.code_address) {
      where += "code " + hex(*k.code_address) + " (" + std::to_string(k.code_size) + " B)";
    }
    if (k.descriptor_address) {
      where += std::string(where.empty() ? "" : ", ") + "descriptor " + k.symbol + " at " +
               hex(*k.descriptor_address);
    }
    if (k.descriptor) {
      const auto& d = *k.descriptor;
      char buf[160];
      std::snprintf(buf, sizeof buf,
                    "; rsrc1 0x%08x (VGPR blocks %u, SGPR blocks %u) rsrc2 0x%08x rsrc3 0x%08x",
                    d.compute_pgm_rsrc1, d.granulated_vgprs(), d.granulated_sgprs(),
                    d.compute_pgm_rsrc2, d.compute_pgm_rsrc3);
      where += buf;
    }
    if (!where.empty()) {
      wrap(out, "    ", "    ", where, kKernelInfoWidth);
    }
  }
  for (const auto& fit : e.fits) {
    write_fit_text(out, fit, "    ");
    if (verbose) {
      for (const auto& c : fit.caveats) {
        wrap(out, "      caveat: ", "        ", c, kKernelInfoWidth);
      }
    }
  }
  for (const auto& n : e.fit_notes) {
    wrap(out, "    ", "      ", n, kKernelInfoWidth);
  }
}

std::string object_heading(const codeobj::CodeObject& co) {
  std::string s = co.label + ": " + (co.arch.empty() ? "unknown architecture" : co.arch) +
                  ", code object v" + std::to_string(co.code_object_version());
  if (co.xnack) {
    s += std::string(", xnack") + (*co.xnack ? "+" : "-");
  }
  if (co.sramecc) {
    s += std::string(", sramecc") + (*co.sramecc ? "+" : "-");
  }
  s += ", " + std::to_string(co.kernels.size()) + (co.kernels.size() == 1 ? " kernel" : " kernels");
  return s;
}

} // namespace kernel_info_detail

void write_kernel_info_text(std::ostream& out, const codeobj::KernelInfo& info, bool verbose) {
  for (std::size_t oi = 0; oi < info.objects.size(); ++oi) {
    const auto& co = info.objects[oi];
    wrap(out, "", "    ", object_heading(co), kKernelInfoWidth);
    for (const auto& w : co.warnings) {
      wrap(out, "  warning: ", "    ", w, kKernelInfoWidth);
    }
    std::size_t shown = 0;
    for (const auto& e : info.kernels) {
      if (e.object == oi) {
        write_kernel(out, co, co.kernels[e.kernel], e, verbose);
        ++shown;
      }
    }
    if (shown == 0 && !co.kernels.empty()) {
      out << "  (no kernel matches --kernel)\n";
    }
    for (const auto& w : info.windows) {
      if (w.object != oi) {
        continue;
      }
      std::string head = "  at " + hex(w.pc);
      if (!w.function.empty()) {
        head += " in " + display_name(w.function);
      }
      out << fit_line_cut(head, kKernelInfoWidth) << "\n";
      if (w.disassembly.error) {
        wrap(out, "    cannot disassemble: ", "      ", w.disassembly.error->message,
             kKernelInfoWidth);
        wrap(out, "    hint: ", "      ", w.disassembly.error->hint, kKernelInfoWidth);
        continue;
      }
      write_window_text(out, w.disassembly.instructions, w.pc, w.loop, "    ");
      if (w.loop) {
        wrap(out, "    ", "      ",
             "in a " + w.loop->describe() + " (" + hex(w.loop->start) + ".." + hex(w.loop->branch) +
                 ")",
             kKernelInfoWidth);
      } else {
        out << "    no loop holds the PC in this window\n";
      }
      if (w.trap) {
        out << "    s_trap 2 at " << hex(*w.trap_address)
            << ": a device-side assert or abort (__builtin_trap) stopped the wave\n";
      }
      if (verbose) {
        out << "    decoded by " << w.disassembly.decoder << "\n";
      }
    }
  }
  for (const auto& p : info.problems) {
    wrap(out, "error: ", "  ", p.message, kKernelInfoWidth);
    if (!p.hint.empty()) {
      wrap(out, "  hint: ", "    ", p.hint, kKernelInfoWidth);
    }
  }
}

namespace kernel_info_detail {

nlohmann::json kernel_json(const codeobj::CodeObject& co, const codeobj::KernelEntry& e) {
  const auto& k = co.kernels[e.kernel];
  const auto& m = k.metadata;
  nlohmann::json kj = {
      {"name", k.name},
      {"demangled", display_name(k.name)},
      {"symbol", k.symbol},
      {"code_address", k.code_address ? nlohmann::json(hex(*k.code_address)) : nullptr},
      {"code_size", k.code_size},
      {"descriptor_address",
       k.descriptor_address ? nlohmann::json(hex(*k.descriptor_address)) : nullptr},
      {"has_metadata", k.has_metadata},
      {"wavefront_size", k.wavefront_size(co.arch)},
      {"metadata",
       {{"vgpr_count", opt_json(m.vgpr_count)},
        {"agpr_count", opt_json(m.agpr_count)},
        {"sgpr_count", opt_json(m.sgpr_count)},
        {"vgpr_spill_count", opt_json(m.vgpr_spill_count)},
        {"sgpr_spill_count", opt_json(m.sgpr_spill_count)},
        {"group_segment_fixed_size", opt_json(m.group_segment_fixed_size)},
        {"private_segment_fixed_size", opt_json(m.private_segment_fixed_size)},
        {"wavefront_size", opt_json(m.wavefront_size)},
        {"kernarg_segment_size", opt_json(m.kernarg_segment_size)},
        {"max_flat_workgroup_size", opt_json(m.max_flat_workgroup_size)},
        {"uses_dynamic_stack", m.uses_dynamic_stack}}},
      {"descriptor", nullptr},
      {"fits", nlohmann::json::array()},
      {"fit_notes", e.fit_notes}};
  if (k.descriptor) {
    const auto& d = *k.descriptor;
    kj["descriptor"] = {{"group_segment_fixed_size", d.group_segment_fixed_size},
                        {"private_segment_fixed_size", d.private_segment_fixed_size},
                        {"kernarg_size", d.kernarg_size},
                        {"kernel_code_entry_byte_offset", d.kernel_code_entry_byte_offset},
                        {"compute_pgm_rsrc1", d.compute_pgm_rsrc1},
                        {"compute_pgm_rsrc2", d.compute_pgm_rsrc2},
                        {"compute_pgm_rsrc3", d.compute_pgm_rsrc3},
                        {"kernel_code_properties", d.kernel_code_properties},
                        {"granulated_vgprs", d.granulated_vgprs()},
                        {"granulated_sgprs", d.granulated_sgprs()},
                        {"wave32", d.wave32()}};
  }
  for (const auto& f : e.fits) {
    kj["fits"].push_back(fit_to_json(f));
  }
  return kj;
}

nlohmann::json object_json(const codeobj::CodeObject& co) {
  return {{"label", co.label},
          {"triple", co.triple},
          {"arch", co.arch},
          {"target", co.target},
          {"e_flags", co.e_flags},
          {"code_object_version", co.code_object_version()},
          {"xnack", co.xnack ? nlohmann::json(*co.xnack) : nullptr},
          {"sramecc", co.sramecc ? nlohmann::json(*co.sramecc) : nullptr},
          {"kernel_count", co.kernels.size()},
          {"warnings", co.warnings}};
}

nlohmann::json window_json(const codeobj::PcWindow& w) {
  nlohmann::json ins = nlohmann::json::array();
  for (const auto& in : w.disassembly.instructions) {
    ins.push_back(isa::to_json(in));
  }
  return {{"object", w.object},
          {"pc", hex(w.pc)},
          {"function", w.function},
          {"decoder", w.disassembly.decoder},
          {"error", w.disassembly.error ? nlohmann::json({{"message", w.disassembly.error->message},
                                                          {"hint", w.disassembly.error->hint}})
                                        : nlohmann::json(nullptr)},
          {"instructions", ins},
          {"loop", w.loop ? isa::to_json(*w.loop) : nullptr},
          {"trap", w.trap},
          {"trap_address", w.trap_address ? nlohmann::json(hex(*w.trap_address)) : nullptr}};
}

nlohmann::json problems_json(const codeobj::KernelInfo& info) {
  nlohmann::json problems = nlohmann::json::array();
  for (const auto& p : info.problems) {
    problems.push_back({{"message", p.message}, {"hint", p.hint}});
  }
  return problems;
}

std::string dump(const nlohmann::json& j) {
  // Names from an object need not be UTF-8.
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

} // namespace kernel_info_detail

nlohmann::json kernel_info_to_json(const codeobj::KernelInfo& info) {
  nlohmann::json objects = nlohmann::json::array();
  for (std::size_t oi = 0; oi < info.objects.size(); ++oi) {
    const auto& co = info.objects[oi];
    nlohmann::json kernels = nlohmann::json::array();
    for (const auto& e : info.kernels) {
      if (e.object != oi) {
        continue;
      }
      kernels.push_back(kernel_json(co, e));
    }
    auto oj = object_json(co);
    oj["kernels"] = std::move(kernels);
    objects.push_back(std::move(oj));
  }
  nlohmann::json windows = nlohmann::json::array();
  for (const auto& w : info.windows) {
    windows.push_back(window_json(w));
  }
  nlohmann::json problems = problems_json(info);
  return {{"schema", "rocplay.kernel-info"},
          {"schema_version", 1},
          {"note", "fits are ISA fits from code-object metadata, not measured occupancy"},
          {"objects", objects},
          {"windows", windows},
          {"problems", problems}};
}

} // namespace rocplay::report

namespace rocplay::report {

using namespace kernel_info_detail;

void write_kernel_info_json(std::ostream& out, const codeobj::KernelInfo& info) {
  out << "{\n  \"schema\": \"rocplay.kernel-info\",\n  \"schema_version\": 1,\n"
      << "  \"note\": \"fits are ISA fits from code-object metadata, not measured occupancy\",\n"
      << "  \"objects\": [";
  for (std::size_t oi = 0; oi < info.objects.size(); ++oi) {
    const auto& co = info.objects[oi];
    auto oj = object_json(co);
    std::string head = dump(oj);
    head.pop_back(); // the closing brace: the kernels follow
    out << (oi ? ",\n    " : "\n    ") << head << ", \"kernels\": [";
    bool first = true;
    for (const auto& e : info.kernels) {
      if (e.object == oi) {
        out << (first ? "\n      " : ",\n      ") << dump(kernel_json(co, e));
        first = false;
      }
    }
    out << (first ? "]}" : "\n    ]}");
  }
  out << (info.objects.empty() ? "],\n" : "\n  ],\n") << "  \"windows\": [";
  for (std::size_t i = 0; i < info.windows.size(); ++i) {
    out << (i ? ",\n    " : "\n    ") << dump(window_json(info.windows[i]));
  }
  out << (info.windows.empty() ? "],\n" : "\n  ],\n")
      << "  \"problems\": " << dump(problems_json(info)) << "\n}\n";
}

} // namespace rocplay::report
