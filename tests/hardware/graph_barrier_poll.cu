// Issue 41, wait-for graph: lane 0 of each block polls a flag nobody writes while the other 255
// threads of the block wait at the __syncthreads() after it. The barrier lanes wait for the
// polling lanes; the polling lanes wait for the flag: the root is the flag (graph_barrier_poll.cu
// line of the poll), not the barrier. 64 blocks x 256 threads; the host sits in
// cudaDeviceSynchronize. Build: nvcc -O2 -g -lineinfo -arch=native -std=c++17 -o
// graph_barrier_poll graph_barrier_poll.cu -lpthread
#include "common.cuh"

__global__ void poll_then_barrier(volatile int* flag, float* out) {
  if (threadIdx.x == 0) {
    while (*flag == 0) { // rocplay-test: poll line
    }
  }
  __syncthreads(); // rocplay-test: barrier line
  out[blockIdx.x * blockDim.x + threadIdx.x] = 1.0f;
}

int main(int argc, char** argv) {
  hw::start_heartbeat(argc, argv);
  int* flag = nullptr;
  float* out = nullptr;
  HW_CHECK(cudaMalloc(&flag, sizeof(int)));
  HW_CHECK(cudaMemset(flag, 0, sizeof(int)));
  HW_CHECK(cudaMalloc(&out, 64 * 256 * sizeof(float)));
  poll_then_barrier<<<64, 256>>>(flag, out);
  HW_CHECK(cudaGetLastError());
  hw::ready("poll_then_barrier<<<64,256>>>: lane 0 polls, 255 threads at __syncthreads");
  HW_CHECK(cudaDeviceSynchronize());
  return 0;
}
