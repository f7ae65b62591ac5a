// A healthy minute-long kernel: one launch of a grid-stride reduction that sweeps a 64 MiB
// buffer again and again for SECONDS (default 60) of GPU time, every thread moving through its
// loop body; the host waits in cudaStreamSynchronize, as a training step does. A triage must
// read it as moving (slow, not stuck), never stuck. Usage: healthy_long [status-file] [SECONDS]
#include "common.cuh"

__device__ inline unsigned long long global_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__global__ void long_reduction(const float* in, float* partial, int n, unsigned long long ns) {
  const unsigned long long t0 = global_ns();
  float acc = 0.0f;
  int pass = 0;
  while (global_ns() - t0 < ns) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
      acc += in[i] * 0.5f + static_cast<float>(pass);
    }
    ++pass;
  }
  partial[blockIdx.x * blockDim.x + threadIdx.x] = acc;
}

int main(int argc, char** argv) {
  hw::start_heartbeat(argc, argv);
  const double seconds = argc > 2 ? std::atof(argv[2]) : 60.0;
  int sms = 0;
  HW_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  const int n = 1 << 24;
  float* in = nullptr;
  float* partial = nullptr;
  HW_CHECK(cudaMalloc(&in, n * sizeof(float)));
  HW_CHECK(cudaMemset(in, 0, n * sizeof(float)));
  const int blocks = sms * 2;
  HW_CHECK(cudaMalloc(&partial, blocks * 256 * sizeof(float)));
  cudaStream_t s = nullptr;
  HW_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  const auto ns = static_cast<unsigned long long>(seconds * 1e9);
  long_reduction<<<blocks, 256, 0, s>>>(in, partial, n, ns);
  HW_CHECK(cudaGetLastError());
  hw::ready("long_reduction running for about a minute");
  HW_CHECK(cudaStreamSynchronize(s));
  std::printf("done\n");
  return 0;
}
