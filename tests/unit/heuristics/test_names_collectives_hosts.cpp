// Issue 20: findings that hold on names, collectives and host stacks as the field writes them.
// Mangled kernel names (every fixture re-emitted mangled), a collective waiting for its peers
// from one rank, missing-rank's quorum, host mutex deadlocks and the other host waits, and the
// caller-frame line (PC - 1) offline.
#include "../snapshot/support.hpp"
#include "heuristics/common.hpp"
#include "rocplay/heuristics/heuristics.hpp"
#include "rocplay/snapshot/frames.hpp"
#include "snapshot/text.hpp"

#include <catch2/catch.hpp>

#include <filesystem>
#include <map>
#include <regex>
#include <tuple>

using namespace rocplay;
namespace fs = std::filesystem;

namespace {

const Finding* find_id(const std::vector<Finding>& fs, std::string_view id) {
  auto it = std::find_if(fs.begin(), fs.end(), [&](const Finding& f) { return f.id == id; });
  return it == fs.end() ? nullptr : &*it;
}

std::string text_of(const Finding& f) {
  std::string out = f.title + "\n" + f.summary + "\n" + f.next_step + "\n";
  for (const auto& e : f.evidence) {
    out += e + "\n";
  }
  return out;
}

bool says(const Finding& f, std::string_view needle) {
  return text_of(f).find(needle) != std::string::npos;
}

// The Itanium mangling of a demangled function name's qualified name (parameters, template
// arguments and the return type dropped: `_ZN5aiter13allgather_vecEv`); nullopt when a part is
// not a plain identifier (lambdas, operators).
std::optional<std::string> mangle(std::string_view name) {
  int depth = 0;
  std::size_t end = name.size();
  for (std::size_t i = 0; i < name.size(); ++i) {
    if (name[i] == '<') {
      ++depth;
    } else if (name[i] == '>') {
      --depth;
    } else if (name[i] == '(' && depth == 0 && name.substr(i, 10) != "(anonymous") {
      end = i;
      break;
    }
  }
  std::string flat;
  depth = 0;
  for (char c : name.substr(0, end)) {
    if (c == '<') {
      ++depth;
    } else if (c == '>') {
      --depth;
    } else if (depth == 0) {
      flat += c;
    }
  }
  if (auto sp = flat.rfind(' ');
      sp != std::string::npos && flat.find("(anonymous") == std::string::npos) {
    flat = flat.substr(sp + 1);
  }
  static const std::regex ident("[A-Za-z_][A-Za-z0-9_]*");
  std::vector<std::string> parts;
  std::size_t pos = 0;
  while (pos <= flat.size()) {
    auto next = flat.find("::", pos);
    std::string part = flat.substr(pos, next == std::string::npos ? std::string::npos : next - pos);
    if (part == "(anonymous namespace)") {
      part = "_GLOBAL__N_1";
    }
    if (!std::regex_match(part, ident)) {
      return std::nullopt;
    }
    parts.push_back(part);
    if (next == std::string::npos) {
      break;
    }
    pos = next + 2;
  }
  std::string out = parts.size() == 1 ? "_Z" : "_ZN";
  for (const auto& p : parts) {
    out += std::to_string(p.size()) + p;
  }
  return out + (parts.size() == 1 ? "v" : "Ev");
}

// Every name a snapshot carries, re-emitted mangled, read back through JSON (an entry point that
// demangles like the dialects do).
Snapshot mangled(const Snapshot& s) {
  nlohmann::json j = to_json(s);
  auto redo = [](nlohmann::json& obj, const char* key) {
    if (obj.contains(key) && obj[key].is_string()) {
      if (auto m = mangle(obj[key].get<std::string>())) {
        obj[key] = *m;
      }
    }
  };
  for (auto& d : j["dispatches"]) {
    d.erase("linkage_name");
    redo(d, "kernel_name");
  }
  for (auto& w : j["waves"]) {
    redo(w, "function");
    redo(w, "inline_function");
  }
  for (auto& t : j["host_threads"]) {
    for (auto& f : t["frames"]) {
      f.erase("linkage_name");
      redo(f, "function");
    }
  }
  for (auto& l : j["source_lines"]) {
    l.erase("linkage_name");
    redo(l, "function");
  }
  return snapshot_from_json(j);
}

using Key = std::tuple<std::string, int, std::optional<int>>;
std::map<Key, double> finding_summary(const std::vector<Finding>& fs) {
  std::map<Key, double> out;
  for (const auto& f : fs) {
    out[{f.id, static_cast<int>(f.severity), f.rank}] = f.confidence;
  }
  return out;
}

void same_findings(const std::vector<Finding>& a, const std::vector<Finding>& b) {
  auto sa = finding_summary(a);
  auto sb = finding_summary(b);
  REQUIRE(sa.size() == sb.size());
  for (const auto& [k, conf] : sa) {
    INFO(std::get<0>(k));
    REQUIRE(sb.count(k) == 1);
    CHECK(sb.at(k) == Approx(conf));
  }
}

} // namespace

TEST_CASE("every fixture's kernel and function names re-emitted mangled: the same findings",
          "[heuristics][names]") {
  std::size_t renamed = 0;
  for (const auto& dir : fs::directory_iterator(test::fixture_path("rocgdb"))) {
    if (!dir.is_directory()) {
      continue;
    }
    std::map<std::string, Snapshot> plain;
    std::map<std::string, Snapshot> redone;
    for (const auto& f : fs::directory_iterator(dir.path())) {
      if (f.path().extension() != ".mi") {
        continue;
      }
      auto rel = fs::relative(f.path(), test::fixture_path("")).string();
      mi::TranscriptInfo info;
      Snapshot s = test::load(rel, &info);
      Snapshot m = mangled(s);
      for (std::size_t i = 0; i < s.dispatches.size(); ++i) {
        if (!m.dispatches[i].linkage_name.empty()) {
          ++renamed;
          CHECK(m.dispatches[i].kernel_name != m.dispatches[i].linkage_name);
        }
      }
      INFO(rel);
      auto ctx = heuristics::context_from_meta(info.meta_json);
      same_findings(heuristics::run(s, ctx), heuristics::run(m, ctx));
      plain.emplace(f.path().stem().string(), std::move(s));
      redone.emplace(f.path().stem().string(), std::move(m));
    }
    if (plain.count("snapshot-1") && plain.count("snapshot-2")) {
      same_findings(heuristics::run_pair(plain.at("snapshot-1"), plain.at("snapshot-2")),
                    heuristics::run_pair(redone.at("snapshot-1"), redone.at("snapshot-2")));
    }
    std::vector<Snapshot> ranks_a;
    std::vector<Snapshot> ranks_b;
    for (const auto& [name, s] : plain) {
      if (name.rfind("rank", 0) == 0) {
        ranks_a.push_back(s);
        ranks_b.push_back(redone.at(name));
      }
    }
    same_findings(heuristics::run_ranks(ranks_a), heuristics::run_ranks(ranks_b));
  }
  for (const auto& rel :
       {"cuda-gdb/syncspin-h200.mi", "cuda-gdb/splitk-clean-h200.mi",
        "cuda-gdb/h200-rocplay/splitk.rec", "cuda-gdb/h200-rocplay/hostsync.rec",
        "cuda-gdb/h200-rocplay/torch-item.rec", "cuda-gdb/h200x2-rocplay/nccl-rank0.rec"}) {
    INFO(rel);
    Snapshot s = snapshot::build_from_transcript(test::read_file(test::fixture_path(rel)));
    same_findings(heuristics::run(s), heuristics::run(mangled(s)));
  }
  CHECK(renamed >= 15); // every dispatch of every case that has a name
}

TEST_CASE("a mangled _clean pair on two queues with full fences is reported by its names",
          "[heuristics][names]") {
  Snapshot s = test::load("rocgdb/splitk-clean-two-queues/snapshot.mi");
  Snapshot m = mangled(s);
  auto fs = heuristics::run(m);
  const Finding* f = find_id(fs, heuristics::kSplitKCleanRace);
  REQUIRE(f != nullptr);
  // The title names every `_clean` kernel involved, demangled.
  for (const auto& d : m.dispatches) {
    CHECK(f->title.find(short_function_name(d.kernel_name)) != std::string::npos);
  }
  // JSON keeps the linkage name beside the demangled one.
  for (const auto& d : f->details["dispatches"]) {
    CHECK(d["linkage_name"].get<std::string>().starts_with("_Z"));
    CHECK_FALSE(d["kernel"].get<std::string>().starts_with("_Z"));
  }
}

TEST_CASE("collective-wait: NCCL all_reduce on one H200 rank, no line information",
          "[heuristics][collective]") {
  Snapshot r0 = snapshot::build_from_transcript(
      test::read_file(test::fixture_path("cuda-gdb/h200x2-rocplay/nccl-rank0.rec")));
  auto fs = heuristics::run(r0);
  const Finding* f = find_id(fs, heuristics::kCollectiveWait);
  REQUIRE(f != nullptr);
  CHECK(f->title.find("ncclDevKernel_AllReduce_Sum_f32_RING_LL") != std::string::npos);
  CHECK(f->title.find("waiting for its peers") != std::string::npos);
  CHECK(f->details["line_info"] == false);
  CHECK(f->confidence == Approx(0.5));
  CHECK(says(*f, "--workers-of"));
  CHECK(says(*f, "no line information"));
  // The idle rank has nothing to wait in.
  Snapshot r1 = snapshot::build_from_transcript(
      test::read_file(test::fixture_path("cuda-gdb/h200x2-rocplay/nccl-rank1.rec")));
  CHECK(find_id(heuristics::run(r1), heuristics::kCollectiveWait) == nullptr);
}

TEST_CASE("collective-wait: RCCL with line information names the wait routine",
          "[heuristics][collective]") {
  Snapshot s = test::load("rocgdb/rccl-collective-wait/snapshot.mi");
  auto fs = heuristics::run(s);
  const Finding* f = find_id(fs, heuristics::kCollectiveWait);
  REQUIRE(f != nullptr);
  CHECK(f->details["line_info"] == true);
  CHECK(f->details["wait_routine"] == true);
  CHECK(f->confidence == Approx(0.7));
  CHECK(says(*f, "prims_ll.h"));
  CHECK(f->rank == 3);
  // Not a sync-lane spin: no start_sync, every wave slot in the loops.
  CHECK(find_id(fs, heuristics::kSyncLaneBarrierSpin) == nullptr);
}

TEST_CASE("collective-wait stays out of the sync-lane finding's way", "[heuristics][collective]") {
  Snapshot s = test::load("rocgdb/tp8-allgather-sync-spin/snapshot.mi");
  auto fs = heuristics::run(s);
  CHECK(find_id(fs, heuristics::kSyncLaneBarrierSpin) != nullptr);
  CHECK(find_id(fs, heuristics::kCollectiveWait) == nullptr);
}

TEST_CASE("missing-rank from two ranks up, its confidence reflecting the quorum",
          "[heuristics][ranks]") {
  Snapshot r0 = snapshot::build_from_transcript(
      test::read_file(test::fixture_path("cuda-gdb/h200x2-rocplay/nccl-rank0.rec")));
  Snapshot r1 = snapshot::build_from_transcript(
      test::read_file(test::fixture_path("cuda-gdb/h200x2-rocplay/nccl-rank1.rec")));
  r0.rank = 0;
  r1.rank = 1;
  auto fs = heuristics::run_ranks({r0, r1});
  const Finding* f = find_id(fs, heuristics::kMissingRank);
  REQUIRE(f != nullptr);
  CHECK(f->rank == 1);
  // TP=2: one rank vouches for the collective; the other may just be late.
  CHECK(f->confidence == Approx(0.85 * 0.55));
  CHECK(f->severity == Severity::Error);
  CHECK(f->details["quorum"]["in_collective"] == 1);
  CHECK(says(*f, "quorum: 1 of 2 ranks"));
  // Eight ranks, seven in it: the full confidence.
  std::vector<Snapshot> ranks;
  for (int r = 0; r < 8; ++r) {
    ranks.push_back(test::load("rocgdb/tp8-missing-rank/rank" + std::to_string(r) + ".mi"));
  }
  auto f8 = heuristics::missing_rank(ranks);
  REQUIRE(f8.size() == 1);
  CHECK(f8[0].confidence == Approx(0.85));
  CHECK(f8[0].severity == Severity::Critical);
}

namespace {

HostThread host_thread(std::string id, std::uint64_t lwp, std::vector<Frame> frames) {
  HostThread t;
  t.id = std::move(id);
  t.lwp = lwp;
  t.name = "worker";
  for (std::size_t i = 0; i < frames.size(); ++i) {
    frames[i].level = static_cast<std::uint32_t>(i);
  }
  t.frames = std::move(frames);
  return t;
}

Frame make_frame(std::string function, std::string file = {},
                 std::optional<std::uint32_t> line = {}, std::string from = {}) {
  Frame f;
  f.function = std::move(function);
  f.file = std::move(file);
  f.line = line;
  f.from = std::move(from);
  f.pc = 0x1000;
  return f;
}

// A thread blocked in pthread_mutex_lock as glibc without debug information shows it.
HostThread mutex_waiter(std::string id, std::uint64_t lwp, std::uint64_t mutex, std::string symbol,
                        std::optional<std::int64_t> owner, int line) {
  HostThread t = host_thread(
      std::move(id), lwp,
      {make_frame("__lll_lock_wait", "", {}, "/lib/x86_64-linux-gnu/libc.so.6"),
       make_frame("pthread_mutex_lock@@GLIBC_2.2.5", "", {}, "/lib/x86_64-linux-gnu/libc.so.6"),
       make_frame("cache_insert(Entry*)", "/src/server/cache.cpp", line),
       make_frame("handle_request(Request&)", "/src/server/server.cpp", 88)});
  t.mutex_wait = MutexWait{mutex, std::move(symbol), owner};
  return t;
}

} // namespace

TEST_CASE("host-deadlock: two threads, two mutexes, opposite orders", "[heuristics][host]") {
  Snapshot s;
  s.debugger = DebuggerKind::Gdb;
  s.host_threads.push_back(host_thread("1", 100,
                                       {make_frame("__libc_pause", "", {}, "libc.so.6"),
                                        make_frame("main", "/src/server/main.cpp", 12)}));
  s.host_threads.push_back(mutex_waiter("2", 101, 0x5000, "table_lock", 102, 40));
  s.host_threads.push_back(mutex_waiter("3", 102, 0x5040, "index_lock", 101, 57));
  auto fs = heuristics::run(s);
  REQUIRE_FALSE(fs.empty());
  const Finding& f = fs.front(); // the verdict
  CHECK(f.id == heuristics::kHostDeadlock);
  CHECK(f.severity == Severity::Critical);
  CHECK(f.title == "host deadlock: threads 2, 3 wait for each other's mutexes");
  CHECK(says(f, "waits for table_lock (0x5000) held by thread 3 (LWP 102"));
  CHECK(says(f, "at cache_insert at cache.cpp:40 (called from handle_request at server.cpp:88)"));
  CHECK(says(f, "cache.cpp:57"));
  CHECK(f.details["cycle"] == nlohmann::json::array({"2", "3"}));
  REQUIRE(f.locations.size() == 2);
  CHECK(f.locations[0].line == 40u);
  // Nothing about GPU waves.
  CHECK_FALSE(says(f, "wave"));
  CHECK(find_id(fs, heuristics::kHostWaits) == nullptr);
}

TEST_CASE("host-waits: owners not read, condition waits, semaphores, the GPU driver",
          "[heuristics][host]") {
  Snapshot s;
  s.debugger = DebuggerKind::Gdb;
  s.host_threads.push_back(mutex_waiter("2", 101, 0x5000, "", std::nullopt, 40));
  s.host_threads.back().mutex_wait.reset(); // a recording that never read the owners
  s.host_threads.push_back(mutex_waiter("3", 102, 0x5040, "", std::nullopt, 57));
  s.host_threads.back().mutex_wait.reset();
  s.host_threads.push_back(
      host_thread("4", 103,
                  {make_frame("__futex_abstimed_wait_common64", "", {}, "libc.so.6"),
                   make_frame("pthread_cond_wait@@GLIBC_2.3.2", "", {}, "libc.so.6"),
                   make_frame("queue_pop", "/src/server/queue.cpp", 21)}));
  s.host_threads.push_back(
      host_thread("5", 104,
                  {make_frame("do_futex_wait.constprop.0", "", {}, "libc.so.6"),
                   make_frame("sem_wait@@GLIBC_2.34", "", {}, "libc.so.6"),
                   make_frame("drain", "/src/server/drain.cpp", 9)}));
  s.host_threads.push_back(host_thread(
      "6", 105,
      {make_frame("ioctl", "", {}, "/lib/x86_64-linux-gnu/libc.so.6"),
       make_frame("hsaKmtWaitOnMultipleEvents_Ext", "", {}, "/opt/rocm/lib/libhsakmt.so.1"),
       make_frame("rocr::core::Runtime::AsyncEventsLoop(void*)", "", {},
                  "/opt/rocm/lib/libhsa-runtime64.so.1")}));
  auto fs = heuristics::run(s);
  CHECK(find_id(fs, heuristics::kHostDeadlock) == nullptr);
  const Finding* w = find_id(fs, heuristics::kHostWaits);
  REQUIRE(w != nullptr);
  CHECK(w->severity == Severity::Warning); // two mutex waiters, owners unknown: maybe a loop
  CHECK(says(*w, "owner not read"));
  CHECK(says(*w, "condition variable at queue_pop at queue.cpp:21"));
  CHECK(says(*w, "semaphore at drain at drain.cpp:9"));
  CHECK(says(*w, "polls the GPU device file (ioctl in /lib/x86_64-linux-gnu/libc.so.6)"));
  CHECK(w->details["threads"].size() == 5);
  // With the GPU busy, idle pool threads in condition waits are not worth a finding.
  Snapshot busy = test::load("rocgdb/tp8-allgather-sync-spin/snapshot.mi");
  CHECK(find_id(heuristics::run(busy), heuristics::kHostWaits) == nullptr);
}

TEST_CASE("host-waits: Python threads on threading.Locks, and a join, from a real recording",
          "[heuristics][host]") {
  // Debian's stripped python3: the lock acquire shows only as PyThread_acquire_lock_timed above a
  // semaphore wait, under each thread's Python frames.
  const Snapshot s = test::load("pyframes/lock-order-gdb.rocplay");
  const auto fs = heuristics::run(s);
  REQUIRE_FALSE(fs.empty());
  const Finding& w = fs.front();
  CHECK(w.id == heuristics::kHostWaits);
  CHECK(w.title == "host threads waiting: 2 on a Python lock, 1 joining a Python thread");
  CHECK(w.severity == Severity::Warning); // two lock waiters, owners unknowable: maybe a loop
  CHECK(says(w, "waits to acquire a Python lock (threading.Lock or RLock: `with lock:` or "
                "`acquire()`) at forward (py_threads.py:68)"));
  CHECK(says(w, "at backward (py_threads.py:76)"));
  // The standard library's frames (threading.py's join) are the system's: the user's line that
  // called them is where the thread waits (issue 41).
  CHECK(says(w, "joins a thread (Thread.join) at <module> (py_threads.py:113)"));
  // The join comes last: the lock waiters are where to look.
  REQUIRE(w.locations.size() == 3);
  CHECK(w.locations[0].function == "forward");
  CHECK(w.locations[2].function == "<module>");
  CHECK(w.locations[2].line == 113u);
  CHECK(w.details["threads"][0]["wait"] == "python_lock");
  CHECK(w.details["threads"][2]["wait"] == "python_join");
}

TEST_CASE("host-waits: the standard library's waits are condition waits, not Python locks",
          "[heuristics][host]") {
  // An idle thread pool worker and an Event.wait: CPython's lock acquire under the standard
  // library's frames is how they sleep until notified. Two of them must not read as a lock loop.
  auto python = [](std::string function, std::string file, std::uint32_t line) {
    Frame f = make_frame(std::move(function), std::move(file), line);
    f.python = true;
    f.pc.reset();
    return f;
  };
  auto waiting = [&](std::string id, std::uint64_t lwp, Frame innermost_python) {
    return host_thread(std::move(id), lwp,
                       {make_frame("do_futex_wait", "./nptl/sem_waitcommon.c", 111),
                        make_frame("__new_sem_wait_slow64", "./nptl/sem_waitcommon.c", 183),
                        make_frame("PyThread_acquire_lock_timed", "", {}, "/usr/bin/python3.11"),
                        make_frame("_PyObject_MakeTpCall", "", {}, "/usr/bin/python3.11"),
                        std::move(innermost_python),
                        make_frame("start_thread", "./nptl/pthread_create.c", 442)});
  };
  Snapshot s;
  s.debugger = DebuggerKind::Gdb;
  s.host_threads.push_back(
      waiting("1", 100, python("_worker", "/usr/lib/python3.11/concurrent/futures/thread.py", 81)));
  s.host_threads.push_back(
      waiting("2", 101, python("Condition.wait", "/usr/lib/python3.11/threading.py", 320)));
  s.host_threads.push_back(
      waiting("3", 102,
              python("Engine.step", "/opt/venv/lib/python3.11/site-packages/serve/engine.py", 9)));
  const auto fs = heuristics::run(s);
  const Finding* w = find_id(fs, heuristics::kHostWaits);
  REQUIRE(w != nullptr);
  CHECK(w->title == "host threads waiting: 2 on a condition variable, 1 on a Python lock");
  // Every thread waits: a finding (issue 42's one exit-code rule), not a note.
  CHECK(w->severity == Severity::Warning);
  CHECK(says(*w, "waits to acquire a Python lock (threading.Lock or RLock: `with lock:` or "
                 "`acquire()`) at Engine.step (engine.py:9)"));
}

TEST_CASE("system frames collapse to the innermost frame of the user's code", "[snapshot][host]") {
  HostThread t = mutex_waiter("2", 101, 0x5000, "", 102, 40);
  const Frame* f = innermost_user_frame(t);
  REQUIRE(f != nullptr);
  CHECK(f->function == "cache_insert(Entry*)");
  CHECK(is_system_frame(make_frame("futex_wait", "../sysdeps/nptl/futex-internal.h", 146)));
  CHECK(
      is_system_frame(make_frame("std::mutex::lock", "/usr/include/c++/12/bits/std_mutex.h", 100)));
  CHECK(is_system_frame(
      make_frame("hipStreamSynchronize", "", {}, "/opt/rocm/lib/libamdhip64.so.6")));
  CHECK_FALSE(is_system_frame(
      make_frame("at::native::_local_scalar_dense_cuda", "", {}, "/opt/venv/lib/libtorch_hip.so")));
  // The C runtime's entry, whatever object it is linked into; a user's `_start_job` is not it.
  CHECK(is_system_frame(make_frame("_start", "", {}, "")));
  CHECK_FALSE(is_system_frame(make_frame("_start_job", "job.cpp", 3)));
}

TEST_CASE("a thread waiting under the interpreter alone is placed in Python code",
          "[snapshot][host]") {
  // No Python frames were read (cuda-gdb without the frame walk): the frame outside the wait is
  // the interpreter's C API, which says nothing to the user.
  HostThread t;
  t.id = "1";
  t.frames = {make_frame("clock_nanosleep", "", {}, "/lib/x86_64-linux-gnu/libc.so.6"),
              make_frame("", "", {}, ""),
              make_frame("PyObject_Vectorcall", "", {}, ""),
              make_frame("_PyEval_EvalFrameDefault", "", {}, ""),
              make_frame("__libc_start_main", "", {}, "/lib/x86_64-linux-gnu/libc.so.6"),
              make_frame("_start", "", {}, "")};
  CHECK(innermost_user_frame(t) == nullptr);
  CHECK(heuristics::detail::thread_where(t) == "Python code waiting in clock_nanosleep");
  // Without the interpreter, the frame outside the wait names the caller; where the program
  // began names none, so the wait itself is said.
  t.frames = {make_frame("clock_nanosleep", "", {}, "/lib/x86_64-linux-gnu/libc.so.6"),
              make_frame("sleep", "", {}, "/lib/x86_64-linux-gnu/libc.so.6"),
              make_frame("std::thread::_State_impl::_M_run()", "", {},
                         "/lib/x86_64-linux-gnu/libstdc++.so.6"),
              make_frame("_start", "", {}, "")};
  CHECK(heuristics::detail::thread_where(t) ==
        "_M_run from libstdc++.so.6 (waits in clock_nanosleep)");
  t.frames.erase(t.frames.begin() + 2);
  CHECK(heuristics::detail::thread_where(t) == "clock_nanosleep from libc.so.6");
  // `sleep 300` (coreutils, stripped) under gdb with glibc's debug files: the C start-up's frames
  // carry glibc's source paths, and are not the program's.
  t.frames = {
      make_frame("__GI___clock_nanosleep", "../sysdeps/unix/sysv/linux/clock_nanosleep.c", 71),
      make_frame("__GI___nanosleep", "../sysdeps/unix/sysv/linux/nanosleep.c", 25),
      make_frame(""),
      make_frame("__libc_start_call_main", "../sysdeps/nptl/libc_start_call_main.h", 58),
      make_frame("__libc_start_main_impl", "../csu/libc-start.c", 360),
      make_frame("")};
  CHECK(innermost_user_frame(t) == nullptr);
  CHECK(heuristics::detail::thread_where(t) == "__GI___clock_nanosleep at clock_nanosleep.c:71");
}

TEST_CASE("caller frames take the line of the call (PC - 1), the innermost its own PC",
          "[snapshot][host]") {
  // A gdb session that asked `info line` for the innermost PC and for a caller's PC - 1, and whose
  // stack came from `-thread-info` frames plus `bt` without source (stripped binary + separate
  // line information is common in the field: only `info line` has the lines).
  const std::string text =
      "# rocplay-transcript 1\n"
      "> 0.001 1-thread-info\n"
      "< 0.002 1^done,threads=[{id=\"1\",target-id=\"Thread 0x7f (LWP 77)\",name=\"app\","
      "frame={level=\"0\",addr=\"0x0000000000401136\",func=\"spin\",args=[]},state=\"stopped\"}]\n"
      "< 0.003 (gdb) \n"
      "> 0.004 2-stack-list-frames --thread 1 0 2\n"
      "< 0.005 2^done,stack=[frame={level=\"0\",addr=\"0x0000000000401136\",func=\"spin\"},"
      "frame={level=\"1\",addr=\"0x0000000000401160\",func=\"caller\"},"
      "frame={level=\"2\",addr=\"0x0000000000401190\",func=\"main\"}]\n"
      "< 0.006 (gdb) \n"
      "> 0.007 3-interpreter-exec console \"info line *0x401136\"\n"
      "< 0.008 ~\"Line 5 of \\\"app.c\\\" starts at address 0x401130 <spin+4> and ends at "
      "0x40113a <spin+10>.\\n\"\n"
      "< 0.009 3^done\n"
      "< 0.010 (gdb) \n"
      "> 0.011 4-interpreter-exec console \"info line *0x40115f\"\n"
      "< 0.012 ~\"Line 11 of \\\"app.c\\\" starts at address 0x40115a <caller+10> and ends at "
      "0x401160 <caller+16>.\\n\"\n"
      "< 0.013 4^done\n"
      "< 0.014 (gdb) \n";
  Snapshot s = snapshot::build_from_transcript(text);
  REQUIRE(s.host_threads.size() == 1);
  const auto& fr = s.host_threads[0].frames;
  REQUIRE(fr.size() == 3);
  CHECK(s.host_threads[0].lookup_pc(0) == 0x401136u);
  CHECK(s.host_threads[0].lookup_pc(1) == 0x40115fu);
  CHECK(fr[0].line == 5u);
  // The return address 0x401160 is the first instruction of line 12: the call is on line 11.
  CHECK(fr[1].line == 11u);
  CHECK(fr[1].file == "app.c");
  CHECK(s.frame_line(s.host_threads[0], 1) != nullptr);
  // A frame inlined into the innermost one shares its PC: no PC - 1 there.
  HostThread inl;
  inl.frames = {fr[0], fr[0], fr[1]};
  inl.frames[1].level = 1;
  inl.frames[2].level = 2;
  CHECK(inl.lookup_pc(1) == 0x401136u);
  CHECK(inl.lookup_pc(2) == 0x40115fu);
  CHECK_FALSE(fr[2].line.has_value()); // never asked: no guess
}

TEST_CASE("host-deadlock from a real gdb recording of tests/targets/deadlock_target",
          "[heuristics][host]") {
  Snapshot s = test::load("rocgdb/host-mutex-deadlock/snapshot.mi");
  REQUIRE(s.host_threads.size() == 4);
  std::size_t read = 0;
  for (const auto& t : s.host_threads) {
    if (t.mutex_wait) {
      ++read;
      CHECK((t.mutex_wait->symbol == "mutex_a" || t.mutex_wait->symbol == "mutex_b"));
      CHECK(t.mutex_wait->owner.has_value());
    }
  }
  CHECK(read == 2);
  auto fs = heuristics::run(s);
  REQUIRE(fs.size() == 2);
  const Finding& f = fs.front();
  CHECK(f.id == heuristics::kHostDeadlock);
  CHECK(says(f, "\"lock_ab\") waits for mutex_b"));
  CHECK(says(f, "\"lock_ba\") waits for mutex_a"));
  CHECK(says(f, "take_second at deadlock_target.cpp:40 (called from lock_in_order at "
                "deadlock_target.cpp:47)"));
  CHECK(fs[1].id == heuristics::kHostWaits);
  CHECK(says(fs[1], "condition variable at wait_forever at deadlock_target.cpp:54"));
}
