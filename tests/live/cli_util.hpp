// Running the `rocplay` binary from live tests: arguments in, exit status, stdout and stderr out,
// with a deadline (a hung rocplay is killed and the test fails, never hangs).
#pragma once

#include "session_target.hpp"

#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace rocplay::testing {

struct CliRun {
  int exit_code = -1;  // exit status, or 128 + signal when killed by one
  int term_signal = 0; // the signal that killed it, 0 when it exited
  bool timed_out = false;
  std::string out;
  std::string err;
};

// Runs a program (argv[0] a path) to its end. `watch` is called while the output is collected,
// with the child's pid and its stderr so far (to signal it at the right moment).
inline CliRun run_program(std::vector<std::string> argv_s, // execve wants mutable strings
                          std::chrono::milliseconds timeout = std::chrono::seconds(60),
                          const std::vector<std::string>& extra_env = {},
                          const std::function<void(pid_t, const std::string& err)>& watch = {}) {
  std::vector<std::string> env_s;
  for (char** e = environ; *e != nullptr; ++e) {
    env_s.emplace_back(*e);
  }
  env_s.insert(env_s.end(), extra_env.begin(), extra_env.end());
  std::vector<char*> argv;
  for (auto& a : argv_s) {
    argv.push_back(a.data());
  }
  argv.push_back(nullptr);
  std::vector<char*> envp;
  for (auto& e : env_s) {
    envp.push_back(e.data());
  }
  envp.push_back(nullptr);
  int out[2];
  int err[2];
  if (::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0) {
    throw std::runtime_error("pipe failed");
  }
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(out[1], STDOUT_FILENO);
    ::dup2(err[1], STDERR_FILENO);
    ::execve(argv[0], argv.data(), envp.data());
    ::_exit(127);
  }
  ::close(out[1]);
  ::close(err[1]);
  CliRun r;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  bool out_open = true;
  bool err_open = true;
  while (out_open || err_open) {
    if (std::chrono::steady_clock::now() > deadline) {
      r.timed_out = true;
      ::kill(pid, SIGKILL);
      break;
    }
    pollfd p[2] = {{out_open ? out[0] : -1, POLLIN, 0}, {err_open ? err[0] : -1, POLLIN, 0}};
    if (::poll(p, 2, 20) < 0) {
      continue;
    }
    char buf[65536];
    for (int i = 0; i < 2; ++i) {
      if ((p[i].revents & (POLLIN | POLLHUP)) == 0) {
        continue;
      }
      const ssize_t n = ::read(p[i].fd, buf, sizeof buf);
      if (n <= 0) {
        (i == 0 ? out_open : err_open) = false;
      } else {
        (i == 0 ? r.out : r.err).append(buf, static_cast<std::size_t>(n));
      }
    }
    if (watch) {
      watch(pid, r.err);
    }
  }
  ::close(out[0]);
  ::close(err[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (WIFEXITED(status)) {
    r.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    r.exit_code = 128 + WTERMSIG(status);
    r.term_signal = WTERMSIG(status);
  }
  return r;
}

// `rocplay ARGS...`, built in ROCPLAY_BINARY_DIR.
inline CliRun run_rocplay(const std::vector<std::string>& args,
                          std::chrono::milliseconds timeout = std::chrono::seconds(60),
                          const std::vector<std::string>& extra_env = {},
                          const std::function<void(pid_t, const std::string& err)>& watch = {}) {
  std::vector<std::string> argv = {find_built("rocplay")};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_program(argv, timeout, extra_env, watch);
}

// The processes a rocplay run started (its debugger, a launched program and its helper), as seen
// while it ran: once it has ended, none may be left (a debugger orphaned to init, a program left
// stopped or traced). Call scan() from run_program's `watch`; it looks at /proc at most every
// 100 ms.
class Descendants {
public:
  void scan(pid_t root) {
    const auto now = std::chrono::steady_clock::now();
    if (now - last_ < std::chrono::milliseconds(100)) {
      return;
    }
    last_ = now;
    std::map<std::int64_t, process::Stat> all;
    for (const auto& e : std::filesystem::directory_iterator("/proc")) {
      const std::string name = e.path().filename();
      if (name.find_first_not_of("0123456789") != std::string::npos) {
        continue;
      }
      if (auto st = process::read_stat(std::stoll(name))) {
        all.emplace(st->pid, *st);
      }
    }
    for (const auto& [pid, st] : all) {
      // Up the parent chain, a few levels at most: gdb, the program it runs.
      std::int64_t up = st.ppid;
      for (int depth = 0; depth < 4 && up > 1; ++depth) {
        if (up == root) {
          seen_.emplace(pid, st);
          break;
        }
        const auto it = all.find(up);
        up = it == all.end() ? 0 : it->second.ppid;
      }
    }
  }
  std::size_t count() const { return seen_.size(); }
  // Every process seen is gone (or a zombie: dead, waiting for its parent) within 5 s.
  void require_none_left() const {
    for (const auto& [pid, was] : seen_) {
      std::optional<process::Stat> st;
      for (int i = 0; i < 250; ++i) {
        st = process::read_stat(pid);
        // A different starttime is another process that got the same pid.
        if (!st || st->starttime != was.starttime || st->state == 'Z' || st->state == 'X') {
          st.reset();
          break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
      INFO("left behind: pid " << pid << " (" << was.comm << ")");
      CHECK_FALSE(st);
    }
  }

private:
  std::map<std::int64_t, process::Stat> seen_;
  std::chrono::steady_clock::time_point last_{};
};

// The first `n` lines of a text report (where the verdict and its Cause: lines stand).
inline std::string first_lines(const std::string& text, std::size_t n) {
  std::stringstream in(text);
  std::string out;
  std::string line;
  for (std::size_t i = 0; i < n && std::getline(in, line); ++i) {
    out += line + "\n";
  }
  return out;
}

// A text report with its wrapping undone (every run of spaces and line breaks one space), to find a
// sentence whatever the report's width broke it at.
inline std::string unwrapped(const std::string& text) {
  std::string out;
  bool in_space = false;
  for (const char c : text) {
    const bool space = c == ' ' || c == '\n';
    if (space && !in_space) {
      out += ' ';
    } else if (!space) {
      out += c;
    }
    in_space = space;
  }
  return out;
}

// A live process (not a zombie) other than this one whose command line holds `marker`: the
// first found, as `PID: CMDLINE`; empty when none. Looked for after a 100 ms grace.
inline std::string stray_process(const std::string& marker) {
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  for (const auto& e : std::filesystem::directory_iterator("/proc")) {
    const std::string name = e.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) {
      continue;
    }
    const std::string cmd = read_file(e.path().string() + "/cmdline");
    if (cmd.find(marker) != std::string::npos && std::stoll(name) != ::getpid()) {
      const auto st = process::read_stat(std::stoll(name));
      if (st && st->state != 'Z' && st->state != 'X') {
        return name + ": " + cmd;
      }
    }
  }
  return {};
}

// Each non-empty line of JSON Lines output, parsed.
inline std::vector<nlohmann::json> json_lines(const std::string& text) {
  std::vector<nlohmann::json> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty()) {
      out.push_back(nlohmann::json::parse(line));
    }
  }
  return out;
}

// A file in a fresh temporary directory, removed with it.
class TempDir {
public:
  TempDir() {
    char tmpl[] = "/tmp/rocplay-live-XXXXXX";
    path_ = ::mkdtemp(tmpl);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string file(const std::string& name, const std::string& text = {}) const {
    const std::string p = path_ + "/" + name;
    std::ofstream(p) << text;
    return p;
  }
  const std::string& path() const { return path_; }

private:
  std::string path_;
};

// The test gdb behind a bash pipe that holds back the first command line containing `held` (it
// sleeps there for 600 s): a debugger that stops answering at a chosen command. In `dir`.
inline session::Debugger gdb_holding_back(const TempDir& dir, const std::string& held) {
  session::Debugger debugger = test_gdb();
  const std::string gdb = debugger.path;
  debugger.path = dir.file("gdb-wrapper", "#!/bin/bash\n"
                                          "if [ \"$1\" = --version ]; then exec " +
                                              gdb +
                                              " \"$@\"; fi\n"
                                              "while IFS= read -r line; do\n"
                                              "  case \"$line\" in *" +
                                              held +
                                              "*) sleep 600 ;; esac\n"
                                              "  printf '%s\\n' \"$line\"\n"
                                              "done | " +
                                              gdb + " \"$@\"\n");
  std::filesystem::permissions(debugger.path, std::filesystem::perms::owner_all);
  return debugger;
}

} // namespace rocplay::testing
