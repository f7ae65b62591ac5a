// Scenario 1: sync-lane barrier spin. A custom all-gather whose first `ngpus` threads of every
// block wait in start_sync for a peer rank's flag that never arrives; the rest of the block waits
// at the __syncthreads() that follows. The host thread sits in cudaDeviceSynchronize.
#include "common.cuh"

__device__ void start_sync(volatile int* flags, int rank, int ngpus) {
  if (threadIdx.x < ngpus) {
    // A peer's flag that never arrives: rank `threadIdx.x` never launched its kernel.
    while (flags[threadIdx.x] < 1 + rank) {
    }
  }
  __syncthreads();
}

__device__ void end_sync(volatile int* flags, int rank, int ngpus) {
  __syncthreads();
  if (threadIdx.x < ngpus) {
    flags[64 + threadIdx.x] = rank + 1;
  }
}

__global__ void allgather_vec(volatile int* flags, int ngpus, const float* in, float* out) {
  start_sync(flags, 0, ngpus);
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  out[i] = in[i];
  end_sync(flags, 0, ngpus);
}

int main(int argc, char** argv) {
  hw::start_heartbeat(argc, argv);
  int* flags = nullptr;
  float* in = nullptr;
  float* out = nullptr;
  HW_CHECK(cudaMalloc(&flags, 128 * sizeof(int)));
  HW_CHECK(cudaMemset(flags, 0, 128 * sizeof(int)));
  HW_CHECK(cudaMalloc(&in, 1 << 20));
  HW_CHECK(cudaMalloc(&out, 1 << 20));
  cudaStream_t s = nullptr;
  HW_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  allgather_vec<<<4, 256, 0, s>>>(flags, 8, in, out);
  HW_CHECK(cudaGetLastError());
  hw::ready("allgather_vec<<<4,256>>> spinning in start_sync");
  HW_CHECK(cudaDeviceSynchronize());
  return 0;
}
