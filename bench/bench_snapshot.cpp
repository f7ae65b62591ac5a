// Snapshot + heuristics on a synthetic full node: 8 MI300X agents at full occupancy (8 x 9,728 =
// 77,824 waves) in one multi-MB -thread-info record, every agent stuck in an allgather whose
// sync-lane waves spin in start_sync. Measures, over N runs, the median time to build the
// snapshot from the transcript text (MI parsing included) and to run every heuristic, and the
// peak RSS of the process (getrusage). Goal (issue 4): <= 200 ms and <= 256 MB.
//
//   bench_snapshot [--short] [--runs N] [--check] [--write FILE]
//
// --short: 3 runs (CI); --check: exit 1 when over the goal; --write: save the transcript.
#include "rocplay/graph/graph.hpp"
#include "rocplay/heuristics/heuristics.hpp"
#include "rocplay/heuristics/wait_graph.hpp"
#include "rocplay/snapshot/grouping.hpp"
#include "rocplay/snapshot/snapshot.hpp"

#include <fmt/format.h>

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <string>
#include <vector>

namespace {

constexpr int kAgents = 8;
constexpr int kGroupsPerAgent = 1216; // 304 CUs x 4 SIMDs; 8 waves per group
constexpr int kWavesPerGroup = 8;
constexpr double kGoalMs = 200.0;
constexpr double kGoalMb = 256.0;

const char* const kMangled = "_ZN5aiter13allgather_vecI14__hip_bfloat16Li8EEEvPvS2_PNS_6SignalEi";
const char* const kFile = "/opt/aiter/csrc/include/custom_all_reduce.cuh";

std::uint64_t kernel_address(int agent) {
  return 0x7fe8a5c40000ULL + agent * 0x100000ULL;
}

// One rocplay recording, the way `rocplay record` would save a node-wide snapshot.
std::string make_transcript(std::size_t* thread_info_bytes) {
  std::string t;
  t.reserve(30u << 20); // the node below is ~27 MB
  t += "# synthetic full node for bench/bench_snapshot.cpp (not a real recording)\n";
  t += "# rocplay-transcript 1\n";
  t += "# meta {\"pid\":4242,\"debugger\":\"rocgdb\",\"taken_at\":\"2026-11-21T14:00:00Z\"}\n";
  int token = 1;
  // `stream` lines (console output) come before the result, which carries the token.
  auto exchange = [&](const std::string& cmd, const std::string& result,
                      const std::string& stream = {}) {
    t += fmt::format("> 0.{:03d} {}{}\n", token % 1000, token, cmd);
    if (!stream.empty()) {
      t += fmt::format("< 0.{:03d} {}\n", token % 1000, stream);
    }
    t += fmt::format("< 0.{:03d} {}{}\n< 0.{:03d} (gdb) \n", token % 1000, token, result,
                     token % 1000);
    ++token;
  };
  std::string agents = "^done,agents=[";
  std::string queues = "^done,queues=[";
  std::string dispatches = "^done,dispatches=[";
  for (int a = 1; a <= kAgents; ++a) {
    const char* sep = a > 1 ? "," : "";
    agents += fmt::format(
        "{}{{id=\"1.{}\",state=\"A\",target-id=\"AMDGPU Agent (GPUID {})\",architecture="
        "\"gfx942\",name=\"AMD Instinct MI300X\",cores=\"1216\",threads=\"9728\",location="
        "\"0000:{:02x}:00.0\"}}",
        sep, a, 1000 + a, a * 0x11);
    queues += fmt::format(
        "{}{{id=\"1.{}\",target-id=\"AMDGPU Queue {}:1 (QID {})\",type=\"HSA\",read=\"411\","
        "write=\"414\",size=\"4194304\",addr=\"0x00007f3a4{}e00000\"}}",
        sep, a, a, a - 1, a);
    dispatches += fmt::format(
        "{}{{id=\"1.{}\",target-id=\"AMDGPU Dispatch {}:1:412 (PKID 411)\",grid=\"[{},1,1]\","
        "workgroup=\"[512,1,1]\",fence=\"B|Aa|Ra\",address-spaces=\"Shared(16384), Private(0)\","
        "kernel-desc=\"0x00007fe8a5c3f180\",kernel-args=\"0x00007f3a40012000\",completion="
        "\"0x0000000000000000\",kernel-function=\"0x{:016x}\"}}",
        sep, a, a, kGroupsPerAgent * 512, kernel_address(a));
  }
  exchange("-agent-info", agents + "]");
  exchange("-queue-info", queues + "]");
  exchange("-dispatch-info", dispatches + "]");

  // The -thread-info record is written straight into the transcript: a second 27 MB copy
  // would count against the peak RSS this program reports.
  t += fmt::format("> 0.{:03d} {}-thread-info\n< 0.{:03d} ", token % 1000, token, token % 1000);
  const std::size_t record_start = t.size();
  t += fmt::format("{}", token);
  t += "^done,threads=[{id=\"1\",target-id=\"Thread 0x7f3c1dac0740 (LWP 4242)\","
       "name=\"python3\",frame={level=\"0\",addr=\"0x00007f3c1e2e8f4d\",func="
       "\"__GI___clock_nanosleep\",args=[],from=\"/lib/x86_64-linux-gnu/libc.so.6\","
       "arch=\"i386:x86-64\"},state=\"stopped\",core=\"3\"}";
  int tid = 2;
  for (int a = 1; a <= kAgents; ++a) {
    int wave_no = 1;
    for (int g = 0; g < kGroupsPerAgent; ++g) {
      for (int w = 0; w < kWavesPerGroup; ++w) {
        bool spin = w == 0;
        fmt::format_to(
            std::back_inserter(t),
            ",{{id=\"{}\",target-id=\"AMDGPU Wave {}:1:412:{} ({},0,0)/{}\",name=\"allgather_vec\","
            "frame={{level=\"0\",addr=\"0x{:016x}\",func=\"aiter::start_sync<8>\",args=[{{name="
            "\"sg\",value=\"...\"}},{{name=\"self_sg\",value=\"0x7fe6c0200000\"}}],file="
            "\"custom_all_reduce.cuh\",fullname=\"{}\",line=\"{}\",arch=\"amdgcn:gfx942\"}},"
            "state=\"stopped\"}}",
            tid++, a, wave_no++, g, w, kernel_address(a) + (spin ? 0x1b3c : 0x1b80), kFile,
            spin ? 131 : 136);
      }
    }
  }
  t += "],current-thread-id=\"1\"";
  *thread_info_bytes = t.size() - record_start;
  t += fmt::format("\n< 0.{:03d} (gdb) \n", token % 1000);
  ++token;
  for (int a = 1; a <= kAgents; ++a) {
    for (auto [off, line] : {std::pair{0x1b3c, 131}, std::pair{0x1b80, 136}}) {
      std::uint64_t k = kernel_address(a);
      exchange(fmt::format("-interpreter-exec console \"info line *0x{:x}\"", k + off), "^done",
               fmt::format("~\"Line {} of \\\"{}\\\" starts at address 0x{:x} <{}+{}> and ends "
                           "at 0x{:x} <{}+{}>.\\n\"",
                           line, kFile, k + off, kMangled, off, k + off + 8, kMangled, off + 8));
    }
  }
  return t;
}

// CPU seconds of this process (user + system): on a loaded machine, wall time measures the
// neighbours too.
double cpu_ms() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  auto tv = [](const timeval& t) { return t.tv_sec * 1e3 + t.tv_usec / 1e3; };
  return tv(u.ru_utime) + tv(u.ru_stime);
}

double peak_rss_mb() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) / 1024.0; // Linux: kilobytes
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

} // namespace

int main(int argc, char** argv) {
  int runs = 10;
  bool check = false;
  const char* write_to = nullptr;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--short")) {
      runs = 3;
    } else if (!std::strcmp(argv[i], "--runs") && i + 1 < argc) {
      runs = std::max(1, std::atoi(argv[++i]));
    } else if (!std::strcmp(argv[i], "--check")) {
      check = true;
    } else if (!std::strcmp(argv[i], "--write") && i + 1 < argc) {
      write_to = argv[++i];
    } else {
      std::fprintf(stderr, "usage: %s [--short] [--runs N] [--check] [--write FILE]\n", argv[0]);
      return 64;
    }
  }
  using clock = std::chrono::steady_clock;
  auto ms = [](clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); };

  std::size_t thread_info_bytes = 0;
  const std::string text = make_transcript(&thread_info_bytes);
  if (write_to) {
    if (std::FILE* f = std::fopen(write_to, "wb")) {
      std::fwrite(text.data(), 1, text.size(), f);
      std::fclose(f);
    }
  }
  const double rss_input = peak_rss_mb();

  // MI parsing alone (the mi/ library's share of the build): exchanges read and dropped.
  std::vector<double> parse_ms;
  for (int r = 0; r < std::max(1, runs / 2); ++r) {
    auto t0 = clock::now();
    rocplay::mi::TranscriptReader reader;
    reader.feed(text);
    reader.finish();
    std::size_t records = 0;
    while (auto ex = reader.next()) {
      records += ex->records.size();
    }
    parse_ms.push_back(ms(clock::now() - t0));
    if (records == 0) {
      std::fprintf(stderr, "bench_snapshot: the transcript parsed to nothing\n");
      return 70;
    }
  }

  std::vector<double> build_ms, heur_ms, total_ms, cpu_total_ms;
  std::size_t waves = 0, classes = 0, findings = 0, graph_nodes = 0, graph_roots = 0;
  for (int r = 0; r < runs; ++r) {
    const double c0 = cpu_ms();
    auto t0 = clock::now();
    rocplay::Snapshot s = rocplay::snapshot::build_from_transcript(text);
    auto t1 = clock::now();
    auto fs = rocplay::heuristics::run(s);
    auto grouped = rocplay::snapshot::group_waves(s); // what the report prints
    // The wait-for graph every case gets (incident::analyse) and its roots (the `Cause:` lines).
    rocplay::heuristics::GraphInputs graph_in;
    graph_in.snapshot = &s;
    graph_in.classes = &grouped;
    graph_in.findings = &fs;
    const auto wait_graph = rocplay::heuristics::wait_graph(graph_in);
    graph_nodes = wait_graph.nodes().size();
    graph_roots = rocplay::graph::find_roots(wait_graph).size();
    auto t2 = clock::now();
    cpu_total_ms.push_back(cpu_ms() - c0);
    build_ms.push_back(ms(t1 - t0));
    heur_ms.push_back(ms(t2 - t1));
    total_ms.push_back(ms(t2 - t0));
    waves = s.waves.size();
    classes = grouped.size();
    // Each agent's sync-lane spin found (the node's queues also read as a wedged rank).
    findings =
        static_cast<std::size_t>(std::count_if(fs.begin(), fs.end(), [](const rocplay::Finding& f) {
          return f.id == rocplay::heuristics::kSyncLaneBarrierSpin;
        }));
  }
  const double rss = peak_rss_mb();
  const double total = median(total_ms);

  std::printf("bench_snapshot: synthetic node, %d agents, %zu waves, -thread-info record %.1f MB, "
              "transcript %.1f MB\n",
              kAgents, waves, thread_info_bytes / 1048576.0, text.size() / 1048576.0);
  std::printf("  runs                          %d\n", runs);
  std::printf("  build snapshot (median)       %.1f ms  (of which MI parsing alone: %.1f ms)\n",
              median(build_ms), median(parse_ms));
  std::printf("  heuristics + grouping + graph (median) %.1f ms  (%zu wave classes, %zu sync-lane "
              "findings; graph: %zu nodes, %zu roots)\n",
              median(heur_ms), classes, findings, graph_nodes, graph_roots);
  std::printf("  total (median)                %.1f ms   goal <= %.0f ms\n", total, kGoalMs);
  std::printf("  total CPU time (median)       %.1f ms   (user + system; the wall time above "
              "includes waiting for a busy CPU)\n",
              median(cpu_total_ms));
  std::printf(
      "  peak RSS                      %.1f MB   goal <= %.0f MB (input text alone: %.1f MB)\n",
      rss, kGoalMb, rss_input);
  bool ok = total <= kGoalMs && rss <= kGoalMb && findings == kAgents && waves == 77824;
  std::printf("  %s\n", ok ? "within goal" : "OVER GOAL or wrong result");
  return check && !ok ? 1 : 0;
}
