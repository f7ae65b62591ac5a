// The LLVM C disassembler (llvm-c/Disassembler.h), reached through dlopen of libLLVM-14.
// Measured against running llvm-objdump per window in docs/code-objects.md.
#include "rocplay/codeobj/disasm.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>

namespace rocplay::codeobj {

namespace {

// The C API's types, declared here so building rocplay needs no LLVM headers.
using DisasmContext = void*;
using CreateDisasmCpuFn = DisasmContext (*)(const char*, const char*, void*, int, void*, void*);
using DisasmInstructionFn = std::size_t (*)(DisasmContext, std::uint8_t*, std::uint64_t,
                                            std::uint64_t, char*, std::size_t);
using InitFn = void (*)();

// Processors LLVM 14's AMDGPU backend knows (llvm/lib/Target/AMDGPU/GCNProcessors.td, 14.0.6).
constexpr std::string_view kLlvm14Processors[] = {
    "gfx600",  "gfx601",  "gfx602",  "gfx700",  "gfx701",  "gfx702",  "gfx703",  "gfx704",
    "gfx705",  "gfx801",  "gfx802",  "gfx803",  "gfx805",  "gfx810",  "gfx900",  "gfx902",
    "gfx904",  "gfx906",  "gfx908",  "gfx909",  "gfx90a",  "gfx90c",  "gfx1010", "gfx1011",
    "gfx1012", "gfx1013", "gfx1030", "gfx1031", "gfx1032", "gfx1033", "gfx1034", "gfx1035"};

struct Llvm {
  bool loaded = false;
  std::string error;
  std::string library;
  CreateDisasmCpuFn create = nullptr;
  DisasmInstructionFn decode = nullptr;
  std::map<std::string, DisasmContext, std::less<>> contexts;
  std::mutex mutex;
};

Llvm& llvm() {
  static Llvm* instance = [] {
    auto* l = new Llvm; // never freed: contexts live as long as the process
    std::vector<std::string> names;
    if (const char* env = std::getenv("ROCPLAY_LIBLLVM"); env != nullptr && *env != '\0') {
      names.emplace_back(env);
    }
    names.insert(names.end(), {"libLLVM-14.so.1", "libLLVM-14.so", "libLLVM.so.14"});
    void* handle = nullptr;
    for (const auto& name : names) {
      handle = ::dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (handle != nullptr) {
        l->library = name;
        break;
      }
    }
    if (handle == nullptr) {
      l->error = "libLLVM-14 could not be loaded (" + std::string(::dlerror()) + ")";
      return l;
    }
    auto sym = [&](const char* name) { return ::dlsym(handle, name); };
    auto info = reinterpret_cast<InitFn>(sym("LLVMInitializeAMDGPUTargetInfo"));
    auto mc = reinterpret_cast<InitFn>(sym("LLVMInitializeAMDGPUTargetMC"));
    auto dis = reinterpret_cast<InitFn>(sym("LLVMInitializeAMDGPUDisassembler"));
    l->create = reinterpret_cast<CreateDisasmCpuFn>(sym("LLVMCreateDisasmCPU"));
    l->decode = reinterpret_cast<DisasmInstructionFn>(sym("LLVMDisasmInstruction"));
    if (info == nullptr || mc == nullptr || dis == nullptr || l->create == nullptr ||
        l->decode == nullptr) {
      l->error = l->library + " has no AMDGPU disassembler (built without the AMDGPU target)";
      return l;
    }
    info();
    mc();
    dis();
    l->loaded = true;
    return l;
  }();
  return *instance;
}

std::string clean(const char* text) {
  std::string out;
  for (const char* p = text; *p != '\0'; ++p) {
    const char c = *p == '\t' ? ' ' : *p;
    if (c == ' ' && (out.empty() || out.back() == ' ')) {
      continue;
    }
    out.push_back(c);
  }
  while (!out.empty() && out.back() == ' ') {
    out.pop_back();
  }
  return out;
}

std::string hex_bytes(std::span<const std::uint8_t> b) {
  // As llvm-objdump prints AMDGPU encodings: 32-bit little-endian words, upper-case.
  std::string out;
  for (std::size_t i = 0; i + 4 <= b.size(); i += 4) {
    char buf[12];
    std::snprintf(buf, sizeof buf, "%s%02X%02X%02X%02X", out.empty() ? "" : " ", b[i + 3], b[i + 2],
                  b[i + 1], b[i]);
    out += buf;
  }
  return out;
}

} // namespace

bool decoder_knows(std::string_view arch) {
  return std::find(std::begin(kLlvm14Processors), std::end(kLlvm14Processors), arch) !=
         std::end(kLlvm14Processors);
}

DisassemblyResult disassemble(std::string_view arch, std::span<const std::uint8_t> bytes,
                              std::uint64_t address, std::size_t max_count) {
  DisassemblyResult result;
  if (!decoder_knows(arch)) {
    result.error = Problem{
        "the in-process decoder (Debian 12's LLVM 14) does not know " +
            (arch.empty() ? std::string("this architecture") : std::string(arch)),
        "disassemble with a newer llvm-objdump, e.g. ROCm's: /opt/rocm/llvm/bin/llvm-objdump -d "
        "--mcpu=" +
            std::string(arch) + " FILE"};
    return result;
  }
  auto& l = llvm();
  if (!l.loaded) {
    result.error = Problem{l.error, "install Debian's libllvm14 (apt-get install libllvm14), or "
                                    "set ROCPLAY_LIBLLVM to a libLLVM with the AMDGPU target"};
    return result;
  }
  std::lock_guard lock(l.mutex);
  auto it = l.contexts.find(arch);
  if (it == l.contexts.end()) {
    const std::string cpu(arch);
    DisasmContext ctx = l.create("amdgcn-amd-amdhsa", cpu.c_str(), nullptr, 0, nullptr, nullptr);
    if (ctx == nullptr) {
      result.error = Problem{"LLVM could not create a disassembler for " + cpu,
                             "check that " + l.library + " has the AMDGPU target"};
      return result;
    }
    it = l.contexts.emplace(cpu, ctx).first;
  }
  result.decoder = "LLVM 14 C API (" + l.library + "), " + std::string(arch);
  std::size_t pos = 0;
  char text[512];
  // LLVMDisasmInstruction takes a non-const pointer; decode from a small private copy.
  std::uint8_t window[16];
  while (pos + 4 <= bytes.size() && result.instructions.size() < max_count) {
    const std::size_t n = std::min<std::size_t>(sizeof window, bytes.size() - pos);
    std::copy_n(bytes.data() + pos, n, window);
    text[0] = '\0';
    std::size_t size = l.decode(it->second, window, n, address + pos, text, sizeof text);
    isa::Instruction in;
    in.address = address + pos;
    if (size == 0 || size > n) {
      size = 4; // as llvm-objdump does: show the word and go on
      in.text = "<unknown>";
    } else {
      in.text = clean(text);
    }
    in.size = static_cast<std::uint32_t>(size);
    in.bytes = hex_bytes(bytes.subspan(pos, size));
    result.instructions.push_back(std::move(in));
    pos += size;
  }
  return result;
}

DisassemblyResult disassemble_function(const CodeObject& co, const Function& f,
                                       std::size_t max_count) {
  auto bytes = co.code_at(f.address);
  if (f.size > 0 && f.size < bytes.size()) {
    bytes = bytes.first(f.size);
  }
  auto result = disassemble(co.arch, bytes, f.address, max_count);
  for (auto& in : result.instructions) {
    in.function = f.name;
    in.offset = in.address - f.address;
  }
  isa::annotate_branches(result.instructions, isa::Arch::Amdgpu);
  return result;
}

DisassemblyResult window_at(const CodeObject& co, std::uint64_t pc, std::size_t before,
                            std::size_t after) {
  DisassemblyResult result;
  const Function* f = co.function_at(pc);
  if (f == nullptr) {
    if (co.code_at(pc).empty()) {
      result.error =
          Problem{"0x" +
                      [&] {
                        char buf[20];
                        std::snprintf(buf, sizeof buf, "%llx", static_cast<unsigned long long>(pc));
                        return std::string(buf);
                      }() +
                      " is not inside the code of " + co.label,
                  "pass the PC as an offset into the code object (the load address "
                  "subtracted), as the debug agent and `info sharedlibrary` give it"};
      return result;
    }
    // No symbol covers it: decode from the start of the section.
    Function section{"", pc, 0};
    for (const auto& s : co.code) {
      if (pc >= s.address && pc - s.address < s.bytes.size()) {
        section.address = s.address;
      }
    }
    f = nullptr;
    auto all = disassemble(co.arch, co.code_at(section.address), section.address,
                           static_cast<std::size_t>((pc - section.address) / 4 + after + 1));
    result = std::move(all);
  } else {
    result =
        disassemble_function(co, *f, static_cast<std::size_t>((pc - f->address) / 4 + after + 1));
  }
  if (result.error) {
    return result;
  }
  auto& ins = result.instructions;
  auto at = std::find_if(ins.begin(), ins.end(),
                         [&](const isa::Instruction& in) { return in.address + in.size > pc; });
  const auto pc_index = static_cast<std::size_t>(at - ins.begin());
  const std::size_t first = pc_index > before ? pc_index - before : 0;
  const std::size_t last = std::min(ins.size(), pc_index + after);
  std::vector<isa::Instruction> window(ins.begin() + static_cast<std::ptrdiff_t>(first),
                                       ins.begin() + static_cast<std::ptrdiff_t>(last));
  ins = std::move(window);
  isa::annotate_branches(ins, isa::Arch::Amdgpu);
  return result;
}

} // namespace rocplay::codeobj
