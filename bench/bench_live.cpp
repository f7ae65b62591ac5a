// Live session cost: rocplay's Session next to a raw `gdb -p PID -batch -x FILE` doing the same
// commands against tests/targets/spin_target, with 10 and 1,000 threads in the target.
//
//   bench_live [--short] [--runs N] [--threads LIST] [--gdb PATH] [--target PATH]
//
// For each thread count, one target runs the whole time; for each command list (gpu-state-like,
// hang-triage-like) the two ways alternate, N runs each, and the medians are printed:
//  * total: wall time from spawning the debugger to its exit;
//  * stop (target): the longest gap the target's own progress counter saw during the run (it
//    ticks every millisecond; while the debugger holds the process it stands still). This is the
//    one stop-time figure that means the same for both ways;
//  * stop (rocplay): Session::times().stop_seconds, from -target-attach sent to detach's ^done.
// More ways: `--fast` is rocplay with Options::fast_attach (no shared-library symbols), `no
// preload` is rocplay without Options::preload_symbols (symbols read inside the stop),
// `unbuffered` is rocplay without Options::buffered_output (GDB's MI output one byte per write),
// `non-stop tgt` is rocplay without Options::all_stop_target (GDB's default non-stop target),
// and `raw, args none` is raw gdb with rocplay's `set print frame-arguments none` in its file.
//
// Command lists for a debugger without ROCgdb's MI commands (plain gdb):
//  * gpu-state:   -thread-info                       | info threads
//  * hang-triage: -thread-info, `info line *PC` once per unique PC, `-stack-list-frames --thread
//                 N 0 29` per thread | info threads, the same `info line` commands,
//                 thread apply all bt 30
// With rocgdb, gpu-state adds -agent-info/-queue-info/-dispatch-info (info agents/queues/
// dispatches for the raw file). The raw file ends with `detach` and `quit`, as the seed's does.
#include "rocplay/session/process.hpp"
#include "rocplay/session/session.hpp"
#include "spin_target.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

using namespace rocplay;
using namespace rocplay::bench;
namespace fs = std::filesystem;

namespace {

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

double minimum(const std::vector<double>& v) {
  return v.empty() ? 0 : *std::min_element(v.begin(), v.end());
}

double pct(double a, double b) {
  return b > 0 ? (a / b - 1.0) * 100.0 : 0;
}

std::string fixed3(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", v);
  return buf;
}

struct Plan {
  std::string name;
  std::vector<std::string> mi;  // for the Session ("-..." or "console:TEXT")
  std::vector<std::string> raw; // for the raw command file
};

struct Sample {
  double total = 0;
  double stop_target = 0;
  double stop_internal = 0;
};

Sample run_rocplay(const session::Debugger& dbg, Target& target, const Plan& plan, bool fast,
                   bool preload, bool buffered, bool all_stop) {
  target.reset_gap();
  session::Options options;
  options.fast_attach = fast;
  options.preload_symbols = preload;
  options.buffered_output = buffered;
  options.all_stop_target = all_stop;
  const auto t0 = Clock::now();
  double stop = 0;
  {
    session::Session s(dbg, options);
    s.attach(target.pid());
    for (const auto& cmd : plan.mi) {
      if (cmd.rfind("console:", 0) == 0) {
        s.console(cmd.substr(8));
      } else {
        s.execute(cmd);
      }
    }
    s.detach();
    stop = s.times().stop_seconds.value_or(0);
  }
  Sample out;
  out.total = seconds_since(t0);
  out.stop_internal = stop;
  out.stop_target = target.gap_seconds();
  return out;
}

Sample run_raw(const session::Debugger& dbg, Target& target, const Plan& plan, bool no_args) {
  char cmds[] = "/tmp/rocplay-bench-cmds-XXXXXX";
  const int fd = ::mkstemp(cmds);
  std::string text = "set pagination off\nset confirm off\n";
  if (no_args) {
    text += "set print frame-arguments none\n";
  }
  for (const auto& c : plan.raw) {
    text += c + "\n";
  }
  text += "detach\nquit\n";
  if (::write(fd, text.data(), text.size()) != static_cast<ssize_t>(text.size())) {
    throw std::runtime_error("write");
  }
  ::close(fd);
  char log[] = "/tmp/rocplay-bench-out-XXXXXX";
  const int out = ::mkstemp(log);
  target.reset_gap();
  const std::string pid = std::to_string(target.pid());
  const auto t0 = Clock::now();
  const pid_t child = ::fork();
  if (child == 0) {
    ::dup2(out, STDOUT_FILENO);
    ::dup2(out, STDERR_FILENO);
    ::execl(dbg.path.c_str(), dbg.path.c_str(), "-nx", "-q", "-batch", "-p", pid.c_str(), "-x",
            cmds, static_cast<char*>(nullptr));
    ::_exit(127);
  }
  int status = 0;
  const auto deadline = Clock::now() + std::chrono::seconds(300);
  while (::waitpid(child, &status, WNOHANG) != child) {
    if (Clock::now() > deadline) {
      ::kill(child, SIGKILL);
      ::waitpid(child, &status, 0);
      throw std::runtime_error("raw gdb took longer than 300 s");
    }
    ::usleep(500);
  }
  Sample s;
  s.total = seconds_since(t0);
  s.stop_target = target.gap_seconds();
  ::close(out);
  ::unlink(log);
  ::unlink(cmds);
  return s;
}

struct Probe {
  std::vector<std::string> info_lines; // `info line *0x...` per unique PC
  std::vector<std::string> thread_ids;
};

// The unique PCs and thread ids of the target, from one -thread-info (used by both ways).
Probe probe_target(const session::Debugger& dbg, Target& target) {
  session::Session s(dbg, session::Options{});
  s.attach(target.pid());
  const auto ex = s.execute("-thread-info");
  s.detach();
  std::set<std::uint64_t> pcs;
  Probe out;
  if (const auto* r = ex.result()) {
    for (const auto t : r->results()["threads"]) {
      out.thread_ids.push_back(t["id"].text());
      if (const auto pc = t["frame"]["addr"].as_address(); pc.ok()) {
        pcs.insert(*pc);
      }
    }
  }
  for (const auto pc : pcs) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "info line *0x%llx", static_cast<unsigned long long>(pc));
    out.info_lines.emplace_back(buf);
  }
  return out;
}

std::vector<int> parse_list(const std::string& s) {
  std::vector<int> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) {
    out.push_back(std::stoi(item));
  }
  return out;
}

} // namespace

int main(int argc, char** argv) {
  bool short_mode = false;
  int runs = 5;
  std::vector<int> thread_counts = {10, 1000};
  std::string gdb_request = "gdb";
  std::string target_exe;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--short") {
      short_mode = true;
    } else if (a == "--runs" && i + 1 < argc) {
      runs = std::stoi(argv[++i]);
    } else if (a == "--threads" && i + 1 < argc) {
      thread_counts = parse_list(argv[++i]);
    } else if (a == "--gdb" && i + 1 < argc) {
      gdb_request = argv[++i];
    } else if (a == "--target" && i + 1 < argc) {
      target_exe = argv[++i];
    } else {
      std::fprintf(stderr,
                   "usage: bench_live [--short] [--runs N] [--threads 10,1000] [--gdb PATH] "
                   "[--target PATH]\n");
      return 64;
    }
  }
  if (short_mode) {
    runs = 1;
    thread_counts = {10, 100};
  }
  if (target_exe.empty()) {
    const fs::path self = fs::read_symlink("/proc/self/exe");
    target_exe = (self.parent_path().parent_path() / "tests" / "spin_target").string();
  }
  if (::access(target_exe.c_str(), X_OK) != 0) {
    std::fprintf(stderr, "bench_live: %s is not built (build the whole tree)\n",
                 target_exe.c_str());
    return 66;
  }
  session::Debugger dbg;
  try {
    dbg = session::find_debugger(gdb_request);
  } catch (const Error& e) {
    std::fprintf(stderr, "bench_live: %s\n", e.what());
    return static_cast<int>(e.code());
  }
  std::printf("bench_live: %s (%s), %d run(s) of each way, median and min\n", dbg.path.c_str(),
              dbg.version.c_str(), runs);
  std::printf("%-7s %-11s %-14s %7s %7s %9s %7s %9s\n", "threads", "commands", "way", "total",
              "min", "stop(tgt)", "min", "stop(int)");
  std::map<std::string, std::vector<std::pair<int, double>>> stop_by_plan;
  int failures = 0;
  for (const int threads : thread_counts) {
    Target target(target_exe, threads);
    const auto probe = probe_target(dbg, target);
    std::vector<Plan> plans;
    {
      Plan p{"gpu-state", {"-thread-info"}, {"info threads"}};
      session::Session probe(dbg, session::Options{});
      if (probe.has_mi_command("agent-info")) {
        p.mi = {"-agent-info", "-queue-info", "-dispatch-info", "-thread-info"};
        p.raw = {"info agents", "info queues", "info dispatches", "info threads"};
      }
      plans.push_back(p);
    }
    {
      Plan p{"hang-triage", {"-thread-info"}, {"info threads"}};
      for (const auto& l : probe.info_lines) {
        p.mi.push_back("console:" + l);
        p.raw.push_back(l);
      }
      // Host backtraces as the hang-triage playbook takes them: one -stack-list-frames per
      // thread. (`thread apply all bt` through the MI console was half as fast while GDB wrote MI
      // unbuffered; with buffered output it is faster, but its frames are text to parse back:
      // docs/benchmarks.md.)
      for (const auto& id : probe.thread_ids) {
        p.mi.push_back("-stack-list-frames --thread " + id + " 0 29");
      }
      p.raw.push_back("thread apply all bt 30");
      plans.push_back(p);
    }
    for (const auto& plan : plans) {
      // The ways, in the order their rows are printed. Way 0 is rocplay as shipped.
      struct Way {
        const char* name;
        bool raw;
        bool fast;
        bool preload;
        bool buffered; // rocplay: Options::buffered_output; raw: frame-arguments none
        bool all_stop; // Options::all_stop_target
        std::vector<double> total, stop, internal;
      };
      std::vector<Way> ways = {{"rocplay", false, false, true, true, true, {}, {}, {}},
                               {"raw gdb", true, false, false, false, false, {}, {}, {}},
                               {"raw, args none", true, false, false, true, false, {}, {}, {}},
                               {"rocplay --fast", false, true, false, true, true, {}, {}, {}},
                               {"no preload", false, false, false, true, true, {}, {}, {}},
                               {"unbuffered", false, false, true, false, true, {}, {}, {}},
                               {"non-stop tgt", false, false, true, true, false, {}, {}, {}}};
      const int n_ways = static_cast<int>(ways.size());
      for (int i = 0; i < runs; ++i) {
        // Rotate the order so no way always runs on a warmer cache.
        for (int k = 0; k < n_ways; ++k) {
          Way& w = ways[static_cast<std::size_t>((i + k) % n_ways)];
          const Sample s =
              w.raw ? run_raw(dbg, target, plan, w.buffered)
                    : run_rocplay(dbg, target, plan, w.fast, w.preload, w.buffered, w.all_stop);
          w.total.push_back(s.total);
          w.stop.push_back(s.stop_target);
          w.internal.push_back(s.stop_internal);
          if (!target.running()) {
            std::fprintf(stderr, "bench_live: %s left the target stopped; SIGCONT\n", w.name);
            ::kill(target.pid(), SIGCONT);
            ++failures;
          }
        }
      }
      for (const auto& w : ways) {
        std::printf("%-7d %-11s %-14s %7.3f %7.3f %9.3f %7.3f %9s\n", threads, plan.name.c_str(),
                    w.name, median(w.total), minimum(w.total), median(w.stop), minimum(w.stop),
                    w.raw ? "-" : fixed3(median(w.internal)).c_str());
      }
      const Way& r = ways[0];
      for (const int raw : {1, 2}) {
        const Way& g = ways[static_cast<std::size_t>(raw)];
        std::printf("%-7d %-11s %-14s %+6.1f%% %+6.1f%% %+8.1f%% %+6.1f%%\n", threads,
                    plan.name.c_str(), raw == 1 ? "rocplay/raw" : "rocplay/raw-a",
                    pct(median(r.total), median(g.total)), pct(minimum(r.total), minimum(g.total)),
                    pct(median(r.stop), median(g.stop)), pct(minimum(r.stop), minimum(g.stop)));
      }
      const std::vector<double>& r_stop = r.stop;
      stop_by_plan[plan.name].push_back({threads, median(r_stop)});
      std::fflush(stdout);
    }
  }
  // The scaling goal: rocplay's stop with the most threads against the fewest.
  for (const auto& [plan, points] : stop_by_plan) {
    if (points.size() >= 2 && points.front().second > 0) {
      std::printf("stop-time scaling %-11s %d -> %d threads: %.2fx\n", plan.c_str(),
                  points.front().first, points.back().first,
                  points.back().second / points.front().second);
    }
  }
  return failures == 0 ? 0 : 1;
}
