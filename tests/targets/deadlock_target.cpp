// A host-side deadlock for the live tests: two threads lock two mutexes in opposite orders.
//
//   deadlock_target
//
// Thread `lock_ab` takes mutex_a then mutex_b; thread `lock_ba` takes mutex_b then mutex_a. Each
// holds its first mutex until the other has taken its own, so both block forever in
// pthread_mutex_lock on the second one. A third thread waits on a condition variable that is
// never signalled (its own wording in the host-deadlock finding). It prints `pid N` and then
// `ready` once both lockers hold their first mutex, and runs until killed; it dies with its parent
// (PR_SET_PDEATHSIG) so a crashed test never leaves it behind.
#include <pthread.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdio>

pthread_mutex_t mutex_a = PTHREAD_MUTEX_INITIALIZER;
pthread_mutex_t mutex_b = PTHREAD_MUTEX_INITIALIZER;
pthread_mutex_t idle_mutex = PTHREAD_MUTEX_INITIALIZER;
pthread_cond_t never_signalled = PTHREAD_COND_INITIALIZER;

namespace {

std::atomic<int> g_holding{0};
std::atomic<int> g_waiting{0};

void wait_for_both() {
  g_holding.fetch_add(1);
  while (g_holding.load() < 2) {
    usleep(1000);
  }
}

} // namespace

// Global scope and noinline so the debugger shows plain names and one frame per function.
__attribute__((noinline)) void take_second(pthread_mutex_t* second) {
  pthread_mutex_lock(second); // rocplay-test: second lock line
  pthread_mutex_unlock(second);
}

__attribute__((noinline)) void lock_in_order(pthread_mutex_t* first, pthread_mutex_t* second) {
  pthread_mutex_lock(first);
  wait_for_both();
  take_second(second); // rocplay-test: call line
  pthread_mutex_unlock(first);
}

__attribute__((noinline)) void wait_forever() {
  pthread_mutex_lock(&idle_mutex);
  g_waiting.fetch_add(1);
  pthread_cond_wait(&never_signalled, &idle_mutex); // rocplay-test: condition wait line
  pthread_mutex_unlock(&idle_mutex);
}

namespace {

void* lock_ab(void*) {
  lock_in_order(&mutex_a, &mutex_b);
  return nullptr;
}

void* lock_ba(void*) {
  lock_in_order(&mutex_b, &mutex_a);
  return nullptr;
}

void* waiter(void*) {
  wait_forever();
  return nullptr;
}

} // namespace

int main() {
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  pthread_t threads[3];
  pthread_create(&threads[0], nullptr, lock_ab, nullptr);
  pthread_create(&threads[1], nullptr, lock_ba, nullptr);
  pthread_create(&threads[2], nullptr, waiter, nullptr);
  pthread_setname_np(threads[0], "lock_ab");
  pthread_setname_np(threads[1], "lock_ba");
  pthread_setname_np(threads[2], "waiter");
  std::printf("pid %d\n", static_cast<int>(getpid()));
  std::fflush(stdout);
  while (g_holding.load() < 2 || g_waiting.load() < 1) {
    usleep(1000);
  }
  usleep(100000); // both lockers are now inside the second pthread_mutex_lock
  std::printf("ready\n");
  std::fflush(stdout);
  for (;;) {
    pause();
  }
}
