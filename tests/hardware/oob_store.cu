// A kernel that stores far past its allocation: cuda-gdb stops it with CUDA_EXCEPTION_14 (Warp
// Illegal Address) when it runs under `rocplay launch` (tests/hardware/launch_faults.sh).
#include <cstdio>

__global__ void oob_store(int* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    out[static_cast<long>(i) * 1024 * 1024] = i; // FAULT: 4 MiB apart, past the allocation
  }
}

int main() {
  int* d = nullptr;
  cudaMalloc(&d, 256 * sizeof(int));
  oob_store<<<4, 64>>>(d, 256);
  const cudaError_t e = cudaDeviceSynchronize();
  std::printf("oob_store: %s\n", cudaGetErrorString(e));
  return e == cudaSuccess ? 0 : 1;
}
