// ISA fit: how many waves of a kernel the architecture's register files, LDS and workgroup slots
// allow per SIMD, from the kernel's code-object metadata alone. It is an ISA fit, not measured
// occupancy: scratch, clocks, caches and what else runs on the GPU are not in it.
//
// Limits from LLVM's AMDGPUUsage and AMDGPUBaseInfo.cpp (getMaxWavesPerEU, getTotalNumVGPRs,
// getVGPRAllocGranule, getOccupancyWithNumSGPRs, getMaxWorkGroupsPerCU); docs/code-objects.md
// has the table and the LLVM version it was taken from.
// Layer: src/codeobj/ (library rocplay_codeobj; docs/architecture.md).
#pragma once

#include "rocplay/codeobj/codeobj.hpp"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace rocplay::codeobj {

struct ArchLimits {
  std::string_view name;   // gfx90a
  std::string_view family; // CDNA2
  unsigned max_waves_per_simd = 0;
  unsigned vgprs_wave64 = 0; // VGPRs per SIMD lane, as LLVM counts them per wave size
  unsigned vgprs_wave32 = 0;
  unsigned granule_wave64 = 0; // VGPR allocation granule
  unsigned granule_wave32 = 0;
  unsigned addressable_vgprs = 0; // per wave (512 where AGPRs share the file)
  bool sgprs_limit = false;       // GFX9: the SGPR file limits waves; GFX10+: it does not
  unsigned simds_per_unit = 0;    // SIMDs (LLVM: EUs) per CU (GFX9) or WGP (GFX10+)
  std::string_view unit;          // "CU" or "WGP"
  unsigned lds_per_unit = 0;      // bytes
  unsigned max_lds_per_workgroup = 0;
  unsigned max_workgroups_per_unit = 0; // barrier slots
  unsigned default_wave_size = 64;
};

// gfx90a, gfx942, gfx950, gfx1030, gfx1100 (alias gfx11), gfx1201 (alias gfx12) and their close
// relatives; nullptr for others.
const ArchLimits* arch_limits(std::string_view arch);
// The names a user may pass to --arch.
std::vector<std::string> fit_arch_names();

struct ResourceFit {
  std::string resource; // "VGPRs", "SGPRs", "LDS", "workgroups"
  std::string uses;     // "48 (48 allocated) of 512"
  unsigned waves = 0;   // waves per SIMD this resource alone allows
  bool limiting = false;
};

struct Fit {
  std::string kernel;
  std::string arch;
  std::string family;
  bool what_if = false; // counts compiled for another architecture, fitted to this one
  unsigned wave_size = 64;
  unsigned workgroup_size = 0;
  bool workgroup_assumed = false; // from max_flat_workgroup_size, not a real launch
  unsigned waves_per_workgroup = 0;
  unsigned max_waves = 0;
  unsigned waves = 0; // achievable waves per SIMD
  std::vector<ResourceFit> resources;
  std::string limited_by; // "VGPRs", "LDS and workgroups", or "" at the architecture's maximum
  std::vector<std::string> spills;  // sentences about spilled registers and scratch
  std::string left_on_the_table;    // one line
  std::vector<std::string> caveats; // what the fit could not take into account
};

// Fits a kernel to an architecture. `workgroup_size` is the launch's, when known (a live
// dispatch); otherwise the kernel's max_flat_workgroup_size is assumed and said so.
Fit fit_kernel(const Kernel& kernel, std::string_view object_arch, const ArchLimits& limits,
               std::optional<unsigned> workgroup_size = std::nullopt);

} // namespace rocplay::codeobj
