// The cost of reading Python stacks inside the stop (src/pyframes/): a real CPython process with
// 10 threads of 50 Python frames each (plus its main thread), stopped with SIGSTOP as the
// debugger holds it, then read N times the way `rocplay run` reads it in each sample (the
// runtime found once per run; the walk per sample). Prints the median, min and max of the walk,
// and of one cold locate + walk (a run's first sample).
// Usage: bench_pyframes [--python PATH] [--runs N] [--short] (docs/benchmarks.md, "Python stacks")
#include "rocplay/pyframes/pyframes.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace {

const char* kScript = R"(
import sys, threading
go = threading.Event()
ready = threading.Barrier(11)
def nest(n):
    if n == 0:
        ready.wait()
        go.wait()
    else:
        nest(n - 1)
for i in range(10):
    threading.Thread(target=nest, args=(46,), daemon=True).start()
ready.wait()
print('ready', flush=True)
go.wait()
)";

// CPU time of this thread (user + system: the reads are system calls), in ms. On a loaded
// machine the wall time includes waiting for a core; this does not.
double cpu_ms() {
  timespec ts{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) / 1e6;
}

double ms_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
}

} // namespace

int main(int argc, char** argv) {
  std::string python = "/usr/bin/python3";
  int runs = 50;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--short") == 0) {
      runs = 5; // scripts/bench.sh --short: keep it running, not measure
    } else if (std::strcmp(argv[i], "--python") == 0 && i + 1 < argc) {
      python = argv[++i];
    } else if (std::strcmp(argv[i], "--runs") == 0 && i + 1 < argc) {
      runs = std::max(1, std::atoi(argv[++i]));
    }
  }
  int out[2];
  if (::pipe(out) != 0) {
    return 2;
  }
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(out[1], 1);
    ::execl(python.c_str(), python.c_str(), "-c", kScript, static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ::close(out[1]);
  char buf[64] = {};
  if (::read(out[0], buf, sizeof buf - 1) <= 0 || std::strncmp(buf, "ready", 5) != 0) {
    std::fprintf(stderr, "bench_pyframes: %s did not get ready\n", python.c_str());
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
    return 2;
  }
  ::kill(pid, SIGSTOP);
  int status = 0;
  ::waitpid(pid, &status, WUNTRACED);
  auto t0 = std::chrono::steady_clock::now();
  auto runtime = rocplay::pyframes::locate(pid);
  if (!runtime) {
    std::fprintf(stderr, "bench_pyframes: no _PyRuntime in %s\n", python.c_str());
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
    return 2;
  }
  rocplay::pyframes::Stacks first;
  {
    rocplay::pyframes::ProcessMemory memory(pid);
    first = rocplay::pyframes::read(memory, *runtime);
  }
  const double cold = ms_since(t0);
  std::size_t frames = 0;
  for (const auto& t : first.threads) {
    frames += t.frames.size();
  }
  std::vector<double> times, cpu;
  for (int i = 0; i < runs; ++i) {
    const double c = cpu_ms();
    const auto t = std::chrono::steady_clock::now();
    rocplay::pyframes::ProcessMemory memory(pid);
    const auto s = rocplay::pyframes::read(memory, *runtime);
    times.push_back(ms_since(t));
    cpu.push_back(cpu_ms() - c);
    if (s.threads.size() != first.threads.size()) {
      std::fprintf(stderr, "bench_pyframes: the threads changed while stopped\n");
    }
  }
  ::kill(pid, SIGKILL);
  ::kill(pid, SIGCONT);
  ::waitpid(pid, nullptr, 0);
  std::sort(times.begin(), times.end());
  std::sort(cpu.begin(), cpu.end());
  std::printf("CPython %s: %zu threads, %zu Python frames\n", first.version.c_str(),
              first.threads.size(), frames);
  std::printf("walk per sample: median %.3f ms, min %.3f ms, max %.3f ms (%d runs)\n",
              times[times.size() / 2], times.front(), times.back(), runs);
  std::printf("walk per sample, CPU time: median %.3f ms, min %.3f ms, max %.3f ms\n",
              cpu[cpu.size() / 2], cpu.front(), cpu.back());
  std::printf("first sample (locate + walk, cold): %.3f ms\n", cold);
  return 0;
}
