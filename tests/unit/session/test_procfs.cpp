// /proc parsing, on real files of this machine and on texts in the kernel's documented format.
#include "rocplay/session/process.hpp"
#include "rocplay/session/session.hpp"
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

TEST_CASE("maps: each mapped file once, with its load base", "[session][procfs]") {
  const std::string text =
      "55d0c8a00000-55d0c8a01000 r--p 00000000 08:01 131 /usr/bin/python3.10\n"
      "55d0c8a01000-55d0c8c00000 r-xp 00001000 08:01 131 /usr/bin/python3.10\n"
      "55d0ca000000-55d0ca021000 rw-p 00000000 00:00 0   [heap]\n"
      "7f1c00000000-7f1c00028000 r--p 00000000 08:01 2048 /usr/lib/x86_64-linux-gnu/libc.so.6\n"
      "7f1c00028000-7f1c001bd000 r-xp 00028000 08:01 2048 /usr/lib/x86_64-linux-gnu/libc.so.6\n"
      "7f1c10000000-7f1c10001000 r-xp 00000000 08:01 77 /opt/my venv/lib/_C.cpython-310.so\n"
      "7f1c20000000-7f1c20001000 r-xp 00000000 08:01 78 /tmp/old.so (deleted)\n"
      "7f1c30000000-7f1c30001000 rw-s 00000000 00:05 99 /dev/kfd\n"
      "7f1c40000000-7f1c40001000 rw-s 00000000 00:01 1234 /memfd:pytorch (deleted)\n"
      "7ffd00000000-7ffd00021000 rw-p 00000000 00:00 0   [stack]\n"
      "7ffd10000000-7ffd10001000 rw-p 00000000 00:00 0   [anon:arena /a/b]\n" // a named mapping
      "garbage line\n";
  const auto objs = process::parse_maps(text);
  REQUIRE(objs.size() == 3);
  CHECK(objs[0].path == "/usr/bin/python3.10");
  CHECK(objs[0].base == 0x55d0c8a00000ull);
  CHECK(objs[1].path == "/usr/lib/x86_64-linux-gnu/libc.so.6");
  CHECK(objs[1].base == 0x7f1c00000000ull);
  CHECK(objs[2].path == "/opt/my venv/lib/_C.cpython-310.so"); // spaces kept
  CHECK(objs[2].base == 0x7f1c10000000ull);

  const auto self = process::read_mapped_objects(::getpid());
  REQUIRE(self.has_value());
  const std::string exe = process::read_exe(::getpid());
  CHECK(exe.find("test_session") != std::string::npos);
  bool has_exe = false;
  bool has_libc = false;
  for (const auto& o : *self) {
    has_exe = has_exe || o.path == exe;
    has_libc = has_libc || o.path.find("libc.so") != std::string::npos;
  }
  CHECK(has_exe);
  CHECK(has_libc);
  CHECK(process::read_exe(0).empty());
}
