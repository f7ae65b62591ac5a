#include "session/dbgapi_diagnostics.hpp"

namespace rocplay::session::detail {

namespace {

struct Known {
  std::string_view text;
  Diagnostic diagnostic;
};

constexpr Known kKnown[] = {
    {"At least one agent is busy",
     {"another tool holds the GPU debugger hook (amd-dbgapi: \"at least one agent is busy\"), so "
      "the debugger cannot see GPU queues, dispatches or waves",
      "run the process without rocm-debug-agent (unset HSA_TOOLS_LIB) and without another "
      "debugger or profiler attached, then take the snapshot again",
      true}},
    {"Per-queue memory reserved for the debugger is missing",
     {"the amdgpu driver (or its firmware) has no debugger support on this GPU: waves cannot be "
      "stopped or read",
      "use a ROCm-supported amdgpu driver (the DKMS driver of the installed ROCm release) and "
      "check `dmesg | grep -i kfd` for a debugger-related message; host stacks still work",
      true}},
    {"Could not attach to process",
     {"the debugger library refused to attach to the process's GPU state",
      "check that the process has loaded the ROCm runtime (libhsa-runtime64) and that no other "
      "debugger or tool is attached (HSA_TOOLS_LIB, a second rocgdb); ptrace_scope and container "
      "capabilities (CAP_SYS_PTRACE) are the other usual causes",
      true}},
    {"queue_snapshot failed",
     {"the debugger could not list the GPU queues (queue_snapshot failed): the GPU or its driver "
      "may be hung",
      "read the kernel log (`dmesg -T | grep -iE 'amdgpu|kfd'`) for preemption time-outs or a GPU "
      "reset; the GPU state may not be readable until the GPU is reset",
      false}},
    {"amd_dbgapi_code_object_list failed",
     {"the debugger could not list the process's GPU code objects: kernel names and source "
      "lines of waves will be missing",
      "make sure the ROCm runtime of the process matches the debugger's ROCm release", false}},
    {"Cannot locate the amdgpu.ids file",
     {"the GPU name database is missing (common in containers): agents show `Device vvvv:dddd`",
      "harmless for debugging; install libdrm-amdgpu-common to get marketing names", false}},
};

constexpr std::string_view kEmoji[] = {"\xE2\x9D\x8C", "\xE2\x9A\xA0"};
constexpr std::string_view kVariation = "\xEF\xB8\x8F";

} // namespace

std::string_view without_emoji(std::string_view line) {
  for (auto e : kEmoji) {
    if (line.substr(0, e.size()) == e) {
      line.remove_prefix(e.size());
      if (line.substr(0, kVariation.size()) == kVariation) {
        line.remove_prefix(kVariation.size());
      }
      if (!line.empty() && line.front() == ' ') {
        line.remove_prefix(1);
      }
      return line;
    }
  }
  return line;
}

std::optional<Diagnostic> dbgapi_diagnostic(std::string_view line) {
  for (const auto& k : kKnown) {
    if (line.find(k.text) != std::string_view::npos) {
      return k.diagnostic;
    }
  }
  // `architecture gfxNNNN not supported`
  if (line.find("architecture gfx") != std::string_view::npos &&
      line.find("not supported") != std::string_view::npos) {
    return Diagnostic{"this debugger does not support the GPU's architecture",
                      "use the rocgdb of a ROCm release that supports this GPU (gfx942 needs "
                      "ROCm 6.0+, gfx950 ROCm 7.0+)",
                      true};
  }
  return std::nullopt;
}

std::string explain(const Diagnostic& d, std::string_view line) {
  std::string out(d.what);
  out += "; next: ";
  out += d.next;
  out += " (the debugger said: ";
  out += line.substr(0, 200);
  out += ")";
  return out;
}

} // namespace rocplay::session::detail
