// Kernel names: demangling and classification (which library emitted it, what op it is, where its
// source lives). Used by heuristics, reports and the fault path.
//
// This is the one place names are demangled (src/kernels/); the snapshot builder applies it to
// every name that enters the model. Classification is table-driven (src/kernels/kernel_names.cpp)
// and works on the names that debuggers and rocm-debug-agent print: mangled (`_Z...`), demangled
// (`void at::native::...`), kernel-descriptor symbols (`....kd`, ` [clone .kd]`) and plain Triton
// JIT names.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace rocplay {

// `_Z12saxpy_kernelfPKfPfj` -> `saxpy_kernel(float, float const*, float*, unsigned int)`.
// Returns the input unchanged when it is not a mangled name (or too long to demangle safely).
// Bounded: names over 16 KiB are not demangled, and the nesting depth is checked before
// libstdc++'s recursive demangler sees the name (kMaxDemangleNesting).
std::string demangle(std::string_view name);
inline constexpr std::size_t kMaxDemangleBytes = 16 * 1024;
inline constexpr std::size_t kMaxDemangleNesting = 256;

// A kernel symbol as debuggers print it: the descriptor suffix dropped (`_Z4kernv.kd`, `kern.kd`)
// and the rest demangled: `kern()`, `kern`.
std::string demangle_symbol(std::string_view name);

// True for an Itanium linkage name (`_Z...`, also with a `.kd` suffix).
bool is_mangled(std::string_view name);

// The function's own name from a demangled one: `void aiter::allgather_vec<bf16, 8>(void*, ...)`
// -> `allgather_vec`: no return type, namespaces, template arguments or parameters
// (`(anonymous namespace)::` is a namespace). Does not demangle; see kernel_short_name.
std::string short_function_name(std::string_view name);

// The function's own name: `void at::native::vectorized_elementwise_kernel<4, F>(int, F)` ->
// `vectorized_elementwise_kernel`; `_fwd_kernel.kd` -> `_fwd_kernel`. Demangles first.
std::string kernel_short_name(std::string_view name);

enum class KernelFamily : std::uint8_t {
  Unknown,
  Triton,     // Triton JIT (`_fwd_kernel`, `triton_` prefixes, `.kd` of JIT modules)
  Tensile,    // `Cijk_...` rocBLAS/hipBLASLt GEMMs
  CkTile,     // Composable Kernel (`ck::`, `ck_tile::`)
  Aten,       // `at::native::...`
  Collective, // RCCL/NCCL `ncclDevKernel_...`, custom all-reduce, `allgather_vec`
  Aiter,      // `aiter::...`
  HipCpp,     // any other C++ kernel
};

enum class KernelCategory : std::uint8_t {
  Unknown,
  Attention,
  Gemm,
  MoeGemm,
  Layernorm,
  Softmax,
  Elementwise,
  Reduce,
  Router,
  KvCache,
  Collective,
  Copy,
};

// Stable lower-case ids (`triton`, `tensile`, `ck_tile`, `aten`, `collective`, `aiter`,
// `hip_cpp`, `unknown`; `moe_gemm`, `kv_cache`, ...): these appear in JSON and SARIF.
std::string_view to_string(KernelFamily family);
std::string_view to_string(KernelCategory category);

struct KernelInfo {
  std::string name;         // demangled
  std::string linkage_name; // the mangled name when the input was one, else empty
  std::string short_name;   // without namespaces, parameters and template arguments
  KernelFamily family = KernelFamily::Unknown;
  KernelCategory category = KernelCategory::Unknown;
  std::string op;         // the user-level op, e.g. `Tensor.index_copy_` (ATen), when known
  std::string dtype_hint; // e.g. `4-byte dtype` from `OpaqueType<4>`
  std::string
      source_hint;       // where its source lives, e.g. `aten/src/ATen/native/cuda/IndexKernel.cu`
  std::string test_hint; // how to exercise it alone, when there is a known way
};

KernelInfo classify_kernel(std::string_view name);
// The same, preferring what the line information says over guesses from the name: a kernel whose
// source file (`file` of its waves or `info line`) is `.cu`/`.cuh`/`.hip`/C++ is not a Triton
// function, and one in a `.py` file is one.
KernelInfo classify_kernel(std::string_view name, std::string_view source_file);

} // namespace rocplay
