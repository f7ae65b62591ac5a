// Shared by the hardware scenarios: error checks, a "ready" line for the runner, and a heartbeat
// thread that rewrites a status file so the runner can see the process still runs after detach.
#pragma once

#include <cuda_runtime.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <pthread.h>
#include <string>
#include <thread>
#include <unistd.h>

#define HW_CHECK(call)                                                                             \
  do {                                                                                             \
    cudaError_t err_ = (call);                                                                     \
    if (err_ != cudaSuccess) {                                                                     \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call,                           \
                   cudaGetErrorString(err_));                                                      \
      std::exit(2);                                                                                \
    }                                                                                              \
  } while (0)

namespace hw {

// `progress` is whatever the scenario counts (GPU iterations for the healthy one).
inline std::atomic<unsigned long long> progress{0};
inline const volatile unsigned long long* gpu_progress = nullptr;

// Writes "<beats> <progress>\n" every 50 ms to argv[1] (atomically, via rename).
inline void start_heartbeat(int argc, char** argv) {
  if (argc < 2) {
    return;
  }
  std::string path = argv[1];
  std::thread([path] {
    pthread_setname_np(pthread_self(), "heartbeat");
    unsigned long long beats = 0;
    std::string tmp = path + ".tmp";
    for (;;) {
      ++beats;
      unsigned long long p = gpu_progress != nullptr ? *gpu_progress : progress.load();
      if (std::FILE* f = std::fopen(tmp.c_str(), "w")) {
        std::fprintf(f, "%llu %llu\n", beats, p);
        std::fclose(f);
        std::rename(tmp.c_str(), path.c_str());
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }).detach();
}

inline void ready(const char* what) {
  std::printf("ready pid=%d %s\n", static_cast<int>(getpid()), what);
  std::fflush(stdout);
}

// Spins on the GPU clock so a block stays resident long enough for another stream's kernel.
__device__ inline void hold_cycles(long long cycles) {
  long long t0 = clock64();
  while (clock64() - t0 < cycles) {
  }
}

} // namespace hw
