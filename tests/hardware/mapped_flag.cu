// One GPU: a kernel polls a flag in mapped (zero-copy) host memory that the host never sets:
// the host meant to set it after a step that never came. The main thread waits in
// cudaDeviceSynchronize.
#include "common.cuh"

__global__ void poll_host_flag(const volatile int* host_flag, float* out) {
  while (*host_flag == 0) {
  }
  out[blockIdx.x * blockDim.x + threadIdx.x] = 1.0f;
}

int main(int argc, char** argv) {
  hw::start_heartbeat(argc, argv);
  int* flag = nullptr;
  int* d_flag = nullptr;
  float* out = nullptr;
  HW_CHECK(cudaHostAlloc(&flag, sizeof(int), cudaHostAllocMapped));
  *flag = 0;
  HW_CHECK(cudaHostGetDevicePointer(&d_flag, flag, 0));
  HW_CHECK(cudaMalloc(&out, 1 << 20));
  poll_host_flag<<<2, 64>>>(d_flag, out);
  HW_CHECK(cudaGetLastError());
  hw::ready("main thread in cudaDeviceSynchronize behind poll_host_flag");
  HW_CHECK(cudaDeviceSynchronize());
  return 0;
}
