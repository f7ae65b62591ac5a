// A kernel whose device assert fails for one element: cuda-gdb stops it with a warp assert when it
// runs under `rocplay launch` (tests/hardware/launch_faults.sh).
#include <cassert>
#include <cstdio>

__global__ void check_values(const int* values, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    assert(values[i] >= 0); // FAULT: element 77 is negative
  }
}

int main() {
  int host[256];
  for (int i = 0; i < 256; ++i) {
    host[i] = i;
  }
  host[77] = -1;
  int* d = nullptr;
  cudaMalloc(&d, sizeof host);
  cudaMemcpy(d, host, sizeof host, cudaMemcpyHostToDevice);
  check_values<<<2, 128>>>(d, 256);
  const cudaError_t e = cudaDeviceSynchronize();
  std::printf("device_assert: %s\n", cudaGetErrorString(e));
  return e == cudaSuccess ? 0 : 1;
}
