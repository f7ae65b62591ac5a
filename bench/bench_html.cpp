// `--format html` on a large incident: N ranks (default 64) holding W waves in all (default
// 100,000), each rank a collective whose sync lanes poll a flag and whose other waves wait at a
// barrier, a dozen host threads of 30 frames each (Python frames on the main thread), one rank
// idle (the missing rank). Measures report::write(Format::Html) (median of R runs, the findings,
// graphs and incident made once beforehand) and the page's size; goal (issue 44): under 5 MB.
// With --browser, also the time headless Chromium takes to load and paint the page, less the
// time it takes for an empty page (its own start): goal under 2 s.
//
//   bench_html [--short] [--ranks N] [--waves W] [--runs R] [--browser] [--keep FILE]
#include "rocplay/case/case.hpp"
#include "rocplay/heuristics/heuristics.hpp"
#include "rocplay/heuristics/wait_graph.hpp"
#include "rocplay/report/incident.hpp"

#include <fmt/format.h>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

using namespace rocplay;
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

Case make_rank(int rank, std::size_t waves, bool idle) {
  Case c;
  c.source.rank = rank;
  c.source.pid = 4300 + rank;
  Snapshot& s = c.snapshot;
  s.debugger = DebuggerKind::RocGdb;
  s.pid = 4300 + rank;
  s.rank = rank;
  Agent a;
  a.id = "1";
  a.number = 1;
  s.agents.push_back(a);
  const std::string kernel = "void aiter::allgather_vec<__hip_bfloat16, 8>(aiter::Signal*, "
                             "aiter::RankData*, __hip_bfloat16*, int)";
  if (!idle) {
    Dispatch d;
    d.id = "1";
    d.agent = 1;
    d.queue = 2;
    d.dispatch_no = 1;
    const std::uint64_t groups = std::max<std::size_t>(waves / 4, 1);
    d.grid = {groups * 256, 1, 1};
    d.workgroup = {256, 1, 1};
    d.fence_text = "B|As|Rs";
    d.kernel_name = kernel;
    s.dispatches.push_back(d);
    for (std::size_t i = 0; i < waves; ++i) {
      Wave w;
      const auto group = static_cast<std::int64_t>(i / 4);
      const auto slot = static_cast<std::uint32_t>(i % 4);
      w.thread_id = std::to_string(i + 1);
      w.agent = 1;
      w.queue = 2;
      w.dispatch = 1;
      w.wave_no = i;
      w.workgroup = {group, 0, 0};
      w.workgroup_last = {group, 0, 0};
      w.wave_in_group = slot;
      w.lane_count = 64;
      const bool sync = slot == 0;
      const bool odd = group % 97 == 5 && slot == 1; // a few work-groups elsewhere
      w.pc = sync ? 0x7f1200001a40 : odd ? 0x7f1200001c10 : 0x7f1200001b20;
      w.function = kernel;
      w.file = "/src/aiter/csrc/include/custom_all_reduce.cuh";
      w.line = sync ? 64 : odd ? 112 : 70;
      w.state = "stopped";
      s.waves.push_back(std::move(w));
    }
  }
  for (int t = 0; t < 12; ++t) {
    HostThread h;
    h.id = std::to_string(t + 1);
    h.lwp = static_cast<std::uint64_t>(4300 + rank) * 100 + static_cast<std::uint64_t>(t);
    h.name = t == 0 ? "python3" : fmt::format("pt_worker_{}", t);
    h.state = "stopped";
    for (int f = 0; f < 30; ++f) {
      Frame fr;
      fr.level = static_cast<std::uint32_t>(f);
      if (t == 0 && f >= 20) {
        fr.python = true;
        fr.function = fmt::format("model_runner.step_{}", 30 - f);
        fr.file = "/srv/app/model_runner.py";
        fr.line = static_cast<std::uint32_t>(100 + f);
      } else if (f == 0) {
        fr.function = t == 0 && !idle ? "hipStreamSynchronize" : "pthread_cond_wait";
        fr.from = "/lib/x86_64-linux-gnu/libc.so.6";
      } else {
        fr.function = fmt::format("worker_loop_{}_{}", t % 3, f);
        fr.file = "/srv/app/worker.cpp";
        fr.line = static_cast<std::uint32_t>(10 * f + t % 3);
      }
      h.frames.push_back(fr);
    }
    s.host_threads.push_back(std::move(h));
  }
  c.classes = snapshot::group_waves(s);
  c.findings = heuristics::run(s);
  heuristics::GraphInputs gi;
  gi.snapshot = &c.snapshot;
  gi.classes = &c.classes;
  gi.findings = &c.findings;
  c.graph = heuristics::wait_graph(gi);
  return c;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

// Headless Chromium's wall time to load `file` and take a screenshot; < 0 when it failed.
double browser_seconds(const fs::path& file, const fs::path& png) {
  const std::string cmd = fmt::format(
      "timeout 120 chromium --headless --no-sandbox --disable-gpu --no-first-run "
      "--disable-background-networking --disable-component-update --disable-extensions "
      "--user-data-dir={} --window-size=1280,1800 --screenshot={} file://{} >/dev/null 2>&1",
      (png.parent_path() / "profile").string(), png.string(), fs::absolute(file).string());
  const auto t0 = Clock::now();
  const int rc = std::system(cmd.c_str());
  const double s = std::chrono::duration<double>(Clock::now() - t0).count();
  return rc == 0 ? s : -1;
}

} // namespace

int main(int argc, char** argv) {
  int ranks = 64;
  std::size_t waves = 100000;
  int runs = 5;
  bool browser = false;
  std::string keep;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&] { return i + 1 < argc ? std::string(argv[++i]) : std::string("0"); };
    if (a == "--short") {
      ranks = 8;
      waves = 8000;
      runs = 1;
    } else if (a == "--ranks") {
      ranks = std::stoi(next());
    } else if (a == "--waves") {
      waves = std::stoul(next());
    } else if (a == "--runs") {
      runs = std::stoi(next());
    } else if (a == "--browser") {
      browser = true;
    } else if (a == "--keep") {
      keep = next();
    } else {
      std::fprintf(stderr,
                   "usage: %s [--short] [--ranks N] [--waves W] [--runs R] [--browser] "
                   "[--keep FILE]\n",
                   argv[0]);
      return 64;
    }
  }
  if (ranks < 2) {
    std::fprintf(stderr, "bench_html: --ranks must be 2 or more\n");
    return 64;
  }
  const auto t_make = Clock::now();
  Incident inc;
  inc.title = "hang-triage";
  inc.several = true;
  const int missing = ranks / 2;
  std::vector<Snapshot> snaps;
  const std::size_t per_rank = waves / static_cast<std::size_t>(ranks - 1);
  for (int r = 0; r < ranks; ++r) {
    inc.cases.push_back(make_rank(r, per_rank, r == missing));
    snaps.push_back(inc.cases.back().snapshot);
  }
  inc.cross_rank = heuristics::run_ranks(snaps);
  snaps.clear();
  const double made = std::chrono::duration<double>(Clock::now() - t_make).count();

  std::vector<double> seconds;
  std::string page;
  for (int run = 0; run < runs; ++run) {
    std::ostringstream out;
    const auto t0 = Clock::now();
    report::write(out, inc, report::Format::Html, {}, "bench");
    seconds.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
    page = out.str();
  }
  const double mb = static_cast<double>(page.size()) / (1 << 20);
  std::printf("html: %d ranks, %zu waves (%zu per rank, rank %d idle), incident made in %.2f s; "
              "page %.2f MB (goal < 5 MB), written in median %.3f s of %d runs\n",
              ranks, per_rank * static_cast<std::size_t>(ranks - 1), per_rank, missing, made, mb,
              median(seconds), runs);
  int status = mb < 5.0 ? 0 : 1;
  if (page.find("<svg") == std::string::npos) {
    std::printf("html: the graph was not drawn (is Debian's libgvc6 installed?)\n");
  }
  const fs::path dir = fs::temp_directory_path() / fmt::format("bench_html.{}", ::getpid());
  if (browser || !keep.empty()) {
    fs::create_directories(dir);
    const fs::path file = keep.empty() ? dir / "page.html" : fs::path(keep);
    std::ofstream(file, std::ios::binary) << page;
    if (browser) {
      const fs::path empty = dir / "empty.html";
      std::ofstream(empty) << "<!DOCTYPE html><title>empty</title><p>empty";
      std::vector<double> with_page;
      std::vector<double> without;
      for (int run = 0; run < std::max(runs, 3); ++run) {
        without.push_back(browser_seconds(empty, dir / "empty.png"));
        with_page.push_back(browser_seconds(file, dir / "page.png"));
      }
      const double base = median(without);
      const double full = median(with_page);
      if (base < 0 || full < 0) {
        std::printf("html: chromium failed; is Debian's chromium package installed?\n");
        status = 1;
      } else {
        std::printf("html: headless chromium: page loaded and painted in median %.2f s, empty "
                    "page %.2f s: %.2f s for the page (goal < 2 s)\n",
                    full, base, full - base);
        status = full - base < 2.0 ? status : 1;
      }
    }
  }
  fs::remove_all(dir);
  return status;
}
