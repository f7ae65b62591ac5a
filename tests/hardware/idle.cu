// A CUDA process with no kernel in flight (initialised, then sleeping on the host): what a
// triage sees when it attached to a dispatcher instead of a GPU worker.
#include "common.cuh"

int main(int argc, char** argv) {
  hw::start_heartbeat(argc, argv);
  float* buf = nullptr;
  HW_CHECK(cudaMalloc(&buf, 1 << 20));
  HW_CHECK(cudaMemset(buf, 0, 1 << 20));
  HW_CHECK(cudaDeviceSynchronize());
  hw::ready("idle: CUDA initialised, no kernel in flight");
  for (;;) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}
