// See rocplay/core/worker_pool.hpp.
#include "rocplay/core/worker_pool.hpp"

#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>

#include <algorithm>
#include <atomic>

namespace rocplay {

struct WorkerPool::Impl {
  Impl(std::size_t count, unsigned threads, std::function<void(std::size_t)> job)
      : count(count), job(std::move(job)), pool(threads) {}

  void work() {
    for (;;) {
      const std::size_t i = next.fetch_add(1);
      if (i >= count || cancelled) {
        return;
      }
      job(i);
    }
  }

  const std::size_t count;
  const std::function<void(std::size_t)> job;
  std::atomic<std::size_t> next{0};
  std::atomic<bool> cancelled{false};
  boost::asio::thread_pool pool; // last: its threads use the members above
};

WorkerPool::WorkerPool(std::size_t count, unsigned workers, std::function<void(std::size_t)> job) {
  const auto threads = static_cast<unsigned>(std::min<std::size_t>(std::max(1u, workers), count));
  if (threads == 0) {
    return;
  }
  impl_ = std::make_unique<Impl>(count, threads, std::move(job));
  for (unsigned t = 0; t < threads; ++t) {
    boost::asio::post(impl_->pool, [impl = impl_.get()] { impl->work(); });
  }
}

WorkerPool::~WorkerPool() {
  join();
}

void WorkerPool::cancel() {
  if (impl_) {
    impl_->cancelled = true;
  }
}

void WorkerPool::join() {
  if (impl_) {
    impl_->pool.join();
  }
}

} // namespace rocplay
