// rocplay's own stop (rocplay/capture/capture.hpp) against real processes: every thread held and
// let go on every path (a tracer SIGKILLed while it holds the target included), and the core it
// writes read by a real gdb, compared with gdb attached to the same hung process.
#include "cli_util.hpp"
#include "session_target.hpp"

#include "rocplay/capture/capture.hpp"
#include "rocplay/core/error.hpp"

#include <fmt/format.h>

#include <catch2/catch.hpp>

#include <poll.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <new>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

using namespace rocplay;
using namespace rocplay::testing;
namespace fs = std::filesystem;

namespace {

// The function of a backtrace line (`#3  0x... in name (args) at f:l` or `#0  name (args) ...`):
// up to the first ` (` outside brackets, so `(anonymous namespace)::f` and template arguments
// stay whole.
std::string frame_function(const std::string& line) {
  std::size_t at = line.find("  ");
  if (at == std::string::npos) {
    return {};
  }
  at += 2;
  if (line.compare(at, 2, "0x") == 0) {
    const auto in = line.find(" in ", at);
    if (in == std::string::npos) {
      return {};
    }
    at = in + 4;
  }
  int depth = 0;
  for (std::size_t i = at; i < line.size(); ++i) {
    const char c = line[i];
    if (c == '<' || c == '(') {
      ++depth;
    } else if ((c == '>' || c == ')') && depth > 0) {
      --depth;
    } else if (c == ' ' && depth == 0 && i + 1 < line.size() && line[i + 1] == '(') {
      return line.substr(at, i - at);
    }
  }
  return line.substr(at);
}

// `thread apply all ...` output by LWP: each thread's lines after its `Thread N (...LWP X...)`
// header.
std::map<long, std::vector<std::string>> by_thread(const std::string& text) {
  static const std::regex header(R"(^Thread \d+ \(.*LWP (\d+)\))");
  std::map<long, std::vector<std::string>> out;
  long current = -1;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    std::smatch m;
    if (std::regex_search(line, m, header)) {
      current = std::stol(m[1].str());
      out[current];
    } else if (current >= 0) {
      out[current].push_back(line);
    }
  }
  return out;
}

// Each thread's frame functions, innermost first.
std::map<long, std::vector<std::string>> backtraces(const std::string& text) {
  std::map<long, std::vector<std::string>> out;
  for (const auto& [lwp, lines] : by_thread(text)) {
    auto& frames = out[lwp];
    for (const auto& l : lines) {
      if (l.size() > 1 && l[0] == '#') {
        frames.push_back(frame_function(l));
      }
    }
  }
  return out;
}

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) {
    s += (s.empty() ? "" : " <- ") + x;
  }
  return s;
}

CliRun gdb(std::vector<std::string> args) {
  std::vector<std::string> argv = {test_gdb().path, "-nx", "-q", "-batch"};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_program(std::move(argv), std::chrono::seconds(120));
}

// gdb over `core` of `exe` with the commands `cmds`.
CliRun gdb_core(const std::string& exe, const std::string& core,
                const std::vector<std::string>& cmds) {
  std::vector<std::string> args = {"-ex", "file " + exe, "-ex", "core-file " + core};
  for (const auto& c : cmds) {
    args.push_back("-ex");
    args.push_back(c);
  }
  return gdb(args);
}

CliRun gdb_live(std::int64_t pid, const std::vector<std::string>& cmds) {
  std::vector<std::string> args = {"-p", std::to_string(pid)};
  for (const auto& c : cmds) {
    args.push_back("-ex");
    args.push_back(c);
  }
  return gdb(args);
}

// Waits (at most 10 s) until thread `tid` of `pid` sits in system call `nr`
// (/proc/PID/task/TID/syscall): deadlock_target's main thread prints `ready` and only then
// reaches pause(), so a stop right after `ready` can find it still in write().
bool wait_in_syscall(std::int64_t pid, std::int64_t tid, int nr) {
  const std::string path =
      "/proc/" + std::to_string(pid) + "/task/" + std::to_string(tid) + "/syscall";
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < deadline) {
    if (read_file(path).rfind(std::to_string(nr) + " ", 0) == 0) {
      return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return false;
}

void check_capture_shape(const capture::Capture& cap, std::int64_t pid, std::size_t threads) {
  REQUIRE(cap.threads.size() == threads);
  CHECK(cap.threads.front().tid == pid); // the thread-group leader first
  std::set<std::int64_t> tids;
  for (const auto& t : cap.threads) {
    INFO("thread " << t.tid << " " << t.name);
    tids.insert(t.tid);
    CHECK(t.prstatus_regs.size() == 27 * 8); // struct user_regs_struct
    CHECK(t.fp_regs.size() == 512);          // struct user_fpregs_struct
    CHECK(!t.name.empty());
    CHECK(t.pending_signal == 0);
  }
  CHECK(tids.size() == threads);
  CHECK(cap.command_name == cap.threads.front().name);
  CHECK(cap.executable == fs::read_symlink("/proc/" + std::to_string(pid) + "/exe").string());
  CHECK(!cap.auxv.empty());
  CHECK(!cap.files.empty());
  CHECK(!cap.memory.empty());
  CHECK(cap.stop_seconds >= cap.seize_seconds);
  CHECK(cap.seize_seconds > 0);
  for (std::size_t i = 1; i < cap.memory.size(); ++i) {
    const auto& a = cap.memory[i - 1];
    CHECK(a.address + a.bytes.size() < cap.memory[i].address); // disjoint, sorted, merged
  }
}

} // namespace

TEST_CASE("capture: every thread of a 10-thread target is held once then copied and let go",
          "[live][capture]") {
  SpinTarget::Config cfg;
  cfg.spin_threads = 8;
  cfg.sleepy = true;
  SpinTarget target(cfg);
  const std::size_t threads = thread_states(target.pid()).size();
  REQUIRE(threads == 10);
  std::vector<char> held_states;
  capture::Options opts;
  opts.while_stopped = [&] { held_states = thread_states(target.pid()); };
  const auto cap = capture::take(target.pid(), opts);
  std::printf("capture of %zu threads: stop %.6f s, seize %.6f s, %zu regions\n",
              cap.threads.size(), cap.stop_seconds, cap.seize_seconds, cap.memory.size());
  for (const auto& w : cap.warnings) {
    INFO("warning: " << w);
  }
  CHECK(cap.warnings.empty());
  check_capture_shape(cap, target.pid(), threads);
  // The stack copy's cap holds: 256 bytes from each stack pointer's red zone.
  capture::Options small;
  small.stack_bytes_per_thread = 256;
  const auto capped = capture::take(target.pid(), small);
  std::size_t stack_bytes = 0;
  for (const auto& r : capped.memory) {
    stack_bytes += r.bytes.size();
  }
  std::size_t all_bytes = 0;
  for (const auto& r : cap.memory) {
    all_bytes += r.bytes.size();
  }
  CHECK(stack_bytes < all_bytes);
  // While the callback ran, every thread was in a ptrace-stop...
  REQUIRE(held_states.size() == threads);
  for (char s : held_states) {
    CHECK(s == 't');
  }
  // ...and after, none is.
  require_no_thread_stopped(target.pid(), threads);
  require_running_again(target);
}

TEST_CASE("capture: a target killed while held is its parent's to reap", "[live][capture]") {
  SpinTarget::Config cfg;
  cfg.spin_threads = 4;
  cfg.sleepy = true;
  SpinTarget target(cfg);
  capture::Options opts;
  opts.while_stopped = [&] {
    ::kill(static_cast<pid_t>(target.pid()), SIGKILL);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  };
  const auto cap = capture::take(target.pid(), opts);
  CHECK(cap.threads.size() == 6);
  // This process is the target's parent (and was its tracer): the exit status is still here.
  std::string fate = "running";
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (fate == "running" && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    fate = target.fate();
  }
  CHECK(fate == "killed by signal 9");
}

TEST_CASE("capture: a while_stopped that throws and a timeout still let every thread go",
          "[live][capture]") {
  SpinTarget::Config cfg;
  cfg.spin_threads = 4;
  cfg.sleepy = true;
  SpinTarget target(cfg);
  const std::size_t threads = thread_states(target.pid()).size();
  SECTION("while_stopped throws: a warning, the capture still returned") {
    capture::Options opts;
    opts.while_stopped = [] { throw std::runtime_error("frame reader failed"); };
    const auto cap = capture::take(target.pid(), opts);
    CHECK(cap.threads.size() == threads);
    REQUIRE(cap.warnings.size() == 1);
    CHECK(cap.warnings[0].find("frame reader failed") != std::string::npos);
  }
  SECTION("a zero timeout: Error(Timeout)") {
    capture::Options opts;
    opts.timeout = std::chrono::milliseconds(0);
    try {
      capture::take(target.pid(), opts);
      FAIL("no timeout");
    } catch (const Error& e) {
      CHECK(e.code() == ExitCode::Timeout);
      CHECK(std::string(e.what()).find("let go") != std::string::npos);
      CHECK(!e.hint().empty());
    }
  }
  require_no_thread_stopped(target.pid(), threads);
  require_running_again(target);
}

TEST_CASE("capture: a thread that never stops is copied from /proc unheld, and let go",
          "[live][capture]") {
  // A target whose second thread waits in vfork() for a child that never execs: uninterruptible
  // (state D), like a thread stuck in a driver call. PTRACE_INTERRUPT cannot stop it, and
  // PTRACE_DETACH needs a stopped tracee: only the end of the capturing thread lets it go. The
  // capture holds the main thread, gives the other up after its grace, copies it from what
  // /proc/PID/task/TID/syscall gives, and gdb unwinds it through vfork to the thread's start.
  auto* shared = static_cast<std::atomic<long>*>(
      ::mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0));
  REQUIRE(shared != MAP_FAILED);
  static std::atomic<long>* g_vfork_child = nullptr;
  g_vfork_child = shared;
  const pid_t target = ::fork();
  REQUIRE(target >= 0);
  if (target == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    pthread_t t;
    ::pthread_create(
        &t, nullptr,
        [](void*) -> void* {
          const pid_t c = ::vfork();
          if (c == 0) {
            ::syscall(SYS_prctl, PR_SET_PDEATHSIG, SIGKILL);
            g_vfork_child->store(::syscall(SYS_getpid));
            for (;;) {
              ::syscall(SYS_pause);
            }
          }
          for (;;) {
            ::pause();
          }
        },
        nullptr);
    for (;;) {
      ::pause();
    }
  }
  pid_t reap = target;
  const std::string task = "/proc/" + std::to_string(target) + "/task/";
  // Both threads in place: the second one in vfork's wait (state D).
  std::string vforking;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (vforking.empty() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    if (shared->load() == 0) {
      continue;
    }
    for (const auto& e : fs::directory_iterator(task)) {
      const std::string stat = read_file(e.path().string() + "/stat");
      const auto close = stat.rfind(')');
      if (close != std::string::npos && close + 2 < stat.size() && stat[close + 2] == 'D') {
        vforking = e.path().filename().string();
      }
    }
  }
  REQUIRE(!vforking.empty());
  const std::string syscall_file = read_file(task + vforking + "/syscall");
  std::vector<char> held_states;
  capture::Options opts;
  opts.while_stopped = [&] { held_states = thread_states(target); };
  const auto cap = capture::take(target, opts);
  // Held past the grace (100 ms) for the thread in D, then not much longer.
  CHECK(cap.stop_seconds >= 0.1);
  CHECK(cap.stop_seconds < 2);
  REQUIRE(cap.threads.size() == 2);
  CHECK(cap.threads[0].tid == target);
  CHECK(cap.threads[0].held);
  const auto& unheld = cap.threads[1];
  CHECK(std::to_string(unheld.tid) == vforking);
  CHECK_FALSE(unheld.held);
  CHECK(unheld.fp_regs.empty());
  user_regs_struct regs;
  REQUIRE(unheld.prstatus_regs.size() == sizeof regs);
  std::memcpy(&regs, unheld.prstatus_regs.data(), sizeof regs);
  INFO("/proc/.../syscall: " << syscall_file);
  CHECK(static_cast<long>(regs.orig_rax) == SYS_vfork);
  CHECK(syscall_file.find(fmt::format("{:#x} {:#x}", regs.rsp, regs.rip)) != std::string::npos);
  // While held: the main thread in a ptrace-stop, the vforking one still in its wait.
  REQUIRE(held_states.size() == 2);
  CHECK(std::count(held_states.begin(), held_states.end(), 't') == 1);
  CHECK(std::count(held_states.begin(), held_states.end(), 'D') == 1);
  bool warned = false;
  for (const auto& w : cap.warnings) {
    warned = warned || (w.find("thread " + vforking + " was in an uninterruptible wait") !=
                            std::string::npos &&
                        w.find("could not be held") != std::string::npos);
  }
  CHECK(warned);
  // gdb unwinds the unheld thread from its PC and stack pointer alone: vfork keeps its return
  // address in rdi across the call, which /proc gives as the first argument.
  TempDir dir;
  const std::string core = dir.file("vfork.core");
  capture::write_core(cap, core);
  const auto from_core = gdb_core(fs::read_symlink("/proc/" + std::to_string(target) + "/exe"),
                                  core, {"thread apply all bt"});
  INFO("gdb on the core:\n" << from_core.out << from_core.err);
  const auto bts = backtraces(from_core.out);
  REQUIRE(bts.count(unheld.tid) == 1);
  const auto& frames = bts.at(unheld.tid);
  REQUIRE(frames.size() >= 3);
  CHECK(frames.front().find("vfork") != std::string::npos);
  CHECK(std::find(frames.begin(), frames.end(), "start_thread") != frames.end());
  // No thread is traced any more...
  for (const auto& e : fs::directory_iterator(task)) {
    const std::string status = read_file(e.path().string() + "/status");
    INFO(e.path().string() << "/status:\n" << status);
    CHECK(status.find("TracerPid:\t0\n") != std::string::npos);
  }
  // ...so once its vfork child exits, the thread runs on rather than stopping for the interrupt
  // it was sent.
  ::kill(static_cast<pid_t>(shared->load()), SIGKILL);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  const auto states = thread_states(target);
  REQUIRE(states.size() == 2);
  for (char st : states) {
    CHECK(st == 'S');
  }
  kill_and_reap(reap);
  ::munmap(shared, 4096);
}

TEST_CASE("capture: a tracer SIGKILLed while it holds the target leaves every thread running",
          "[live][capture]") {
  SpinTarget::Config cfg;
  cfg.spin_threads = 8;
  cfg.sleepy = true;
  SpinTarget target(cfg);
  const std::size_t threads = thread_states(target.pid()).size();
  int pipe_fds[2];
  REQUIRE(::pipe(pipe_fds) == 0);
  const pid_t tracer = ::fork();
  REQUIRE(tracer >= 0);
  if (tracer == 0) {
    ::close(pipe_fds[0]);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    try {
      capture::Options opts;
      opts.while_stopped = [&] {
        const char held = 'h';
        (void)!::write(pipe_fds[1], &held, 1);
        ::sleep(60); // killed here
      };
      capture::take(target.pid(), opts);
    } catch (...) {
    }
    ::_exit(3);
  }
  ::close(pipe_fds[1]);
  pollfd p{pipe_fds[0], POLLIN, 0};
  char got = 0;
  const bool held = ::poll(&p, 1, 20'000) == 1 && ::read(pipe_fds[0], &got, 1) == 1;
  ::close(pipe_fds[0]);
  std::vector<char> states = thread_states(target.pid());
  ::kill(tracer, SIGKILL);
  int status = 0;
  ::waitpid(tracer, &status, 0);
  REQUIRE(held);
  CHECK(WIFSIGNALED(status));
  // The tracer held every thread when it died...
  REQUIRE(states.size() == threads);
  for (char s : states) {
    CHECK(s == 't');
  }
  // ...and the kernel's detach let each one run on: no SIGSTOP was queued by PTRACE_SEIZE.
  require_no_thread_stopped(target.pid(), threads);
  require_running_again(target);
}

TEST_CASE("capture: a signal met during the stop is delivered after it", "[live][capture]") {
  // A forked target counting a queued real-time signal (never merged): every one sent must reach
  // the handler although many arrive while the target is held (a signal-delivery-stop in place of
  // the interrupt's stop, re-sent by the detach).
  auto* shared = static_cast<std::atomic<long>*>(
      ::mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0));
  REQUIRE(shared != MAP_FAILED);
  new (shared) std::atomic<long>(0);
  static std::atomic<long>* g_count = nullptr;
  g_count = shared;
  const int sig = SIGRTMIN + 1;
  pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    struct sigaction sa {};
    sa.sa_handler = [](int) { g_count->fetch_add(1); };
    ::sigaction(sig, &sa, nullptr);
    shared[1].store(1); // ready
    for (;;) {
      ::pause();
    }
  }
  while (shared[1].load() == 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  std::atomic<bool> stop{false};
  std::atomic<long> sent{0};
  std::thread sender([&] {
    while (!stop.load()) {
      if (::sigqueue(child, sig, sigval{}) == 0) {
        sent.fetch_add(1);
      }
      std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
  });
  int with_signal = 0;
  for (int i = 0; i < 300; ++i) {
    const auto cap = capture::take(child);
    REQUIRE(cap.threads.size() == 1);
    if (cap.threads[0].pending_signal != 0) {
      CHECK(cap.threads[0].pending_signal == sig);
      ++with_signal;
    }
  }
  stop.store(true);
  sender.join();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (shared->load() < sent.load() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  std::printf("signals: %ld sent, %ld handled, %d of 300 captures met one\n", sent.load(),
              shared->load(), with_signal);
  CHECK(sent.load() > 0);
  CHECK(shared->load() == sent.load());
  const auto states = thread_states(child);
  REQUIRE(states.size() == 1);
  CHECK(states[0] != 't');
  CHECK(states[0] != 'T');
  pid_t reap = child;
  kill_and_reap(reap);
  ::munmap(shared, 4096);
}

TEST_CASE("capture: errors name the process", "[live][capture]") {
  // A pid that is surely gone: a child reaped.
  pid_t gone = ::fork();
  if (gone == 0) {
    ::_exit(0);
  }
  ::waitpid(gone, nullptr, 0);
  try {
    capture::take(gone);
    FAIL("captured a reaped process");
  } catch (const Error& e) {
    CHECK(e.code() == ExitCode::NoSuchProcess);
    CHECK(std::string(e.what()).find(std::to_string(gone)) != std::string::npos);
  }
  // A process this one already traces: a second tracer is refused.
  SpinTarget target;
  int ready[2];
  REQUIRE(::pipe(ready) == 0);
  const pid_t other = ::fork();
  if (other == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    const bool ok = ::ptrace(PTRACE_SEIZE, static_cast<pid_t>(target.pid()), nullptr, nullptr) == 0;
    (void)!::write(ready[1], ok ? "y" : "n", 1);
    ::pause();
    ::_exit(0);
  }
  char ok = 0;
  REQUIRE(::read(ready[0], &ok, 1) == 1);
  REQUIRE(ok == 'y');
  try {
    capture::take(target.pid());
    FAIL("captured a process another tracer holds");
  } catch (const Error& e) {
    CHECK(e.code() == ExitCode::PtraceDenied);
    CHECK(std::string(e.what()).find("another tracer holds it: pid " + std::to_string(other)) !=
          std::string::npos);
    CHECK(!e.hint().empty());
  }
  ::close(ready[0]);
  ::close(ready[1]);
  ::kill(other, SIGKILL);
  ::waitpid(other, nullptr, 0);
  require_running_again(target);
}

TEST_CASE("capture: gdb reads the core of a deadlock like the live process", "[live][capture]") {
  DeadlockTarget target;
  REQUIRE(wait_in_syscall(target.pid(), target.pid(), SYS_pause));
  TempDir dir; // cli_util.hpp
  const auto cap = capture::take(target.pid());
  for (const auto& w : cap.warnings) {
    INFO("warning: " << w);
  }
  CHECK(cap.warnings.empty());
  check_capture_shape(cap, target.pid(), DeadlockTarget::kThreads);
  require_no_thread_stopped(target.pid(), DeadlockTarget::kThreads);
  const std::string core = dir.file("deadlock.core");
  capture::write_core(cap, core);

  const std::string exe = cap.executable;
  CHECK(fs::equivalent(exe, find_built("deadlock_target")));
  const auto from_core =
      gdb_core(exe, core,
               {"info sharedlibrary", "thread apply all bt", "thread apply all x/4i $pc",
                // -s: threads not in futex(2) ($rdi 0, say) print nothing rather than an error.
                "thread apply all -s print *(int*)($rdi+8)"});
  INFO("gdb on the core:\n" << from_core.out << from_core.err);
  REQUIRE(from_core.exit_code == 0);
  // The dynamic linker's list came through: libc is a loaded library, its symbols read.
  CHECK(from_core.out.find("/libc.so.6") != std::string::npos);
  CHECK(from_core.out.find("Cannot access memory") == std::string::npos);
  CHECK(from_core.err.find("Cannot access memory") == std::string::npos);
  const auto live = gdb_live(target.pid(), {"thread apply all bt"});
  INFO("gdb attached:\n" << live.out << live.err);
  REQUIRE(live.exit_code == 0);

  // libthread_db lists the core's threads (the C runtime's data and each thread's control block
  // are in it): the same `Thread 0x... (LWP n)` ids as attached, and no warning.
  const auto thread_ids = [](const std::string& text) {
    static const std::regex id(R"(^Thread \d+ \((Thread 0x[0-9a-f]+ \(LWP \d+\)))");
    std::set<std::string> out;
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line)) {
      std::smatch m;
      if (std::regex_search(line, m, id)) {
        out.insert(m[1].str());
      }
    }
    return out;
  };
  CHECK(from_core.err.find("libthread_db") == std::string::npos);
  CHECK(thread_ids(from_core.out).size() == DeadlockTarget::kThreads);
  CHECK(thread_ids(from_core.out) == thread_ids(live.out));
  const auto core_bt = backtraces(from_core.out);
  const auto live_bt = backtraces(live.out);
  REQUIRE(core_bt.size() == DeadlockTarget::kThreads);
  REQUIRE(live_bt.size() == DeadlockTarget::kThreads);
  for (const auto& [lwp, frames] : live_bt) {
    INFO("LWP " << lwp << " live: " << join(frames));
    REQUIRE(core_bt.count(lwp) == 1);
    INFO("core: " << join(core_bt.at(lwp)));
    CHECK(core_bt.at(lwp) == frames);
  }
  // Each locker waits in the futex of a mutex the other owns: the 64 bytes at $rdi hold the
  // owner's TID (the playbook's `*(int*)($rdi+8)`).
  std::map<long, long> owner;
  int lockers = 0;
  for (const auto& [lwp, lines] : by_thread(from_core.out)) {
    const auto& frames = core_bt.at(lwp);
    if (std::find(frames.begin(), frames.end(), "__GI___lll_lock_wait") == frames.end()) {
      continue;
    }
    ++lockers;
    for (const auto& l : lines) {
      std::smatch m;
      static const std::regex value(R"(^\$\d+ = (\d+))");
      if (std::regex_search(l, m, value)) {
        owner[lwp] = std::stol(m[1].str());
      }
    }
  }
  REQUIRE(lockers == 2);
  REQUIRE(owner.size() == 2);
  const long a = owner.begin()->first;
  const long b = std::next(owner.begin())->first;
  CHECK(owner[a] == b);
  CHECK(owner[b] == a);
  // The code at each thread's pc reads (the files of NT_FILE): `=> 0x...:\tinsn`.
  std::size_t code_lines = 0;
  for (const auto& [lwp, lines] : by_thread(from_core.out)) {
    for (const auto& l : lines) {
      if (l.rfind("=> 0x", 0) == 0) {
        ++code_lines;
        CHECK(l.find(":\t") != std::string::npos);
      }
    }
  }
  CHECK(code_lines == DeadlockTarget::kThreads);
}

TEST_CASE("capture: gdb reads the core of napping and of spinning threads like the live process",
          "[live][capture]") {
  SpinTarget::Config cfg;
  cfg.spin_threads = 8;
  // Napping threads sit in nanosleep (a syscall); spinning ones run user code when interrupted.
  cfg.sleepy = GENERATE(true, false);
  if (!cfg.sleepy) {
    cfg.spin_threads = 2;
  }
  INFO("sleepy " << cfg.sleepy);
  SpinTarget target(cfg);
  const std::size_t threads = thread_states(target.pid()).size();
  TempDir dir; // cli_util.hpp
  const auto cap = capture::take(target.pid());
  check_capture_shape(cap, target.pid(), threads);
  const std::string core = dir.file("spin.core");
  capture::write_core(cap, core);
  require_running_again(target);

  const auto from_core =
      gdb_core(find_built("spin_target"), core, {"info sharedlibrary", "thread apply all bt"});
  INFO("gdb on the core:\n" << from_core.out << from_core.err);
  REQUIRE(from_core.exit_code == 0);
  CHECK(from_core.out.find("/libc.so.6") != std::string::npos);
  const auto live = gdb_live(target.pid(), {"thread apply all bt"});
  INFO("gdb attached:\n" << live.out << live.err);
  REQUIRE(live.exit_code == 0);
  const auto core_bt = backtraces(from_core.out);
  const auto live_bt = backtraces(live.out);
  REQUIRE(core_bt.size() == threads);
  REQUIRE(live_bt.size() == threads);
  int in_sync = 0;
  for (const auto& [lwp, frames] : live_bt) {
    INFO("LWP " << lwp << " live: " << join(frames));
    REQUIRE(core_bt.count(lwp) == 1);
    auto mine = core_bt.at(lwp);
    INFO("core: " << join(mine));
    if (lwp == target.pid()) {
      // The main thread ticks every millisecond: compare from `main` outward.
      auto from_main = [](std::vector<std::string> f) {
        const auto it = std::find(f.begin(), f.end(), "main");
        return std::vector<std::string>(it, f.end());
      };
      CHECK(!from_main(mine).empty());
      CHECK(from_main(mine) == from_main(frames));
      continue;
    }
    CHECK(mine == frames);
    in_sync += std::count(mine.begin(), mine.end(), "start_sync");
  }
  CHECK(in_sync == cfg.spin_threads);
}

// Not run by default (hidden): the stop time of napping targets, medians of 5 captures.
//   build/tests/test_live "[capture-bench]"
TEST_CASE("capture: stop time of 10 and 1000 napping threads", "[.][capture-bench]") {
  for (int spin : {8, 998}) {
    SpinTarget::Config cfg;
    cfg.spin_threads = spin;
    cfg.sleepy = true;
    SpinTarget target(cfg);
    const std::size_t threads = thread_states(target.pid()).size();
    std::vector<double> stop;
    std::vector<double> seize;
    std::vector<double> write;
    std::vector<double> gap; // the longest pause the target's main thread saw in its ticks
    std::size_t bytes = 0;
    TempDir dir; // cli_util.hpp
    for (int run = 0; run < 5; ++run) {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      target.reset_max_gap();
      const auto cap = capture::take(target.pid());
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      gap.push_back(target.max_gap_seconds());
      REQUIRE(cap.threads.size() == threads);
      stop.push_back(cap.stop_seconds);
      seize.push_back(cap.seize_seconds);
      bytes = 0;
      for (const auto& r : cap.memory) {
        bytes += r.bytes.size();
      }
      const auto t0 = std::chrono::steady_clock::now();
      capture::write_core(cap, dir.file("bench.core"));
      write.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    std::sort(write.begin(), write.end());
    std::sort(gap.begin(), gap.end());
    // The same target under a plain gdb attach and detach, for scale.
    std::vector<double> gdb_gap;
    for (int run = 0; run < 3; ++run) {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      target.reset_max_gap();
      REQUIRE(gdb({"-p", std::to_string(target.pid())}).exit_code == 0);
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      gdb_gap.push_back(target.max_gap_seconds());
    }
    std::sort(gdb_gap.begin(), gdb_gap.end());
    std::sort(stop.begin(), stop.end());
    std::sort(seize.begin(), seize.end());
    std::printf("%zu threads: stop median %.2f ms (min %.2f, max %.2f), seize median %.2f ms, "
                "%zu bytes copied, write_core median %.2f ms; the target's longest tick gap: "
                "median %.2f ms (gdb -batch -p attach+detach: median of 3 %.1f ms)\n",
                threads, stop[2] * 1e3, stop[0] * 1e3, stop[4] * 1e3, seize[2] * 1e3, bytes,
                write[2] * 1e3, gap[2] * 1e3, gdb_gap[1] * 1e3);
    require_running_again(target);
  }
}

TEST_CASE("capture: a napping thread's stack fingerprint holds across captures, its bytes do not",
          "[live][capture]") {
  SpinTarget::Config cfg;
  cfg.spin_threads = 4;
  cfg.sleepy =
      true; // nanosleep(&ts, &ts) for 500 ms in a loop: each interrupt writes the time left
  SpinTarget target(cfg);
  const auto first = capture::take(target.pid());
  std::this_thread::sleep_for(std::chrono::milliseconds(600)); // past the interrupted nap
  const auto second = capture::take(target.pid());
  auto in_sleep = [](const capture::Thread& t) {
    user_regs_struct regs;
    std::memcpy(&regs, t.prstatus_regs.data(), sizeof regs);
    return static_cast<long>(regs.orig_rax) == SYS_clock_nanosleep;
  };
  auto stack_from_rsp = [](const capture::Capture& c, const capture::Thread& t) {
    user_regs_struct regs;
    std::memcpy(&regs, t.prstatus_regs.data(), sizeof regs);
    for (const auto& r : c.memory) {
      if (regs.rsp >= r.address && regs.rsp < r.address + r.bytes.size()) {
        return r.bytes.substr(static_cast<std::size_t>(regs.rsp - r.address));
      }
    }
    return std::string();
  };
  std::map<std::int64_t, const capture::Thread*> before;
  for (const auto& t : first.threads) {
    before[t.tid] = &t;
  }
  // The napping threads caught asleep both times (on a loaded machine one may be caught awake).
  int compared = 0;
  int bytes_differ = 0;
  for (const auto& t : second.threads) {
    // The main thread naps 1 ms between ticks whose counters live on its stack.
    if (t.tid == target.pid() || before.count(t.tid) == 0 || !in_sleep(t) ||
        !in_sleep(*before[t.tid])) {
      continue;
    }
    const auto& b = *before[t.tid];
    INFO("thread " << t.tid << " " << t.name);
    ++compared;
    CHECK(capture::stack_fingerprint(second, t) == capture::stack_fingerprint(first, b));
    bytes_differ += stack_from_rsp(second, t) != stack_from_rsp(first, b);
  }
  CHECK(compared >= 3);
  // The kernel wrote a different time left each time: a byte-for-byte test would unwind them all.
  CHECK(bytes_differ >= 3);
  require_running_again(target);
}
