// Scenario 2: two split-K GEMM `_clean` reductions on two non-blocking streams share one workspace
// counter. Each block adds 1 and waits for the counter to equal its own grid size. The first hold
// keeps both kernels resident before anyone counts, the second lets every block's add land
// before anyone polls, so the counter sits at 4 + 3 = 7 and neither kernel ever sees its own
// total: a deadlock with both in flight (without the holds one kernel may slip through, as in
// fixtures/cuda-gdb/splitk-clean-h200.mi). The fix is a workspace keyed by (device, stream);
// serialising the streams only hides it.
#include "common.cuh"

__device__ void splitk_reduce(int* counter, int expected) {
  __syncthreads();
  if (threadIdx.x == 0) {
    hw::hold_cycles(400000000LL); // ~0.2 s: both kernels resident before anyone counts
    __threadfence();
    atomicAdd(counter, 1);
    hw::hold_cycles(200000000LL); // ~0.1 s: every block of both kernels has counted
    while (atomicAdd(counter, 0) != expected) {
    }
  }
  __syncthreads();
}

__global__ void gemm_a8w8_splitk_clean(int* workspace, float* c) {
  c[blockIdx.x * blockDim.x + threadIdx.x] += 1.0f;
  splitk_reduce(workspace, static_cast<int>(gridDim.x));
}

__global__ void gemm_bf16_splitk_clean(int* workspace, float* c) {
  c[blockIdx.x * blockDim.x + threadIdx.x] += 2.0f;
  splitk_reduce(workspace, static_cast<int>(gridDim.x));
}

int main(int argc, char** argv) {
  hw::start_heartbeat(argc, argv);
  int* ws = nullptr;
  float* c = nullptr;
  HW_CHECK(cudaMalloc(&ws, sizeof(int)));
  HW_CHECK(cudaMemset(ws, 0, sizeof(int)));
  HW_CHECK(cudaMalloc(&c, 1 << 22));
  HW_CHECK(cudaMemset(c, 0, 1 << 22));
  HW_CHECK(cudaDeviceSynchronize());
  cudaStream_t s1 = nullptr;
  cudaStream_t s2 = nullptr;
  HW_CHECK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
  HW_CHECK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
  gemm_a8w8_splitk_clean<<<4, 128, 0, s1>>>(ws, c);
  HW_CHECK(cudaGetLastError());
  gemm_bf16_splitk_clean<<<3, 128, 0, s2>>>(ws, c + 4096);
  HW_CHECK(cudaGetLastError());
  hw::ready("gemm_a8w8_splitk_clean on s1 and gemm_bf16_splitk_clean on s2 share one counter");
  HW_CHECK(cudaDeviceSynchronize());
  return 0;
}
