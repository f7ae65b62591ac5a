// The one worker pool: every index is taken exactly once, by up to the asked number of threads,
// and cancel() stops the taking.
#include "rocplay/core/worker_pool.hpp"

#include <catch2/catch.hpp>

#include <atomic>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

using namespace rocplay;

TEST_CASE("a worker pool runs each index once", "[core][pool]") {
  constexpr std::size_t kCount = 1000;
  std::vector<std::atomic<int>> runs(kCount);
  std::mutex mutex;
  std::set<std::thread::id> threads;
  {
    WorkerPool pool(kCount, 4, [&](std::size_t i) {
      runs[i].fetch_add(1);
      std::lock_guard lock(mutex);
      threads.insert(std::this_thread::get_id());
    });
    pool.join();
  }
  for (std::size_t i = 0; i < kCount; ++i) {
    INFO("index " << i);
    CHECK(runs[i].load() == 1);
  }
  CHECK(threads.size() <= 4);
  CHECK(threads.count(std::this_thread::get_id()) == 0); // the caller's thread is free
}

TEST_CASE("a worker pool starts no more threads than there are jobs", "[core][pool]") {
  std::mutex mutex;
  std::set<std::thread::id> threads;
  WorkerPool pool(2, 16, [&](std::size_t) {
    std::lock_guard lock(mutex);
    threads.insert(std::this_thread::get_id());
  });
  pool.join();
  CHECK(threads.size() <= 2);
  WorkerPool none(0, 8, [](std::size_t) { FAIL("no job to run"); });
  none.join(); // nothing to wait for
}

TEST_CASE("a cancelled worker pool takes no further index", "[core][pool]") {
  std::atomic<std::size_t> ran{0};
  std::atomic<bool> release{false};
  WorkerPool pool(100, 1, [&](std::size_t) {
    ++ran;
    while (!release) {
      std::this_thread::yield();
    }
  });
  while (ran == 0) {
    std::this_thread::yield();
  }
  pool.cancel();
  release = true;
  pool.join();
  CHECK(ran == 1); // the running job finished; no other began
}
