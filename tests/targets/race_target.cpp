// A host program whose crash depends on a race, for `rocplay launch --verify` (issue 48): the
// CPU model of a GPU program with asynchronous launches. A "launch" starts a worker thread that
// fills the results a little later; the main thread reads them at once, as a kernel on another
// stream would. CUDA_LAUNCH_BLOCKING=1 (or RACE_TARGET_SERIAL=1) makes the launch blocking: the
// main thread waits for the worker before it reads, as the CUDA runtime then does.
//
//   race_target race    the reader faults on results not yet there (a victim); with blocking
//                       launches nothing faults
//   race_target moved   the worker itself writes through a bad pointer (the culprit): as given
//                       the reader faults first; with blocking launches the worker does
//   race_target static  the reader indexes past its buffer in every run
//
// Each fault sits on a line marked `FAULT:` so a test can find it.
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

namespace {

int* volatile g_results = nullptr;
int* volatile g_bad = nullptr;
std::atomic<bool> g_running{false}; // the "kernel" is in flight

bool blocking_launches() {
  for (const char* name : {"CUDA_LAUNCH_BLOCKING", "RACE_TARGET_SERIAL"}) {
    const char* v = std::getenv(name);
    if (v != nullptr && std::strcmp(v, "1") == 0) {
      return true;
    }
  }
  return false;
}

[[gnu::noinline]] void fill_results(bool through_bad_pointer) {
  g_running = true;
  std::this_thread::sleep_for(std::chrono::milliseconds(300)); // the "kernel" takes a while
  static int storage[64];
  if (through_bad_pointer) {
    g_bad[7] = 1; // FAULT: moved-culprit
  }
  for (int i = 0; i < 64; ++i) {
    storage[i] = i;
  }
  g_results = storage;
}

[[gnu::noinline]] int read_results(int index) {
  return g_results[index]; // FAULT: victim
}

[[gnu::noinline]] int read_past_end(const int* buffer) {
  return buffer[1 << 28]; // FAULT: static
}

std::thread g_worker;

} // namespace

// race_target stub: `race`, its launch shaped as nvcc writes one, so that a traced launch's stack
// looks as it does there: a wrapper named after the kernel (fill_kernel) calls a
// `__device_stub__`, which calls cudaLaunchKernel (here one that starts the worker). Below the
// FAULT lines, which the recordings in fixtures/launch-verify/ name.
extern "C" [[gnu::noinline]] int cudaLaunchKernel(void (*body)(bool), bool arg) {
  g_worker = std::thread(body, arg);
  return 0;
}
[[gnu::noinline]] void __device_stub__Z11fill_kernelb(bool arg) {
  cudaLaunchKernel(fill_results, arg);
}
[[gnu::noinline]] void fill_kernel(bool arg) {
  __device_stub__Z11fill_kernelb(arg);
}

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: race_target race|moved|static|stub\n");
    return 2;
  }
  const std::string mode = argv[1];
  std::printf("race_target %s: %s launches\n", mode.c_str(),
              blocking_launches() ? "blocking" : "asynchronous");
  std::fflush(stdout);
  if (mode == "static") {
    static int buffer[16];
    return read_past_end(buffer) == 42 ? 1 : 0;
  }
  std::thread worker;
  if (mode == "stub") {
    fill_kernel(false); // LAUNCH: stub
    worker = std::move(g_worker);
  } else {
    worker = std::thread(fill_results, mode == "moved");
  }
  if (blocking_launches()) {
    worker.join();
  }
  while (!g_running) { // launched means running: the reader comes once the worker is in it
    std::this_thread::yield();
  }
  const int sum = read_results(3);
  if (worker.joinable()) {
    worker.join();
  }
  std::printf("race_target: read %d\n", sum);
  return 0;
}
