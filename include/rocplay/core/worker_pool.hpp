// The one way rocplay runs independent jobs in parallel (the post-mortem's files, the fan-out's
// targets): up to `workers` threads of a Boost.Asio thread_pool take the indexes 0, 1, ...,
// count - 1 in that order, each once, and call job(i) for it. Implemented in src/core/.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>

namespace rocplay {

class WorkerPool {
public:
  // Starts min(workers, count) threads (at least one when count > 0); they begin at once.
  WorkerPool(std::size_t count, unsigned workers, std::function<void(std::size_t)> job);
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;
  // Joins: a pool never outlives the data its jobs use.
  ~WorkerPool();

  // No worker takes another index; jobs already running finish.
  void cancel();
  // Waits for every worker to finish.
  void join();

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

} // namespace rocplay
