// Scenario 5: a host thread blocked in cudaStreamSynchronize behind a stuck kernel. The kernel
// waits for a flag a producer would set; the producer was never launched. The engine thread (the
// one a serving stack would name) blocks in cudaStreamSynchronize forever.
#include "common.cuh"

__global__ void decode_step_wait_kv(const volatile int* ready_flag, float* out) {
  while (*ready_flag == 0) {
  }
  out[blockIdx.x * blockDim.x + threadIdx.x] = 1.0f;
}

int main(int argc, char** argv) {
  hw::start_heartbeat(argc, argv);
  int* flag = nullptr;
  float* out = nullptr;
  HW_CHECK(cudaMalloc(&flag, sizeof(int)));
  HW_CHECK(cudaMemset(flag, 0, sizeof(int)));
  HW_CHECK(cudaMalloc(&out, 1 << 20));
  cudaStream_t s = nullptr;
  HW_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  std::thread engine([&] {
    pthread_setname_np(pthread_self(), "engine");
    decode_step_wait_kv<<<2, 128, 0, s>>>(flag, out);
    HW_CHECK(cudaGetLastError());
    hw::ready("engine thread in cudaStreamSynchronize behind decode_step_wait_kv");
    HW_CHECK(cudaStreamSynchronize(s));
  });
  engine.join();
  return 0;
}
