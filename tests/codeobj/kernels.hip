// Small HIP kernels whose code objects rocplay's tests read (see rebuild.sh). Each one stands
// for a shape a stuck or faulting kernel has in practice.
#include <hip/hip_runtime.h>

#include <cassert>

// A device assert: lowers to `s_trap 2` after the compare.
extern "C" __global__ void assert_kernel(const int* in, int* out) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  assert(in[i] >= 0);
  out[i] = in[i] * 2;
}

// An explicit trap, the other shape of a device-side abort: `s_trap 2` in the kernel's own code.
extern "C" __global__ void trap_kernel(const int* in, int* out) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (in[i] < 0) {
    __builtin_trap();
  }
  out[i] = in[i] + 1;
}

// A spin on an atomic flag, the shape of a cross-rank barrier that never opens: a backward
// branch to the load, with `s_sleep` in the loop.
extern "C" __global__ void spin_kernel(int* flag, int* out) {
  while (__hip_atomic_load(flag, __ATOMIC_ACQUIRE, __HIP_MEMORY_SCOPE_SYSTEM) == 0) {
    __builtin_amdgcn_s_sleep(2);
  }
  out[threadIdx.x] = 1;
}

// 16 KiB of LDS (group segment).
extern "C" __global__ void lds_kernel(float* out) {
  __shared__ float tile[4096];
  for (unsigned k = threadIdx.x; k < 4096; k += blockDim.x) {
    tile[k] = static_cast<float>(k);
  }
  __syncthreads();
  out[blockIdx.x * blockDim.x + threadIdx.x] = tile[(threadIdx.x * 17) % 4096];
}

// Register pressure under a small VGPR budget: many values live across a loop, so the
// compiler spills to scratch (private segment, vgpr_spill_count > 0).
extern "C" __global__ void __launch_bounds__(1024)
    __attribute__((amdgpu_num_vgpr(24))) spill_kernel(const float* in, float* out, int n) {
  float acc[48];
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
#pragma unroll
  for (int k = 0; k < 48; ++k) {
    acc[k] = in[i + k * 1024];
  }
  for (int r = 0; r < n; ++r) {
#pragma unroll
    for (int k = 0; k < 48; ++k) {
      acc[k] = acc[k] * acc[(k + 7) % 48] + acc[(k + 13) % 48];
    }
  }
  float sum = 0;
#pragma unroll
  for (int k = 0; k < 48; ++k) {
    sum += acc[k];
  }
  out[i] = sum;
}
