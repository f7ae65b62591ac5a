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
#include <sstream>
#include <string>
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

} // namespace rocplay::testing
