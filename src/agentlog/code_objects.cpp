// Opens each fault group's saved code object once (groups often share one), decodes the
// faulting instruction with the 16 before it, confirms an assert by its `s_trap 2`, and fits the
// kernel. The agent's own disassembly stays as it was; this is the file's.
#include "agentlog/code_objects.hpp"

#include "rocplay/codeobj/kernel_info.hpp"

#include <map>

namespace rocplay::agentlog {

namespace {

constexpr std::size_t kBefore = 16;
constexpr std::size_t kAfter = 5; // the faulting instruction and 4 after it

// The kernel to fit: the one the agent named, else the one whose code holds the PC.
const codeobj::Kernel* kernel_for(const codeobj::CodeObject& co, const FaultGroup& g,
                                  const std::string& function) {
  for (const auto& k : co.kernels) {
    if (!g.kernel.name.empty() &&
        (k.name == g.kernel.name || rocplay::demangle(k.name) == g.kernel.name)) {
      return &k;
    }
  }
  for (const auto& k : co.kernels) {
    if (k.name == function) {
      return &k;
    }
  }
  return co.kernels.size() == 1 ? &co.kernels.front() : nullptr;
}

} // namespace

void read_saved_objects(const AnalyzeOptions& options, Report& report) {
  std::map<std::string, codeobj::ReadResult> cache;
  for (auto& g : report.groups) {
    if (!g.saved_file_found || !g.elf_address) {
      continue;
    }
    SavedObjectView view;
    view.path = options.code_object_dir + "/" + g.saved_file;
    view.pc = *g.elf_address;
    auto it = cache.find(view.path);
    if (it == cache.end()) {
      it = cache.emplace(view.path, codeobj::read_input(view.path)).first;
    }
    const auto& read = it->second;
    if (read.objects.empty()) {
      view.problem =
          read.problems.empty() ? "no code object in the file" : read.problems.front().message;
      view.hint = read.problems.empty() ? "" : read.problems.front().hint;
      g.saved_object = std::move(view);
      continue;
    }
    const auto& co = read.objects.front();
    view.arch = co.arch;
    auto w = codeobj::pc_window(co, 0, view.pc, kBefore, kAfter);
    view.function = w.function;
    view.window = std::move(w.disassembly.instructions);
    view.loop = w.loop;
    view.trap = w.trap;
    view.trap_address = w.trap_address;
    view.decoder = w.disassembly.decoder;
    if (w.disassembly.error) {
      view.problem = w.disassembly.error->message;
      view.hint = w.disassembly.error->hint;
    }
    view.assert_confirmed = view.trap && g.reason.find("ASSERT_TRAP") != std::string::npos;
    if (const auto* k = kernel_for(co, g, view.function)) {
      view.kernel = k->name;
      if (const auto* limits = codeobj::arch_limits(co.arch)) {
        view.fit = codeobj::fit_kernel(*k, co.arch, *limits);
      }
    }
    g.saved_object = std::move(view);
  }
}

} // namespace rocplay::agentlog
