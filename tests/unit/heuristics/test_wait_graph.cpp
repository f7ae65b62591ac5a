// The wait-for graph's producers on hand-built snapshots of shapes no recording holds yet: a
// thread waiting for the GIL in a stripped interpreter (no take_gil symbol) behind a holder in a
// C call, a call that never returns across samples, two ranks in collectives from different call
// sites (an order mismatch: a cycle across ranks), a missing rank, and the hook for the job's
// collective records. Every real recording's graph is checked in
// tests/unit/postmortem/test_wait_graph_recordings.cpp.
#include "rocplay/graph/graph.hpp"
#include "rocplay/heuristics/heuristics.hpp"
#include "rocplay/heuristics/wait_graph.hpp"

#include <catch2/catch.hpp>

using namespace rocplay;
using rocplay::graph::find_roots;

namespace {

Frame native(std::uint32_t level, std::string function, std::uint64_t pc) {
  Frame f;
  f.level = level;
  f.function = std::move(function);
  f.pc = pc;
  f.from = "/usr/bin/python3.11";
  return f;
}

Frame python(std::uint32_t level, std::string function, std::string file, std::uint32_t line) {
  Frame f;
  f.level = level;
  f.function = std::move(function);
  f.file = std::move(file);
  f.line = line;
  f.python = true;
  return f;
}

HostThread thread(std::string id, std::uint64_t lwp, std::vector<Frame> frames) {
  HostThread t;
  t.id = std::move(id);
  t.lwp = lwp;
  t.frames = std::move(frames);
  return t;
}

std::string id_of(const graph::Graph& g, graph::NodeId n) {
  return g.node(n).id;
}

} // namespace

TEST_CASE("GIL: a stripped interpreter's futex wait under the eval loop waits for the holder") {
  Snapshot s;
  s.pid = 100;
  s.host_threads.push_back(thread(
      "1", 100,
      {native(0, "__futex_abstimed_wait_common", 0x10), native(1, "??", 0x20),
       native(2, "??", 0x30), native(3, "_PyEval_EvalFrameDefault", 0x40),
       python(4, "train_loop", "/app/train.py", 16), python(5, "<module>", "/app/train.py", 30)}));
  HostThread holder =
      thread("2", 101,
             {native(0, "mix_inner", 0x1000), native(1, "rocplay_busy", 0x2000),
              native(2, "ffi_call", 0x3000), python(3, "tokenize_batch", "/app/data.py", 10),
              python(4, "run", "/usr/lib/python3.11/threading.py", 975)});
  holder.holds_gil = true;
  s.host_threads.push_back(holder);
  // A thread in Event.wait: a lock of the program's own, named; never a GIL waiter.
  s.host_threads.push_back(thread(
      "3", 102,
      {native(0, "__futex_abstimed_wait_common", 0x50), native(1, "do_futex_wait", 0x51),
       native(2, "__new_sem_wait_slow64", 0x52), native(3, "PyThread_acquire_lock_timed", 0x53),
       native(4, "_PyEval_EvalFrameDefault", 0x54),
       python(5, "wait", "/usr/lib/python3.11/threading.py", 327),
       python(6, "consume", "/app/worker.py", 44)}));

  // Two samples: the holder's call is the same, frame 0 moved, and it burned the CPU.
  std::vector<Sample> samples(2);
  samples[0].snapshot = s;
  samples[1].index = 2;
  samples[1].at = 2.0;
  samples[1].snapshot = s;
  HostThread& later = samples[1].snapshot.host_threads[1];
  later.frames[0] = native(0, "mix", 0x1800);
  later.figures = ThreadFigures{"R", 1.9, 2.0};
  samples[1].snapshot.host_threads[0].figures = ThreadFigures{"S", 0.0, 2.0};
  samples[1].snapshot.host_threads[2].figures = ThreadFigures{"S", 0.0, 2.0};
  const auto sampled = heuristics::run_samples(samples);

  heuristics::GraphInputs in;
  in.snapshot = &samples[0].snapshot;
  in.findings = &sampled.findings;
  in.progress = &sampled.progress;
  in.samples = &samples;
  const auto g = heuristics::wait_graph(in);
  const auto roots = find_roots(g);
  REQUIRE(roots.size() == 1);
  const auto& root = g.node(roots[0].node);
  CHECK(root.id == "thread:101");
  CHECK(root.state == graph::State::Spinning);
  CHECK(root.where == "tokenize_batch (data.py:10)");
  CHECK_THAT(root.doing, Catch::Contains("in one call") && Catch::Contains("never returns"));
  REQUIRE(roots[0].chains.size() == 1);
  const auto& chain = roots[0].chains[0];
  REQUIRE(chain.size() == 3);
  CHECK(id_of(g, chain[0]) == "thread:100");
  CHECK(g.node(chain[0]).where == "train_loop (train.py:16)");
  CHECK(id_of(g, chain[1]) == "gil");
  // The Event.wait thread names its caller's line, not threading.py's.
  CHECK(g.node(g.find("thread:102")).where == "consume (worker.py:44)");
  CHECK(graph::cause_lines(g).front().starts_with("thread 2 (tokenize_batch (data.py:10)), "));

  SECTION("a holder that slept between the samples is not called stuck") {
    samples[1].snapshot.host_threads[1].figures = ThreadFigures{"S", 0.0, 2.0};
    const auto again = heuristics::run_samples(samples);
    in.progress = &again.progress;
    in.findings = &again.findings;
    const auto g2 = heuristics::wait_graph(in);
    CHECK(find_roots(g2).empty());
    CHECK(graph::cause_lines(g2) ==
          std::vector<std::string>{"none: every wait seen ends at work that moved"});
  }
}

TEST_CASE("ranks in collectives from different call sites close a cycle across ranks") {
  auto rank_graph = [](const std::string& site) {
    graph::Graph g;
    graph::Node t;
    t.id = "thread:1";
    t.kind = "thread";
    t.label = "main thread";
    t.state = graph::State::Blocked;
    t.where = site;
    t.weight = 3;
    graph::Node d;
    d.id = "dispatch:7";
    d.kind = "collective";
    d.label = "ncclDevKernel_AllReduce_Sum_f32_RING_LL (dispatch 7)";
    d.name = "ncclDevKernel_AllReduce_Sum_f32_RING_LL";
    graph::Node peers;
    peers.id = "peers:7";
    peers.kind = "rank";
    peers.label = "the peer ranks";
    const auto tn = g.add(t);
    const auto dn = g.add(d);
    const auto pn = g.add(peers);
    g.wait(tn, dn, graph::EdgeKind::Or, "frame cudaStreamSynchronize");
    g.wait(dn, pn, graph::EdgeKind::And, "collective-wait");
    return g;
  };
  const auto a = rank_graph("step_rank0 (order.py:21)");
  const auto b = rank_graph("step_rank1 (order.py:26)");
  std::vector<heuristics::RankGraph> ranks = {{0, 10, &a, nullptr, {}}, {1, 11, &b, nullptr, {}}};
  const auto g = heuristics::incident_graph(ranks, {});
  const auto roots = find_roots(g);
  REQUIRE(roots.size() == 1);
  CHECK(roots[0].cycle);
  CHECK(roots[0].cycle_nodes.size() == 4);
  CHECK(roots[0].waiters == 2); // each rank's main thread
  const std::string cause = graph::cause_lines(g).front();
  CHECK_THAT(cause, Catch::StartsWith("a cycle of waits: ") && Catch::Contains("rank 0: ") &&
                        Catch::Contains("rank 1: "));

  SECTION("the same call site on both ranks is one collective waiting together: no cycle") {
    const auto c = rank_graph("step (order.py:21)");
    const auto d = rank_graph("step (order.py:21)");
    std::vector<heuristics::RankGraph> same = {{0, 10, &c, nullptr, {}}, {1, 11, &d, nullptr, {}}};
    const auto h = heuristics::incident_graph(same, {});
    CHECK(find_roots(h).empty());
    CHECK_FALSE(graph::open_ends(h).empty()); // the peers: not seen as stuck
  }

  SECTION("a missing rank is the root its peers wait for") {
    Finding missing;
    missing.id = std::string(heuristics::kMissingRank);
    missing.details = {{"kernel", "ncclDevKernel_AllReduce_Sum_f32_RING_LL"}, {"missing", {1}}};
    graph::Graph idle;
    graph::Node t;
    t.id = "thread:1";
    t.kind = "thread";
    t.label = "main thread";
    t.where = "sleep_forever (mismatch.py:40)";
    t.weight = 3;
    idle.add(t);
    std::vector<heuristics::RankGraph> two = {{0, 10, &a, nullptr, {}},
                                              {1, 11, &idle, nullptr, {}}};
    const auto h = heuristics::incident_graph(two, {missing});
    const auto r = find_roots(h);
    REQUIRE(r.size() == 1);
    CHECK(h.node(r[0].node).id == "rank 1/elsewhere");
    CHECK(h.node(r[0].node).where == "sleep_forever (mismatch.py:40)");
    REQUIRE_FALSE(r[0].chains.empty());
    CHECK(h.node(r[0].chains[0].front()).id == "rank 0/thread:1");
  }
}

namespace {

// The details of a collective-* finding as collectives::findings writes them (to_json).
Finding divergence(const std::string& kind, const nlohmann::json& sides) {
  Finding f;
  f.id = "collective-" + kind;
  f.details = {{"kind", kind}, {"what", "the records differ"}, {"sides", sides}};
  return f;
}

} // namespace

TEST_CASE("collective records: a mismatch and an order deadlock are cycles, a missing rank a "
          "dead end") {
  const nlohmann::json site0 = {{"file", "/w/train.py"}, {"line", 40}, {"function", "step"}};
  const nlohmann::json site1 = {{"file", "/w/train.py"}, {"line", 44}, {"function", "step"}};
  {
    const auto g =
        heuristics::incident_graph({}, {divergence("op mismatch", {{{"rank", 0},
                                                                    {"group", "0"},
                                                                    {"seq", 4},
                                                                    {"entered", true},
                                                                    {"op", "all_reduce"},
                                                                    {"call_site", site0}},
                                                                   {{"rank", 1},
                                                                    {"group", "0"},
                                                                    {"seq", 4},
                                                                    {"entered", true},
                                                                    {"op", "all_gather"},
                                                                    {"call_site", site1}}})});
    const auto r = find_roots(g);
    REQUIRE(r.size() == 1);
    CHECK(r[0].cycle);
    CHECK(g.node(r[0].cycle_nodes[0]).where == "step (train.py:40)");
    CHECK(g.node(r[0].cycle_nodes[1]).label == "rank 1: all_gather #4 of group 0");
  }
  {
    const auto g = heuristics::incident_graph(
        {}, {divergence("order deadlock",
                        {{{"rank", 0}, {"group", "1"}, {"seq", 2}, {"entered", true}},
                         {{"rank", 1}, {"group", "1"}, {"seq", 1}, {"entered", false}},
                         {{"rank", 1}, {"group", "2"}, {"seq", 2}, {"entered", true}},
                         {{"rank", 0}, {"group", "2"}, {"seq", 1}, {"entered", false}}})});
    const auto r = find_roots(g);
    REQUIRE(r.size() == 1);
    CHECK(r[0].cycle);
    CHECK(r[0].cycle_nodes.size() == 2); // the sides that never entered are not nodes
  }
  {
    const auto g = heuristics::incident_graph(
        {}, {divergence("missing rank",
                        {{{"rank", 0}, {"group", "0"}, {"seq", 4}, {"entered", true}},
                         {{"rank", 1}, {"group", "0"}, {"seq", 3}, {"entered", false}}})});
    const auto r = find_roots(g);
    REQUIRE(r.size() == 1);
    CHECK(g.node(r[0].node).id == "rank 1/elsewhere");
    CHECK(g.node(r[0].node).dead_end);
  }
  // A finding that is not the records' adds nothing.
  Finding other;
  other.id = "host-waits";
  CHECK(heuristics::incident_graph({}, {other}).empty());
}

// ---- host waits from /proc (Snapshot::kernel_waits) ----

namespace {

KernelWait kwait(std::int64_t tid, std::string call) {
  KernelWait k;
  k.tid = tid;
  k.call = std::move(call);
  return k;
}

KernelWait futex_wait(std::int64_t tid, std::uint64_t address) {
  KernelWait k = kwait(tid, "futex");
  k.futex = address;
  return k;
}

ProcessWaits process_waits(std::int64_t pid, std::string role, std::vector<KernelWait> threads) {
  ProcessWaits p;
  p.pid = pid;
  p.ppid = role == "child" ? 100 : 1;
  p.comm = "python3";
  p.state = "S";
  p.role = std::move(role);
  p.threads = std::move(threads);
  return p;
}

// A Python thread in `function` at `file:line`, under the standard library's frames `stdlib`.
HostThread py_thread(std::string id, std::uint64_t lwp, std::string function, std::uint32_t line,
                     std::vector<Frame> stdlib = {}) {
  // A lock's wait, as Debian's python3 shows it: named, so not taken for the GIL's.
  std::vector<Frame> frames{native(0, "__futex_abstimed_wait_common", 0x10 + lwp),
                            native(1, "PyThread_acquire_lock_timed", 0x20 + lwp)};
  std::uint32_t level = 2;
  for (auto& f : stdlib) {
    f.level = level++;
    frames.push_back(f);
  }
  frames.push_back(python(level, std::move(function), "/app/job.py", line));
  return thread(std::move(id), lwp, std::move(frames));
}

std::string root_text(const graph::Graph& g) {
  const auto roots = find_roots(g);
  if (roots.empty()) {
    return "none";
  }
  std::string out = id_of(g, roots.front().node) + (roots.front().cycle ? " cycle" : "");
  if (!roots.front().chains.empty()) {
    for (auto n : roots.front().chains.front()) {
      out += " " + id_of(g, n);
    }
  }
  return out;
}

} // namespace

TEST_CASE("kernel waits: a parent in wait4 on a child reading the parent's pipe is a cycle") {
  Snapshot s;
  s.pid = 100;
  s.host_threads.push_back(py_thread(
      "1", 100, "run_filter", 17, {python(0, "wait", "/usr/lib/python3.11/subprocess.py", 1264)}));
  KernelWait w4 = kwait(100, "wait4");
  w4.child = 200;
  KernelWait rd = kwait(200, "read");
  rd.fd = 0;
  rd.file = "pipe:[77]";
  s.kernel_waits.processes = {process_waits(100, "target", {w4}),
                              process_waits(200, "child", {rd})};
  PipeHolders h;
  h.inode = 77;
  h.writers = {100};
  h.readers = {200};
  h.complete = true;
  s.kernel_waits.pipes = {h};
  const auto g = heuristics::wait_graph({.snapshot = &s});
  const auto roots = find_roots(g);
  REQUIRE(roots.size() == 1);
  CHECK(roots.front().cycle);
  CHECK(id_of(g, roots.front().node) == "thread:100");
  // The user's line, not subprocess.py's.
  CHECK(g.node(roots.front().node).where == "run_filter (job.py:17)");
  REQUIRE(roots.front().cycle_nodes.size() == 3);
  CHECK(id_of(g, roots.front().cycle_nodes[1]) == "process:200");
  CHECK(id_of(g, roots.front().cycle_nodes[2]) == "pipe:77:w");
  const auto findings = heuristics::run(s);
  REQUIRE_FALSE(findings.empty());
  CHECK(findings.front().id == "host-deadlock");
  CHECK(findings.front().severity == Severity::Error);
  CHECK(findings.front().locations.front().line == 17u);

  SECTION("another process holds the write end too: it could still write, no root") {
    s.kernel_waits.pipes.front().writers = {100, 300};
    const auto g2 = heuristics::wait_graph({.snapshot = &s});
    CHECK(find_roots(g2).empty());
    for (const auto& f : heuristics::run(s)) {
      CHECK(f.id != "host-deadlock");
    }
  }
  SECTION("the child has exited: the wait returns") {
    s.kernel_waits.processes[1].state = "Z";
    CHECK(find_roots(heuristics::wait_graph({.snapshot = &s})).empty());
  }
}

TEST_CASE("kernel waits: every thread asleep with no waker is the process's deadlock") {
  Snapshot s;
  s.pid = 100;
  const Frame cond = python(0, "wait", "/usr/lib/python3.11/threading.py", 327);
  s.host_threads = {py_thread("1", 100, "main", 27, {cond}),
                    py_thread("2", 101, "task", 20, {cond}),
                    py_thread("3", 102, "task", 20, {cond})};
  s.kernel_waits.processes = {process_waits(
      100, "target", {futex_wait(100, 0x1000), futex_wait(101, 0x2000), futex_wait(102, 0x3000)})};
  const auto g = heuristics::wait_graph({.snapshot = &s});
  const auto roots = find_roots(g);
  REQUIRE(roots.size() == 1);
  CHECK(id_of(g, roots.front().node) == "asleep:100");
  CHECK(roots.front().waiters == 3);
  CHECK(g.node(roots.front().node).where == "task (job.py:20) in 2 threads; main (job.py:27)");
  auto findings = heuristics::run(s);
  REQUIRE_FALSE(findings.empty());
  CHECK(findings.front().id == "host-deadlock");
  CHECK(findings.front().severity == Severity::Error);

  SECTION("one wait has a timeout: something will wake, no root, no error") {
    s.kernel_waits.processes.front().threads[1].timed = true;
    CHECK(root_text(heuristics::wait_graph({.snapshot = &s})) == "none");
    for (const auto& f : heuristics::run(s)) {
      CHECK(f.severity < Severity::Error);
    }
  }
  SECTION("one thread runs") {
    s.kernel_waits.processes.front().threads[2] = kwait(102, "running");
    CHECK(root_text(heuristics::wait_graph({.snapshot = &s})) == "none");
  }
  SECTION("a thread /proc did not see (born after the read) could be the waker") {
    s.host_threads.push_back(py_thread("4", 103, "late", 40, {cond}));
    CHECK(root_text(heuristics::wait_graph({.snapshot = &s})) == "none");
  }
  SECTION("a consumer in queue.get: the queue nothing will put to, at the user's line") {
    s.host_threads.front() = py_thread(
        "1", 100, "consume", 19, {cond, python(0, "get", "/usr/lib/python3.11/queue.py", 171)});
    const auto g2 = heuristics::wait_graph({.snapshot = &s});
    const auto r = find_roots(g2);
    // Two roots: the queue (the consumer behind it) and the workers asleep, which lead by
    // their number of waiters.
    REQUIRE(r.size() == 2);
    CHECK(id_of(g2, r.front().node) == "asleep:100");
    CHECK(id_of(g2, r.back().node) == "queue:100");
    REQUIRE(r.back().chains.size() == 1);
    CHECK(id_of(g2, r.back().chains.front().front()) == "thread:100");
    CHECK(g2.node(r.back().node).where == "consume (job.py:19)");
    findings = heuristics::run(s);
    CHECK_THAT(findings.front().title, Catch::Contains("queue.get() at consume (job.py:19)"));
    CHECK(findings.front().locations.front().line == 19u);
  }
}

TEST_CASE("kernel waits: a spin beside a read of a pipe no thread will write: the read is the "
          "root") {
  Snapshot s;
  s.pid = 100;
  Frame spin = native(0, "main", 0x401000);
  spin.file = "/app/spin.cpp";
  spin.line = 33;
  spin.from = "/app/spin";
  Frame rd_frame = native(1, "load_config", 0x401200);
  rd_frame.file = "/app/spin.cpp";
  rd_frame.line = 20;
  rd_frame.from = "/app/spin";
  s.host_threads = {thread("1", 100, {spin}),
                    thread("2", 101, {native(0, "read", 0x7f0010), rd_frame})};
  KernelWait rd = kwait(101, "read");
  rd.fd = 3;
  rd.file = "pipe:[88]";
  s.kernel_waits.processes = {process_waits(100, "target", {kwait(100, "running"), rd})};
  PipeHolders h;
  h.inode = 88;
  h.writers = {100};
  h.readers = {100};
  h.complete = true;
  s.kernel_waits.pipes = {h};
  // The spinner as progress calls it over two samples.
  SampleProgress progress;
  ProgressEntry e;
  e.kind = "thread";
  e.id = "1";
  e.motion = Motion::Stuck;
  e.why = "stuck for 2.0 s";
  progress.entries.push_back(e);
  const auto g = heuristics::wait_graph({.snapshot = &s, .progress = &progress});
  CHECK(root_text(g) == "thread:101 thread:100 thread:101");
  const auto roots = find_roots(g);
  REQUIRE(roots.size() == 1);
  CHECK(g.node(roots.front().node).where == "load_config at spin.cpp:20");

  SECTION("without the spin known, the main thread could still write: no root") {
    CHECK(root_text(heuristics::wait_graph({.snapshot = &s})) == "none");
  }
}

TEST_CASE("kernel waits: a child whose every thread sleeps on its own futexes is the root") {
  Snapshot s;
  s.pid = 100;
  s.host_threads.push_back(py_thread("1", 100, "run_job", 12));
  KernelWait w4 = kwait(100, "wait4");
  w4.child = 200;
  s.kernel_waits.processes = {
      process_waits(100, "target", {w4}),
      process_waits(200, "child", {futex_wait(200, 0x10), futex_wait(201, 0x20)})};
  auto g = heuristics::wait_graph({.snapshot = &s});
  CHECK(root_text(g) == "process:200 thread:100 process:200");
  const auto roots = find_roots(g);
  REQUIRE(roots.size() == 1);
  CHECK_THAT(g.node(roots.front().node).doing, Catch::Contains("rocplay run --pid 200"));

  SECTION("one of its waits is timed: it may wake, the chain ends open") {
    s.kernel_waits.processes[1].threads[1].timed = true;
    g = heuristics::wait_graph({.snapshot = &s});
    CHECK(root_text(g) == "none");
    CHECK_FALSE(graph::open_ends(g).empty());
  }
}

TEST_CASE("kernel waits: a mutex loop stays the root when every thread is asleep too") {
  Snapshot s;
  s.pid = 100;
  auto locker = [](std::string id, std::uint64_t lwp, std::uint64_t mutex, std::int64_t owner) {
    HostThread t =
        thread(std::move(id), lwp,
               {native(0, "__lll_lock_wait", 0x10), native(1, "pthread_mutex_lock", 0x20)});
    t.frames[0].from = "/lib/x86_64-linux-gnu/libc.so.6";
    t.frames[1].from = "/lib/x86_64-linux-gnu/libc.so.6";
    MutexWait m;
    m.address = mutex;
    m.owner = owner;
    t.mutex_wait = m;
    return t;
  };
  s.host_threads = {locker("2", 101, 0xa0, 102), locker("3", 102, 0xb0, 101)};
  s.kernel_waits.processes = {
      process_waits(100, "target", {futex_wait(101, 0xa0), futex_wait(102, 0xb0)})};
  const auto g = heuristics::wait_graph({.snapshot = &s});
  const auto roots = find_roots(g);
  REQUIRE(roots.size() == 1);
  CHECK(roots.front().cycle);
  CHECK(g.find("asleep:100") == graph::Graph::npos);
  const auto findings = heuristics::run(s);
  REQUIRE_FALSE(findings.empty());
  CHECK(findings.front().severity == Severity::Critical);
  for (const auto& f : findings) {
    CHECK_FALSE(f.details.contains("asleep"));
  }
}
