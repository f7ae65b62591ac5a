// Crash-evidence throughput and memory.
//
//   bench_crash [--short] [--mb M] [--runs R] [--files N] [--file-kb K] [--jobs J]
//
// 1. Reader: M MB of logs in memory (level-3 and level-5 API-call blocks, level-1 lines, raw dmesg
//    with amdgpu page-fault blocks and resets, server-log lines with HIP errors and watchdog
//    timeouts, in the proportions of a crashed TP job's evidence), read by crash::TextReader in
//    1 MB pieces on one thread, R times; the median MB/s.
// 2. Batch: N files of about K KiB each (the same mix, one rank's API log per file) written to a
//    temporary directory, then `postmortem::run` over it with J jobs in a child process: MB/s and
//    the child's peak RSS, which must not grow with N (run it with two N to see).
#include "rocplay/crash/crash.hpp"
#include "rocplay/postmortem/postmortem.hpp"

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;
using namespace rocplay;

namespace {

std::string rule(char c) {
  return std::string(80, c) + "\n";
}

std::string tensor(const std::string& indent, const std::string& shape, bool stats, int device) {
  std::string s = indent + "Tensor(\n" + indent + "  shape=" + shape + "\n" + indent +
                  "  stride=(1024, 128, 1)\n" + indent + "  dtype=torch.bfloat16\n" + indent +
                  "  device=cuda:" + std::to_string(device) + "\n" + indent +
                  "  requires_grad=False\n" + indent + "  is_contiguous=True\n";
  if (stats) {
    s += indent + "  min=-4.312500\n" + indent + "  max=3.984375\n" + indent + "  mean=0.001213\n" +
         indent + "  nan_count=0\n" + indent + "  inf_count=0\n";
  }
  return s + indent + ")\n";
}

// One piece of each kind of evidence; `i` varies the numbers.
std::string evidence_chunk(std::size_t i, int device) {
  std::string s;
  const std::string ts =
      "[2026-03-02 14:" + std::to_string(10 + i % 50) + ":" + std::to_string(10 + i % 50) + "] ";
  for (int k = 0; k < 4; ++k) {
    s += rule('=') + ts + "FlashInfer API Call: BatchDecodeWithPagedKVCacheWrapper.run\n" +
         rule('-') + "Positional input arguments:\n  arg[0]:\n" +
         tensor("    ", "(32, 8, 128)", k % 2 == 1, device) + "  arg[1]:\n    [\n      [0]: \n" +
         tensor("          ", "(2048, 16, 8, 128)", false, device) +
         "    ]\nKeyword input arguments:\n  causal=\n    True\n"
         "Default parameters (not explicitly provided):\n  window_left= [DEFAULT]\n    -1\n"
         "Output value:\n" +
         tensor("  ", "(32, 8, 128)", false, device) + rule('=');
  }
  for (int k = 0; k < 8; ++k) {
    s += ts + "SGLang Kernel API Call: rmsnorm\n";
  }
  const std::string dev = "amdgpu 0000:83:00.0: amdgpu: ";
  const std::string at = "[ " + std::to_string(1200 + i % 1000) + ".118204] ";
  s += at + dev + "[gfxhub] page fault (src_id:0 ring:24 vmid:3 pasid:32770)\n" + at + dev +
       " Process python pid 4411 thread python pid 4411\n" + at + dev +
       "  in page starting at address 0x00007fa912340000 from client 10\n" + at + dev +
       "GCVM_L2_PROTECTION_FAULT_STATUS:0x00801A3B\n" + at + dev +
       "     Faulty UTCL2 client ID: TCP (0x8)\n" + at + dev + "     MORE_FAULTS: 0x1\n" + at +
       dev + "     WALKER_ERROR: 0x0\n" + at + dev + "     PERMISSION_FAULTS: 0x3\n" + at + dev +
       "     MAPPING_ERROR: 0x0\n" + at + dev + "     RW: 0x0\n" + at + dev +
       "ring gfx_0.0.0 timeout\n" + at + dev + "GPU reset begin!\n";
  for (int k = 0; k < 20; ++k) {
    s += "INFO 03-02 14:07:00 [scheduler.py:1021] Decode batch. #running-req: 32, #token: "
         "81920, token usage: 0.41, gen throughput (token/s): 2480.31, #queue-req: 0\n";
  }
  s += "RuntimeError: HIP error: an illegal memory access was encountered\n"
       "[rank1]:[E302 14:17:31.123456 ProcessGroupNCCL.cpp:616] [Rank 1] Watchdog caught "
       "collective operation timeout: WorkNCCL(SeqNum=4412, OpType=ALLREDUCE, NumelIn=4194304, "
       "NumelOut=4194304, Timeout(ms)=600000) ran for 600012 milliseconds before timing out.\n"
       "Memory access fault by GPU node-2 (Agent handle: 0x55d1c0a2e910) on address "
       "0x7f1c44a21000. Reason: Page not present or supervisor privilege.\n";
  return s;
}

std::string make_corpus(std::size_t bytes, int device) {
  std::string out;
  out.reserve(bytes + 65536);
  for (std::size_t i = 0; out.size() < bytes; ++i) {
    out += evidence_chunk(i, device);
  }
  return out;
}

double thread_cpu_seconds() {
  timespec ts{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

double peak_rss_mb_children() {
  rusage usage{};
  ::getrusage(RUSAGE_CHILDREN, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024.0;
}

} // namespace

int main(int argc, char** argv) {
  std::size_t mb = 256;
  int runs = 5;
  std::size_t files = 2000;
  std::size_t file_kb = 256;
  unsigned jobs = 2;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&] { return i + 1 < argc ? std::stoul(argv[++i]) : 0ul; };
    if (a == "--short") {
      mb = 8;
      runs = 1;
      files = 20;
      file_kb = 64;
    } else if (a == "--mb") {
      mb = next();
    } else if (a == "--runs") {
      runs = static_cast<int>(next());
    } else if (a == "--files") {
      files = next();
    } else if (a == "--file-kb") {
      file_kb = next();
    } else if (a == "--jobs") {
      jobs = static_cast<unsigned>(next());
    } else {
      std::fprintf(stderr,
                   "usage: %s [--short] [--mb M] [--runs R] [--files N] [--file-kb K] [--jobs J]\n",
                   argv[0]);
      return 64;
    }
  }

  // 1. The reader alone.
  std::string corpus = make_corpus(mb << 20, 0);
  std::vector<double> rates;
  std::vector<double> cpu_rates; // per CPU-second of this thread: the builder is shared
  std::uint64_t calls = 0;
  std::size_t events = 0;
  for (int r = 0; r < runs; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    const double c0 = thread_cpu_seconds();
    crash::TextReader reader;
    for (std::size_t pos = 0; pos < corpus.size(); pos += 1u << 20) {
      reader.feed(std::string_view(corpus).substr(pos, 1u << 20));
    }
    const crash::Evidence ev = reader.finish();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    rates.push_back(static_cast<double>(corpus.size()) / (1 << 20) / s);
    cpu_rates.push_back(static_cast<double>(corpus.size()) / (1 << 20) /
                        (thread_cpu_seconds() - c0));
    calls = ev.api.calls;
    events = ev.events.size() + ev.counters.events_dropped;
  }
  std::sort(rates.begin(), rates.end());
  std::sort(cpu_rates.begin(), cpu_rates.end());
  std::printf("reader: %.1f MB of logs, %llu API calls, %zu events, %d runs: median %.0f MB/s "
              "wall (min %.0f, max %.0f), %.0f MB/s per CPU-second, one thread\n",
              static_cast<double>(corpus.size()) / (1 << 20),
              static_cast<unsigned long long>(calls), events, runs, rates[rates.size() / 2],
              rates.front(), rates.back(), cpu_rates[cpu_rates.size() / 2]);
  std::fflush(stdout); // before fork: the child must not print it again

  // 2. The batch: many files through postmortem, memory measured in a child (which would
  // otherwise count the reader's corpus, inherited, in its peak RSS).
  std::string().swap(corpus);
  const fs::path dir =
      fs::temp_directory_path() / ("rocplay-bench-crash-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::uint64_t written = 0;
  for (std::size_t f = 0; f < files; ++f) {
    const std::string body = make_corpus(file_kb << 10, static_cast<int>(f % 8));
    std::ofstream(dir / ("rank" + std::to_string(f % 8) + "_kernel_api_" +
                         std::to_string(10000 + f) + ".log"))
        << body;
    written += body.size();
  }
  const pid_t child = ::fork();
  if (child == 0) {
    postmortem::Options o;
    o.paths = {dir.string()};
    o.jobs = jobs;
    std::size_t findings = 0;
    const auto t0 = std::chrono::steady_clock::now();
    const auto s = postmortem::run(
        o, [&](const postmortem::InputResult& r) { findings += r.findings.size(); });
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("batch: %zu files, %.1f MB, %zu findings, verdict %s: %.2f s, %.0f MB/s with %u "
                "jobs\n",
                s.inputs, static_cast<double>(s.bytes) / (1 << 20), findings,
                s.crash.empty() ? "none" : s.crash.front().id.c_str(), secs,
                static_cast<double>(s.bytes) / (1 << 20) / secs, jobs);
    std::fflush(stdout);
    ::_exit(s.unreadable == 0 && !s.crash.empty() ? 0 : 1);
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  rusage usage{};
  ::getrusage(RUSAGE_CHILDREN, &usage);
  const double child_cpu =
      static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
      static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) * 1e-6;
  std::printf("batch: %.0f MB/s per CPU-second of the post-mortem process\n",
              static_cast<double>(written) / (1 << 20) / child_cpu);
  std::printf("batch: peak RSS of the post-mortem process %.1f MB (%.1f MB of input on disk)\n",
              peak_rss_mb_children(), static_cast<double>(written) / (1 << 20));
  std::error_code ec;
  fs::remove_all(dir, ec);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}
