// The `kernel waits:` notes (rocplay/core/kernel_waits.hpp): what the session writes reads back
// the same; a recording's note is untrusted (malformed, oversized, repeated) and is bounded and
// never throws; only_own_waker's rule on each kind of wait; and the /proc reader on this very
// process (a thread blocked in read() on a pipe it holds both ends of).
#include "rocplay/core/kernel_waits.hpp"

#include <catch2/catch.hpp>

#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>

using namespace rocplay;

namespace {

KernelWaits sample() {
  KernelWaits w;
  ProcessWaits target;
  target.pid = 100;
  target.ppid = 1;
  target.comm = "python3";
  target.cmdline = "python3 parent.py";
  target.state = "S";
  target.role = "target";
  KernelWait wait4;
  wait4.tid = 100;
  wait4.call = "wait4";
  wait4.child = 200;
  KernelWait futex;
  futex.tid = 101;
  futex.call = "futex";
  futex.futex = 0x55d0c0ffee00;
  futex.timed = true;
  target.threads = {wait4, futex};
  ProcessWaits child;
  child.pid = 200;
  child.ppid = 100;
  child.comm = "python3";
  child.state = "S";
  child.role = "child";
  KernelWait read;
  read.tid = 200;
  read.call = "read";
  read.fd = 0;
  read.file = "pipe:[4242]";
  read.access = "r";
  child.threads = {read};
  w.processes = {target, child};
  PipeHolders p;
  p.inode = 4242;
  p.writers = {100};
  p.readers = {200};
  p.complete = true;
  w.pipes = {p};
  return w;
}

} // namespace

TEST_CASE("kernel waits: the notes read back to the same facts") {
  const KernelWaits w = sample();
  KernelWaits back;
  for (const auto& n : kernel_wait_notes(w)) {
    CHECK(n.size() < 4096);
    REQUIRE(read_kernel_wait_note(n, back));
  }
  CHECK(back == w);
  CHECK_FALSE(read_kernel_wait_note("thread names: {}", back));
}

TEST_CASE("kernel waits: many threads split over notes, each under a note's size") {
  KernelWaits w;
  ProcessWaits p;
  p.pid = 7;
  p.role = "target";
  for (int i = 0; i < 2000; ++i) {
    KernelWait k;
    k.tid = 1000 + i;
    k.call = "futex";
    k.futex = 0x7f0000000000u + static_cast<std::uint64_t>(i) * 64;
    p.threads.push_back(k);
  }
  w.processes = {p};
  const auto notes = kernel_wait_notes(w);
  CHECK(notes.size() > 10);
  KernelWaits back;
  for (const auto& n : notes) {
    CHECK(n.size() < 4000);
    read_kernel_wait_note(n, back);
  }
  CHECK(back == w);
}

TEST_CASE("kernel waits: a recording's bad notes are skipped, bounded, never thrown") {
  KernelWaits into;
  for (const std::string bad :
       {"kernel waits: ", "kernel waits: {", "kernel waits: []", "kernel waits: {\"pid\":\"x\"}",
        "kernel waits: {\"pid\":5,\"threads\":7}", "kernel waits: {\"pid\":5,\"threads\":[1,{}]}",
        "kernel waits: {\"pipes\":[{\"i\":-1},{\"i\":\"9\"},3]}",
        "kernel waits: {\"pid\":6,\"threads\":[{\"t\":1,\"c\":5,\"fd\":\"x\",\"fx\":\"zz\"}]}"}) {
    INFO(bad);
    CHECK_NOTHROW(read_kernel_wait_note(bad, into));
  }
  // Only the readable parts count: pid 5 with no thread, pid 6 with one whose fields were wrong.
  REQUIRE(into.processes.size() == 2);
  CHECK(into.processes[0].threads.empty());
  REQUIRE(into.processes[1].threads.size() == 1);
  CHECK(into.processes[1].threads[0].call.empty());
  CHECK_FALSE(into.processes[1].threads[0].fd);
  CHECK_FALSE(into.processes[1].threads[0].futex);
  // Bounded: no more processes than kMaxWaitProcesses, texts cut at 200 bytes.
  for (int pid = 10; pid < 200; ++pid) {
    read_kernel_wait_note("kernel waits: {\"pid\":" + std::to_string(pid) + ",\"comm\":\"" +
                              std::string(5000, 'a') + "\"}",
                          into);
  }
  CHECK(into.processes.size() == kMaxWaitProcesses);
  CHECK(into.processes.back().comm.size() == 200);
  // A later look at the same thread replaces it.
  KernelWaits again;
  read_kernel_wait_note("kernel waits: {\"pid\":1,\"threads\":[{\"t\":1,\"c\":\"read\"}]}", again);
  read_kernel_wait_note("kernel waits: {\"pid\":1,\"threads\":[{\"t\":1,\"c\":\"running\"}]}",
                        again);
  REQUIRE(again.processes.front().threads.size() == 1);
  CHECK(again.processes.front().threads.front().call == "running");
}

TEST_CASE("kernel waits: only_own_waker by kind of wait") {
  const KernelWaits all = sample();
  KernelWait k;
  k.call = "futex";
  k.futex = 0x1000;
  CHECK(only_own_waker(k, 100, all)); // private, untimed
  k.timed = true;
  CHECK_FALSE(only_own_waker(k, 100, all)); // a timeout wakes it
  k.timed = false;
  k.shared = true;
  CHECK_FALSE(only_own_waker(k, 100, all)); // another process may wake it
  KernelWait r;
  r.call = "read";
  r.fd = 0;
  r.file = "pipe:[4242]";
  CHECK(only_own_waker(r, 100, all));       // pid 100 alone holds the write end
  CHECK_FALSE(only_own_waker(r, 200, all)); // for pid 200 the writer is another process
  r.file = "socket:[4242]";
  CHECK_FALSE(only_own_waker(r, 100, all));
  KernelWaits partial = all;
  partial.pipes.front().complete = false;
  r.file = "pipe:[4242]";
  CHECK_FALSE(only_own_waker(r, 100, partial)); // holders not all known
  KernelWait sleep;
  sleep.call = "clock_nanosleep";
  sleep.timed = true;
  CHECK_FALSE(only_own_waker(sleep, 100, all));
  CHECK(pipe_inode("pipe:[12]") == 12u);
  CHECK_FALSE(pipe_inode("pipe:[]"));
  CHECK_FALSE(pipe_inode("pipe:[1x]"));
  CHECK_FALSE(pipe_inode("anon_inode:[eventfd]"));
}

TEST_CASE("kernel waits: /proc of this process shows a read blocked on its own pipe") {
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  std::thread reader([&] {
    char c;
    (void)!::read(fds[0], &c, 1);
  });
  // Until the reader sits in read(): the facts say so once it does.
  KernelWaits w;
  const KernelWait* seen = nullptr;
  for (int i = 0; i < 200 && seen == nullptr; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    w = process::read_kernel_waits(::getpid());
    REQUIRE_FALSE(w.processes.empty());
    for (const auto& t : w.processes.front().threads) {
      if (t.call == "read" && t.fd == fds[0]) {
        seen = &t;
      }
    }
  }
  const bool blocked = seen != nullptr;
  KernelWait copy = blocked ? *seen : KernelWait{};
  REQUIRE(::write(fds[1], "x", 1) == 1);
  reader.join();
  ::close(fds[0]);
  ::close(fds[1]);
  REQUIRE(blocked);
  CHECK(copy.access == "r");
  const auto inode = pipe_inode(copy.file);
  REQUIRE(inode);
  const PipeHolders* h = w.pipe(*inode);
  REQUIRE(h != nullptr);
  CHECK(h->writers == std::vector<std::int64_t>{::getpid()});
  CHECK(only_own_waker(copy, ::getpid(), w));
  CHECK(w.processes.front().role == "target");
}
