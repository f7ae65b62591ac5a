// ISA fit per kernel and architecture (rocplay/codeobj/fit.hpp).
#include "rocplay/codeobj/fit.hpp"

#include <algorithm>
#include <string>

namespace rocplay::codeobj {

namespace {

// Taken from LLVM main's AMDGPUBaseInfo.cpp (2025; the same values since LLVM 17 for these
// targets) and AMDGPUUsage "Processors" / "LDS".
constexpr ArchLimits kArchs[] = {
    // name, family, waves, vgpr64, vgpr32, gran64, gran32, addressable, sgprs, simds, unit,
    // lds/unit, lds/wg, wg/unit, wave
    {"gfx908", "CDNA1", 10, 256, 256, 4, 4, 256, true, 4, "CU", 65536, 65536, 16, 64},
    {"gfx90a", "CDNA2", 8, 512, 512, 8, 8, 512, true, 4, "CU", 65536, 65536, 16, 64},
    {"gfx940", "CDNA3", 8, 512, 512, 8, 8, 512, true, 4, "CU", 65536, 65536, 16, 64},
    {"gfx941", "CDNA3", 8, 512, 512, 8, 8, 512, true, 4, "CU", 65536, 65536, 16, 64},
    {"gfx942", "CDNA3", 8, 512, 512, 8, 8, 512, true, 4, "CU", 65536, 65536, 16, 64},
    {"gfx950", "CDNA4", 8, 512, 512, 8, 8, 512, true, 4, "CU", 163840, 163840, 16, 64},
    {"gfx1030", "RDNA2", 16, 512, 1024, 8, 16, 256, false, 4, "WGP", 131072, 65536, 32, 32},
    {"gfx1031", "RDNA2", 16, 512, 1024, 8, 16, 256, false, 4, "WGP", 131072, 65536, 32, 32},
    {"gfx1032", "RDNA2", 16, 512, 1024, 8, 16, 256, false, 4, "WGP", 131072, 65536, 32, 32},
    {"gfx1100", "RDNA3", 16, 768, 1536, 12, 24, 256, false, 4, "WGP", 131072, 65536, 32, 32},
    {"gfx1101", "RDNA3", 16, 768, 1536, 12, 24, 256, false, 4, "WGP", 131072, 65536, 32, 32},
    {"gfx1102", "RDNA3", 16, 512, 1024, 8, 16, 256, false, 4, "WGP", 131072, 65536, 32, 32},
    {"gfx1103", "RDNA3", 16, 512, 1024, 8, 16, 256, false, 4, "WGP", 131072, 65536, 32, 32},
    {"gfx1151", "RDNA3.5", 16, 768, 1536, 12, 24, 256, false, 4, "WGP", 131072, 65536, 32, 32},
    {"gfx1200", "RDNA4", 16, 768, 1536, 12, 24, 256, false, 4, "WGP", 131072, 65536, 32, 32},
    {"gfx1201", "RDNA4", 16, 768, 1536, 12, 24, 256, false, 4, "WGP", 131072, 65536, 32, 32},
};

unsigned align_up(unsigned v, unsigned granule) {
  return granule == 0 ? v : (v + granule - 1) / granule * granule;
}

unsigned div_ceil(unsigned a, unsigned b) {
  return b == 0 ? 0 : (a + b - 1) / b;
}

std::string bytes_text(unsigned n) {
  if (n >= 1024 && n % 1024 == 0) {
    return std::to_string(n / 1024) + " KiB";
  }
  return std::to_string(n) + " B";
}

// Everything about one fit that the "what would it take" search varies.
struct Inputs {
  unsigned vgprs = 0;
  unsigned sgprs = 0;
  unsigned lds = 0;
};

struct Outcome {
  unsigned vgpr_waves = 0;
  unsigned sgpr_waves = 0;
  unsigned lds_waves = 0;
  unsigned workgroup_waves = 0;
  unsigned waves = 0;
};

class Fitter {
public:
  Fitter(const ArchLimits& a, unsigned wave_size, unsigned waves_per_wg)
      : a_(a), wave_size_(wave_size), wpg_(std::max(1u, waves_per_wg)) {}

  unsigned granule() const { return wave_size_ == 32 ? a_.granule_wave32 : a_.granule_wave64; }
  unsigned total_vgprs() const { return wave_size_ == 32 ? a_.vgprs_wave32 : a_.vgprs_wave64; }

  // Waves per SIMD from whole workgroups per unit.
  unsigned from_workgroups(unsigned wgs) const {
    return std::min(a_.max_waves_per_simd, wgs * wpg_ / a_.simds_per_unit);
  }
  // Waves per SIMD one register file allows, rounded down to whole workgroups per unit.
  unsigned from_simd_waves(unsigned per_simd) const {
    return from_workgroups(per_simd * a_.simds_per_unit / wpg_);
  }

  Outcome run(const Inputs& in) const {
    Outcome o;
    const unsigned max = a_.max_waves_per_simd;
    // VGPRs: getNumWavesPerEUWithNumVGPRs.
    unsigned vw = max;
    if (in.vgprs > a_.addressable_vgprs) {
      vw = 0;
    } else if (in.vgprs >= granule()) {
      vw = std::min(max, std::max(1u, total_vgprs() / align_up(in.vgprs, granule())));
    }
    o.vgpr_waves = from_simd_waves(vw);
    // SGPRs: getOccupancyWithNumSGPRs (GFX8/GFX9 only).
    unsigned sw = max;
    if (a_.sgprs_limit) {
      if (in.sgprs > 112) {
        sw = 0;
      } else {
        sw = in.sgprs <= 80 ? 10 : in.sgprs <= 88 ? 9 : in.sgprs <= 100 ? 8 : 7;
      }
      sw = std::min(sw, max);
    }
    o.sgpr_waves = from_simd_waves(sw);
    // LDS: whole workgroups per CU/WGP.
    if (in.lds == 0) {
      o.lds_waves = max;
    } else if (in.lds > a_.max_lds_per_workgroup) {
      o.lds_waves = 0;
    } else {
      o.lds_waves = from_workgroups(a_.lds_per_unit / in.lds);
    }
    // Workgroup slots (barriers): getMaxWorkGroupsPerCU; single-wave groups need none.
    if (wpg_ > a_.max_waves_per_simd * a_.simds_per_unit) {
      o.workgroup_waves = 0;
    } else if (wpg_ == 1) {
      o.workgroup_waves = max;
    } else {
      o.workgroup_waves = from_workgroups(
          std::min(a_.max_waves_per_simd * a_.simds_per_unit / wpg_, a_.max_workgroups_per_unit));
    }
    o.waves = std::min({o.vgpr_waves, o.sgpr_waves, o.lds_waves, o.workgroup_waves});
    return o;
  }

private:
  const ArchLimits& a_;
  unsigned wave_size_;
  unsigned wpg_;
};

} // namespace

const ArchLimits* arch_limits(std::string_view arch) {
  if (arch == "gfx11") {
    arch = "gfx1100";
  } else if (arch == "gfx12") {
    arch = "gfx1201";
  }
  // Feature suffixes (`gfx90a:xnack-`) do not change the limits.
  arch = arch.substr(0, arch.find(':'));
  for (const auto& a : kArchs) {
    if (a.name == arch) {
      return &a;
    }
  }
  return nullptr;
}

std::vector<std::string> fit_arch_names() {
  std::vector<std::string> names;
  for (const auto& a : kArchs) {
    names.emplace_back(a.name);
  }
  names.emplace_back("gfx11");
  names.emplace_back("gfx12");
  return names;
}

Fit fit_kernel(const Kernel& kernel, std::string_view object_arch, const ArchLimits& limits,
               std::optional<unsigned> workgroup_size) {
  Fit fit;
  fit.kernel = kernel.name;
  fit.arch = std::string(limits.name);
  fit.family = std::string(limits.family);
  fit.what_if = !object_arch.empty() && object_arch != limits.name;
  fit.max_waves = limits.max_waves_per_simd;
  const auto& m = kernel.metadata;
  const auto& d = kernel.descriptor;

  fit.wave_size = kernel.wavefront_size(object_arch.empty() ? limits.name : object_arch);
  if (fit.what_if && limits.default_wave_size == 64 && fit.wave_size == 32) {
    fit.caveats.push_back("compiled for wave32; " + fit.arch + " runs wave64 only");
    fit.wave_size = 64;
  }

  Inputs in;
  if (m.vgpr_count) {
    in.vgprs = *m.vgpr_count;
  } else if (d) {
    // Encoded blocks: granule 8 on gfx90a+ and for wave32, 4 for wave64 elsewhere.
    const unsigned enc = (object_arch == "gfx90a" || object_arch.starts_with("gfx94") ||
                          object_arch.starts_with("gfx95") || d->wave32())
                             ? 8
                             : 4;
    in.vgprs = (d->granulated_vgprs() + 1) * enc;
    fit.caveats.push_back("VGPRs from the kernel descriptor's allocation (no metadata note)");
  }
  if (m.sgpr_count) {
    in.sgprs = *m.sgpr_count;
  } else if (d) {
    in.sgprs = (d->granulated_sgprs() + 1) * 8;
  }
  if (m.group_segment_fixed_size) {
    in.lds = *m.group_segment_fixed_size;
  } else if (d) {
    in.lds = d->group_segment_fixed_size;
  }

  if (workgroup_size && *workgroup_size > 0) {
    fit.workgroup_size = *workgroup_size;
  } else {
    fit.workgroup_size = m.max_flat_workgroup_size.value_or(1024);
    fit.workgroup_assumed = true;
  }
  fit.workgroup_size = std::min(fit.workgroup_size, 1u << 20);
  fit.waves_per_workgroup = div_ceil(fit.workgroup_size, fit.wave_size);

  const Fitter fitter(limits, fit.wave_size, fit.waves_per_workgroup);
  const Outcome o = fitter.run(in);
  fit.waves = o.waves;

  const unsigned total = fit.wave_size == 32 ? limits.vgprs_wave32 : limits.vgprs_wave64;
  std::string vgpr_use = std::to_string(in.vgprs);
  if (in.vgprs >= fitter.granule() && in.vgprs <= limits.addressable_vgprs) {
    vgpr_use += " (" + std::to_string(align_up(in.vgprs, fitter.granule())) + " allocated)";
  }
  vgpr_use += " of " + std::to_string(total) + " in the SIMD";
  if (m.agpr_count && *m.agpr_count > 0) {
    vgpr_use += ", " + std::to_string(*m.agpr_count) + " AGPRs";
  }
  if (in.vgprs > limits.addressable_vgprs) {
    vgpr_use += "; over the " + std::to_string(limits.addressable_vgprs) + " a wave may address";
  }
  fit.resources.push_back({"VGPRs", vgpr_use, o.vgpr_waves, false});
  if (limits.sgprs_limit) {
    fit.resources.push_back({"SGPRs", std::to_string(in.sgprs), o.sgpr_waves, false});
  } else {
    fit.resources.push_back({"SGPRs",
                             std::to_string(in.sgprs) + " (no limit on " + fit.family + ")",
                             o.sgpr_waves, false});
  }
  std::string lds_use = bytes_text(in.lds) + " per workgroup of " +
                        bytes_text(limits.lds_per_unit) + " per " + std::string(limits.unit);
  if (in.lds > limits.max_lds_per_workgroup) {
    lds_use += "; over the " + bytes_text(limits.max_lds_per_workgroup) + " one workgroup may use";
  }
  fit.resources.push_back({"LDS", lds_use, o.lds_waves, false});
  fit.resources.push_back({"workgroups",
                           std::to_string(fit.workgroup_size) + " work-items = " +
                               std::to_string(fit.waves_per_workgroup) + " waves" +
                               (fit.workgroup_assumed ? " (max_flat_workgroup_size, assumed)" : ""),
                           o.workgroup_waves, false});

  if (fit.waves < fit.max_waves) {
    for (auto& r : fit.resources) {
      if (r.waves == fit.waves) {
        r.limiting = true;
        fit.limited_by += (fit.limited_by.empty() ? "" : " and ") + r.resource;
      }
    }
  }

  // Spills and scratch.
  const unsigned vspill = m.vgpr_spill_count.value_or(0);
  const unsigned sspill = m.sgpr_spill_count.value_or(0);
  const unsigned scratch =
      m.private_segment_fixed_size.value_or(d ? d->private_segment_fixed_size : 0);
  if (vspill > 0 || sspill > 0) {
    std::string s =
        std::to_string(vspill) + " VGPRs and " + std::to_string(sspill) + " SGPRs spilled";
    s += " (" + std::to_string(scratch) + " B of scratch per work-item)";
    s += ": every spill is a scratch store and reload on the critical path";
    fit.spills.push_back(s);
  } else if (scratch > 0) {
    fit.spills.push_back("no spills; " + std::to_string(scratch) +
                         " B of scratch per work-item (private arrays or calls)");
  }
  if (m.uses_dynamic_stack || (d && d->uses_dynamic_stack())) {
    fit.caveats.push_back("uses a dynamic stack (recursion or indirect calls): scratch is not "
                          "known at compile time");
  }

  // Left on the table: what the next wave per SIMD would take, or what is unused at the top.
  if (fit.waves == 0) {
    fit.left_on_the_table = "the kernel does not fit one workgroup of " +
                            std::to_string(fit.workgroup_size) + " work-items on " + fit.arch +
                            " (" + fit.limited_by + ")";
  } else if (fit.waves < fit.max_waves) {
    std::vector<std::string> steps;
    if (o.vgpr_waves == fit.waves) {
      for (unsigned w = 2; w <= fit.max_waves; ++w) {
        Inputs t = in;
        t.vgprs = total / w / fitter.granule() * fitter.granule();
        if (t.vgprs < in.vgprs && fitter.run(t).vgpr_waves > o.vgpr_waves) {
          steps.push_back("VGPRs <= " + std::to_string(t.vgprs) + " (-" +
                          std::to_string(in.vgprs - t.vgprs) + ") gives " +
                          std::to_string(fitter.run(t).vgpr_waves) + " waves/SIMD from VGPRs");
          break;
        }
      }
    }
    if (o.sgpr_waves == fit.waves && limits.sgprs_limit) {
      for (unsigned s : {100u, 88u, 80u}) {
        if (s < in.sgprs) {
          Inputs t = in;
          t.sgprs = s;
          if (fitter.run(t).sgpr_waves > o.sgpr_waves) {
            steps.push_back("SGPRs <= " + std::to_string(s) + " gives " +
                            std::to_string(fitter.run(t).sgpr_waves) + " waves/SIMD from SGPRs");
            break;
          }
        }
      }
    }
    if (o.lds_waves == fit.waves && in.lds > 0) {
      const unsigned wgs_now = limits.lds_per_unit / in.lds;
      const unsigned target = limits.lds_per_unit / (wgs_now + 1) / 256 * 256;
      Inputs t = in;
      t.lds = std::max(target, 1u);
      steps.push_back("LDS <= " + bytes_text(target) + " per workgroup gives " +
                      std::to_string(fitter.run(t).lds_waves) + " waves/SIMD from LDS");
    }
    if (o.workgroup_waves == fit.waves) {
      steps.push_back("smaller workgroups (fewer than " + std::to_string(fit.waves_per_workgroup) +
                      " waves) fit more of them per " + std::string(limits.unit));
    }
    fit.left_on_the_table = std::to_string(fit.max_waves - fit.waves) + " of " +
                            std::to_string(fit.max_waves) + " wave slots per SIMD unused; ";
    for (std::size_t i = 0; i < steps.size(); ++i) {
      fit.left_on_the_table += (i ? "; " : "") + steps[i];
    }
  } else {
    const unsigned vgpr_room = std::min(total / fit.max_waves / fitter.granule() * fitter.granule(),
                                        limits.addressable_vgprs);
    fit.left_on_the_table = "nothing on occupancy: " + std::to_string(fit.max_waves) +
                            " waves/SIMD is the maximum; at it a wave may use up to " +
                            std::to_string(vgpr_room) + " VGPRs (uses " + std::to_string(in.vgprs) +
                            ")";
  }
  if (vspill > 0 && fit.waves > 0) {
    // What keeping the spilled values in registers would cost (the atlas' question).
    Inputs t = in;
    t.vgprs = in.vgprs + vspill;
    const unsigned with = fitter.run(t).waves;
    fit.left_on_the_table +=
        "; holding the " + std::to_string(vspill) + " spilled VGPRs (" + std::to_string(t.vgprs) +
        " VGPRs) " +
        (with == 0 ? std::string("would not fit")
                   : "would still allow " + std::to_string(with) + " waves/SIMD");
  }
  if (fit.what_if) {
    fit.caveats.push_back("counts compiled for " + std::string(object_arch) + ", fitted to " +
                          fit.arch + ": a build for " + fit.arch + " may allocate differently");
  }
  fit.caveats.push_back("dynamic LDS given at launch adds to the group segment and is not in it");
  return fit;
}

} // namespace rocplay::codeobj
