// The process tree on this machine's real processes, and the dispatcher -> worker rule on a real
// process tree this test builds (a "server" whose children open a stand-in GPU device file).
#include "rocplay/core/error.hpp"
#include "rocplay/session/process.hpp"

#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <set>
#include <thread>

using namespace rocplay;
using namespace std::chrono_literals;

TEST_CASE("scan sees this process and its parent", "[session][ps]") {
  process::ScanOptions options;
  options.sample = 0ms;
  const auto tree = process::scan(options);
  const auto* self = tree.find(::getpid());
  REQUIRE(self != nullptr);
  CHECK(self->ppid == ::getppid());
  CHECK(self->comm.find("test_session") != std::string::npos);
  CHECK_FALSE(self->cpu_percent.has_value()); // not sampled
  CHECK(self->gpu.known);
  bool listed = false;
  for (const auto* c : tree.children(::getppid())) {
    listed = listed || c->pid == ::getpid();
  }
  CHECK(listed);
  // Every process reaches a root.
  CHECK_FALSE(tree.roots().empty());
  std::set<std::int64_t> seen;
  for (const auto* r : tree.roots()) {
    seen.insert(r->pid);
    for (const auto* d : tree.descendants(r->pid)) {
      seen.insert(d->pid);
    }
  }
  CHECK(seen.size() == tree.processes().size());
}

TEST_CASE("CPU% is sampled: a spinning child is busy, a sleeping one is not", "[session][ps]") {
  const pid_t spinner = ::fork();
  if (spinner == 0) {
    volatile unsigned long spins = 0;
    for (;;) {
      spins = spins + 1;
    }
  }
  const pid_t sleeper = ::fork();
  if (sleeper == 0) {
    for (;;) {
      ::pause();
    }
  }
  process::ScanOptions options;
  options.sample = 500ms;
  const auto tree = process::scan(options);
  ::kill(spinner, SIGKILL);
  ::kill(sleeper, SIGKILL);
  ::waitpid(spinner, nullptr, 0);
  ::waitpid(sleeper, nullptr, 0);
  const auto* busy = tree.find(spinner);
  const auto* idle = tree.find(sleeper);
  REQUIRE(busy != nullptr);
  REQUIRE(idle != nullptr);
  REQUIRE(busy->cpu_percent.has_value());
  REQUIRE(idle->cpu_percent.has_value());
  // On a loaded shared machine the spinner may get a small share of a core, but some, and always
  // more than a process that sleeps.
  CHECK(*busy->cpu_percent > 0.0);
  CHECK(*busy->cpu_percent > *idle->cpu_percent);
  CHECK(*idle->cpu_percent < 5.0);
}

namespace {

// A process that opens `device` (when given) and waits for SIGKILL.
pid_t spawn_holder(const std::string& device, int fork_children_holding = 0,
                   const std::string& child_device = {}) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    if (!device.empty()) {
      ::open(device.c_str(), O_RDONLY);
    }
    for (int i = 0; i < fork_children_holding; ++i) {
      if (::fork() == 0) {
        if (!child_device.empty()) {
          ::open(child_device.c_str(), O_RDONLY);
        }
        for (;;) {
          ::pause();
        }
      }
    }
    for (;;) {
      ::pause();
    }
  }
  return pid;
}

} // namespace

TEST_CASE("workers of a server: its children that hold the GPU", "[session][ps]") {
  char dev[] = "/tmp/rocplay-fakekfd-XXXXXX";
  const int fd = ::mkstemp(dev);
  REQUIRE(fd >= 0);
  ::close(fd);

  // The "server" (this test's child) has no GPU device open; it forks two GPU workers (one of
  // which forks a GPU-holding helper of its own) and a tokenizer that holds none.
  int ready[2];
  REQUIRE(::pipe(ready) == 0);
  const pid_t server = ::fork();
  if (server == 0) {
    ::close(ready[0]);
    const pid_t w1 = spawn_holder(dev, 1, dev);
    const pid_t w2 = spawn_holder(dev);
    const pid_t tok = spawn_holder("");
    const pid_t pids[3] = {w1, w2, tok};
    [[maybe_unused]] auto n = ::write(ready[1], pids, sizeof pids);
    for (;;) {
      ::pause();
    }
  }
  ::close(ready[1]);
  pid_t pids[3] = {};
  REQUIRE(::read(ready[0], pids, sizeof pids) == static_cast<ssize_t>(sizeof pids));
  ::close(ready[0]);
  std::this_thread::sleep_for(200ms); // let the children open the device

  process::ScanOptions options;
  options.sample = 0ms;
  options.device_prefixes = {dev};
  const auto tree = process::scan(options);
  const auto workers = process::workers_of(tree, server);
  std::vector<std::int64_t> got;
  for (const auto& w : workers) {
    got.push_back(w.pid);
    CHECK(w.holds_gpu());
  }
  CHECK(got == std::vector<std::int64_t>{pids[0], pids[1]});
  // The server itself holds nothing; the tokenizer is no worker.
  REQUIRE(tree.find(server) != nullptr);
  CHECK_FALSE(tree.find(server)->holds_gpu());

  // What `rocplay ps` shows by default: the GPU holders with their ancestors and descendants.
  const auto shown = tree.candidates();
  CHECK(shown.find(server) != nullptr);
  CHECK(shown.find(::getpid()) != nullptr); // an ancestor
  CHECK(shown.find(pids[0]) != nullptr);
  CHECK(shown.find(pids[2]) == nullptr); // the tokenizer: not on any GPU holder's path

  // The same through the scanning overload.
  CHECK(process::workers_of(server, options).size() == 2);

  // A scan of the server's subtree: it and everything below it, nothing else (not this test).
  options.subtree = server;
  const auto below = process::scan(options);
  std::set<std::int64_t> expected{server};
  for (const auto* d : tree.descendants(server)) {
    expected.insert(d->pid);
  }
  std::set<std::int64_t> scanned;
  for (const auto& p : below.processes()) {
    scanned.insert(p.pid);
  }
  CHECK(scanned == expected);
  CHECK(expected.size() == 5); // two workers, the first one's helper, the tokenizer
  CHECK(below.find(pids[1])->holds_gpu());
  CHECK(process::workers_of(below, server).size() == 2);

  for (const auto* d : tree.descendants(server)) {
    ::kill(static_cast<pid_t>(d->pid), SIGKILL);
  }
  ::kill(server, SIGKILL);
  ::waitpid(server, nullptr, 0);
  ::unlink(dev);
}

TEST_CASE("workers_of an unknown pid is NoSuchProcess", "[session][ps]") {
  const pid_t child = ::fork();
  if (child == 0) {
    ::_exit(0);
  }
  ::waitpid(child, nullptr, 0);
  try {
    process::workers_of(child);
    FAIL("expected NoSuchProcess");
  } catch (const Error& e) {
    CHECK(e.code() == ExitCode::NoSuchProcess);
  }
}
