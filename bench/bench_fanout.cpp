// Every rank at once: `rocplay run host-stacks --pids P1,...,PN` against N running
// tests/targets/spin_target processes, next to `rocplay run host-stacks --pid P1` alone. Goal
// (issue 6): the N-target wall time within 1.5x of one target's, not N times it.
//
//   bench_fanout [--short] [--runs N] [--targets N] [--threads N] [--debugger NAME]
//                [--rocplay PATH] [--target PATH]
//
// The two ways alternate, N runs each; medians are printed. Each run is the whole rocplay process
// (debuggers spawned, attached, playbook, detached, report written to /dev/null) timed from fork to
// exit; a run whose exit code is not 0 or 1 (findings) fails the benchmark, and so does a target
// left stopped.
#include "spin_target.hpp"

#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

using namespace rocplay::bench;
namespace fs = std::filesystem;

namespace {

// Runs rocplay with `args`, stdout and stderr to /dev/null; returns wall seconds and exit code.
std::pair<double, int> time_rocplay(const std::string& exe, const std::vector<std::string>& args) {
  std::vector<char*> argv;
  std::vector<std::string> owned = args;
  argv.push_back(const_cast<char*>(exe.c_str()));
  for (auto& a : owned) {
    argv.push_back(a.data());
  }
  argv.push_back(nullptr);
  const auto t0 = Clock::now();
  const pid_t pid = ::fork();
  if (pid == 0) {
    const int devnull = ::open("/dev/null", O_WRONLY);
    ::dup2(devnull, STDOUT_FILENO);
    ::dup2(devnull, STDERR_FILENO);
    ::execv(exe.c_str(), argv.data());
    ::_exit(127);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  const double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  return {seconds, WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status)};
}

} // namespace

int main(int argc, char** argv) {
  int runs = 5;
  int n_targets = 8;
  int threads = 10;
  std::string debugger = "gdb";
  std::string rocplay_exe;
  std::string target_exe;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--short") {
      runs = 1;
      n_targets = 3;
    } else if (a == "--runs" && i + 1 < argc) {
      runs = std::max(1, std::stoi(argv[++i]));
    } else if (a == "--targets" && i + 1 < argc) {
      n_targets = std::max(1, std::stoi(argv[++i]));
    } else if (a == "--threads" && i + 1 < argc) {
      threads = std::max(3, std::stoi(argv[++i]));
    } else if (a == "--debugger" && i + 1 < argc) {
      debugger = argv[++i];
    } else if (a == "--rocplay" && i + 1 < argc) {
      rocplay_exe = argv[++i];
    } else if (a == "--target" && i + 1 < argc) {
      target_exe = argv[++i];
    } else {
      std::fprintf(stderr, "usage: bench_fanout [--short] [--runs N] [--targets N] [--threads N] "
                           "[--debugger NAME] [--rocplay PATH] [--target PATH]\n");
      return 64;
    }
  }
  const fs::path build = fs::canonical("/proc/self/exe").parent_path().parent_path();
  if (rocplay_exe.empty()) {
    rocplay_exe = (build / "rocplay").string();
  }
  if (target_exe.empty()) {
    target_exe = (build / "tests" / "spin_target").string();
  }
  for (const auto& exe : {rocplay_exe, target_exe}) {
    if (::access(exe.c_str(), X_OK) != 0) {
      std::fprintf(stderr, "bench_fanout: %s is not built (scripts/build.sh builds it)\n",
                   exe.c_str());
      return 66;
    }
  }

  std::vector<std::unique_ptr<Target>> targets;
  std::string pids;
  for (int i = 0; i < n_targets; ++i) {
    targets.push_back(std::make_unique<Target>(target_exe, threads));
    pids += (i ? "," : "") + std::to_string(targets.back()->pid());
  }
  const std::vector<std::string> common = {"--debugger", debugger,    "--format", "json",
                                           "-o",         "/dev/null", "-q"};
  auto args_for = [&](const std::string& which, const std::string& value) {
    std::vector<std::string> a = {"run", "host-stacks", which, value};
    a.insert(a.end(), common.begin(), common.end());
    return a;
  };
  const auto one_args = args_for("--pid", std::to_string(targets.front()->pid()));
  const auto all_args = args_for("--pids", pids);

  std::vector<double> one;
  std::vector<double> all;
  for (int r = 0; r < runs; ++r) {
    for (const auto* args : {&one_args, &all_args}) {
      const auto [seconds, code] = time_rocplay(rocplay_exe, *args);
      if (code != 0 && code != 1) {
        std::fprintf(stderr, "bench_fanout: rocplay %s exited %d\n", (*args)[2].c_str(), code);
        return 1;
      }
      (args == &one_args ? one : all).push_back(seconds);
    }
    for (const auto& t : targets) {
      if (!t->running()) {
        std::fprintf(stderr, "bench_fanout: target %d left stopped\n", t->pid());
        return 1;
      }
    }
  }
  const double m_one = median(one);
  const double m_all = median(all);
  std::printf("fan-out: %d targets of %d threads, %s, %d runs, %u cores\n", n_targets, threads,
              debugger.c_str(), runs, std::thread::hardware_concurrency());
  std::printf("  one target  (--pid)     median %.3f s  (min %.3f, max %.3f)\n", m_one,
              *std::min_element(one.begin(), one.end()), *std::max_element(one.begin(), one.end()));
  std::printf("  %d targets  (--pids)    median %.3f s  (min %.3f, max %.3f)\n", n_targets, m_all,
              *std::min_element(all.begin(), all.end()), *std::max_element(all.begin(), all.end()));
  std::printf("  ratio %.2fx of one target (goal <= 1.5x; %.1fx would be one after another)\n",
              m_one > 0 ? m_all / m_one : 0.0, static_cast<double>(n_targets));
  return 0;
}
