// /proc parsing, on real files of this machine and on texts in the kernel's documented format.
#include "rocplay/process.hpp"
#include "rocplay/session.hpp"
#include "session/internal.hpp"

#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <thread>

using namespace rocplay;
using namespace std::chrono_literals;

TEST_CASE("stat: comm with spaces and parentheses", "[session][procfs]") {
  const std::string text =
      "4242 (python3 (worker) 1) S 4200 4242 4200 0 -1 4194560 1234 0 0 0 1500 250 0 0 20 0 "
      "57 0 98765 123456789 4321 18446744073709551615 1 1 0 0 0 0 0 16781312 17642 0 0 0 17 3 "
      "0 0 0 0 0\n";
  const auto st = process::parse_stat(text);
  REQUIRE(st.has_value());
  CHECK(st->pid == 4242);
  CHECK(st->comm == "python3 (worker) 1");
  CHECK(st->state == 'S');
  CHECK(st->ppid == 4200);
  CHECK(st->pgrp == 4242);
  CHECK(st->utime == 1500);
  CHECK(st->stime == 250);
  CHECK(st->num_threads == 57);
  CHECK(st->starttime == 98765);

  CHECK_FALSE(process::parse_stat("").has_value());
  CHECK_FALSE(process::parse_stat("12 (x").has_value());
  CHECK_FALSE(process::parse_stat("12 (x) S 1 2").has_value()); // truncated
  CHECK_FALSE(process::parse_stat("abc (x) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20")
                  .has_value());
}

TEST_CASE("stat of this process", "[session][procfs]") {
  const auto st = process::read_stat(::getpid());
  REQUIRE(st.has_value());
  CHECK(st->pid == ::getpid());
  CHECK(st->ppid == ::getppid());
  CHECK(st->state == 'R');
  CHECK(st->num_threads >= 1);
  CHECK_FALSE(process::read_stat(0).has_value());
  CHECK_FALSE(process::read_stat(-5).has_value());
}

TEST_CASE("a stopped child reads as T", "[session][procfs]") {
  const pid_t child = ::fork();
  if (child == 0) {
    for (;;) {
      ::pause();
    }
  }
  REQUIRE(child > 0);
  ::kill(child, SIGSTOP);
  char state = '?';
  for (int i = 0; i < 200 && state != 'T'; ++i) {
    std::this_thread::sleep_for(5ms);
    state = process::read_stat(child)->state;
  }
  CHECK(state == 'T');
  CHECK(process::is_stopped(state));
  ::kill(child, SIGCONT);
  for (int i = 0; i < 200 && process::is_stopped(state); ++i) {
    std::this_thread::sleep_for(5ms);
    state = process::read_stat(child)->state;
  }
  CHECK_FALSE(process::is_stopped(state));
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
}

TEST_CASE("status: tracer, capabilities, uids", "[session][procfs]") {
  const std::string text = "Name:\tpython3\nUmask:\t0022\nState:\tS (sleeping)\nTgid:\t4242\n"
                           "TracerPid:\t4300\nUid:\t1000\t1000\t1000\t1000\n"
                           "Gid:\t1000\t1000\t1000\t1000\nCapEff:\t00000000a80425fb\n";
  const auto st = process::parse_status(text);
  CHECK(st.name == "python3");
  CHECK(st.tracer_pid == 4300);
  CHECK(st.uid_real == 1000);
  CHECK(st.uid_effective == 1000);
  CHECK(st.uid_saved == 1000);
  REQUIRE(st.cap_eff.has_value());
  CHECK(*st.cap_eff == 0xa80425fbull);
  // Docker's default set lacks CAP_SYS_PTRACE (bit 19).
  CHECK_FALSE(process::has_capability(*st.cap_eff, process::kCapSysPtrace));
  CHECK(process::has_capability(0x80000, process::kCapSysPtrace));

  const auto self = process::read_status(::getpid());
  REQUIRE(self.has_value());
  CHECK(self->tracer_pid.has_value());
  CHECK(self->uid_real == static_cast<std::int64_t>(::getuid()));
  CHECK(self->cap_eff.has_value());
}

TEST_CASE("environ: NUL-separated, first wins, relevant subset", "[session][procfs]") {
  const std::string raw("PATH=/usr/bin\0HSA_TOOLS_LIB=librocm-debug-agent.so.2\0RANK=3\0"
                        "EMPTY=\0=junk\0noequals\0RANK=9\0A=b=c\0",
                        96);
  const auto env = process::parse_environ(raw);
  CHECK(env.at("PATH") == "/usr/bin");
  CHECK(env.at("RANK") == "3");
  CHECK(env.at("EMPTY").empty());
  CHECK(env.at("A") == "b=c");
  CHECK(env.count("noequals") == 0);
  CHECK(env.count("") == 0);
  const auto relevant = process::relevant_env(env);
  CHECK(relevant.size() == 2);
  CHECK(relevant.at("HSA_TOOLS_LIB") == "librocm-debug-agent.so.2");
  CHECK(relevant.at("RANK") == "3");
  CHECK(process::parse_environ(raw, 2).size() == 2);

  ::setenv("ROCPLAY_TEST_MARKER", "x", 1); // not in /proc/self/environ (set after exec)
  const auto self = process::read_environ(::getpid());
  REQUIRE(self.has_value());
  CHECK_FALSE(self->empty());
}

TEST_CASE("cmdline of this process", "[session][procfs]") {
  const std::string cmd = process::read_cmdline(::getpid());
  CHECK(cmd.find("test_session") != std::string::npos);
  CHECK(process::read_cmdline(0).empty());
}

TEST_CASE("open GPU devices are read from /proc/PID/fd", "[session][procfs]") {
  char path[] = "/tmp/rocplay-fakekfd-XXXXXX";
  const int fd = ::mkstemp(path);
  REQUIRE(fd >= 0);
  const auto open = process::read_gpu_open(::getpid(), {path});
  CHECK(open.known);
  CHECK(open.kfd);
  CHECK(open.any());
  REQUIRE(open.devices.size() == 1);
  CHECK(open.devices[0] == path);
  ::close(fd);
  ::unlink(path);
  const auto none = process::read_gpu_open(::getpid(), {path});
  CHECK(none.known);
  CHECK_FALSE(none.any());
  // This machine has no GPU: nothing of ours holds /dev/kfd or /dev/nvidia*.
  CHECK_FALSE(process::read_gpu_open(::getpid()).any());
}

TEST_CASE("preconditions on real processes", "[session][procfs]") {
  session::Debugger gdb;
  gdb.kind = DebuggerKind::Gdb;
  session::Options options;
  // rocplay itself.
  try {
    session::check_attach(::getpid(), gdb, options);
    FAIL("attaching to ourselves must be refused");
  } catch (const Error& e) {
    CHECK(e.code() == ExitCode::Usage);
  }
  CHECK_THROWS_AS(session::check_attach(0, gdb, options), Error);

  // A zombie is no process to attach to.
  const pid_t child = ::fork();
  if (child == 0) {
    ::_exit(0);
  }
  for (int i = 0; i < 200 && process::read_stat(child)->state != 'Z'; ++i) {
    std::this_thread::sleep_for(5ms);
  }
  try {
    session::check_attach(child, gdb, options);
    FAIL("a zombie must be refused");
  } catch (const Error& e) {
    CHECK(e.code() == ExitCode::NoSuchProcess);
    CHECK(std::string(e.what()).find("zombie") != std::string::npos);
  }
  ::waitpid(child, nullptr, 0);
  try {
    session::check_attach(child, gdb, options);
    FAIL("a reaped pid must be refused");
  } catch (const Error& e) {
    CHECK(e.code() == ExitCode::NoSuchProcess);
  }
}

TEST_CASE("known-benign attach noise is summarised", "[session][noise]") {
  session::detail::NoiseFilter noise;
  CHECK(noise.benign("warning: Symbol PySlice_Type has different size in shared object, "
                     "consider re-linking"));
  CHECK(noise.benign("warning: Symbol PyBool_Type has different size in shared object, "
                     "consider re-linking"));
  CHECK(noise.benign("[Thread debugging using libthread_db enabled]"));
  CHECK(
      noise.benign("Using host libthread_db library \"/lib/x86_64-linux-gnu/libthread_db.so.1\"."));
  CHECK_FALSE(noise.benign("warning: At least one agent is busy (debugging may be enabled by "
                           "another process)"));
  CHECK_FALSE(noise.benign("amd-dbgapi: could not attach to process 42 (fatal), GPU debugging "
                           "will not be available."));
  CHECK(noise.count() == 4);
  const std::string s = noise.summary();
  CHECK(s.find("suppressed 4 known-benign") != std::string::npos);
  CHECK(s.find("2x symbol size mismatch") != std::string::npos);
  CHECK(s.find("2x libthread_db") != std::string::npos);
  CHECK(s.find('\n') == std::string::npos);
  CHECK(session::detail::NoiseFilter{}.summary().empty());
}
