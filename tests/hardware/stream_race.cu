// A buffer reused before the kernel that reads it has run (launch --verify, issue 48): the host
// fills a pinned, mapped index table, launches `consume` (which waits ~50 ms, then follows the
// indexes) and at once reuses the table for the next batch, as a caching allocator reuses a block
// freed without waiting for its last reader. As given, `consume` reads the next batch's bytes
// (0x7F7F7F7F: far outside `data`) and faults: the victim of the host's write. With
// CUDA_LAUNCH_BLOCKING=1 the launch returns when `consume` is done, before the reuse: no fault.
// `busy` on a second stream is other work in flight; it plays no part in the fault. The race is
// the host's, so it holds whether or not the debugger runs the two kernels concurrently (under
// cuda-gdb 13.0 a race between the two kernels alone never faulted).
//   stream_race          the race
//   stream_race static   the table is garbage from the start: faults the same way every run
//   stream_race kernels  the race between two kernels: `produce` on one stream spins for SPIN_MS
//                        (default 2000) and then writes the table, `consume` on another stream
//                        reads it at once, with no event between them
#include <cstdio>
#include <cstdlib>
#include <cstring>

__global__ void busy(long long spin) {
  const long long start = clock64();
  while (clock64() - start < spin) {
  }
}

__global__ void consume(const volatile int* table, const float* data, float* out, int n,
                        long long spin) {
  const long long start = clock64();
  while (clock64() - start < spin) {
  }
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    out[i] = data[table[i]]; // FAULT: victim (the table was reused under it)
  }
}

__global__ void produce(int* table, int n, long long spin) {
  const long long start = clock64();
  while (clock64() - start < spin) {
  }
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    table[i] = i % 64;
  }
}

// The race between two kernels: `consume` faults when it runs while `produce` still spins. Alone,
// as given it faults; with CUDA_LAUNCH_BLOCKING=1 `produce` has ended before `consume` starts.
int race_of_kernels(const float* data, float* out, int n) {
  const char* spin_ms = std::getenv("SPIN_MS");
  const long long spin = (spin_ms ? std::atoll(spin_ms) : 2000) * 2000LL * 1000; // ~2 GHz
  int* table = nullptr;
  cudaMalloc(&table, n * sizeof(int));
  cudaMemset(table, 0x7F, n * sizeof(int)); // far outside `data` until produce has run
  cudaDeviceSynchronize();
  cudaStream_t s1;
  cudaStream_t s2;
  cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking);
  cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking);
  // Both kernels once first: with lazy module loading (CUDA 12's default) a kernel's first launch
  // loads it, and that waits for the kernels in flight, which serialises the race away.
  produce<<<1, 1, 0, s1>>>(table, 0, 0);
  consume<<<1, 1, 0, s2>>>(table, data, out, 0, 0);
  cudaDeviceSynchronize();
  produce<<<n / 256, 256, 0, s1>>>(table, n, spin);
  consume<<<n / 256, 256, 0, s2>>>(table, data, out, n, 0); // RACE: no event after produce
  const cudaError_t e = cudaDeviceSynchronize();
  std::printf("stream_race kernels: %s\n", cudaGetErrorString(e));
  return e == cudaSuccess ? 0 : 1;
}

int main(int argc, char** argv) {
  const bool garbage_from_start = argc > 1 && std::strcmp(argv[1], "static") == 0;
  const bool kernels = argc > 1 && std::strcmp(argv[1], "kernels") == 0;
  const int n = 4096;
  int* table_host = nullptr;
  int* table = nullptr;
  float* data = nullptr;
  float* out = nullptr;
  cudaHostAlloc(&table_host, n * sizeof(int), cudaHostAllocMapped);
  cudaHostGetDevicePointer(&table, table_host, 0);
  cudaMalloc(&data, 64 * sizeof(float));
  cudaMalloc(&out, n * sizeof(float));
  cudaMemset(data, 0, 64 * sizeof(float));
  if (kernels) {
    return race_of_kernels(data, out, n);
  }
  for (int i = 0; i < n; ++i) {
    table_host[i] = i % 64;
  }
  if (garbage_from_start) {
    std::memset(table_host, 0x7F, n * sizeof(int));
  }
  cudaDeviceSynchronize();
  cudaStream_t s1;
  cudaStream_t s2;
  cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking);
  cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking);
  if (!garbage_from_start) {
    busy<<<1, 1, 0, s2>>>(2000LL * 1000 * 1000); // ~1 s at 2 GHz
  }
  consume<<<n / 256, 256, 0, s1>>>(table, data, out, n, 100LL * 1000 * 1000); // ~50 ms
  if (!garbage_from_start) {
    std::memset(table_host, 0x7F, n * sizeof(int)); // RACE: the next batch, too early
  }
  const cudaError_t e = cudaDeviceSynchronize();
  std::printf("stream_race%s: %s\n", garbage_from_start ? " static" : "", cudaGetErrorString(e));
  return e == cudaSuccess ? 0 : 1;
}
