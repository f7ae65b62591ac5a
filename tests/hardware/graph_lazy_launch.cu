// Issue 41, wait-for graph: a launch that never returns. Under lazy module loading (the CUDA
// default, forced here) the first launch of a kernel loads it, and the load waits for the device,
// which is busy with a kernel that polls a flag only the second kernel would set. The host thread
// sits inside cudaLaunchKernel (frame 0 moves inside the driver, CPU busy) in every sample.
// Mode `streamwait` (argv[1]) blocks the device with cuStreamWaitValue32 on a flag nobody writes
// ahead of a spin kernel instead. Build: nvcc -O2 -g -lineinfo -arch=native -std=c++17 -o
// graph_lazy_launch graph_lazy_launch.cu -lcuda -lpthread
#include "common.cuh"

#include <cuda.h>

#include <cstring>

__global__ void wait_for_setter(volatile int* flag) {
  while (*flag == 0) { // rocplay-test: waiter poll line
  }
}

__global__ void setter(volatile int* flag) { *flag = 1; }

void launch_setter(int* flag, cudaStream_t s) {
  setter<<<1, 1, 0, s>>>(flag); // rocplay-test: setter launch line
}

int main(int argc, char** argv) {
  setenv("CUDA_MODULE_LOADING", "LAZY", 1);
  bool stream_wait = argc > 1 && std::strcmp(argv[1], "streamwait") == 0;
  int* flag = nullptr;
  HW_CHECK(cudaMalloc(&flag, sizeof(int)));
  HW_CHECK(cudaMemset(flag, 0, sizeof(int)));
  cudaStream_t busy = nullptr;
  cudaStream_t other = nullptr;
  HW_CHECK(cudaStreamCreateWithFlags(&busy, cudaStreamNonBlocking));
  HW_CHECK(cudaStreamCreateWithFlags(&other, cudaStreamNonBlocking));
  if (stream_wait) {
    int* never = nullptr;
    HW_CHECK(cudaMalloc(&never, sizeof(int)));
    HW_CHECK(cudaMemset(never, 0, sizeof(int)));
    if (cuStreamWaitValue32(busy, reinterpret_cast<CUdeviceptr>(never), 1,
                            CU_STREAM_WAIT_VALUE_GEQ) != CUDA_SUCCESS) {
      std::fprintf(stderr, "cuStreamWaitValue32 failed\n");
      return 2;
    }
  }
  // Behind the stream wait the first launch of wait_for_setter is the one that never returns (seen
  // on an H200, CUDA 13.0), so the ready line comes before it.
  if (stream_wait) {
    hw::ready("stream wait queued; launching wait_for_setter (lazy load)");
  }
  wait_for_setter<<<1, 1, 0, busy>>>(flag); // rocplay-test: waiter launch line
  HW_CHECK(cudaGetLastError());
  if (!stream_wait) {
    hw::ready("wait_for_setter spinning; launching setter (lazy load)");
  }
  launch_setter(flag, other); // never returns under lazy loading
  HW_CHECK(cudaGetLastError());
  std::printf("setter launched (the launch returned: no lazy-load hang here)\n");
  std::fflush(stdout);
  HW_CHECK(cudaDeviceSynchronize());
  return 0;
}
