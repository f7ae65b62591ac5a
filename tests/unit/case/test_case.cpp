// The incident model (rocplay/case/case.hpp): the one exit-code rule, where each case stands, and
// the STAT-style grouping of ranks the incident-first report prints.
#include "rocplay/case/case.hpp"

#include <catch2/catch.hpp>

using namespace rocplay;

namespace {

Case examined(int rank, std::int64_t pid) {
  Case c;
  c.source.rank = rank;
  c.source.rank_rule = source::RankRule::Environment;
  c.source.pid = pid;
  return c;
}

Finding stuck(const std::string& kernel, const std::string& file, std::uint32_t line) {
  Finding f;
  f.id = "no-progress";
  f.title = "kernel " + kernel + " is stuck";
  f.severity = Severity::Error;
  f.kernel = kernel;
  f.locations.push_back({file, line, kernel, 0x7000});
  return f;
}

Frame frame(std::string function, std::string file, std::uint32_t line, std::string from = {}) {
  Frame f;
  f.function = std::move(function);
  f.file = std::move(file);
  if (line) {
    f.line = line;
  }
  f.from = std::move(from);
  return f;
}

} // namespace

TEST_CASE("numbers as ranges", "[case]") {
  CHECK(incident::format_numbers({0, 2, 3, 4, 5, 6, 7}) == "0,2-7");
  CHECK(incident::format_numbers({7, 1, 1, 3}) == "1,3,7");
  CHECK(incident::format_numbers({}).empty());
  CHECK(incident::format_numbers({4}) == "4");
}

TEST_CASE("the user's frame skips the C library, the runtimes and the interpreter", "[case]") {
  HostThread t;
  t.frames = {frame("clock_nanosleep", "../sysdeps/unix/sysv/linux/clock_nanosleep.c", 78),
              frame("cudaStreamSynchronize", "", 0, "/usr/lib/libcudart.so.12"),
              frame("_PyEval_EvalFrameDefault", "Python/ceval.c", 100),
              frame("wait_for_batch", "worker.py", 88), frame("main", "worker.py", 120)};
  const Frame* f = incident::user_frame(t);
  REQUIRE(f);
  CHECK(f->function == "wait_for_batch");
  HostThread none;
  none.frames = {frame("epoll_wait", "", 0, "/lib/x86_64-linux-gnu/libc.so.6")};
  CHECK(incident::user_frame(none) == nullptr);
}

TEST_CASE("ranks grouped by where they stand, STAT-style", "[case]") {
  Incident inc;
  for (int r = 0; r < 8; ++r) {
    Case c = examined(r, 100 + r);
    c.snapshot.debugger = DebuggerKind::CudaGdb;
    if (r == 1) {
      HostThread t;
      t.frames = {frame("clock_nanosleep", "", 0, "libc.so.6"),
                  frame("wait_for_batch", "/app/worker.py", 88)};
      c.snapshot.host_threads.push_back(t);
    } else {
      c.findings.push_back(
          stuck("ncclDevKernel_AllReduce_Sum_f32_RING_LL", "src/all_reduce.h", 52));
      Dispatch d;
      c.snapshot.dispatches.push_back(d);
    }
    inc.cases.push_back(std::move(c));
  }
  const auto groups = incident::rank_groups(inc);
  REQUIRE(groups.size() == 2);
  CHECK(incident::who(inc, groups[0]) == "ranks 0,2-7 (pids 100,102-107)");
  CHECK(groups[0].at.where == "ncclDevKernel_AllReduce_Sum_f32_RING_LL at all_reduce.h:52");
  CHECK(groups[0].at.verdict == "kernel ncclDevKernel_AllReduce_Sum_f32_RING_LL is stuck");
  CHECK(incident::who(inc, groups[1]) == "rank 1 (pid 101)");
  CHECK(groups[1].at.where == "GPU idle, wait_for_batch at worker.py:88");
  CHECK(groups[1].at.verdict == "no known stuck-kernel pattern");
  // The main thread, not a runtime's thread: NCCL's RAS thread has a source line, yet the rank
  // is where its main thread is (the real h200x2 recording of rank 1 read as `rasThreadMain at
  // ras.cc:621` before this rule).
  Case idle = examined(9, 109);
  idle.snapshot.debugger = DebuggerKind::CudaGdb;
  HostThread main_thread;
  main_thread.id = "1";
  main_thread.frames = {frame("clock_nanosleep", "", 0, "/lib/x86_64-linux-gnu/libc.so.6")};
  HostThread ras;
  ras.id = "7";
  ras.frames = {frame("rasThreadMain", "ras/ras.cc", 621)};
  idle.snapshot.host_threads = {ras, main_thread};
  CHECK(incident::whereabouts(idle).where == "GPU idle, main thread in clock_nanosleep");
  // Plain gdb sees no GPU: it never says the GPU is idle.
  inc.cases[1].snapshot.debugger = DebuggerKind::Gdb;
  CHECK(incident::whereabouts(inc.cases[1]).where == "wait_for_batch at worker.py:88");
}

TEST_CASE("cases without rank or pid are named by their input", "[case]") {
  Incident inc;
  for (const char* p : {"a.mi", "b.mi"}) {
    Case c;
    c.source.path = p;
    inc.cases.push_back(std::move(c));
  }
  Case bad;
  bad.source.path = "c.mi";
  bad.status = CaseStatus::Unreadable;
  bad.error = "not a known format";
  bad.exit_code = ExitCode::NoInput;
  inc.cases.push_back(std::move(bad));
  const auto groups = incident::rank_groups(inc);
  REQUIRE(groups.size() == 2);
  CHECK(incident::who(inc, groups[0]) == "a.mi, b.mi");
  CHECK(groups[1].at.verdict == "unreadable: not a known format");
}

TEST_CASE("the one exit-code rule", "[case]") {
  Incident inc;
  CHECK(inc.exit_code() == ExitCode::Ok);
  inc.cases.push_back(examined(0, 1));
  inc.cases.push_back(examined(1, 2));
  CHECK(inc.exit_code() == ExitCode::Ok);
  SECTION("a finding at warning or above") {
    inc.cases[1].findings.push_back(stuck("k", "k.cu", 3));
    CHECK(inc.exit_code() == ExitCode::Findings);
  }
  SECTION("an info finding is no finding") {
    Finding f;
    f.severity = Severity::Info;
    inc.cases[1].findings.push_back(f);
    CHECK(inc.exit_code() == ExitCode::Ok);
  }
  SECTION("a cross-rank finding alone") {
    inc.cross_rank.push_back(stuck("k", "k.cu", 3));
    CHECK(inc.exit_code() == ExitCode::Findings);
    CHECK(inc.verdict() == &inc.cross_rank.front());
  }
  SECTION("the crash verdict alone") {
    inc.crash_verdict.push_back(stuck("k", "k.cu", 3));
    CHECK(inc.exit_code() == ExitCode::Findings);
  }
  SECTION("a step that failed wins over findings") {
    inc.cross_rank.push_back(stuck("k", "k.cu", 3));
    inc.cases[0].exit_code = ExitCode::StepFailed;
    CHECK(inc.exit_code() == ExitCode::StepFailed);
  }
  SECTION("some not examined: partial") {
    inc.cases[1].status = CaseStatus::NotExamined;
    inc.cases[1].exit_code = ExitCode::NoSuchProcess;
    CHECK(inc.exit_code() == ExitCode::PartialInput);
  }
  SECTION("none examined: the first case's reason") {
    for (auto& c : inc.cases) {
      c.status = CaseStatus::NotExamined;
      c.exit_code = ExitCode::NoSuchProcess;
    }
    CHECK(inc.exit_code() == ExitCode::NoSuchProcess);
  }
}
