// `rocplay watch`'s cost while healthy: CPU per check and memory over many checks, measured on
// the watch layer itself (the loop `rocplay watch` runs, without its sleeps).
//
//   bench_watch [--short] [--checks N]
//
// Two children of this process hold a device file open (the "GPU workers" of this process, found
// by the same process-tree scan as a server's), a log is appended to before each check (healthy:
// the log grows, no GPU counter is read), then left alone (quiet: the sysfs counter of a fake
// tree is read at every check). Per phase: the CPU time of the check calls (this thread's clock),
// and the RSS at the start, every 10% of the checks, and at the end; growth fails the benchmark.
#include "rocplay/watch/watch.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

using namespace rocplay;
using namespace std::chrono_literals;

namespace {

long rss_kib() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) {
      return std::atol(line.c_str() + 6);
    }
  }
  return 0;
}

double thread_cpu_s() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

pid_t hold(const std::string& device) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    const int fd = ::open(device.c_str(), O_RDONLY);
    (void)fd;
    for (;;) {
      ::pause();
    }
  }
  return pid;
}

} // namespace

int main(int argc, char** argv) {
  long checks = 50'000;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--short") {
      checks = 2'000;
    } else if (a == "--checks" && i + 1 < argc) {
      checks = std::atol(argv[++i]);
    }
  }
  char tmpl[] = "/tmp/rocplay-bench-watch-XXXXXX";
  const std::string dir = ::mkdtemp(tmpl);
  const std::string device = dir + "/fake-kfd";
  const std::string log = dir + "/server.log";
  std::ofstream(device) << "";
  std::ofstream(log) << "start\n";
  std::filesystem::create_directories(dir + "/sys/class/drm/card0/device");
  std::ofstream(dir + "/sys/class/drm/card0/device/gpu_busy_percent") << "100\n";
  const pid_t a = hold(device);
  const pid_t b = hold(device);
  ::usleep(200'000); // the holders open the device

  watch::Config config;
  config.log = log;
  config.quiet_for = 24h; // never a hang: the benchmark measures the watching
  config.gpu.sysfs_root = dir + "/sys";
  auto now = watch::Clock::now();
  watch::Watcher watcher(config, watch::Targets::workers_of(::getpid(), {device}), now);
  int status = 0;
  if (watcher.targets().workers().size() != 2) {
    std::fprintf(stderr, "bench_watch: expected 2 workers, found %zu\n",
                 watcher.targets().workers().size());
    status = 1;
  }
  std::ofstream appender(log, std::ios::app);
  for (const bool healthy : {true, false}) {
    const long start_rss = rss_kib();
    long max_rss = start_rss;
    double cpu = 0;
    long gpu_reads = 0;
    for (long i = 0; i < checks; ++i) {
      if (healthy) {
        appender << "output send " << i << "\n" << std::flush;
      }
      now += 5s;
      const double c0 = thread_cpu_s();
      const auto r = watcher.check(now);
      cpu += thread_cpu_s() - c0;
      gpu_reads += r.gpu_read ? 1 : 0;
      if (i % std::max(1L, checks / 10) == 0) {
        max_rss = std::max(max_rss, rss_kib());
      }
    }
    const long end_rss = rss_kib();
    std::printf("%-8s %ld checks: %.1f us CPU per check, GPU counters read %ld times; RSS %ld KiB "
                "at start, %ld KiB at most, %ld KiB at the end\n",
                healthy ? "healthy" : "quiet", checks, cpu * 1e6 / static_cast<double>(checks),
                gpu_reads, start_rss, max_rss, end_rss);
    // A few pages of slack for the allocator; growth per check would be far more.
    if (end_rss - start_rss > 256) {
      std::fprintf(stderr, "bench_watch: RSS grew by %ld KiB over %ld checks\n",
                   end_rss - start_rss, checks);
      status = 1;
    }
  }
  ::kill(a, SIGKILL);
  ::kill(b, SIGKILL);
  ::waitpid(a, nullptr, 0);
  ::waitpid(b, nullptr, 0);
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  return status;
}
