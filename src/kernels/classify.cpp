// Kernel classification: which library emitted a kernel, what op it is and
// where its source lives, from its name (and its source file, when known).
// Table-driven: kernels/rules.hpp.
#include "kernels/name_parts.hpp"
#include "kernels/rules.hpp"
#include "rocplay/core/names.hpp"
#include "rocplay/kernels/kernel_names.hpp"

#include <algorithm>
#include <cctype>
#include <string>
#include <vector>

namespace rocplay {

using namespace kernels;

namespace {

// Per-family refinement.

void classify_collective(std::string_view short_name, KernelInfo& info) {
  // ncclDevKernel_<Coll>_<RedOp>_<type>_<ALGO>_<PROTO>, e.g.
  // ncclDevKernel_AllReduce_Sum_f32_RING_LL
  info.family = KernelFamily::Collective;
  info.category = KernelCategory::Collective;
  std::vector<std::string> tokens;
  std::size_t start = 0;
  while (start < short_name.size() && tokens.size() < 16) {
    auto end = short_name.find('_', start);
    if (end == std::string_view::npos) {
      end = short_name.size();
    }
    tokens.emplace_back(short_name.substr(start, end - start));
    start = end + 1;
  }
  if (tokens.size() >= 2 && tokens[0].starts_with("nccl")) {
    info.op = tokens[1];
    if (tokens.size() >= 3 && tokens[1] != "Generic") {
      std::string detail;
      for (std::size_t i = 2; i < tokens.size(); ++i) {
        if (tokens[i].size() <= 4 && (tokens[i][0] == 'f' || tokens[i][0] == 'i' ||
                                      tokens[i][0] == 'u' || tokens[i] == "bf16")) {
          info.dtype_hint = tokens[i];
          continue;
        }
        if (!detail.empty()) {
          detail += ' ';
        }
        detail += tokens[i];
      }
      if (!detail.empty()) {
        info.op += " (" + detail + ")";
      }
    }
  }
  info.source_hint = "RCCL rccl/src/device/ (NCCL: nccl/src/device/); kernels "
                     "are generated per "
                     "collective, reduction op, dtype, algorithm and protocol";
  info.test_hint = "rccl-tests, e.g. all_reduce_perf -b 8 -e 128M -f 2 -g <ngpus>";
}

void classify_tensile(std::string_view short_name, KernelInfo& info) {
  info.family = KernelFamily::Tensile;
  info.category = KernelCategory::Gemm;
  // Cijk_<A layout>_<B layout>_<types>_..._MT<M>x<N>x<K>_...
  std::vector<std::string_view> tokens;
  std::size_t start = 0;
  while (start < short_name.size() && tokens.size() < 64) {
    auto end = short_name.find('_', start);
    if (end == std::string_view::npos) {
      end = short_name.size();
    }
    tokens.push_back(short_name.substr(start, end - start));
    start = end + 1;
  }
  std::string layout;
  if (tokens.size() > 2) {
    const auto a = tokens[1];
    const auto b = tokens[2];
    layout = std::string(a.starts_with("Al") ? "A transposed" : "A not transposed") + ", " +
             (b.starts_with("Bj") || b == "Bljk" ? "B not transposed" : "B transposed");
  }
  std::string tile;
  for (auto t : tokens) {
    if (t.starts_with("MT") && t.size() > 2 && std::isdigit(static_cast<unsigned char>(t[2]))) {
      tile = std::string(t);
      break;
    }
  }
  if (tokens.size() > 3) {
    const auto types = tokens[3];
    std::string dtype;
    for (char c : types) {
      for (const auto& t : kTensileTypes) {
        if (t.code == c) {
          if (!dtype.empty()) {
            dtype += '/';
          }
          dtype += t.dtype;
        }
      }
    }
    if (!dtype.empty()) {
      info.dtype_hint = std::string(types) + " (" + dtype + ")";
    }
  }
  info.op = "GEMM";
  if (!layout.empty()) {
    info.op += " (" + layout + (tile.empty() ? "" : ", tile " + tile) + ")";
  }
  info.source_hint = "Tensile-generated solution (hipBLASLt or rocBLAS, "
                     "rocm-libraries/projects/hipblaslt and projects/rocblas): find the logic "
                     "YAML that names this solution";
  info.test_hint = "hipblaslt-bench or rocblas-bench -f gemm_ex with the "
                   "failing call's M/N/K "
                   "and types";
}

void classify_ck(std::string_view name, KernelInfo& info) {
  info.family = KernelFamily::CkTile;
  // ck_tile::kentry<N, ck_tile::Rmsnorm2dFwd<...>>: the op is the kernel class
  // in the args.
  std::string op;
  auto pos = name.find("kentry");
  if (pos == std::string_view::npos) {
    pos = 0;
  }
  for (std::size_t i = pos; i + 2 < name.size(); ++i) {
    if (name[i] == ':' && name[i + 1] == ':' &&
        std::isupper(static_cast<unsigned char>(name[i + 2])) != 0) {
      std::size_t j = i + 2;
      while (j < name.size() && is_ident_char(name[j])) {
        ++j;
      }
      op = std::string(name.substr(i + 2, j - i - 2));
      break;
    }
  }
  if (!op.empty()) {
    info.op = "ck_tile " + op;
  }
  const auto lowered = lower(op.empty() ? name : std::string_view(op));
  info.category = category_from_keywords(lowered);
  if (info.category == KernelCategory::Unknown) {
    info.category = category_from_keywords(lower(name));
  }
  std::string_view dir;
  switch (info.category) {
  case KernelCategory::Attention:
    dir = "fmha";
    break;
  case KernelCategory::Layernorm:
    dir = contains(lowered, "rms") ? "rmsnorm2d" : "layernorm2d";
    break;
  case KernelCategory::Gemm:
    dir = "gemm";
    break;
  case KernelCategory::MoeGemm:
    dir = "fused_moe";
    break;
  case KernelCategory::Router:
    dir = contains(lowered, "sort") ? "fused_moe" : "topk";
    break;
  case KernelCategory::Softmax:
    dir = "softmax";
    break;
  case KernelCategory::Reduce:
    dir = "reduce";
    break;
  default:
    break;
  }
  const bool tile = contains(name, "ck_tile");
  info.source_hint = tile ? "rocm-libraries/projects/composablekernel/include/ck_tile/ops/" +
                                std::string(dir) + (dir.empty() ? "" : "/")
                          : "rocm-libraries/projects/composablekernel/include/ck/"
                            "tensor_operation/"
                            "gpu/";
  if (contains(name, "aiter")) {
    info.source_hint += " (instantiated by aiter: aiter/csrc/)";
  }
  info.test_hint = "rocm-libraries/projects/composablekernel/example/ck_tile/ "
                   "(the example named "
                   "after the op)";
}

void classify_aten(std::string_view name, KernelInfo& info) {
  info.family = KernelFamily::Aten;
  for (const auto& rule : kAtenRules) {
    if (contains(name, rule.needle)) {
      info.op = rule.op;
      info.category = rule.category;
      info.source_hint = "pytorch aten/src/ATen/native/cuda/" + std::string(rule.file) +
                         " (hipified to aten/src/ATen/native/hip/ in ROCm builds)";
      info.test_hint = "pytest " + std::string(rule.test);
      break;
    }
  }
  if (info.source_hint.empty() && contains(name, "at::cuda::")) {
    info.source_hint = "pytorch aten/src/ATen/cuda/ (grep the kernel name)";
  }
  if (info.source_hint.empty()) {
    info.source_hint = "pytorch aten/src/ATen/native/cuda/ (grep the kernel name)";
  }
  info.dtype_hint = opaque_type_hint(name);
  if (info.dtype_hint.empty()) {
    info.dtype_hint = dtype_from_tokens(name);
  }
  if (info.dtype_hint.empty()) {
    info.dtype_hint = functor_dtype(name);
  }
}

void classify_triton(std::string_view short_name, KernelInfo& info) {
  info.family = KernelFamily::Triton;
  for (const auto& rule : kTritonRules) {
    if (short_name.starts_with(rule.prefix)) {
      info.op = rule.op;
      info.category = rule.category;
      info.source_hint = rule.source;
      info.test_hint = rule.test;
      break;
    }
  }
  if (info.op.empty() && short_name.starts_with("triton_")) {
    // torch.compile (Inductor): triton_<kind>_fused_<ops>_<n>
    const auto rest = short_name.substr(7);
    std::string_view kind = rest.substr(0, rest.find('_'));
    if (kind == "poi") {
      info.category = KernelCategory::Elementwise;
      info.op = "Inductor pointwise fusion";
    } else if (kind == "red" || kind == "per") {
      info.category = KernelCategory::Reduce;
      info.op = "Inductor reduction fusion";
    } else if (kind == "tem") {
      info.category = KernelCategory::Gemm;
      info.op = "Inductor template (GEMM/conv)";
    } else {
      info.op = "Inductor-generated kernel";
    }
    const auto fused = short_name.find("fused_");
    if (fused != std::string_view::npos) {
      info.op += " of " + std::string(short_name.substr(fused + 6));
    }
    info.source_hint = "generated by torch.compile (Inductor): rerun with "
                       "TORCH_LOGS=output_code to see its source (cached under "
                       "TORCHINDUCTOR_CACHE_DIR, default /tmp/torchinductor_$USER)";
  }
  if (info.source_hint.empty()) {
    info.source_hint = "a @triton.jit function: grep -rn 'def " + std::string(short_name) +
                       "' over the serving stack (vllm/, sglang/, atom/, "
                       "aiter/, triton_kernels); "
                       "drop trailing config tokens if nothing matches";
  }
  if (info.category == KernelCategory::Unknown) {
    info.category = category_from_keywords(lower(short_name));
  }
  info.dtype_hint = dtype_from_underscored(short_name);
}

void classify_hip(const std::vector<std::string>& components, std::string_view name,
                  KernelInfo& info) {
  info.family = KernelFamily::HipCpp;
  const std::string first = components.empty() ? std::string{} : components.front();
  if (name.starts_with("__omp_offloading_")) {
    // __omp_offloading_<dev>_<file>_<function>_l<line>: the line is in the
    // name.
    const auto l = name.rfind("_l");
    info.op = "OpenMP target region";
    if (l != std::string_view::npos && l + 2 < name.size()) {
      info.op += " at line " + std::string(name.substr(l + 2));
    }
    info.source_hint = "the OpenMP target region named in the symbol";
  } else if (first == "vllm") {
    info.source_hint = "vllm/csrc/ (grep -rn '" + info.short_name + "')";
  } else if (contains(name, "wvSplitK")) {
    info.source_hint = "vllm/csrc/rocm/skinny_gemms.cu";
  } else if (first == "sglang" || first == "sgl_kernel") {
    info.source_hint = "sgl-kernel/csrc/ (grep -rn '" + info.short_name + "')";
  } else if (first == "flashinfer") {
    info.source_hint = "flashinfer/include/flashinfer/";
  } else {
    info.source_hint = "C++ (HIP or CUDA): grep -rn '" + info.short_name +
                       "' over the application and its "
                       "extensions";
  }
  if (contains(name, "reshape_and_cache")) {
    info.source_hint = "vllm/csrc/cache_kernels.cu";
  }
  info.dtype_hint = dtype_from_tokens(name);
}

} // namespace

constexpr NameTable<KernelFamily, 8> kKernelFamilyNames{{
    {KernelFamily::Unknown, "unknown"},
    {KernelFamily::Triton, "triton"},
    {KernelFamily::Tensile, "tensile"},
    {KernelFamily::CkTile, "ck_tile"},
    {KernelFamily::Aten, "aten"},
    {KernelFamily::Collective, "collective"},
    {KernelFamily::Aiter, "aiter"},
    {KernelFamily::HipCpp, "hip_cpp"},
}};
static_assert(names_cover(kKernelFamilyNames, KernelFamily::HipCpp));

std::string_view to_string(KernelFamily family) {
  return name_of(kKernelFamilyNames, family, "unknown");
}

constexpr NameTable<KernelCategory, 12> kKernelCategoryNames{{
    {KernelCategory::Unknown, "unknown"},
    {KernelCategory::Attention, "attention"},
    {KernelCategory::Gemm, "gemm"},
    {KernelCategory::MoeGemm, "moe_gemm"},
    {KernelCategory::Layernorm, "layernorm"},
    {KernelCategory::Softmax, "softmax"},
    {KernelCategory::Elementwise, "elementwise"},
    {KernelCategory::Reduce, "reduce"},
    {KernelCategory::Router, "router"},
    {KernelCategory::KvCache, "kv_cache"},
    {KernelCategory::Collective, "collective"},
    {KernelCategory::Copy, "copy"},
}};
static_assert(names_cover(kKernelCategoryNames, KernelCategory::Copy));

std::string_view to_string(KernelCategory category) {
  return name_of(kKernelCategoryNames, category, "unknown");
}

KernelInfo classify_kernel(std::string_view raw) {
  raw = trim(raw);
  if (raw.size() > kMaxNameBytes) {
    raw = raw.substr(0, kMaxNameBytes);
  }
  KernelInfo info;
  const bool mangled = raw.starts_with("_Z");
  if (mangled) {
    info.linkage_name = std::string(raw);
  }
  std::string demangled = demangle(raw);
  const bool demangle_failed = mangled && demangled.starts_with("_Z");
  std::string_view clean = strip_descriptor_suffix(demangled);

  std::vector<std::string> components;
  std::string template_args;
  std::string scan_text; // what keyword and family tables look at
  if (demangle_failed) {
    components = mangled_identifiers(strip_descriptor_suffix(raw));
    static constexpr std::array<std::string_view, 9> kNamespaces = {
        "at", "native", "ck_tile", "ck", "aiter", "vllm", "c10", "std", "detail"};
    for (const auto& c : components) {
      if (std::find(kNamespaces.begin(), kNamespaces.end(), c) == kNamespaces.end()) {
        info.short_name = c;
        break;
      }
    }
    if (info.short_name.empty() && !components.empty()) {
      info.short_name = components.back();
    }
    scan_text = join(components, "::") + " " + std::string(raw);
    info.name = std::string(clean);
  } else {
    auto parts = split_name(clean);
    components = std::move(parts.components);
    template_args = std::move(parts.template_args);
    info.short_name = components.empty() ? std::string(clean) : components.back();
    scan_text = std::string(clean);
    info.name = std::string(clean);
  }
  if (info.short_name.empty()) {
    info.short_name = std::string(clean);
  }
  const std::string lowered = lower(scan_text);
  const std::string first = components.empty() ? std::string{} : components.front();
  const bool plain = !demangle_failed && is_plain_identifier(clean);

  if (clean.empty()) {
    return info;
  }
  if (contains(scan_text, "ncclDevKernel") || contains(scan_text, "ncclKernel") ||
      info.short_name.starts_with("nccl") || info.short_name.starts_with("rccl")) {
    classify_collective(info.short_name, info);
  } else if (info.short_name.starts_with("Cijk_")) {
    classify_tensile(info.short_name, info);
  } else if (first == "ck_tile" || first == "ck" || scan_text.starts_with("ck_tile::")) {
    classify_ck(scan_text, info);
  } else if (contains(scan_text, "at::native::") || first == "at") {
    classify_aten(scan_text, info);
  } else if (first == "aiter" || contains(lowered, "aiter::")) {
    info.family = KernelFamily::Aiter;
    info.source_hint = "aiter/csrc/ (grep -rn '" + info.short_name +
                       "'; ASM kernels: aiter/hsa/<gfx>/, Python wrappers: aiter/ops/)";
    info.test_hint = "aiter/op_tests/ (the test named after the op)";
    info.dtype_hint = dtype_from_tokens(scan_text);
  } else if (plain) {
    classify_triton(info.short_name, info);
  } else {
    classify_hip(components, clean, info);
  }
  if (info.category == KernelCategory::Unknown) {
    // For C++ kernels, the kernel's own name and its template arguments both
    // carry meaning
    // (`elementwise_kernel<..., FillFunctor>`), but parameter lists do not.
    info.category = category_from_keywords(lower(join(components, "::") + "<" + template_args));
  }
  // Custom all-reduce and all-gather kernels (`aiter::allgather_vec`,
  // `vllm::cross_device_reduce_*`) share RCCL's failure modes (cross-rank
  // flags), so they are collectives first.
  if (info.category == KernelCategory::Collective) {
    info.family = KernelFamily::Collective;
  }
  if (info.dtype_hint.empty() && mangled) {
    info.dtype_hint = dtype_from_tokens(raw);
  }
  return info;
}

KernelInfo classify_kernel(std::string_view name, std::string_view source_file) {
  KernelInfo info = classify_kernel(name);
  const std::string file = lower(trim(source_file));
  if (file.empty()) {
    return info;
  }
  static constexpr std::array<std::string_view, 9> kCxx = {".cu",  ".cuh", ".hip", ".cpp", ".cc",
                                                           ".cxx", ".h",   ".hpp", ".inl"};
  const bool cxx = std::any_of(kCxx.begin(), kCxx.end(),
                               [&](std::string_view ext) { return file.ends_with(ext); });
  if (cxx && info.family == KernelFamily::Triton) {
    info.family = KernelFamily::HipCpp;
    info.op.clear(); // the Triton tables' guess
    info.test_hint.clear();
  }
  if (file.ends_with(".py") &&
      (info.family == KernelFamily::Unknown || info.family == KernelFamily::HipCpp)) {
    info.family = KernelFamily::Triton;
  }
  if (cxx || file.ends_with(".py")) {
    // The line information names the file: that is where its source lives.
    info.source_hint = std::string(trim(source_file));
  }
  return info;
}

} // namespace rocplay
