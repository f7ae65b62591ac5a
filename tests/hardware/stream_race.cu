// Two streams and no event between them (launch --verify, issue 48): `produce` on stream 1 slowly
// fills an index table, `consume` on stream 2 reads it at once and follows the indexes. As given,
// `consume` reads the table's 0x7F bytes (indexes past 2^30: far outside `data`) and faults: the
// victim. With
// CUDA_LAUNCH_BLOCKING=1 each launch returns when its kernel is done, so the table is filled
// first and nothing faults.
//   stream_race          the race
//   stream_race static   `consume` alone with a wrong bound: faults the same way every run
#include <cstdio>
#include <cstring>

__global__ void produce(int* table, int n, long long spin) {
  const long long start = clock64();
  while (clock64() - start < spin) {
  }
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    table[i] = i % 64;
  }
}

__global__ void consume(const int* table, const float* data, float* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    out[i] = data[table[i]]; // FAULT: victim (a table entry not written yet)
  }
}

int main(int argc, char** argv) {
  const bool fixed = argc > 1 && std::strcmp(argv[1], "static") == 0;
  const int n = 4096;
  int* table = nullptr;
  float* data = nullptr;
  float* out = nullptr;
  cudaMalloc(&table, n * sizeof(int));
  cudaMalloc(&data, 64 * sizeof(float));
  cudaMalloc(&out, n * sizeof(float));
  // 0x7F7F7F7F everywhere until produce runs (0xFF would be -1: inside the allocation, no fault).
  cudaMemset(table, 0x7F, n * sizeof(int));
  cudaMemset(data, 0, 64 * sizeof(float));
  cudaDeviceSynchronize();
  cudaStream_t s1;
  cudaStream_t s2;
  cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking);
  cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking);
  if (!fixed) {
    produce<<<n / 256, 256, 0, s1>>>(table, n, 200LL * 1000 * 1000); // ~0.1 s at 2 GHz
  }
  consume<<<n / 256, 256, 0, s2>>>(table, data, out, n);
  const cudaError_t e = cudaDeviceSynchronize();
  std::printf("stream_race%s: %s\n", fixed ? " static" : "", cudaGetErrorString(e));
  return e == cudaSuccess ? 0 : 1;
}
