// Loops at the stuck PCs, from the debugger's disassembly (rocplay/snapshot/code_loops.hpp).
#include "rocplay/snapshot/code_loops.hpp"
#include "rocplay/snapshot/grouping.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <map>

namespace rocplay::snapshot {

namespace {

constexpr std::size_t kBefore = 16;
constexpr std::size_t kAfter = 16;

// The window holding pc, as an instruction boundary, with the instructions around it.
std::optional<std::vector<isa::Instruction>> window_for(const Snapshot& s, std::uint64_t pc,
                                                        isa::Arch arch) {
  for (const auto& w : s.code_windows) {
    const auto& ins = w.instructions;
    auto at = std::find_if(ins.begin(), ins.end(),
                           [&](const isa::Instruction& in) { return in.address == pc; });
    if (at == ins.end()) {
      continue;
    }
    std::vector<isa::Instruction> all = ins;
    isa::annotate_branches(all, arch);
    const auto i = static_cast<std::size_t>(at - ins.begin());
    // The loop may reach further than the shown window: find it over the whole window first.
    auto loop = isa::find_loop(all, pc);
    std::size_t first = i > kBefore ? i - kBefore : 0;
    std::size_t last = std::min(all.size(), i + kAfter);
    if (loop) {
      first = std::min(first, loop->first);
      last = std::max(last, loop->last + 1);
    }
    return std::vector<isa::Instruction>(all.begin() + static_cast<std::ptrdiff_t>(first),
                                         all.begin() + static_cast<std::ptrdiff_t>(last));
  }
  return std::nullopt;
}

std::string hex(std::uint64_t v) {
  return fmt::format("{:#x}", v);
}

} // namespace

std::vector<CodeLoop> code_loops(const Snapshot& snapshot) {
  std::vector<CodeLoop> out;
  if (snapshot.code_windows.empty()) {
    return out;
  }
  const isa::Arch gpu_arch =
      snapshot.debugger == DebuggerKind::CudaGdb ? isa::Arch::Sass : isa::Arch::Amdgpu;
  for (const auto& c : group_waves(snapshot)) {
    if (!c.pc) {
      continue;
    }
    auto window = window_for(snapshot, *c.pc, gpu_arch);
    if (!window) {
      continue;
    }
    CodeLoop l;
    l.gpu = true;
    l.count = c.waves;
    l.pc = *c.pc;
    l.function = c.function.empty() ? c.kernel_name : c.function;
    l.subject = fmt::format("{} {} at {}{}", c.waves, c.waves == 1 ? "wave" : "waves", hex(l.pc),
                            l.function.empty() ? "" : " (" + l.function + ")");
    l.arch = gpu_arch;
    l.window = std::move(*window);
    l.loop = isa::find_loop(l.window, l.pc);
    out.push_back(std::move(l));
  }
  // Many threads stand at one PC (a pool asleep in one futex call): its window is read once.
  std::map<std::uint64_t, std::optional<CodeLoop>> at_pc;
  for (const auto& t : snapshot.host_threads) {
    if (t.frames.empty() || !t.frames.front().pc) {
      continue;
    }
    const std::uint64_t pc = *t.frames.front().pc;
    auto [cached, fresh] = at_pc.try_emplace(pc);
    if (fresh) {
      if (auto window = window_for(snapshot, pc, isa::Arch::X86_64)) {
        CodeLoop l;
        l.count = 1;
        l.pc = pc;
        l.arch = isa::Arch::X86_64;
        l.window = std::move(*window);
        l.loop = isa::find_loop(l.window, pc);
        // The PC is the return address of a `syscall`: the thread sleeps in the kernel.
        for (std::size_t i = 1; i < l.window.size(); ++i) {
          if (l.window[i].address == pc) {
            l.in_syscall = isa::mnemonic(l.window[i - 1].text) == "syscall";
            break;
          }
        }
        if (l.in_syscall && l.loop) {
          l.loop->spin = false;
        }
        cached->second = std::move(l);
      }
    }
    if (!cached->second) {
      continue;
    }
    CodeLoop l = *cached->second;
    l.function = t.frames.front().function;
    l.subject = fmt::format("thread {}{} at {}{}", t.id, t.name.empty() ? "" : " (" + t.name + ")",
                            hex(pc), l.function.empty() ? "" : " in " + l.function);
    out.push_back(std::move(l));
  }
  return out;
}

std::string CodeLoop::describe() const {
  if (in_syscall) {
    std::string out = "in a system call (the instruction before the PC is `syscall`): the thread "
                      "waits in the kernel, it does not spin";
    if (loop) {
      out += fmt::format("; the code around it retries the call in a loop of {} instructions",
                         loop->count);
    }
    return out;
  }
  return loop ? loop->describe() : std::string("no loop holds the PC in the window");
}

nlohmann::json to_json(const CodeLoop& l) {
  nlohmann::json ins = nlohmann::json::array();
  for (const auto& in : l.window) {
    ins.push_back(isa::to_json(in));
  }
  const nlohmann::json loop = l.loop ? isa::to_json(*l.loop) : nlohmann::json(nullptr);
  return {{"subject", l.subject},      {"gpu", l.gpu},
          {"count", l.count},          {"pc", hex(l.pc)},
          {"function", l.function},    {"arch", std::string(isa::to_string(l.arch))},
          {"instructions", ins},       {"loop", loop},
          {"in_syscall", l.in_syscall}};
}

} // namespace rocplay::snapshot
