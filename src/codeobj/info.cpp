// kernel-info's model: read the inputs, pick the kernels, fit them, cut the PC windows.
#include "rocplay/codeobj/kernel_info.hpp"

#include <algorithm>

namespace rocplay::codeobj {

namespace {

bool matches(const Kernel& k, std::string_view wanted) {
  if (wanted.empty()) {
    return true;
  }
  return k.name == wanted || k.symbol == wanted || k.name.find(wanted) != std::string::npos;
}

} // namespace

PcWindow pc_window(const CodeObject& co, std::size_t object_index, std::uint64_t pc,
                   std::size_t before, std::size_t after) {
  PcWindow w;
  w.object = object_index;
  w.pc = pc;
  if (const auto* f = co.function_at(pc)) {
    w.function = f->name;
  }
  w.disassembly = window_at(co, pc, before, after);
  const auto& ins = w.disassembly.instructions;
  w.loop = isa::find_loop(ins, pc);
  // The trap that stopped the wave: at the PC or among the few before it (the reported PC may
  // be the trap's or the next instruction's).
  auto at = std::find_if(ins.begin(), ins.end(),
                         [&](const isa::Instruction& in) { return in.address >= pc; });
  const auto end = at == ins.end() ? ins.end() : at + 1;
  for (auto it = end; it != ins.begin() && std::distance(it, end) < 5;) {
    --it;
    if (isa::mnemonic(it->text) == "s_trap" && it->text.find(" 2") != std::string::npos) {
      w.trap = true;
      w.trap_address = it->address;
      break;
    }
  }
  return w;
}

KernelInfo kernel_info(const KernelInfoRequest& request) {
  KernelInfo info;
  for (const auto& input : request.inputs) {
    auto r = read_input(input, request.saved_dir);
    for (auto& o : r.objects) {
      info.objects.push_back(std::move(o));
    }
    for (auto& p : r.problems) {
      info.problems.push_back(std::move(p));
    }
  }
  for (std::size_t oi = 0; oi < info.objects.size(); ++oi) {
    const auto& co = info.objects[oi];
    for (std::size_t ki = 0; ki < co.kernels.size(); ++ki) {
      const auto& k = co.kernels[ki];
      if (!matches(k, request.kernel)) {
        continue;
      }
      KernelEntry e;
      e.object = oi;
      e.kernel = ki;
      if (request.fit) {
        std::vector<std::string> archs = request.archs;
        if (archs.empty()) {
          archs.push_back(co.arch);
        }
        for (const auto& arch : archs) {
          if (const auto* limits = arch_limits(arch)) {
            e.fits.push_back(fit_kernel(k, co.arch, *limits, request.workgroup_size));
          } else {
            e.fit_notes.push_back("no ISA fit for " +
                                  (arch.empty() ? "an unknown architecture" : arch) +
                                  ": rocplay has limits for gfx908, gfx90a, gfx94x, gfx950, "
                                  "gfx103x, gfx11 and gfx12; pass --arch to fit to one");
          }
        }
      }
      info.kernels.push_back(std::move(e));
    }
  }
  if (request.pc) {
    for (std::size_t oi = 0; oi < info.objects.size(); ++oi) {
      info.windows.push_back(
          pc_window(info.objects[oi], oi, *request.pc, request.before, request.after));
    }
  }
  return info;
}

} // namespace rocplay::codeobj
