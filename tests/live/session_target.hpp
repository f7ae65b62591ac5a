// Live-test helpers: start tests/targets/spin_target, watch its progress counter, and clean up.
//
// A SpinTarget is killed (SIGKILL) and reaped in its destructor, and the target itself dies with
// the test process (PR_SET_PDEATHSIG), so no test leaves a process behind.
#pragma once

#include "rocplay/session/process.hpp"
#include "rocplay/session/session.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace rocplay::testing {

// Mirrors the Progress struct of tests/targets/spin_target.cpp.
struct TargetProgress {
  std::uint64_t magic;
  std::uint64_t pid;
  std::uint64_t counter;
  std::uint64_t last_ns;
  std::uint64_t max_gap_ns;
  std::uint64_t spinning;
  std::uint64_t blocked;
};
constexpr std::uint64_t kTargetMagic = 0x726f63706c617931ull;

// A whole file (a recording, a report), for the checks.
inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline std::string find_built(const std::string& name) {
  for (const char* sub : {"/tests/", "/", "/bin/"}) {
    const std::string p = std::string(ROCPLAY_BINARY_DIR) + sub + name;
    if (::access(p.c_str(), X_OK) == 0) {
      return p;
    }
  }
  throw std::runtime_error(name + " is not built in " + ROCPLAY_BINARY_DIR +
                           " (build the whole tree: the live tests need tests/targets)");
}

// The 1-based line of tests/targets/`source` that holds `marker`.
inline int marker_line(const std::string& source, const std::string& marker) {
  std::ifstream in(std::string(ROCPLAY_SOURCE_DIR) + "/tests/targets/" + source);
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    ++n;
    if (line.find(marker) != std::string::npos) {
      return n;
    }
  }
  throw std::runtime_error("marker not found in " + source + ": " + marker);
}

// The 1-based line of spin_target.cpp that holds `marker`.
inline int target_source_line(const std::string& marker) {
  return marker_line("spin_target.cpp", marker);
}

// Starts args[0] (a path) with its stdout on a pipe, the environment `env` (this process's when
// empty), and waits at most 20 s for the `ready` line it prints once in place. Returns its pid;
// a program that exits first or is not ready in time is killed, reaped, and reported by throwing
// with what it printed. `printed`, when given, gets what it printed up to its `ready` line.
inline pid_t start_until_ready(std::vector<std::string> args, std::vector<std::string> env = {},
                               std::string* printed = nullptr) {
  if (env.empty()) {
    for (char** e = environ; *e != nullptr; ++e) {
      env.emplace_back(*e);
    }
  }
  std::vector<char*> argv;
  for (auto& a : args) {
    argv.push_back(a.data());
  }
  argv.push_back(nullptr);
  std::vector<char*> envp;
  for (auto& kv : env) {
    envp.push_back(kv.data());
  }
  envp.push_back(nullptr);
  int out[2];
  if (::pipe2(out, O_CLOEXEC) != 0) {
    throw std::runtime_error("pipe failed");
  }
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(out[1], STDOUT_FILENO);
    ::execve(argv[0], argv.data(), envp.data());
    ::_exit(127);
  }
  ::close(out[1]);
  if (pid < 0) {
    ::close(out[0]);
    throw std::runtime_error("fork failed");
  }
  const std::string name = args[0].substr(args[0].rfind('/') + 1);
  auto fail = [&](const std::string& why) {
    ::close(out[0]);
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
    throw std::runtime_error(name + " " + why);
  };
  std::string text;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (text.find("ready\n") == std::string::npos) {
    if (std::chrono::steady_clock::now() > deadline) {
      fail("did not get ready: " + text);
    }
    pollfd p{out[0], POLLIN, 0};
    if (::poll(&p, 1, 100) > 0) {
      char buf[256];
      const ssize_t n = ::read(out[0], buf, sizeof buf);
      if (n <= 0) {
        fail("exited early: " + text);
      }
      text.append(buf, static_cast<std::size_t>(n));
    }
  }
  ::close(out[0]);
  if (printed != nullptr) {
    *printed = std::move(text);
  }
  return pid;
}

// The state letter of each thread of `pid` (/proc/PID/task/TID/stat); empty once it is gone.
inline std::vector<char> thread_states(std::int64_t pid) {
  std::vector<char> out;
  const std::string dir = "/proc/" + std::to_string(pid) + "/task";
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) {
    return out;
  }
  while (const dirent* e = ::readdir(d)) {
    if (e->d_name[0] == '.') {
      continue;
    }
    const std::string text = read_file(dir + "/" + e->d_name + "/stat");
    const auto close = text.rfind(')');
    if (close != std::string::npos && close + 2 < text.size()) {
      out.push_back(text[close + 2]);
    }
  }
  ::closedir(d);
  return out;
}

// Every thread of `pid` (there are `threads` of them) is left neither stopped nor traced-stopped.
inline void require_no_thread_stopped(std::int64_t pid, std::size_t threads) {
  // A detach resumes every thread; give the kernel a moment to show it.
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  const auto states = thread_states(pid);
  REQUIRE(states.size() == threads);
  for (char s : states) {
    INFO("thread state " << s);
    CHECK(s != 'T');
    CHECK(s != 't');
  }
}

// SIGKILL and reap `pid` if it is still ours; -1 afterwards.
inline void kill_and_reap(pid_t& pid) {
  if (pid > 0) {
    ::kill(pid, SIGKILL);
    int status = 0;
    ::waitpid(pid, &status, 0);
    pid = -1;
  }
}

class SpinTarget {
public:
  struct Config {
    int spin_threads = 2;
    int blocked_threads = 1;
    bool sleepy = false;
    bool walker = false;          // a thread stepping through a loop of calls (--walker)
    double spin_for = 0;          // the spinning threads leave their loop after this (--spin-for)
    bool segv_on_usr2 = false;    // SIGUSR2 makes it write through a null pointer (--segv-on-usr2)
    bool uninterruptible = false; // a thread `stuck` in state D (--uninterruptible)
    std::vector<std::string> extra_env; // NAME=value added to the target's environment
  };

  SpinTarget() : SpinTarget(Config{}) {}
  explicit SpinTarget(const Config& config) {
    char path[] = "/tmp/rocplay-progress-XXXXXX";
    const int fd = ::mkstemp(path);
    if (fd < 0) {
      throw std::runtime_error("mkstemp failed");
    }
    ::close(fd);
    progress_path_ = path;
    const std::string exe = find_built("spin_target");
    std::vector<std::string> args = {exe, progress_path_, std::to_string(config.spin_threads),
                                     "--blocked", std::to_string(config.blocked_threads)};
    if (config.sleepy) {
      args.push_back("--sleepy");
    }
    if (config.walker) {
      args.push_back("--walker");
    }
    if (config.spin_for > 0) {
      args.push_back("--spin-for");
      args.push_back(std::to_string(config.spin_for));
    }
    if (config.segv_on_usr2) {
      args.push_back("--segv-on-usr2");
    }
    if (config.uninterruptible) {
      args.push_back("--uninterruptible");
    }
    std::vector<std::string> env;
    for (char** e = environ; *e != nullptr; ++e) {
      env.emplace_back(*e);
    }
    env.insert(env.end(), config.extra_env.begin(), config.extra_env.end());
    pid_ = start_until_ready(std::move(args), std::move(env));
    const int pfd = ::open(progress_path_.c_str(), O_RDWR | O_CLOEXEC);
    void* map = ::mmap(nullptr, sizeof(TargetProgress), PROT_READ | PROT_WRITE, MAP_SHARED, pfd, 0);
    ::close(pfd);
    if (map == MAP_FAILED) {
      kill_now();
      throw std::runtime_error("mmap of the progress file failed");
    }
    progress_ = static_cast<TargetProgress*>(map);
  }

  ~SpinTarget() {
    kill_now();
    if (progress_ != nullptr) {
      ::munmap(progress_, sizeof(TargetProgress));
    }
    if (!progress_path_.empty()) {
      ::unlink(progress_path_.c_str());
    }
  }
  SpinTarget(const SpinTarget&) = delete;
  SpinTarget& operator=(const SpinTarget&) = delete;

  std::int64_t pid() const { return pid_; }
  std::uint64_t counter() const { return __atomic_load_n(&progress_->counter, __ATOMIC_ACQUIRE); }
  double max_gap_seconds() const {
    return static_cast<double>(__atomic_load_n(&progress_->max_gap_ns, __ATOMIC_RELAXED)) / 1e9;
  }
  void reset_max_gap() { __atomic_store_n(&progress_->max_gap_ns, 0, __ATOMIC_RELAXED); }
  char state() const {
    const auto st = process::read_stat(pid_);
    return st ? st->state : '?';
  }
  // How the target ended, when it did (for failure messages): "running" otherwise.
  std::string fate() {
    if (pid_ <= 0) {
      return "reaped";
    }
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) != pid_) {
      return "running";
    }
    pid_ = -1;
    if (WIFSIGNALED(status)) {
      return "killed by signal " + std::to_string(WTERMSIG(status));
    }
    return "exited with status " + std::to_string(WEXITSTATUS(status));
  }
  // True when the counter moves within `timeout`: the target runs.
  bool advances(std::chrono::milliseconds timeout = std::chrono::milliseconds(3000)) const {
    const auto start = counter();
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      if (counter() > start + 2) {
        return true;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return false;
  }

private:
  void kill_now() { kill_and_reap(pid_); }

  pid_t pid_ = -1;
  std::string progress_path_;
  TargetProgress* progress_ = nullptr;
};

// A program started with start_until_ready; killed (SIGKILL) and reaped on destruction.
class ReadyProcess {
public:
  explicit ReadyProcess(std::vector<std::string> args) : pid_(start_until_ready(std::move(args))) {}
  ~ReadyProcess() { kill_and_reap(pid_); }
  ReadyProcess(const ReadyProcess&) = delete;
  ReadyProcess& operator=(const ReadyProcess&) = delete;
  std::int64_t pid() const { return pid_; }

private:
  pid_t pid_ = -1;
};

// tests/targets/deadlock_target once `ready`: both lockers blocked on their second mutex (a host
// deadlock), and a waiter on a condition variable.
class DeadlockTarget : public ReadyProcess {
public:
  DeadlockTarget() : ReadyProcess({find_built("deadlock_target")}) {}
  // main, the two lockers and the waiter.
  static constexpr std::size_t kThreads = 4;
};

inline session::Debugger test_gdb() {
  static const session::Debugger dbg = session::find_debugger("gdb");
  return dbg;
}

// Options with deadlines short enough for tests but generous for a loaded 2-core CI machine.
inline session::Options test_options() {
  session::Options o;
  o.attach_timeout = std::chrono::milliseconds(30'000);
  o.command_timeout = std::chrono::milliseconds(20'000);
  o.detach_timeout = std::chrono::milliseconds(10'000);
  return o;
}

// The non-negotiable after every path: not stopped, and still making progress.
inline void require_running_again(SpinTarget& target) {
  INFO("target: " << target.fate() << ", state " << target.state());
  CHECK(target.state() != 'T');
  CHECK(target.state() != 't');
  CHECK(target.advances());
}

} // namespace rocplay::testing
