// A thread pool starved by its own tasks, in C++ (issue 41's second host shape): two workers each
// run a task that queues a subtask on the same pool and waits for it on a condition variable only
// a worker would signal, while main joins the workers. Every thread sleeps with no timer and no fd
// from outside: a deadlock of the process. Prints `ready` once both tasks wait.
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace {

std::mutex m;
std::condition_variable work_ready;
std::condition_variable subtask_done;
std::deque<std::function<void()>> queue;
int waiting = 0;
int done = 0;

void worker() {
  for (;;) {
    std::unique_lock<std::mutex> lock(m);
    work_ready.wait(lock, [] { return !queue.empty(); });
    auto job = std::move(queue.front());
    queue.pop_front();
    lock.unlock();
    job();
  }
}

void task() {
  std::unique_lock<std::mutex> lock(m);
  queue.push_back([] {
    std::lock_guard<std::mutex> g(m);
    ++done;
    subtask_done.notify_all();
  });
  work_ready.notify_one();
  ++waiting;
  if (waiting == 2) {
    std::printf("ready\n");
    std::fflush(stdout);
  }
  subtask_done.wait(lock, [] { return done > 0; }); // rocplay-test: pool task waits line
}

} // namespace

int main() {
  {
    std::lock_guard<std::mutex> g(m);
    queue.push_back(task);
    queue.push_back(task);
  }
  std::vector<std::thread> workers;
  for (int i = 0; i < 2; ++i) {
    workers.emplace_back(worker);
  }
  for (auto& w : workers) {
    w.join(); // rocplay-test: pool main joins line
  }
  return 0;
}
