// A stand-in for an LLM server and its GPU workers, for `rocplay watch`'s live tests.
//
//   fake_server LOG DEVICE [--workers N] [--quiet-after S] [--rotate rename|truncate]
//               [--rotate-every S] [--reopen-after S] [--exit-after S] [--restart-after S]
//
// The server (this process) forks N workers. Each worker holds DEVICE open (a plain file the
// test passes with `rocplay watch --gpu-device`, standing in for /dev/kfd) and appends an
// `output send` line to LOG every 50 ms, like a serving engine answering requests. After
// --quiet-after S the workers hang: the log stops, one thread per worker (named `engine_spin`)
// spins in start_sync for ever, and the main thread blocks in pthread_join.
//
// * --rotate rename: every --rotate-every S the server renames LOG to LOG.1 and creates a new
//   LOG; the workers keep writing the old file until a SIGHUP --reopen-after S (default 1) later
//   makes them reopen (as logrotate's postrotate does). --rotate truncate: LOG is truncated in
//   place (copytruncate).
// * --exit-after S: the server kills its workers and exits.
// * --restart-after S: the server kills its workers and forks new ones (new pids), once.
//
// It prints `server PID`, `worker PID` per worker, and `ready`. It dies with its parent and the
// workers with it (PR_SET_PDEATHSIG), so a crashed test leaves nothing behind.
#include <fcntl.h>
#include <pthread.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>

namespace {

volatile std::sig_atomic_t g_reopen = 0;
volatile int g_release = 0; // never set: the barrier never opens

double now_s() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

void nap_ms(long ms) {
  timespec ts{ms / 1000, (ms % 1000) * 1'000'000};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

extern "C" void on_hup(int) {
  g_reopen = 1;
}

} // namespace

// Global scope so the debugger shows the plain name `start_sync(int)`.
__attribute__((noinline)) void start_sync(int rank) {
  (void)rank;
  // clang-format off
  while (g_release == 0) { } // rocplay-test: fake server spin line
  // clang-format on
}

namespace {

void* spin_main(void* arg) {
  pthread_setname_np(pthread_self(), "engine_spin");
  start_sync(static_cast<int>(reinterpret_cast<std::intptr_t>(arg)));
  return nullptr;
}

[[noreturn]] void worker_main(int rank, const char* log, const char* device, double quiet_after,
                              pid_t server) {
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != server) {
    ::_exit(1); // the server died before the line above: nobody would kill this worker
  }
  struct sigaction sa {};
  sa.sa_handler = on_hup;
  sigemptyset(&sa.sa_mask);
  ::sigaction(SIGHUP, &sa, nullptr);
  const int dev = ::open(device, O_RDONLY | O_CLOEXEC);
  if (dev < 0) {
    std::fprintf(stderr, "fake_server: worker %d: open %s: %s\n", rank, device,
                 std::strerror(errno));
    ::_exit(1);
  }
  int fd = ::open(log, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  const double start = now_s();
  for (unsigned long n = 0; quiet_after <= 0 || now_s() - start < quiet_after; ++n) {
    if (g_reopen != 0) {
      g_reopen = 0;
      ::close(fd);
      fd = ::open(log, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    }
    char line[128];
    const int len = std::snprintf(line, sizeof line, "rank %d: output send request %lu\n", rank, n);
    [[maybe_unused]] const ssize_t w = ::write(fd, line, static_cast<std::size_t>(len));
    nap_ms(50);
  }
  // The hang: the log stops, a thread spins at one PC, the main thread waits for it.
  pthread_t spinner;
  pthread_create(&spinner, nullptr, spin_main, reinterpret_cast<void*>(std::intptr_t{rank}));
  pthread_join(spinner, nullptr);
  ::_exit(0);
}

std::vector<pid_t> start_workers(int n, const char* log, const char* device, double quiet_after) {
  std::vector<pid_t> pids;
  const pid_t server = ::getpid();
  for (int i = 0; i < n; ++i) {
    const pid_t pid = ::fork();
    if (pid == 0) {
      worker_main(i, log, device, quiet_after, server);
    }
    pids.push_back(pid);
    std::printf("worker %d\n", static_cast<int>(pid));
  }
  std::fflush(stdout);
  return pids;
}

void stop_workers(std::vector<pid_t>& pids) {
  for (const pid_t pid : pids) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
  }
  pids.clear();
}

} // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: fake_server LOG DEVICE [--workers N] [--quiet-after S] "
                         "[--rotate rename|truncate] [--rotate-every S] [--exit-after S] "
                         "[--restart-after S]\n");
    return 64;
  }
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  // The test stops reading stdout after `ready`; a later line must not kill the server.
  ::signal(SIGPIPE, SIG_IGN);
  const char* log = argv[1];
  const char* device = argv[2];
  int workers = 2;
  double quiet_after = 0;
  std::string rotate;
  double rotate_every = 0;
  double exit_after = 0;
  double restart_after = 0;
  double reopen_after = 1;
  for (int i = 3; i + 1 < argc; i += 2) {
    const std::string arg = argv[i];
    const double value = std::atof(argv[i + 1]);
    if (arg == "--workers") {
      workers = static_cast<int>(value);
    } else if (arg == "--quiet-after") {
      quiet_after = value;
    } else if (arg == "--rotate") {
      rotate = argv[i + 1];
    } else if (arg == "--rotate-every") {
      rotate_every = value;
    } else if (arg == "--reopen-after") {
      reopen_after = value;
    } else if (arg == "--exit-after") {
      exit_after = value;
    } else if (arg == "--restart-after") {
      restart_after = value;
    } else {
      std::fprintf(stderr, "fake_server: unknown option %s\n", arg.c_str());
      return 64;
    }
  }
  if (workers < 1 || workers > 64) {
    std::fprintf(stderr, "fake_server: --workers 1..64\n");
    return 64;
  }
  const int created = ::open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (created < 0) {
    std::fprintf(stderr, "fake_server: open %s: %s\n", log, std::strerror(errno));
    return 1;
  }
  ::close(created);
  std::printf("server %d\n", static_cast<int>(::getpid()));
  std::vector<pid_t> pids = start_workers(workers, log, device, quiet_after);
  std::printf("ready\n");
  std::fflush(stdout);

  const double start = now_s();
  double next_rotation = rotate_every > 0 ? start + rotate_every : 0;
  double reopen_at = 0;
  bool restarted = false;
  const std::string old_log = std::string(log) + ".1";
  for (;;) {
    nap_ms(10);
    const double t = now_s();
    while (::waitpid(-1, nullptr, WNOHANG) > 0) {
    }
    if (exit_after > 0 && t - start >= exit_after) {
      stop_workers(pids);
      return 0;
    }
    if (restart_after > 0 && !restarted && t - start >= restart_after) {
      restarted = true;
      stop_workers(pids);
      pids = start_workers(workers, log, device, 0); // the new workers never hang
      std::printf("restarted\n");
      std::fflush(stdout);
    }
    if (next_rotation > 0 && t >= next_rotation) {
      next_rotation = t + rotate_every;
      if (rotate == "rename") {
        ::rename(log, old_log.c_str());
        ::close(::open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
        reopen_at = t + reopen_after;
      } else if (rotate == "truncate") {
        [[maybe_unused]] const int rc = ::truncate(log, 0);
      }
    }
    if (reopen_at > 0 && t >= reopen_at) {
      reopen_at = 0;
      for (const pid_t pid : pids) {
        ::kill(pid, SIGHUP);
      }
    }
  }
}
