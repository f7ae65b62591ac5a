// Kernel-name demangling and classification on names as debuggers, profilers and
// rocm-debug-agent print them (shapes taken from the seed notes: debug-agent wave dumps, the
// AMD kernel-source-finder table, rocgdb `info dispatches`).
#include "rocplay/kernels/kernel_names.hpp"

#include <catch2/catch.hpp>

#include <pthread.h>

#include <string>

using rocplay::classify_kernel;
using rocplay::demangle;
using rocplay::kernel_short_name;
using rocplay::KernelCategory;
using rocplay::KernelFamily;

namespace {
// The FQN rocm-debug-agent printed for the index_copy_ assert in the seed's sample dump.
constexpr const char* kIndexCopyFqn =
    "void at::native::index_elementwise_kernel<128, 4, "
    "at::native::index_copy_kernel_impl<at::native::OpaqueType<4> >(at::TensorIterator&, long, "
    "long, long)::{lambda(int)#1}>(long, "
    "at::native::index_copy_kernel_impl<at::native::OpaqueType<4> >(at::TensorIterator&, long, "
    "long, long)::{lambda(int)#1})";
} // namespace

TEST_CASE("demangle: mangled names become readable, others pass through", "[kernels]") {
  CHECK(demangle("_Z12saxpy_kernelfPKfPfj") ==
        "saxpy_kernel(float, float const*, float*, unsigned int)");
  CHECK(demangle("_fwd_kernel") == "_fwd_kernel");
  CHECK(demangle("Cijk_Alik_Bljk_BBS_BH_MT32x64x256_MI16x16x1_WG16_8_2") ==
        "Cijk_Alik_Bljk_BBS_BH_MT32x64x256_MI16x16x1_WG16_8_2");
  // Not a valid mangling: returned unchanged rather than thrown on.
  CHECK(demangle("_Zgarbage(") == "_Zgarbage(");
  CHECK(demangle("") == "");
  // Kernel-descriptor symbols keep their marker so a caller can tell them apart.
  CHECK(demangle("_Z12saxpy_kernelfPKfPfj.kd").starts_with("saxpy_kernel(float"));
}

TEST_CASE("ATen index_copy_ from the seed's wave dump", "[kernels]") {
  const auto info = classify_kernel(kIndexCopyFqn);
  CHECK(info.family == KernelFamily::Aten);
  CHECK(info.category == KernelCategory::Copy);
  CHECK(info.short_name == "index_elementwise_kernel");
  CHECK(info.op == "Tensor.index_copy_(dim, index, source)");
  CHECK(info.dtype_hint == "4-byte dtype (int32/float32)");
  CHECK(info.source_hint.find("aten/src/ATen/native/cuda/IndexKernel.cu") != std::string::npos);
  CHECK(info.test_hint.find("index_copy") != std::string::npos);
  CHECK(info.name == kIndexCopyFqn);
}

TEST_CASE("ATen: the op comes from the functor, the dtype from OpaqueType or the functor",
          "[kernels]") {
  SECTION("mangled fill kernel") {
    const auto info = classify_kernel(
        "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIfEESt5arrayIPcLm1EEEEv"
        "iT0_T1_");
    CHECK(info.family == KernelFamily::Aten);
    CHECK(info.category == KernelCategory::Elementwise);
    CHECK(info.short_name == "vectorized_elementwise_kernel");
    CHECK(info.op.find("fill_") != std::string::npos);
    CHECK(info.dtype_hint == "float32");
    CHECK(info.name.starts_with("void at::native::vectorized_elementwise_kernel<4, "
                                "at::native::FillFunctor<float>"));
  }
  SECTION("index_put on 8-byte values") {
    const auto info = classify_kernel(
        "void at::native::index_elementwise_kernel<128, 4, "
        "at::native::gpu_index_kernel<at::native::index_put_kernel_impl<at::native::OpaqueType<8> "
        ">(at::TensorIterator&, c10::ArrayRef<long>, c10::ArrayRef<long>)::{lambda(char*, char "
        "const*, long)#1}>(at::TensorIteratorBase&, c10::ArrayRef<long>, c10::ArrayRef<long>, "
        "at::native::index_put_kernel_impl<at::native::OpaqueType<8> >(at::TensorIterator&, "
        "c10::ArrayRef<long>, c10::ArrayRef<long>)::{lambda(char*, char const*, long)#1} "
        "const&)::{lambda(int)#1}>(long, ...)");
    CHECK(info.op.find("index_put_") != std::string::npos);
    CHECK(info.dtype_hint == "8-byte dtype (int64/float64)");
    CHECK(info.category == KernelCategory::Copy);
  }
  SECTION("sum reduction") {
    const auto info = classify_kernel(
        "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, "
        "at::native::func_wrapper_t<float, at::native::sum_functor<float, float, "
        "float>::operator()(at::TensorIterator&)::{lambda(float, float)#1}>, unsigned int, float, "
        "4> >(at::native::ReduceOp<float, at::native::func_wrapper_t<float, "
        "at::native::sum_functor<float, float, float>::operator()(at::TensorIterator&)::{lambda("
        "float, float)#1}>, unsigned int, float, 4>)");
    CHECK(info.family == KernelFamily::Aten);
    CHECK(info.category == KernelCategory::Reduce);
    CHECK(info.op == "torch.sum");
    CHECK(info.short_name == "reduce_kernel");
  }
  SECTION("scatter and bf16") {
    const auto info = classify_kernel(
        "void at::native::_scatter_gather_elementwise_kernel<128, 8, "
        "at::native::_cuda_scatter_gather_internal_kernel<true, "
        "c10::BFloat16>::operator()<at::native::TensorAssign>(at::TensorIterator&, long, long, "
        "long, at::native::TensorAssign const&)::{lambda(int)#1}>(int, ...)");
    CHECK(info.op.find("scatter_") != std::string::npos);
    CHECK(info.dtype_hint == "bfloat16");
  }
}

TEST_CASE("Triton JIT names from profiler traces", "[kernels]") {
  SECTION("triton_kernels MoE matmul with a config suffix") {
    const auto info = classify_kernel("_matmul_ogs_NNT_bf16xbf16xmxfp4_32x256x128x1_swiglu.kd");
    CHECK(info.family == KernelFamily::Triton);
    CHECK(info.category == KernelCategory::MoeGemm);
    CHECK(info.short_name == "_matmul_ogs_NNT_bf16xbf16xmxfp4_32x256x128x1_swiglu");
    CHECK(info.op.starts_with("_matmul_ogs"));
    CHECK(info.dtype_hint == "bf16xbf16xmxfp4");
    CHECK(info.source_hint.find("matmul_ogs.py") != std::string::npos);
  }
  SECTION("vLLM unified attention") {
    const auto info = classify_kernel("kernel_unified_attention_3d.kd");
    CHECK(info.family == KernelFamily::Triton);
    CHECK(info.category == KernelCategory::Attention);
    CHECK(info.short_name == "kernel_unified_attention_3d");
  }
  SECTION("Inductor") {
    const auto poi = classify_kernel("triton_poi_fused_0.kd");
    CHECK(poi.family == KernelFamily::Triton);
    CHECK(poi.category == KernelCategory::Elementwise);
    CHECK(poi.source_hint.find("TORCH_LOGS=output_code") != std::string::npos);
    const auto red = classify_kernel("triton_red_fused_add_mean_pow_rsqrt_1");
    CHECK(red.category == KernelCategory::Reduce);
    CHECK(red.op.find("add_mean_pow_rsqrt_1") != std::string::npos);
  }
  SECTION("ATOM state writes named in the seed") {
    const auto info = classify_kernel("_swa_write_kernel");
    CHECK(info.family == KernelFamily::Triton);
    CHECK(info.category == KernelCategory::KvCache);
    CHECK(info.source_hint.find("state_writes.py") != std::string::npos);
  }
  SECTION("unknown Triton kernel: a grep to find it") {
    const auto info = classify_kernel("_rotary_embedding_kernel");
    CHECK(info.family == KernelFamily::Triton);
    CHECK(info.category == KernelCategory::Elementwise);
    CHECK(info.source_hint.find("def _rotary_embedding_kernel") != std::string::npos);
  }
}

TEST_CASE("Tensile GEMM: layout, tile and types from the name", "[kernels]") {
  const auto info = classify_kernel("Cijk_Alik_Bljk_BBS_BH_MT32x64x256_MI16x16x1_WG16_8_2.kd");
  CHECK(info.family == KernelFamily::Tensile);
  CHECK(info.category == KernelCategory::Gemm);
  CHECK(info.op == "GEMM (A transposed, B not transposed, tile MT32x64x256)");
  CHECK(info.dtype_hint == "BBS (bf16/bf16/fp32)");
  CHECK(info.test_hint.find("bench") != std::string::npos);
}

TEST_CASE("CK tile: the op is the kernel class inside kentry<>", "[kernels]") {
  SECTION("demangled") {
    const auto info = classify_kernel(
        "_ZN7ck_tile6kentryILi256ELi1ENS_12Rmsnorm2dFwdINS_27Rmsnorm2dFwdPipelineProblemIfEEEEJNS_"
        "20Rmsnorm2dFwdHostArgsEEEEvDpT2_");
    CHECK(info.family == KernelFamily::CkTile);
    CHECK(info.category == KernelCategory::Layernorm);
    CHECK(info.op == "ck_tile Rmsnorm2dFwd");
    CHECK(info.short_name == "kentry");
    CHECK(info.source_hint.find("include/ck_tile/ops/rmsnorm2d/") != std::string::npos);
  }
  SECTION("bf16 (DF16b), which older demanglers refuse") {
    const auto info = classify_kernel(
        "_ZN7ck_tile6kentryILi256ELi1ENS_12Rmsnorm2dFwdINS_27Rmsnorm2dFwdPipelineProblemIDF16bEEEEJ"
        "NS_20Rmsnorm2dFwdHostArgsEEEEvDpT2_.kd");
    CHECK(info.family == KernelFamily::CkTile);
    CHECK(info.category == KernelCategory::Layernorm);
    CHECK(info.op == "ck_tile Rmsnorm2dFwd");
    CHECK(info.dtype_hint == "bfloat16");
  }
  SECTION("flash attention") {
    const auto info = classify_kernel(
        "_ZN7ck_tile6kentryILi256ELi1ENS_13FmhaFwdKernelIfEEJNS_12FmhaFwdKargsEEEEvDpT2_");
    CHECK(info.category == KernelCategory::Attention);
    CHECK(info.op == "ck_tile FmhaFwdKernel");
    CHECK(info.source_hint.find("ops/fmha/") != std::string::npos);
  }
}

TEST_CASE("Collectives: RCCL/NCCL and custom all-reduce/all-gather", "[kernels]") {
  SECTION("ncclDevKernel") {
    const auto info =
        classify_kernel("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgs4K)");
    CHECK(info.family == KernelFamily::Collective);
    CHECK(info.category == KernelCategory::Collective);
    CHECK(info.short_name == "ncclDevKernel_AllReduce_Sum_f32_RING_LL");
    CHECK(info.op == "AllReduce (Sum RING LL)");
    CHECK(info.dtype_hint == "f32");
  }
  SECTION("aiter allgather_vec") {
    const auto info =
        classify_kernel("void aiter::allgather_vec<__hip_bfloat16, 8>(aiter::RankData*, "
                        "aiter::RankSignals, aiter::Signal*, __hip_bfloat16*, int, int)");
    CHECK(info.family == KernelFamily::Collective);
    CHECK(info.category == KernelCategory::Collective);
    CHECK(info.short_name == "allgather_vec");
    CHECK(info.dtype_hint == "bfloat16");
    CHECK(info.source_hint.find("aiter/csrc/") != std::string::npos);
  }
  SECTION("vLLM custom all-reduce") {
    const auto info =
        classify_kernel("void vllm::cross_device_reduce_1stage<__hip_bfloat16, 8>(vllm::RankData*, "
                        "vllm::RankSignals, vllm::Signal*, __hip_bfloat16*, int)");
    CHECK(info.family == KernelFamily::Collective);
    CHECK(info.short_name == "cross_device_reduce_1stage");
    CHECK(info.source_hint.find("vllm/csrc/") != std::string::npos);
  }
}

TEST_CASE("HIP C++ and aiter kernels", "[kernels]") {
  SECTION("vLLM KV-cache write") {
    const auto info = classify_kernel(
        "void vllm::reshape_and_cache_flash_kernel<__hip_bfloat16, __hip_bfloat16, "
        "(vllm::Fp8KVCacheDataType)0>(__hip_bfloat16 const*, __hip_bfloat16 const*, "
        "__hip_bfloat16*, __hip_bfloat16*, long const*, long, long, long, long, int, int, int, "
        "float const*, float const*)");
    CHECK(info.family == KernelFamily::HipCpp);
    CHECK(info.category == KernelCategory::KvCache);
    CHECK(info.short_name == "reshape_and_cache_flash_kernel");
    CHECK(info.source_hint == "vllm/csrc/cache_kernels.cu");
  }
  SECTION("skinny GEMM") {
    const auto info = classify_kernel("void wvSplitK_hf_sml_<__hip_bfloat16, 64, 2, 16, 8, 2, "
                                      "1>(int, int, int, __hip_bfloat16 const*, __hip_bfloat16 "
                                      "const*, __hip_bfloat16*, int, int)");
    CHECK(info.family == KernelFamily::HipCpp);
    CHECK(info.category == KernelCategory::Gemm);
    CHECK(info.source_hint == "vllm/csrc/rocm/skinny_gemms.cu");
  }
  SECTION("aiter") {
    const auto info = classify_kernel("void aiter::add_rmsnorm_quant_kernel<__hip_bfloat16, 256, "
                                      "8>(__hip_bfloat16*, __hip_bfloat16 const*, float)");
    CHECK(info.family == KernelFamily::Aiter);
    CHECK(info.category == KernelCategory::Layernorm);
    CHECK(info.short_name == "add_rmsnorm_quant_kernel");
  }
  SECTION("plain mangled HIP kernel and anonymous namespaces") {
    const auto saxpy = classify_kernel("_Z12saxpy_kernelfPKfPfj.kd");
    CHECK(saxpy.family == KernelFamily::HipCpp);
    CHECK(saxpy.short_name == "saxpy_kernel");
    CHECK(saxpy.name == "saxpy_kernel(float, float const*, float*, unsigned int)");
    const auto anon = classify_kernel("void (anonymous namespace)::spin_kernel<int>(int*)");
    CHECK(anon.short_name == "spin_kernel");
    CHECK(anon.source_hint.starts_with("C++ (HIP or CUDA): grep -rn 'spin_kernel'"));
  }
  SECTION("PyTorch's own kernels outside at::native are ATen's") {
    // torch.cuda._sleep's kernel, as cuda-gdb 13.0 named it on the H100 (h100-samples).
    const auto info =
        classify_kernel("_ZN2at4cuda40_GLOBAL__N__758183f4_8_Sleep_cu_088d913f11spin_kernelEl");
    CHECK(info.family == KernelFamily::Aten);
    CHECK(info.short_name == "spin_kernel");
    CHECK(info.source_hint == "pytorch aten/src/ATen/cuda/ (grep the kernel name)");
  }
}

TEST_CASE("hostile names never crash and stay bounded", "[kernels]") {
  for (const std::string& name :
       {std::string(""), std::string("   "), std::string("<<<<((({{{"), std::string(">>>))}}}::"),
        std::string("_Z"), std::string("_Z999999999999999999999abc"), std::string("::::"),
        std::string("\x01\x02\xff\xfe", 4), std::string(200000, '<'),
        std::string("_Z") + std::string(100000, '9'), std::string(300000, 'a')}) {
    const auto info = classify_kernel(name);
    CHECK(info.name.size() <= 64 * 1024);
    (void)kernel_short_name(name);
  }
  CHECK(to_string(KernelFamily::CkTile) == "ck_tile");
  CHECK(to_string(KernelCategory::KvCache) == "kv_cache");
  CHECK(to_string(KernelCategory::MoeGemm) == "moe_gemm");
}

TEST_CASE("demangle is bounded: deep nesting and long names stay as they came", "[kernels]") {
  // 3,000 nested template argument lists: libstdc++'s demangler recurses once per level.
  std::string deep = "_Z1f";
  for (int i = 0; i < 3000; ++i) {
    deep += "N1aI";
  }
  deep += "i";
  for (int i = 0; i < 3000; ++i) {
    deep += "EE";
  }
  deep += "E";
  std::string pointers = "_Z1fP" + std::string(5000, 'P') + "i";
  std::string longest = "_Z" + std::to_string(20000) + std::string(20000, 'a') + "v";
  // On a small stack, as in a worker thread: returning at all is the test.
  std::string out_deep;
  std::string out_pointers;
  std::string out_long;
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, 128 * 1024);
  struct Work {
    const std::string* in[3];
    std::string* out[3];
  } work{{&deep, &pointers, &longest}, {&out_deep, &out_pointers, &out_long}};
  pthread_t t;
  REQUIRE(pthread_create(
              &t, &attr,
              [](void* p) -> void* {
                auto* w = static_cast<Work*>(p);
                for (int i = 0; i < 3; ++i) {
                  *w->out[i] = demangle(*w->in[i]);
                }
                return nullptr;
              },
              &work) == 0);
  pthread_join(t, nullptr);
  pthread_attr_destroy(&attr);
  CHECK(out_deep == deep);
  CHECK(out_pointers == pointers);
  CHECK(out_long == longest);
  // Real names well inside the bounds still demangle.
  CHECK(demangle("_ZN5aiter13allgather_vecI14__hip_bfloat16Li8EEEvPvS2_PNS_6SignalEi") ==
        "void aiter::allgather_vec<__hip_bfloat16, 8>(void*, void*, aiter::Signal*, int)");
}

TEST_CASE("demangle_symbol drops the descriptor suffix, is_mangled", "[kernels]") {
  CHECK(rocplay::demangle_symbol("_Z4kernv.kd") == "kern()");
  CHECK(rocplay::demangle_symbol(" kern.kd ") == "kern");
  CHECK(rocplay::is_mangled("_ZN5aiter3fooEv"));
  CHECK_FALSE(rocplay::is_mangled("aiter::foo()"));
  const auto info = classify_kernel("_ZN5aiter27gemm_a8w8_bpreshuffle_cleanEv");
  CHECK(info.linkage_name == "_ZN5aiter27gemm_a8w8_bpreshuffle_cleanEv");
  CHECK(info.name == "aiter::gemm_a8w8_bpreshuffle_clean()");
  CHECK(info.short_name == "gemm_a8w8_bpreshuffle_clean");
  CHECK(classify_kernel("aiter::foo()").linkage_name.empty());
}

TEST_CASE("the source file of the line information beats guesses from the name", "[kernels]") {
  // cuda-gdb prints plain kernel names: by name alone a plain identifier looks like Triton.
  CHECK(classify_kernel("splitk_reduce").family == KernelFamily::Triton);
  const auto cu = classify_kernel("splitk_reduce", "/home/dev/repro/splitk.cu");
  CHECK(cu.family == KernelFamily::HipCpp);
  CHECK(cu.source_hint == "/home/dev/repro/splitk.cu");
  CHECK(classify_kernel("_fwd_kernel", "attn.hip").family == KernelFamily::HipCpp);
  CHECK(classify_kernel("_fwd_kernel", "attn.hip").op.empty()); // the Triton table's op is gone
  const auto py = classify_kernel("_fwd_kernel", "/opt/vllm/attention/prefix_prefill.py");
  CHECK(py.family == KernelFamily::Triton);
  CHECK(py.source_hint == "/opt/vllm/attention/prefix_prefill.py");
  // Families the name settles stay: a collective in a .cu file is still a collective.
  CHECK(classify_kernel("ncclDevKernel_AllReduce_Sum_f32_RING_LL", "all_reduce.cu").family ==
        KernelFamily::Collective);
  CHECK(classify_kernel("splitk_reduce", "").family == KernelFamily::Triton);
}
