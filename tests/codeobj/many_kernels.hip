// 1,000 small kernels in one code object, for the kernel-info benchmark (bench/bench_codeobj.cpp).
#include <hip/hip_runtime.h>

#include <utility>

template <int N> __global__ void many_kernel(float* out, float scale) {
  __shared__ float tile[(N % 8 + 1) * 64];
  tile[threadIdx.x % ((N % 8 + 1) * 64)] = scale * N;
  __syncthreads();
  out[blockIdx.x * blockDim.x + threadIdx.x] = tile[(threadIdx.x + N) % ((N % 8 + 1) * 64)];
}

// Taking each kernel's address instantiates it in the device compilation too.
template <int... Ns> const void* const* kernel_table(std::integer_sequence<int, Ns...>) {
  static const void* const table[] = {reinterpret_cast<const void*>(&many_kernel<Ns>)...};
  return table;
}
template const void* const* kernel_table(std::make_integer_sequence<int, 1000>);
