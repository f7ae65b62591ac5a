// The kernel classifier's tables: keyword categories, ATen and Triton ops,
// dtype tokens, Tensile type codes, and the dtype readers over them. Adding a
// library or an op is one row here. Internal to src/kernels.
#pragma once

#include "rocplay/kernels/kernel_names.hpp"

#include <array>
#include <string>
#include <string_view>

namespace rocplay::kernels {

struct CategoryRule {
  std::string_view needle; // lower case
  KernelCategory category;
};

// First match wins, so the specific comes before the general (`reduce_scatter`
// is a collective, `topk_softmax` a router, `moe_sorting` a router before `moe`
// is a MoE GEMM).
inline constexpr std::array kCategoryRules = {
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

// ATen: the kernel template (`index_elementwise_kernel`) says little; the
// functor or impl inside its template arguments names the op. Ordered: the
// impls nested inside generic wrappers first.
struct AtenRule {
  std::string_view needle; // case-sensitive, as printed in demangled names
  std::string_view op;
  KernelCategory category;
  std::string_view file; // under aten/src/ATen/native/cuda/ (hip/ in ROCm builds)
  std::string_view test; // pytest -k keyword
};

inline constexpr std::array kAtenRules = {
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

// Triton JIT kernels we know by name. The name is the @triton.jit Python
// function's, sometimes with a config suffix
// (`_matmul_ogs_NNT_bf16xbf16xmxfp4_32x256x128x1_swiglu`).
struct TritonRule {
  std::string_view prefix;
  std::string_view op;
  KernelCategory category;
  std::string_view source;
  std::string_view test;
};

inline constexpr std::array kTritonRules = {
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
               "ATOM: state_writes.py (grep -rn 'def "
               "_update_compressor_states_kernel')",
               ""},
    TritonRule{"fused_moe_kernel", "fused_moe_kernel (Triton fused MoE)", KernelCategory::MoeGemm,
               "vllm/vllm/model_executor/layers/fused_moe/fused_moe.py (SGLang: "
               "python/sglang/srt/layers/moe/fused_moe_triton/)",
               "pytest vllm/tests/kernels/moe/test_moe.py"},
    TritonRule{"_fwd_kernel", "_fwd_kernel (Triton attention forward)", KernelCategory::Attention,
               "grep -rn 'def _fwd_kernel' over the serving stack (vllm/, "
               "sglang/, atom/, aiter/)",
               ""},
    TritonRule{"_attn_fwd", "_attn_fwd (Triton flash-attention forward)", KernelCategory::Attention,
               "grep -rn 'def _attn_fwd' over the serving stack (vllm/, "
               "sglang/, aiter/)",
               ""},
};

struct DtypeToken {
  std::string_view needle;
  std::string_view dtype;
};

// Found anywhere in a (demangled or mangled) name; first match wins.
inline constexpr std::array kDtypeTokens = {
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

inline constexpr std::array kTensileTypes = {
    TensileType{'S', "fp32"},       TensileType{'D', "fp64"},  TensileType{'H', "fp16"},
    TensileType{'B', "bf16"},       TensileType{'I', "int32"}, TensileType{'C', "complex64"},
    TensileType{'Z', "complex128"}, TensileType{'F', "fp8"},
};

KernelCategory category_from_keywords(std::string_view lowered);
std::string opaque_type_hint(std::string_view name);
// `FillFunctor<float>`, `CUDAFunctor_add<c10::BFloat16>`: the scalar type of
// the first functor.
std::string functor_dtype(std::string_view name);
std::string dtype_from_tokens(std::string_view name);
// Triton and Inductor names carry dtypes as underscore-separated tokens
// (`bf16xbf16xmxfp4`).
std::string dtype_from_underscored(std::string_view name);

} // namespace rocplay::kernels
