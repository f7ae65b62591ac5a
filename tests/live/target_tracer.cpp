// Another tracer on one thread of the target (`strace -p TID`), and targets the kernel never lets
// anyone trace (kernel threads, a protected init): rocplay refuses before attaching and names why,
// and an attach that stalls anyway is given up early, the target left running.
#include "cli_util.hpp"

#include <catch2/catch.hpp>

#include <dirent.h>

#include <memory>
#include <thread>

using namespace rocplay;
using namespace rocplay::testing;
using namespace std::chrono_literals;

namespace {

std::vector<std::int64_t> tracer_test_thread_ids(std::int64_t pid) {
  std::vector<std::int64_t> out;
  DIR* dir = ::opendir(("/proc/" + std::to_string(pid) + "/task").c_str());
  if (dir == nullptr) {
    return out;
  }
  while (const dirent* e = ::readdir(dir)) {
    if (e->d_name[0] >= '0' && e->d_name[0] <= '9') {
      out.push_back(std::stoll(e->d_name));
    }
  }
  ::closedir(dir);
  std::sort(out.begin(), out.end());
  return out;
}

// `strace -p TID` on one worker thread of the target, as a person would run it; ended (it
// detaches) when this goes away.
class ThreadStrace {
public:
  explicit ThreadStrace(std::int64_t tid) : tid_(tid) {
    pid_ = ::fork();
    if (pid_ == 0) {
      const int devnull = ::open("/dev/null", O_RDWR);
      ::dup2(devnull, STDOUT_FILENO);
      ::dup2(devnull, STDERR_FILENO);
      ::execlp("strace", "strace", "-q", "-o", "/dev/null", "-p", std::to_string(tid).c_str(),
               static_cast<char*>(nullptr));
      ::_exit(127);
    }
    // Attached once the thread names it as its tracer.
    for (int i = 0; i < 500; ++i) {
      const auto st = process::read_status(tid_);
      if (st && st->tracer_pid == pid_) {
        return;
      }
      std::this_thread::sleep_for(10ms);
    }
    throw std::runtime_error("strace did not attach to thread " + std::to_string(tid) +
                             " (is strace installed? scripts/setup.sh installs it)");
  }
  ~ThreadStrace() {
    ::kill(pid_, SIGTERM); // strace detaches on SIGTERM
    int status = 0;
    ::waitpid(pid_, &status, 0);
  }
  ThreadStrace(const ThreadStrace&) = delete;
  ThreadStrace& operator=(const ThreadStrace&) = delete;
  pid_t pid() const { return pid_; }

private:
  std::int64_t tid_;
  pid_t pid_ = -1;
};

// Every thread: not stopped, and traced by nobody but `allowed_tracer`.
void tracer_test_all_running(std::int64_t pid, std::int64_t allowed_tracer = 0) {
  const auto tids = tracer_test_thread_ids(pid);
  REQUIRE(tids.size() >= 2);
  for (const auto tid : tids) {
    const auto st = process::read_stat(tid);
    const auto status = process::read_status(tid);
    REQUIRE(st.has_value());
    REQUIRE(status.has_value());
    INFO("thread " << tid << " state " << st->state << " tracer "
                   << status->tracer_pid.value_or(-1));
    // A thread strace follows sits in `t` for a moment at each of its syscalls: it is running
    // when it leaves that state within a second, as it does at strace's pace.
    bool running = !process::is_stopped(st->state);
    for (int i = 0; !running && allowed_tracer != 0 && i < 100; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      const auto again = process::read_stat(tid);
      running = again && !process::is_stopped(again->state);
    }
    CHECK(running);
    CHECK((status->tracer_pid == 0 || status->tracer_pid == allowed_tracer));
  }
}

} // namespace

TEST_CASE("another tracer on one worker thread: refused before attaching, with its pid and name") {
  SpinTarget target;
  const auto tids = tracer_test_thread_ids(target.pid());
  REQUIRE(tids.size() >= 3);
  const std::int64_t worker = tids.back();
  ThreadStrace strace(worker);
  const auto t0 = std::chrono::steady_clock::now();
  const auto r = run_rocplay({"run", "hang-triage", "--pid", std::to_string(target.pid()),
                              "--debugger", "gdb", "--attach-timeout", "60"},
                             90s);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  INFO("stderr: " << r.err);
  INFO("stdout: " << r.out);
  REQUIRE_FALSE(r.timed_out);
  CHECK(r.exit_code == 77);
  CHECK(seconds < 20); // before this check, the threads sat stopped for the whole attach timeout
  CHECK(r.err.find("thread " + std::to_string(worker)) != std::string::npos);
  CHECK(r.err.find("traced by pid " + std::to_string(strace.pid()) + " (strace)") !=
        std::string::npos);
  CHECK(r.err.find("raise the attach timeout") == std::string::npos);
  CHECK(r.out.find("TARGET LEFT STOPPED") == std::string::npos);
  tracer_test_all_running(target.pid(), strace.pid());
  CHECK(target.advances());
}

TEST_CASE("a tracer that seizes a thread after the checks: the stalled attach is given up early") {
  SpinTarget target;
  const auto tids = tracer_test_thread_ids(target.pid());
  REQUIRE(tids.size() >= 3);
  const std::int64_t worker = tids.back();
  auto strace = std::make_unique<ThreadStrace>(worker);
  const pid_t tracer = strace->pid();
  auto options = test_options();
  options.check_preconditions = false; // as if the tracer came between the check and the attach
  options.attach_timeout = 60'000ms;
  const auto t0 = std::chrono::steady_clock::now();
  std::string message;
  ExitCode code = ExitCode::Ok;
  {
    session::Session s(test_gdb(), options);
    try {
      s.attach(target.pid());
    } catch (const Error& e) {
      code = e.code();
      message = e.what();
    }
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  INFO(message);
  CHECK(code == ExitCode::PtraceDenied);
  CHECK(seconds < 20);
  CHECK(message.find("gave up attaching") != std::string::npos);
  CHECK(message.find("traced by pid " + std::to_string(tracer) + " (strace)") != std::string::npos);
  tracer_test_all_running(target.pid(), tracer);
  strace.reset();
  tracer_test_all_running(target.pid());
  CHECK(target.advances());
}

TEST_CASE("a kernel thread is refused before anything attaches, saying why") {
  // kthreadd is pid 2 on Linux; any process flagged PF_KTHREAD would do.
  const auto st = process::read_stat(2);
  if (!st || !process::is_kernel_thread(*st)) {
    WARN("pid 2 is not a kernel thread here (a PID namespace?); nothing to check");
    return;
  }
  const auto r = run_rocplay({"run", "hang-triage", "--pid", "2", "--debugger", "gdb"}, 30s);
  INFO("stderr: " << r.err);
  CHECK(r.exit_code == 77);
  CHECK(r.err.find("is a kernel thread") != std::string::npos);
  CHECK(r.err.find("run rocplay as the target's user") == std::string::npos);
  CHECK(process::read_stat(2)->state != 't');
}

TEST_CASE("pid 1 that the kernel protects: refused before attaching, saying what refused it") {
  // Only where the kernel refuses even the read-mode access check: then rocplay refuses before a
  // debugger starts, and no test ever attaches to a machine's init.
  if (process::ptrace_read_allowed(1) != false) {
    WARN("the kernel lets this process trace pid 1 here; not attaching to init in a test");
    return;
  }
  const auto r = run_rocplay({"run", "hang-triage", "--pid", "1", "--debugger", "gdb"}, 30s);
  INFO("stderr: " << r.err);
  CHECK(r.exit_code == 77);
  CHECK(r.err.find("init process") != std::string::npos);
  CHECK(r.err.find("ptrace access check refuses pid 1") != std::string::npos);
  CHECK(r.err.find("run rocplay as the target's user") == std::string::npos);
}
