// Kernel-name demangling and classification: the project's only demangler. Everything here is
// table-driven: adding a library or an op is one row. Names come from untrusted text (debugger
// output, server logs), so every scan is bounded and tolerant of unbalanced brackets.
#include "rocplay/kernel_names.hpp"

#include <cxxabi.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdlib>
#include <memory>
#include <vector>

namespace rocplay {
namespace {

// Longer names are cut before any processing; real kernel names (deep ATen templates) stay
// well under this, and libstdc++'s demangler recurses on its input (kMaxDemangleBytes and
// kMaxDemangleNesting in the header bound what it sees).
constexpr std::size_t kMaxNameBytes = 64 * 1024;

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

bool contains(std::string_view haystack, std::string_view needle) {
  return haystack.find(needle) != std::string_view::npos;
}

bool is_ident_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' || c == '$';
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front())) != 0) {
    s.remove_prefix(1);
  }
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back())) != 0) {
    s.remove_suffix(1);
  }
  return s;
}

// Kernel-descriptor symbols carry `.kd`; the demangler renders that as ` [clone .kd]`.
std::string_view strip_descriptor_suffix(std::string_view s) {
  s = trim(s);
  for (std::string_view suffix : {std::string_view(" [clone .kd]"), std::string_view(".kd")}) {
    if (s.size() > suffix.size() && s.ends_with(suffix)) {
      s.remove_suffix(suffix.size());
      break;
    }
  }
  return trim(s);
}

// Splits a demangled C++ function name into its qualified name components, each without its
// template arguments. `template_args` receives the arguments of the last component.
struct NameParts {
  std::vector<std::string> components; // `at`, `native`, `index_elementwise_kernel`
  std::string template_args;           // of the last component, without the outer <>
};

NameParts split_name(std::string_view s) {
  constexpr std::string_view kAnon = "(anonymous namespace)";
  // 1. The head: everything before the top-level parameter list.
  int angle = 0;
  int paren = 0;
  int brace = 0;
  std::size_t head_end = s.size();
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '(' && angle == 0 && paren == 0 && brace == 0) {
      if (s.substr(i).starts_with(kAnon)) {
        i += kAnon.size() - 1;
        continue;
      }
      head_end = i;
      break;
    }
    if (c == '<') {
      ++angle;
    } else if (c == '>' && angle > 0) {
      --angle;
    } else if (c == '(') {
      ++paren;
    } else if (c == ')' && paren > 0) {
      --paren;
    } else if (c == '{') {
      ++brace;
    } else if (c == '}' && brace > 0) {
      --brace;
    }
  }
  std::string_view head = trim(s.substr(0, head_end));
  // 2. Drop the return type: the name is the last top-level space-separated token.
  angle = paren = brace = 0;
  std::size_t name_begin = 0;
  for (std::size_t i = 0; i < head.size(); ++i) {
    const char c = head[i];
    if (c == '<') {
      ++angle;
    } else if (c == '>' && angle > 0) {
      --angle;
    } else if (c == '(') {
      ++paren;
    } else if (c == ')' && paren > 0) {
      --paren;
    } else if (c == '{') {
      ++brace;
    } else if (c == '}' && brace > 0) {
      --brace;
    } else if (c == ' ' && angle == 0 && paren == 0 && brace == 0) {
      if (!head.substr(i + 1).starts_with(kAnon) && !head.substr(0, i).ends_with("(anonymous")) {
        name_begin = i + 1;
      }
    }
  }
  std::string_view name = head.substr(name_begin);
  // 3. Split on top-level `::`, removing template arguments from each component.
  NameParts parts;
  std::string current;
  std::string args;
  angle = paren = brace = 0;
  for (std::size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    if (angle == 0 && paren == 0 && brace == 0) {
      if (c == ':' && i + 1 < name.size() && name[i + 1] == ':') {
        parts.components.push_back(current);
        current.clear();
        args.clear();
        ++i;
        continue;
      }
      if (c == '<') {
        ++angle;
        continue;
      }
      if (c == '(') {
        ++paren;
      } else if (c == '{') {
        ++brace;
      }
      current.push_back(c);
      continue;
    }
    if (angle > 0) {
      if (c == '<') {
        ++angle;
      } else if (c == '>') {
        --angle;
      }
      if (angle > 0) {
        args.push_back(c);
      }
      continue;
    }
    if (c == '(') {
      ++paren;
    } else if (c == ')' && paren > 0) {
      --paren;
    } else if (c == '{') {
      ++brace;
    } else if (c == '}' && brace > 0) {
      --brace;
    }
    current.push_back(c);
  }
  parts.components.push_back(current);
  parts.template_args = std::string(trim(args));
  return parts;
}

// When the demangler refuses a name (e.g. `DF16b` in older libstdc++), the source names are still
// in the mangled text as <length><identifier>; that is enough to classify.
std::vector<std::string> mangled_identifiers(std::string_view s) {
  std::vector<std::string> out;
  std::size_t i = 2; // after `_Z`
  while (i < s.size() && out.size() < 256) {
    if (std::isdigit(static_cast<unsigned char>(s[i])) == 0) {
      ++i;
      continue;
    }
    std::size_t len = 0;
    std::size_t j = i;
    while (j < s.size() && std::isdigit(static_cast<unsigned char>(s[j])) != 0 && len < 100000) {
      len = len * 10 + static_cast<std::size_t>(s[j] - '0');
      ++j;
    }
    // Template literals (`Li256E`, `Lin1E`) are numbers, not lengths.
    const auto is_lower = [&](std::size_t k) {
      return std::islower(static_cast<unsigned char>(s[k])) != 0;
    };
    const bool literal = (i >= 2 && s[i - 2] == 'L' && is_lower(i - 1)) ||
                         (i >= 3 && s[i - 1] == 'n' && s[i - 3] == 'L' && is_lower(i - 2));
    if (literal) {
      i = j;
      continue;
    }
    const bool plausible = len > 0 && j + len <= s.size() &&
                           (std::isalpha(static_cast<unsigned char>(s[j])) != 0 || s[j] == '_');
    if (plausible && std::all_of(s.begin() + static_cast<std::ptrdiff_t>(j),
                                 s.begin() + static_cast<std::ptrdiff_t>(j + len), is_ident_char)) {
      out.emplace_back(s.substr(j, len));
      i = j + len;
    } else {
      i = j;
    }
  }
  return out;
}

bool is_plain_identifier(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), is_ident_char) &&
         std::isdigit(static_cast<unsigned char>(s.front())) == 0;
}

// ---------------------------------------------------------------------------------------------
// Tables.

struct CategoryRule {
  std::string_view needle; // lower case
  KernelCategory category;
};

// First match wins, so the specific comes before the general (`reduce_scatter` is a collective,
// `topk_softmax` a router, `moe_sorting` a router before `moe` is a MoE GEMM).
constexpr std::array kCategoryRules = {
    CategoryRule{"nccl", KernelCategory::Collective},
    CategoryRule{"rccl", KernelCategory::Collective},
    CategoryRule{"allreduce", KernelCategory::Collective},
    CategoryRule{"all_reduce", KernelCategory::Collective},
    CategoryRule{"allgather", KernelCategory::Collective},
    CategoryRule{"all_gather", KernelCategory::Collective},
    CategoryRule{"reduce_scatter", KernelCategory::Collective},
    CategoryRule{"reducescatter", KernelCategory::Collective},
    CategoryRule{"alltoall", KernelCategory::Collective},
    CategoryRule{"all_to_all", KernelCategory::Collective},
    CategoryRule{"cross_device_reduce", KernelCategory::Collective},
    CategoryRule{"reshape_and_cache", KernelCategory::KvCache},
    CategoryRule{"concat_and_cache", KernelCategory::KvCache},
    CategoryRule{"kv_cache", KernelCategory::KvCache},
    CategoryRule{"kvcache", KernelCategory::KvCache},
    CategoryRule{"swa_write", KernelCategory::KvCache},
    CategoryRule{"attention", KernelCategory::Attention},
    CategoryRule{"fmha", KernelCategory::Attention},
    CategoryRule{"flash", KernelCategory::Attention},
    CategoryRule{"attn", KernelCategory::Attention},
    CategoryRule{"mha_", KernelCategory::Attention},
    CategoryRule{"_mla", KernelCategory::Attention},
    CategoryRule{"mla_", KernelCategory::Attention},
    CategoryRule{"sdpa", KernelCategory::Attention},
    CategoryRule{"topk", KernelCategory::Router},
    CategoryRule{"top_k", KernelCategory::Router},
    CategoryRule{"bitmatrix", KernelCategory::Router},
    CategoryRule{"routing", KernelCategory::Router},
    CategoryRule{"moe_align", KernelCategory::Router},
    CategoryRule{"moe_sorting", KernelCategory::Router},
    CategoryRule{"moesorting", KernelCategory::Router},
    CategoryRule{"matmul_ogs", KernelCategory::MoeGemm},
    CategoryRule{"_ogs_", KernelCategory::MoeGemm},
    CategoryRule{"fused_moe", KernelCategory::MoeGemm},
    CategoryRule{"fusedmoe", KernelCategory::MoeGemm},
    CategoryRule{"moe_gemm", KernelCategory::MoeGemm},
    CategoryRule{"fmoe", KernelCategory::MoeGemm},
    CategoryRule{"moe", KernelCategory::MoeGemm},
    CategoryRule{"cijk_", KernelCategory::Gemm},
    CategoryRule{"gemm", KernelCategory::Gemm},
    CategoryRule{"matmul", KernelCategory::Gemm},
    CategoryRule{"wvsplitk", KernelCategory::Gemm},
    CategoryRule{"gemv", KernelCategory::Gemm},
    CategoryRule{"bmm", KernelCategory::Gemm},
    CategoryRule{"rmsnorm", KernelCategory::Layernorm},
    CategoryRule{"rms_norm", KernelCategory::Layernorm},
    CategoryRule{"layernorm", KernelCategory::Layernorm},
    CategoryRule{"layer_norm", KernelCategory::Layernorm},
    CategoryRule{"softmax", KernelCategory::Softmax},
    CategoryRule{"reduce", KernelCategory::Reduce},
    CategoryRule{"argmax", KernelCategory::Reduce},
    CategoryRule{"argmin", KernelCategory::Reduce},
    CategoryRule{"cumsum", KernelCategory::Reduce},
    CategoryRule{"sum", KernelCategory::Reduce},
    CategoryRule{"_red_", KernelCategory::Reduce},
    CategoryRule{"_per_", KernelCategory::Reduce},
    CategoryRule{"copy", KernelCategory::Copy},
    CategoryRule{"memcpy", KernelCategory::Copy},
    CategoryRule{"catarray", KernelCategory::Copy},
    CategoryRule{"transpose", KernelCategory::Copy},
    CategoryRule{"permute", KernelCategory::Copy},
    CategoryRule{"elementwise", KernelCategory::Elementwise},
    CategoryRule{"pointwise", KernelCategory::Elementwise},
    CategoryRule{"_poi_", KernelCategory::Elementwise},
    CategoryRule{"fill", KernelCategory::Elementwise},
    CategoryRule{"silu", KernelCategory::Elementwise},
    CategoryRule{"gelu", KernelCategory::Elementwise},
    CategoryRule{"act_and_mul", KernelCategory::Elementwise},
    CategoryRule{"rotary", KernelCategory::Elementwise},
    CategoryRule{"quant", KernelCategory::Elementwise},
};

KernelCategory category_from_keywords(std::string_view lowered) {
  for (const auto& rule : kCategoryRules) {
    if (contains(lowered, rule.needle)) {
      return rule.category;
    }
  }
  return KernelCategory::Unknown;
}

// ATen: the kernel template (`index_elementwise_kernel`) says little; the functor or impl inside
// its template arguments names the op. Ordered: the impls nested inside generic wrappers first.
struct AtenRule {
  std::string_view needle; // case-sensitive, as printed in demangled names
  std::string_view op;
  KernelCategory category;
  std::string_view file; // under aten/src/ATen/native/cuda/ (hip/ in ROCm builds)
  std::string_view test; // pytest -k keyword
};

constexpr std::array kAtenRules = {
    AtenRule{"index_copy_kernel_impl", "Tensor.index_copy_(dim, index, source)",
             KernelCategory::Copy, "IndexKernel.cu", "test/test_torch.py -k index_copy"},
    AtenRule{"index_put_kernel_impl", "tensor[indices] = values (Tensor.index_put_)",
             KernelCategory::Copy, "IndexKernel.cu", "test/test_indexing.py -k index_put"},
    AtenRule{"index_put_with_sort", "tensor[indices] = values (Tensor.index_put_, accumulate)",
             KernelCategory::Copy, "Indexing.cu", "test/test_indexing.py -k index_put"},
    AtenRule{"index_fill_kernel", "Tensor.index_fill_(dim, index, value)",
             KernelCategory::Elementwise, "IndexKernel.cu", "test/test_torch.py -k index_fill"},
    AtenRule{"masked_scatter", "Tensor.masked_scatter_(mask, source)", KernelCategory::Copy,
             "IndexKernel.cu", "test/test_torch.py -k masked_scatter"},
    AtenRule{"masked_fill", "Tensor.masked_fill_(mask, value)", KernelCategory::Elementwise,
             "IndexKernel.cu", "test/test_torch.py -k masked_fill"},
    AtenRule{"index_kernel_impl", "tensor[indices] (advanced-indexing read)", KernelCategory::Copy,
             "IndexKernel.cu", "test/test_indexing.py"},
    AtenRule{"indexSelect", "torch.index_select(input, dim, index)", KernelCategory::Copy,
             "Indexing.cu", "test/test_torch.py -k index_select"},
    AtenRule{"indexFunc", "Tensor.index_add_ / index_reduce_(dim, index, source)",
             KernelCategory::Elementwise, "Indexing.cu", "test/test_torch.py -k index_add"},
    AtenRule{"TopK", "torch.topk", KernelCategory::Router, "TensorTopK.cu",
             "test/test_sort_and_select.py -k topk"},
    AtenRule{"topk", "torch.topk", KernelCategory::Router, "TensorTopK.cu",
             "test/test_sort_and_select.py -k topk"},
    AtenRule{"scatter", "Tensor.scatter_ / scatter_add_(dim, index, src)", KernelCategory::Copy,
             "ScatterGatherKernel.cu", "test/test_scatter_gather_ops.py"},
    AtenRule{"gather", "torch.gather(input, dim, index)", KernelCategory::Copy,
             "ScatterGatherKernel.cu", "test/test_scatter_gather_ops.py"},
    AtenRule{"embedding", "torch.nn.functional.embedding", KernelCategory::Copy, "Embedding.cu",
             "test/nn/test_embedding.py"},
    AtenRule{"CatArrayBatchedCopy", "torch.cat", KernelCategory::Copy, "Shape.cu",
             "test/test_tensor_creation_ops.py -k cat"},
    AtenRule{"direct_copy_kernel", "Tensor.to / Tensor.copy_ (dtype or layout conversion)",
             KernelCategory::Copy, "Copy.cu", "test/test_torch.py -k copy"},
    AtenRule{"copy_kernel", "Tensor.copy_", KernelCategory::Copy, "Copy.cu",
             "test/test_torch.py -k copy"},
    AtenRule{"FillFunctor", "Tensor.fill_ / torch.zeros / torch.full", KernelCategory::Elementwise,
             "FillKernel.cu", "test/test_torch.py -k fill"},
    AtenRule{"CompareEqFunctor", "torch.eq", KernelCategory::Elementwise, "CompareEQKernel.cu",
             "test/test_binary_ufuncs.py -k eq"},
    AtenRule{"SoftMax", "torch.softmax", KernelCategory::Softmax, "SoftMax.cu",
             "test/nn/test_nn.py -k softmax"},
    AtenRule{"softmax", "torch.softmax", KernelCategory::Softmax, "SoftMax.cu",
             "test/nn/test_nn.py -k softmax"},
    AtenRule{"layer_norm", "torch.nn.functional.layer_norm", KernelCategory::Layernorm,
             "layer_norm_kernel.cu", "test/nn/test_nn.py -k layer_norm"},
    AtenRule{"LayerNorm", "torch.nn.functional.layer_norm", KernelCategory::Layernorm,
             "layer_norm_kernel.cu", "test/nn/test_nn.py -k layer_norm"},
    AtenRule{"RowwiseMoments", "torch.nn.functional.layer_norm", KernelCategory::Layernorm,
             "layer_norm_kernel.cu", "test/nn/test_nn.py -k layer_norm"},
    AtenRule{"rms_norm", "torch.nn.functional.rms_norm", KernelCategory::Layernorm,
             "layer_norm_kernel.cu", "test/nn/test_nn.py -k rms_norm"},
    AtenRule{"ArgMax", "torch.argmax", KernelCategory::Reduce, "ReduceArgMaxKernel.cu",
             "test/test_reductions.py -k argmax"},
    AtenRule{"ArgMin", "torch.argmin", KernelCategory::Reduce, "ReduceArgMinKernel.cu",
             "test/test_reductions.py -k argmin"},
    AtenRule{"MeanOps", "torch.mean", KernelCategory::Reduce, "ReduceMomentKernel.cu",
             "test/test_reductions.py -k mean"},
    AtenRule{"NormOps", "torch.norm / torch.linalg.vector_norm", KernelCategory::Reduce,
             "ReduceNormKernel.cu", "test/test_reductions.py -k norm"},
    AtenRule{"sum_functor", "torch.sum", KernelCategory::Reduce, "ReduceSumProdKernel.cu",
             "test/test_reductions.py -k sum"},
    AtenRule{"reduce_kernel", "a reduction (sum/mean/max/norm: the functor in the name says which)",
             KernelCategory::Reduce, "Reduce.cuh", "test/test_reductions.py"},
    AtenRule{"tensor_kernel_scan", "torch.cumsum / cumprod", KernelCategory::Reduce,
             "ScanUtils.cuh", "test/test_torch.py -k cumsum"},
    AtenRule{"silu", "torch.nn.functional.silu", KernelCategory::Elementwise,
             "ActivationSiluKernel.cu", "test/test_unary_ufuncs.py -k silu"},
    AtenRule{"gelu", "torch.nn.functional.gelu", KernelCategory::Elementwise,
             "ActivationGeluKernel.cu", "test/test_unary_ufuncs.py -k gelu"},
    AtenRule{"elementwise_kernel", "a pointwise op (the functor in the name says which)",
             KernelCategory::Elementwise, "CUDALoops.cuh", "test/test_binary_ufuncs.py"},
};

// Triton JIT kernels we know by name. The name is the @triton.jit Python function's, sometimes
// with a config suffix (`_matmul_ogs_NNT_bf16xbf16xmxfp4_32x256x128x1_swiglu`).
struct TritonRule {
  std::string_view prefix;
  std::string_view op;
  KernelCategory category;
  std::string_view source;
  std::string_view test;
};

constexpr std::array kTritonRules = {
    TritonRule{"_matmul_ogs", "_matmul_ogs (MoE grouped matmul, triton_kernels)",
               KernelCategory::MoeGemm, "triton/python/triton_kernels/triton_kernels/matmul_ogs.py",
               "pytest triton/python/triton_kernels/tests/test_matmul.py"},
    TritonRule{"kernel_unified_attention", "kernel_unified_attention (vLLM unified attention)",
               KernelCategory::Attention, "vllm/vllm/attention/ops/triton_unified_attention.py",
               "pytest vllm/tests/kernels/attention/ -k unified_attention"},
    TritonRule{"_swa_write_kernel", "_swa_write_kernel (ATOM sliding-window state write)",
               KernelCategory::KvCache, "ATOM: state_writes.py (grep -rn 'def _swa_write_kernel')",
               ""},
    TritonRule{"_update_compressor_states_kernel",
               "_update_compressor_states_kernel (ATOM compressor state write)",
               KernelCategory::KvCache,
               "ATOM: state_writes.py (grep -rn 'def _update_compressor_states_kernel')", ""},
    TritonRule{"fused_moe_kernel", "fused_moe_kernel (Triton fused MoE)", KernelCategory::MoeGemm,
               "vllm/vllm/model_executor/layers/fused_moe/fused_moe.py (SGLang: "
               "python/sglang/srt/layers/moe/fused_moe_triton/)",
               "pytest vllm/tests/kernels/moe/test_moe.py"},
    TritonRule{"_fwd_kernel", "_fwd_kernel (Triton attention forward)", KernelCategory::Attention,
               "grep -rn 'def _fwd_kernel' over the serving stack (vllm/, sglang/, atom/, aiter/)",
               ""},
    TritonRule{"_attn_fwd", "_attn_fwd (Triton flash-attention forward)", KernelCategory::Attention,
               "grep -rn 'def _attn_fwd' over the serving stack (vllm/, sglang/, aiter/)", ""},
};

struct DtypeToken {
  std::string_view needle;
  std::string_view dtype;
};

// Found anywhere in a (demangled or mangled) name; first match wins.
constexpr std::array kDtypeTokens = {
    DtypeToken{"c10::BFloat16", "bfloat16"},
    DtypeToken{"c10::Half", "float16"},
    DtypeToken{"c10::Float8_e4m3fnuz", "float8_e4m3fnuz"},
    DtypeToken{"c10::Float8_e4m3fn", "float8_e4m3fn"},
    DtypeToken{"c10::Float8_e5m2fnuz", "float8_e5m2fnuz"},
    DtypeToken{"c10::Float8_e5m2", "float8_e5m2"},
    DtypeToken{"c10::complex<float>", "complex64"},
    DtypeToken{"c10::complex<double>", "complex128"},
    DtypeToken{"__hip_bfloat16", "bfloat16"},
    DtypeToken{"std::bfloat16_t", "bfloat16"},
    DtypeToken{"__bf16", "bfloat16"},
    DtypeToken{"DF16b", "bfloat16"},
    DtypeToken{"bf16_t", "bfloat16"},
    DtypeToken{"fp16_t", "float16"},
    DtypeToken{"fp8_t", "float8"},
    DtypeToken{"_Float16", "float16"},
    DtypeToken{"__half", "float16"},
};

struct TensileType {
  char code;
  std::string_view dtype;
};
constexpr std::array kTensileTypes = {
    TensileType{'S', "fp32"},       TensileType{'D', "fp64"},  TensileType{'H', "fp16"},
    TensileType{'B', "bf16"},       TensileType{'I', "int32"}, TensileType{'C', "complex64"},
    TensileType{'Z', "complex128"}, TensileType{'F', "fp8"},
};

std::string opaque_type_hint(std::string_view name) {
  constexpr std::string_view kOpaque = "OpaqueType<";
  const auto pos = name.find(kOpaque);
  if (pos == std::string_view::npos) {
    return {};
  }
  std::size_t i = pos + kOpaque.size();
  int bytes = 0;
  while (i < name.size() && std::isdigit(static_cast<unsigned char>(name[i])) != 0 &&
         bytes < 1000) {
    bytes = bytes * 10 + (name[i] - '0');
    ++i;
  }
  switch (bytes) {
  case 1:
    return "1-byte dtype (int8/uint8/bool/float8)";
  case 2:
    return "2-byte dtype (float16/bfloat16/int16)";
  case 4:
    return "4-byte dtype (int32/float32)";
  case 8:
    return "8-byte dtype (int64/float64)";
  case 16:
    return "16-byte dtype (complex128)";
  default:
    return bytes > 0 ? std::to_string(bytes) + "-byte dtype" : std::string{};
  }
}

// `FillFunctor<float>`, `CUDAFunctor_add<c10::BFloat16>`: the scalar type of the first functor.
std::string functor_dtype(std::string_view name) {
  constexpr std::array<std::pair<std::string_view, std::string_view>, 8> kScalars = {{
      {"float", "float32"},
      {"double", "float64"},
      {"int", "int32"},
      {"long", "int64"},
      {"bool", "bool"},
      {"signed char", "int8"},
      {"unsigned char", "uint8"},
      {"short", "int16"},
  }};
  for (std::string_view marker : {std::string_view("Functor<"), std::string_view("Functor_")}) {
    auto pos = name.find(marker);
    if (pos == std::string_view::npos) {
      continue;
    }
    pos = name.find('<', pos);
    if (pos == std::string_view::npos) {
      continue;
    }
    const auto end = name.find_first_of(",>", pos + 1);
    const auto arg = trim(name.substr(pos + 1, end == std::string_view::npos ? 0 : end - pos - 1));
    for (const auto& [type, dtype] : kScalars) {
      if (arg == type) {
        return std::string(dtype);
      }
    }
  }
  return {};
}

std::string dtype_from_tokens(std::string_view name) {
  for (const auto& token : kDtypeTokens) {
    if (contains(name, token.needle)) {
      return std::string(token.dtype);
    }
  }
  return {};
}

// Triton and Inductor names carry dtypes as underscore-separated tokens (`bf16xbf16xmxfp4`).
std::string dtype_from_underscored(std::string_view name) {
  constexpr std::array<std::string_view, 12> kMarkers = {
      "mxfp4", "mxfp8", "bf16", "fp16", "f16", "fp8", "e4m3", "e5m2", "fp32", "f32", "int8", "i8"};
  std::size_t start = 0;
  while (start <= name.size()) {
    auto end = name.find('_', start);
    if (end == std::string_view::npos) {
      end = name.size();
    }
    const auto token = name.substr(start, end - start);
    for (auto marker : kMarkers) {
      if (!token.empty() && contains(token, marker)) {
        return std::string(token);
      }
    }
    start = end + 1;
  }
  return {};
}

std::string join(const std::vector<std::string>& parts, std::string_view sep) {
  std::string out;
  for (const auto& p : parts) {
    if (!out.empty()) {
      out += sep;
    }
    out += p;
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
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
  info.source_hint = "RCCL rccl/src/device/ (NCCL: nccl/src/device/); kernels are generated per "
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
  info.test_hint = "hipblaslt-bench or rocblas-bench -f gemm_ex with the failing call's M/N/K "
                   "and types";
}

void classify_ck(std::string_view name, KernelInfo& info) {
  info.family = KernelFamily::CkTile;
  // ck_tile::kentry<N, ck_tile::Rmsnorm2dFwd<...>>: the op is the kernel class in the args.
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
                          : "rocm-libraries/projects/composablekernel/include/ck/tensor_operation/"
                            "gpu/";
  if (contains(name, "aiter")) {
    info.source_hint += " (instantiated by aiter: aiter/csrc/)";
  }
  info.test_hint = "rocm-libraries/projects/composablekernel/example/ck_tile/ (the example named "
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
                       "' over the serving stack (vllm/, sglang/, atom/, aiter/, triton_kernels); "
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
    // __omp_offloading_<dev>_<file>_<function>_l<line>: the line is in the name.
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
    info.source_hint = "HIP C++: grep -rn '" + info.short_name +
                       "' over the application and its "
                       "extensions";
  }
  if (contains(name, "reshape_and_cache")) {
    info.source_hint = "vllm/csrc/cache_kernels.cu";
  }
  info.dtype_hint = dtype_from_tokens(name);
}

} // namespace

namespace {

// How deep libstdc++'s recursive demangler would go: nested scopes and template argument lists
// (`N`/`I`/`X`/`J` ... `E`) plus the longest run of type qualifiers (`PPPR...`), skipping the
// identifiers (`<length><name>`) so their letters do not count. An over-estimate is harmless: the
// name then stays mangled and classification reads its identifiers.
std::size_t mangled_nesting(std::string_view s) {
  std::size_t depth = 0;
  std::size_t deepest = 0;
  std::size_t run = 0;
  for (std::size_t i = 2; i < s.size();) {
    const char c = s[i];
    if (std::isdigit(static_cast<unsigned char>(c)) != 0) {
      std::size_t len = 0;
      std::size_t j = i;
      while (j < s.size() && std::isdigit(static_cast<unsigned char>(s[j])) != 0 && len < 100000) {
        len = len * 10 + static_cast<std::size_t>(s[j] - '0');
        ++j;
      }
      const bool literal = i >= 2 && s[i - 2] == 'L';
      i = literal ? j : std::min(s.size(), j + len);
      run = 0;
      continue;
    }
    if (c == 'N' || c == 'I' || c == 'X' || c == 'J') {
      ++depth;
    } else if (c == 'E' && depth > 0) {
      --depth;
    }
    run = (c == 'P' || c == 'R' || c == 'O' || c == 'K' || c == 'V') ? run + 1 : 0;
    deepest = std::max(deepest, depth + run);
    ++i;
  }
  return deepest;
}

} // namespace

bool is_mangled(std::string_view name) {
  return trim(name).starts_with("_Z");
}

std::string demangle_symbol(std::string_view name) {
  name = trim(name);
  if (name.size() > 3 && name.ends_with(".kd")) {
    name.remove_suffix(3);
  }
  return demangle(name);
}

std::string demangle(std::string_view name) {
  name = trim(name);
  if (!name.starts_with("_Z") || name.size() > kMaxDemangleBytes ||
      mangled_nesting(name) > kMaxDemangleNesting) {
    return std::string(name);
  }
  auto attempt = [](std::string_view mangled) -> std::string {
    const std::string copy(mangled);
    int status = 0;
    std::unique_ptr<char, void (*)(void*)> out(
        abi::__cxa_demangle(copy.c_str(), nullptr, nullptr, &status), std::free);
    if (status != 0 || out == nullptr) {
      return {};
    }
    return std::string(out.get());
  };
  if (auto out = attempt(name); !out.empty()) {
    return out;
  }
  if (name.ends_with(".kd")) {
    if (auto out = attempt(name.substr(0, name.size() - 3)); !out.empty()) {
      return out + " [clone .kd]";
    }
  }
  return std::string(name);
}

std::string short_function_name(std::string_view name) {
  auto parts = split_name(trim(name));
  if (parts.components.empty() || parts.components.back().empty()) {
    return std::string(trim(name));
  }
  return std::move(parts.components.back());
}

std::string kernel_short_name(std::string_view name) {
  return classify_kernel(name).short_name;
}

std::string_view to_string(KernelFamily family) {
  switch (family) {
  case KernelFamily::Triton:
    return "triton";
  case KernelFamily::Tensile:
    return "tensile";
  case KernelFamily::CkTile:
    return "ck_tile";
  case KernelFamily::Aten:
    return "aten";
  case KernelFamily::Collective:
    return "collective";
  case KernelFamily::Aiter:
    return "aiter";
  case KernelFamily::HipCpp:
    return "hip_cpp";
  case KernelFamily::Unknown:
    break;
  }
  return "unknown";
}

std::string_view to_string(KernelCategory category) {
  switch (category) {
  case KernelCategory::Attention:
    return "attention";
  case KernelCategory::Gemm:
    return "gemm";
  case KernelCategory::MoeGemm:
    return "moe_gemm";
  case KernelCategory::Layernorm:
    return "layernorm";
  case KernelCategory::Softmax:
    return "softmax";
  case KernelCategory::Elementwise:
    return "elementwise";
  case KernelCategory::Reduce:
    return "reduce";
  case KernelCategory::Router:
    return "router";
  case KernelCategory::KvCache:
    return "kv_cache";
  case KernelCategory::Collective:
    return "collective";
  case KernelCategory::Copy:
    return "copy";
  case KernelCategory::Unknown:
    break;
  }
  return "unknown";
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
  } else if (contains(scan_text, "at::native::") || (demangle_failed && first == "at")) {
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
    // For C++ kernels, the kernel's own name and its template arguments both carry meaning
    // (`elementwise_kernel<..., FillFunctor>`), but parameter lists do not.
    info.category = category_from_keywords(lower(join(components, "::") + "<" + template_args));
  }
  // Custom all-reduce and all-gather kernels (`aiter::allgather_vec`,
  // `vllm::cross_device_reduce_*`) share RCCL's failure modes (cross-rank flags), so they are
  // collectives first.
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
