// Two-process custom all-reduce over CUDA IPC, rank 1 one call short. Each rank (RANK=0/1, one
// GPU each) shares a flag array with its peer through cudaIpcGetMemHandle; every call of
// `custom_allreduce` has lanes 0..ngpus-1 of each block write this rank's epoch into slot RANK of
// every peer's flags, then poll their own flags until every slot holds the epoch (the sync
// lanes), then the whole block meets at __syncthreads and sums. Rank 1 stops one call early, so
// in rank 0's last call the lane of slot 1 polls forever while the block's other threads wait at
// the __syncthreads; rank 0's host waits in cudaStreamSynchronize, rank 1's sleeps in
// wait_for_next_batch. Usage: RANK=R ipc_allreduce DIR CALLS [status-file]
#include "common.cuh"

#include <cuda_runtime.h>

#include <cstring>
#include <fstream>
#include <sstream>
#include <time.h>

constexpr int kMaxGpus = 8;

__global__ void custom_allreduce(volatile unsigned* own_flags, unsigned* const* peer_flags,
                                 int rank, int ngpus, unsigned epoch, const float* in, float* out,
                                 int n) {
  if (threadIdx.x < ngpus) {
    unsigned* peer = peer_flags[threadIdx.x];
    atomicMax(peer + blockIdx.x * kMaxGpus + rank, epoch);
    __threadfence_system();
    while (own_flags[blockIdx.x * kMaxGpus + threadIdx.x] < epoch) {
    }
  }
  __syncthreads();
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    out[i] = in[i] * static_cast<float>(ngpus);
  }
}

// The function a serving loop sleeps in between batches: the frame a triage should name.
__attribute__((noinline)) void wait_for_next_batch() {
  for (;;) {
    timespec ts{0, 100 * 1000 * 1000};
    nanosleep(&ts, nullptr);
  }
}

int main(int argc, char** argv) {
  if (argc < 3 || std::getenv("RANK") == nullptr) {
    std::fprintf(stderr, "usage: RANK=R ipc_allreduce DIR CALLS [status-file]\n");
    return 2;
  }
  const int rank = std::atoi(std::getenv("RANK"));
  const int ngpus = 2;
  const std::string dir = argv[1];
  const int calls = std::atoi(argv[2]) - (rank == 1 ? 1 : 0); // rank 1 runs one call fewer
  hw::start_heartbeat(argc - 2, argv + 2);
  HW_CHECK(cudaSetDevice(rank));
  const int blocks = 8;
  unsigned* flags = nullptr;
  HW_CHECK(cudaMalloc(&flags, blocks * kMaxGpus * sizeof(unsigned)));
  HW_CHECK(cudaMemset(flags, 0, blocks * kMaxGpus * sizeof(unsigned)));
  cudaIpcMemHandle_t mine{};
  HW_CHECK(cudaIpcGetMemHandle(&mine, flags));
  {
    std::ofstream f(dir + "/handle" + std::to_string(rank) + ".tmp", std::ios::binary);
    f.write(reinterpret_cast<const char*>(&mine), sizeof mine);
  }
  std::rename((dir + "/handle" + std::to_string(rank) + ".tmp").c_str(),
              (dir + "/handle" + std::to_string(rank)).c_str());
  unsigned* peers_host[kMaxGpus] = {};
  for (int r = 0; r < ngpus; ++r) {
    if (r == rank) {
      peers_host[r] = flags;
      continue;
    }
    cudaIpcMemHandle_t theirs{};
    const std::string path = dir + "/handle" + std::to_string(r);
    for (int i = 0; i < 600; ++i) {
      std::ifstream f(path, std::ios::binary);
      if (f.read(reinterpret_cast<char*>(&theirs), sizeof theirs)) {
        break;
      }
      usleep(100 * 1000);
    }
    HW_CHECK(cudaIpcOpenMemHandle(reinterpret_cast<void**>(&peers_host[r]), theirs,
                                  cudaIpcMemLazyEnablePeerAccess));
  }
  unsigned** peers = nullptr;
  HW_CHECK(cudaMalloc(&peers, sizeof peers_host));
  HW_CHECK(cudaMemcpy(peers, peers_host, sizeof peers_host, cudaMemcpyHostToDevice));
  const int n = 1 << 20;
  float* in = nullptr;
  float* out = nullptr;
  HW_CHECK(cudaMalloc(&in, n * sizeof(float)));
  HW_CHECK(cudaMalloc(&out, n * sizeof(float)));
  HW_CHECK(cudaMemset(in, 0, n * sizeof(float)));
  cudaStream_t s = nullptr;
  HW_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  for (int call = 1; call <= calls; ++call) {
    custom_allreduce<<<blocks, 256, 0, s>>>(flags, peers, rank, ngpus, call, in, out, n);
    HW_CHECK(cudaGetLastError());
    if (call == calls) {
      std::printf("ready pid=%d rank=%d in custom_allreduce call %d of %s\n",
                  static_cast<int>(getpid()), rank, call, argv[2]);
      std::fflush(stdout);
    }
    HW_CHECK(cudaStreamSynchronize(s));
    hw::progress = call;
  }
  // Rank 1 gets here having run one call fewer; rank 0 never does.
  wait_for_next_batch();
}
