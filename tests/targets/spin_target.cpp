// A stand-in for a hung GPU worker, used by the live tests and bench/bench_live.
//
//   spin_target PROGRESS_FILE [SPIN_THREADS=2] [--sleepy] [--blocked N] [--walker]
//               [--spin-for SECONDS] [--segv-on-usr2] [--uninterruptible] [--deadlock]
//
// * SPIN_THREADS threads spin at one PC inside `start_sync` (a cross-rank barrier that never
//   opens), like the sync-lane waves of a hung all-gather. With --sleepy they nap inside the loop
//   instead of burning a core each (the benchmark's 1,000-thread case on a small machine).
// * N threads (default 1) are blocked on a condition variable that is never signalled.
// * The main thread advances a progress counter in PROGRESS_FILE (a small shared mapping) about
//   every millisecond and records the longest gap it saw between two ticks: while a debugger has
//   the process stopped the counter stands still, so the gap is the stop time seen by the target.
//
// * --walker: one more thread (named `walker`) steps through a loop of calls, walk_step<0> to
//   walk_step<63>, 100 ms of work in each: two stops more than 100 ms apart find it in
//   different functions (the progress tests' "moving" thread).
// * --spin-for SECONDS: the spinning threads leave start_sync after SECONDS and sleep in
//   after_sync (the progress tests' "loop ends between samples").
// * --segv-on-usr2: a SIGUSR2 makes the main thread write through a null pointer at its next tick
//   (`run --wait-for-fault` tests: a fault on demand, after rocplay has attached).
// * --uninterruptible: one more thread (named `stuck`) waits in vfork() for a child that never
//   execs: an uninterruptible wait (state D) that no ptrace stop reaches, like a thread stuck in a
//   GPU driver call. The child dies with that thread.
// * --deadlock: two more threads (`lock_ab`, `lock_ba`) take two mutexes in opposite orders and
//   block forever in take_second: a host deadlock in one rank while the main thread still steps
//   (the Slurm test's rank that hangs differently from the others).
//
// It prints `pid N` and then `ready` once every thread is in place, and runs until killed. It dies
// with its parent (PR_SET_PDEATHSIG) so a crashed test never leaves it behind.
#include <fcntl.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace {

// Layout shared with tests/live/live_util.hpp and bench/bench_live.cpp.
struct Progress {
  std::uint64_t magic; // kMagic once initialised
  std::uint64_t pid;
  std::uint64_t counter;    // ticks of the main thread
  std::uint64_t last_ns;    // CLOCK_MONOTONIC of the last tick
  std::uint64_t max_gap_ns; // longest time between two ticks; a reader may reset it to 0
  std::uint64_t spinning;   // threads that reached start_sync
  std::uint64_t blocked;    // threads waiting on the condition variable
};
constexpr std::uint64_t kMagic = 0x726f63706c617931ull; // "rocplay1"

volatile int g_release = 0; // never set, unless --spin-for: the barrier never opens
std::atomic<std::uint64_t> g_spinning{0};
std::atomic<std::uint64_t> g_blocked{0};
bool g_sleepy = false;
std::mutex g_mutex;
std::condition_variable g_cv;

std::uint64_t now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1000000000ull +
         static_cast<std::uint64_t>(ts.tv_nsec);
}

void nap(long ns) {
  timespec ts{0, ns};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

__attribute__((noinline)) void blocked_on_condition() {
  std::unique_lock<std::mutex> lock(g_mutex);
  g_blocked.fetch_add(1);
  g_cv.wait(lock, [] { return g_release != 0; }); // rocplay-test: blocked line
}

// Burns about `ns` of CPU time in its own frame.
__attribute__((noinline)) void busy_for(long ns) {
  const std::uint64_t end = now_ns() + static_cast<std::uint64_t>(ns);
  while (now_ns() < end) {
  }
}

} // namespace

// The walker's loop of calls: a distinct function per step, so each stop names where it is.
template <int N> __attribute__((noinline)) void walk_step() {
  busy_for(100'000'000);
  asm volatile("" ::: "memory");
}

template <int... N> void walk_all(std::integer_sequence<int, N...>) {
  (walk_step<N>(), ...);
}

void* walker_main(void*) {
  pthread_setname_np(pthread_self(), "walker");
  for (;;) {
    walk_all(std::make_integer_sequence<int, 64>{});
  }
  return nullptr;
}

std::atomic<long> g_vfork_child{0};

__attribute__((noinline)) void stuck_in_vfork() {
  const pid_t child = vfork();
  if (child == 0) {
    // Only system calls here: the child borrows its parent's stack and memory.
    syscall(SYS_prctl, PR_SET_PDEATHSIG, SIGKILL);
    g_vfork_child.store(syscall(SYS_getpid));
    for (;;) {
      syscall(SYS_pause);
    }
  }
  for (;;) {
    pause(); // not reached while the child lives
  }
}

void* stuck_main(void*) {
  pthread_setname_np(pthread_self(), "stuck");
  stuck_in_vfork();
  return nullptr;
}

pthread_mutex_t g_mutex_a = PTHREAD_MUTEX_INITIALIZER;
pthread_mutex_t g_mutex_b = PTHREAD_MUTEX_INITIALIZER;
std::atomic<int> g_holding{0};

__attribute__((noinline)) void take_second(pthread_mutex_t* second) {
  pthread_mutex_lock(second); // never returns: the other locker holds it
  pthread_mutex_unlock(second);
}

void* lock_main(void* arg) {
  const bool ab = arg != nullptr;
  pthread_setname_np(pthread_self(), ab ? "lock_ab" : "lock_ba");
  pthread_mutex_t* first = ab ? &g_mutex_a : &g_mutex_b;
  pthread_mutex_lock(first);
  g_holding.fetch_add(1);
  while (g_holding.load() < 2) {
    nap(1'000'000);
  }
  take_second(ab ? &g_mutex_b : &g_mutex_a);
  pthread_mutex_unlock(first);
  return nullptr;
}

volatile sig_atomic_t g_fault_requested = 0;
int* volatile g_null_pointer = nullptr;

__attribute__((noinline)) void write_through_null() {
  *g_null_pointer = 1; // rocplay-test: fault line
}

__attribute__((noinline)) void after_sync() {
  for (;;) {
    nap(100'000'000); // rocplay-test: after sync line
  }
}

// Global scope so the debugger shows the plain name `start_sync(int)`. The spin the tests look for:
// every spinning thread sits on the `while` line below.
__attribute__((noinline)) void start_sync(int rank) {
  (void)rank;
  g_spinning.fetch_add(1);
  // clang-format off
  if (g_sleepy) {
    while (g_release == 0) { nap(500'000'000); } // rocplay-test: sleepy spin line
  }
  while (g_release == 0) { } // rocplay-test: spin line
  // clang-format on
  after_sync();
}

namespace {

void* spin_main(void* arg) {
  start_sync(static_cast<int>(reinterpret_cast<std::intptr_t>(arg)));
  return nullptr;
}

void* blocked_main(void*) {
  blocked_on_condition();
  return nullptr;
}

bool start_thread(void* (*fn)(void*), void* arg) {
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  // Small stacks: the 1,000-thread case should not need gigabytes of address space.
  pthread_attr_setstacksize(&attr, 256 * 1024);
  pthread_t thread;
  const int rc = pthread_create(&thread, &attr, fn, arg);
  pthread_attr_destroy(&attr);
  if (rc != 0) {
    std::fprintf(stderr, "spin_target: pthread_create: %s\n", std::strerror(rc));
    return false;
  }
  pthread_detach(thread);
  return true;
}

Progress* map_progress(const char* path) {
  const int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) {
    std::fprintf(stderr, "spin_target: open %s: %s\n", path, std::strerror(errno));
    return nullptr;
  }
  if (ftruncate(fd, sizeof(Progress)) != 0) {
    std::fprintf(stderr, "spin_target: ftruncate: %s\n", std::strerror(errno));
    close(fd);
    return nullptr;
  }
  void* p = mmap(nullptr, sizeof(Progress), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (p == MAP_FAILED) {
    std::fprintf(stderr, "spin_target: mmap: %s\n", std::strerror(errno));
    return nullptr;
  }
  return static_cast<Progress*>(p);
}

} // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: spin_target PROGRESS_FILE [SPIN_THREADS] [--sleepy] "
                         "[--blocked N]\n");
    return 64;
  }
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  int spin_threads = 2;
  int blocked_threads = 1;
  bool walker = false;
  bool segv_on_usr2 = false;
  bool uninterruptible = false;
  bool deadlock = false;
  double spin_for = 0;
  for (int i = 2; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--sleepy") {
      g_sleepy = true;
    } else if (arg == "--walker") {
      walker = true;
    } else if (arg == "--segv-on-usr2") {
      segv_on_usr2 = true;
    } else if (arg == "--uninterruptible") {
      uninterruptible = true;
    } else if (arg == "--deadlock") {
      deadlock = true;
    } else if (arg == "--spin-for" && i + 1 < argc) {
      spin_for = std::atof(argv[++i]);
    } else if (arg == "--blocked" && i + 1 < argc) {
      blocked_threads = std::atoi(argv[++i]);
    } else {
      spin_threads = std::atoi(arg.c_str());
    }
  }
  if (spin_threads < 0 || spin_threads > 100000 || blocked_threads < 0) {
    std::fprintf(stderr, "spin_target: bad thread count\n");
    return 64;
  }
  Progress* progress = map_progress(argv[1]);
  if (progress == nullptr) {
    return 1;
  }
  if (segv_on_usr2) {
    std::signal(SIGUSR2, [](int) { g_fault_requested = 1; });
  }
  std::memset(progress, 0, sizeof(Progress));
  progress->pid = static_cast<std::uint64_t>(getpid());
  progress->last_ns = now_ns();

  for (int i = 0; i < spin_threads; ++i) {
    if (!start_thread(spin_main, reinterpret_cast<void*>(static_cast<std::intptr_t>(i)))) {
      return 1;
    }
  }
  for (int i = 0; i < blocked_threads; ++i) {
    if (!start_thread(blocked_main, nullptr)) {
      return 1;
    }
  }
  if (walker && !start_thread(walker_main, nullptr)) {
    return 1;
  }
  if (uninterruptible && !start_thread(stuck_main, nullptr)) {
    return 1;
  }
  static int ab_tag = 1;
  if (deadlock && (!start_thread(lock_main, &ab_tag) || !start_thread(lock_main, nullptr))) {
    return 1;
  }
  std::printf("pid %d\n", static_cast<int>(getpid()));
  std::fflush(stdout);
  while (g_spinning.load() < static_cast<std::uint64_t>(spin_threads) ||
         g_blocked.load() < static_cast<std::uint64_t>(blocked_threads) ||
         (uninterruptible && g_vfork_child.load() == 0) || (deadlock && g_holding.load() < 2)) {
    nap(1'000'000);
  }
  progress->spinning = g_spinning.load();
  progress->blocked = g_blocked.load();
  progress->last_ns = now_ns();
  __atomic_store_n(&progress->magic, kMagic, __ATOMIC_RELEASE);
  std::printf("ready\n");
  std::fflush(stdout);
  const std::uint64_t release_at =
      spin_for > 0 ? now_ns() + static_cast<std::uint64_t>(spin_for * 1e9) : 0;

  for (;;) {
    nap(1'000'000);
    const std::uint64_t now = now_ns();
    const std::uint64_t gap = now - progress->last_ns;
    if (gap > __atomic_load_n(&progress->max_gap_ns, __ATOMIC_RELAXED)) {
      __atomic_store_n(&progress->max_gap_ns, gap, __ATOMIC_RELAXED);
    }
    if (release_at != 0 && now >= release_at && g_release == 0) {
      g_release = 1;
    }
    if (g_fault_requested != 0) {
      write_through_null();
    }
    __atomic_store_n(&progress->last_ns, now, __ATOMIC_RELAXED);
    __atomic_fetch_add(&progress->counter, 1, __ATOMIC_RELEASE);
  }
}
