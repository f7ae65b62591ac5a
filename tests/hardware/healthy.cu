// Scenario 4: a healthy, progressing kernel. A persistent kernel iterates over a buffer and
// publishes its iteration count to pinned host memory; the host polls that count with a sleep
// (no CUDA call blocks). A triage should find nothing, and the count must keep rising after
// the debugger detaches.
#include "common.cuh"

__global__ void stream_triad_persistent(float* a, const float* b, const float* c, int n,
                                        volatile unsigned long long* progress,
                                        const volatile int* stop) {
  for (unsigned long long it = 0; *stop == 0; ++it) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
      a[i] = b[i] + 0.5f * c[i];
    }
    if (blockIdx.x == 0 && threadIdx.x == 0) {
      *progress = it + 1;
      __threadfence_system();
    }
  }
}

int main(int argc, char** argv) {
  unsigned long long* progress = nullptr;
  int* stop = nullptr;
  HW_CHECK(cudaHostAlloc(&progress, sizeof(*progress), cudaHostAllocMapped));
  HW_CHECK(cudaHostAlloc(&stop, sizeof(*stop), cudaHostAllocMapped));
  *progress = 0;
  *stop = 0;
  hw::gpu_progress = progress;
  hw::start_heartbeat(argc, argv);
  const int n = 1 << 22;
  float* a = nullptr;
  float* b = nullptr;
  float* c = nullptr;
  HW_CHECK(cudaMalloc(&a, n * sizeof(float)));
  HW_CHECK(cudaMalloc(&b, n * sizeof(float)));
  HW_CHECK(cudaMalloc(&c, n * sizeof(float)));
  HW_CHECK(cudaMemset(b, 0, n * sizeof(float)));
  HW_CHECK(cudaMemset(c, 0, n * sizeof(float)));
  unsigned long long* d_progress = nullptr;
  int* d_stop = nullptr;
  HW_CHECK(cudaHostGetDevicePointer(&d_progress, progress, 0));
  HW_CHECK(cudaHostGetDevicePointer(&d_stop, stop, 0));
  cudaStream_t s = nullptr;
  HW_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  stream_triad_persistent<<<8, 256, 0, s>>>(a, b, c, n, d_progress, d_stop);
  HW_CHECK(cudaGetLastError());
  hw::ready("stream_triad_persistent making progress");
  // Polls instead of blocking in a CUDA call: what a serving loop that stays responsive does.
  for (;;) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}
