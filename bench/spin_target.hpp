// What the live benchmarks share: tests/targets/spin_target as a running target whose progress
// counter shows when it is stopped, and the median.
#pragma once

#include "rocplay/session/process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace rocplay::bench {

using Clock = std::chrono::steady_clock;

struct Progress { // tests/targets/spin_target.cpp
  std::uint64_t magic, pid, counter, last_ns, max_gap_ns, spinning, blocked;
};

inline double median(std::vector<double> v) {
  if (v.empty()) {
    return 0;
  }
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

class Target {
public:
  Target(const std::string& exe, int threads) {
    char path[] = "/tmp/rocplay-bench-progress-XXXXXX";
    const int fd = ::mkstemp(path);
    if (fd < 0) {
      throw std::runtime_error("mkstemp");
    }
    ::close(fd);
    path_ = path;
    // main + 1 blocked on a condition variable + the rest napping inside start_sync.
    const std::string spin = std::to_string(std::max(1, threads - 2));
    int out[2];
    if (::pipe2(out, O_CLOEXEC) != 0) {
      throw std::runtime_error("pipe");
    }
    pid_ = ::fork();
    if (pid_ == 0) {
      ::dup2(out[1], STDOUT_FILENO);
      ::execl(exe.c_str(), exe.c_str(), path_.c_str(), spin.c_str(), "--sleepy", "--blocked", "1",
              static_cast<char*>(nullptr));
      ::_exit(127);
    }
    ::close(out[1]);
    std::string text;
    const auto deadline = Clock::now() + std::chrono::seconds(60);
    while (text.find("ready\n") == std::string::npos && Clock::now() < deadline) {
      pollfd p{out[0], POLLIN, 0};
      if (::poll(&p, 1, 100) > 0) {
        char buf[256];
        const ssize_t n = ::read(out[0], buf, sizeof buf);
        if (n <= 0) {
          break;
        }
        text.append(buf, static_cast<std::size_t>(n));
      }
    }
    ::close(out[0]);
    if (text.find("ready\n") == std::string::npos) {
      throw std::runtime_error("spin_target did not get ready: " + text);
    }
    const int pfd = ::open(path_.c_str(), O_RDWR | O_CLOEXEC);
    void* map = ::mmap(nullptr, sizeof(Progress), PROT_READ | PROT_WRITE, MAP_SHARED, pfd, 0);
    ::close(pfd);
    if (map == MAP_FAILED) {
      throw std::runtime_error("mmap");
    }
    progress_ = static_cast<Progress*>(map);
  }
  ~Target() {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
    ::munmap(progress_, sizeof(Progress));
    ::unlink(path_.c_str());
  }
  Target(const Target&) = delete;
  Target& operator=(const Target&) = delete;

  pid_t pid() const { return pid_; }
  void reset_gap() { __atomic_store_n(&progress_->max_gap_ns, 0, __ATOMIC_RELAXED); }
  // The longest gap since reset_gap(); waits a few ticks so the tick after a resume is counted.
  double gap_seconds() const {
    const auto start = __atomic_load_n(&progress_->counter, __ATOMIC_ACQUIRE);
    for (int i = 0; i < 500 && __atomic_load_n(&progress_->counter, __ATOMIC_ACQUIRE) < start + 3;
         ++i) {
      ::usleep(1000);
    }
    return static_cast<double>(__atomic_load_n(&progress_->max_gap_ns, __ATOMIC_RELAXED)) / 1e9;
  }
  bool running() const {
    const auto st = process::read_stat(pid_);
    return st && !process::is_stopped(st->state);
  }

private:
  pid_t pid_ = -1;
  std::string path_;
  Progress* progress_ = nullptr;
};

} // namespace rocplay::bench
