// libFuzzer target: any bytes as a code object (ELF, offload bundle, or a host ELF embedding
// bundles) through the reader, the metadata note, the kernel descriptors, the ISA fit on every
// known architecture and kernel-info's JSON; the same bytes as an ELF's .symtab lookup (nvdisasm
// -fun), as a CUDA .nv_fatbin section (and each cubin in it as an ELF's sections), and as an
// nvdisasm listing, also moved to a load address. Disassembly is left out: it is LLVM's decoder.
#include "rocplay/codeobj/codeobj.hpp"
#include "rocplay/codeobj/cuda_fatbin.hpp"
#include "rocplay/codeobj/fit.hpp"
#include "rocplay/isa/sass_listing.hpp"
#include "rocplay/report/kernel_report.hpp"

#include <cstdint>

using namespace rocplay;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  codeobj::Limits limits;
  limits.max_kernels = 256; // keeps each run short; the limit itself is exercised
  auto result = codeobj::read_bytes({data, size}, "fuzz", limits);
  std::size_t sink = result.problems.size();
  codeobj::KernelInfo info;
  for (std::size_t oi = 0; oi < result.objects.size(); ++oi) {
    const auto& co = result.objects[oi];
    for (std::size_t ki = 0; ki < co.kernels.size(); ++ki) {
      codeobj::KernelEntry e;
      e.object = oi;
      e.kernel = ki;
      for (const char* arch : {"gfx90a", "gfx950", "gfx1030", "gfx12"}) {
        e.fits.push_back(codeobj::fit_kernel(co.kernels[ki], co.arch, *codeobj::arch_limits(arch)));
      }
      info.kernels.push_back(std::move(e));
      sink += co.function_at(co.kernels[ki].code_address.value_or(0)) != nullptr;
    }
  }
  info.objects = std::move(result.objects);
  sink += report::kernel_info_to_json(info)
              .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)
              .size();
  sink += codeobj::symbol_index({data, size}, "spin_kernel").value_or(0);
  for (const auto cubin : codeobj::fatbin_cubins({data, size}, 8)) {
    sink += codeobj::elf_sections(cubin).size();
  }
  sink += codeobj::elf_sections({data, size}).size();
  const auto listing = isa::read_nvdisasm_listing(
      {reinterpret_cast<const char*>(data), size}, size % 2 == 0 ? "_Z1fv" : "", 4096,
      size % 3 == 0 ? std::optional<std::uint64_t>(0x7f0000000000) : std::nullopt);
  sink += listing.instructions.size() + listing.problems.size();
  return sink == 0xdeadbeef ? 1 : 0;
}
