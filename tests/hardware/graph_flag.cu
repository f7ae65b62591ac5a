// One GPU: a kernel replayed from a CUDA graph polls a device flag nobody ever sets. The graph
// is captured once (flag_wait -> finish_step) and launched; the host thread `engine` waits in
// cudaStreamSynchronize. A triage should anchor on flag_wait's poll line.
#include "common.cuh"

__global__ void flag_wait(const volatile int* flag, float* out) {
  while (*flag == 0) {
  }
  out[blockIdx.x * blockDim.x + threadIdx.x] += 1.0f;
}

__global__ void finish_step(float* out) {
  out[blockIdx.x * blockDim.x + threadIdx.x] *= 2.0f;
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
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  HW_CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  flag_wait<<<4, 128, 0, s>>>(flag, out);
  finish_step<<<4, 128, 0, s>>>(out);
  HW_CHECK(cudaStreamEndCapture(s, &graph));
  HW_CHECK(cudaGraphInstantiate(&exec, graph, 0));
  std::thread engine([&] {
    pthread_setname_np(pthread_self(), "engine");
    HW_CHECK(cudaGraphLaunch(exec, s));
    hw::ready("engine thread in cudaStreamSynchronize behind graph-replayed flag_wait");
    HW_CHECK(cudaStreamSynchronize(s));
  });
  engine.join();
  return 0;
}
