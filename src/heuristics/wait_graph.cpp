// The producers of the wait-for graph (rocplay/heuristics/wait_graph.hpp, docs/heuristics.md
// "Producers"): host threads and their states, the GIL, mutex owners, host waits on the GPU,
// dispatches with their lanes (lanes behind a barrier wait for the lanes still polling, which
// wait for a flag), split-K `_clean` kernels on their workspace counter, queues with packets
// pending, a call that never returns; across ranks, a rank gone elsewhere and an order mismatch.
// Each reads facts the case already holds; none decides the verdict.
#include "rocplay/heuristics/wait_graph.hpp"

#include "heuristics/common.hpp"
#include "rocplay/snapshot/frames.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <set>

namespace rocplay::heuristics {
// Named, not anonymous: the heuristics build as one unity file, whose anonymous helpers share a
// namespace.
namespace wfg {

using graph::EdgeKind;
using graph::NodeId;
using graph::State;

// Below this share of the runs between samples on the CPU, a thread slept through them (progress's
// rule); a busy machine gives a spinning thread only a part of one CPU, so above it, it ran.
constexpr double kRunningShare = 0.05;

using detail::graph_node;

State state_of(Motion m) {
  switch (m) {
  case Motion::Moving:
    return State::Moving;
  case Motion::Stuck:
    return State::Spinning;
  case Motion::Blocked:
    return State::Blocked;
  case Motion::Unknown:
    break;
  }
  return State::Unknown;
}

// Where a thread stands, Python line first: the innermost Python frame outside the standard
// library and the frameworks (torch's own `synchronize`), else the innermost outside the standard
// library, else the innermost user frame, else frame 0.
std::string where_of(const HostThread& t) {
  const Frame* framework = nullptr;
  for (const auto& f : t.frames) {
    if (f.python && !is_python_standard_library_frame(f)) {
      if (!is_python_framework_frame(f)) {
        return frame_where(f);
      }
      framework = framework != nullptr ? framework : &f;
    }
  }
  if (framework != nullptr) {
    return frame_where(*framework);
  }
  return t.frames.empty() ? std::string() : detail::thread_where(t);
}

// The user's Python frames as a call path, innermost first.
std::vector<std::string> user_python_path(const HostThread& t) {
  std::vector<std::string> path;
  for (const Frame* f : user_python_frames(t)) {
    path.push_back(frame_where(*f));
  }
  return path;
}

bool is_main(const HostThread& t, const Snapshot& s) {
  return (s.pid && t.lwp && static_cast<std::int64_t>(*t.lwp) == *s.pid) || (!s.pid && t.id == "1");
}

std::string thread_label(const HostThread& t, const Snapshot& s) {
  if (is_main(t, s)) {
    return "main thread";
  }
  return t.name.empty() ? fmt::format("thread {}", t.id)
                        : fmt::format("thread {} \"{}\"", t.id, t.name);
}

std::string thread_id(const HostThread& t) {
  return t.lwp ? fmt::format("thread:{}", *t.lwp) : "thread:" + t.id;
}

// A frame among the native frames before the first Python one whose function contains `name`.
const Frame* native_frame(const HostThread& t, std::string_view name, std::size_t depth = 24) {
  for (std::size_t i = 0; i < t.frames.size() && i < depth; ++i) {
    if (t.frames[i].python) {
      return nullptr;
    }
    if (detail::contains(t.frames[i].function, name)) {
      return &t.frames[i];
    }
  }
  return nullptr;
}

// The frame where a Python thread waits for the GIL: `take_gil` by name, or, in a stripped
// interpreter (Debian's python3), a futex or condition wait whose callers up to the eval loop are
// all unnamed or the GIL's own (PyEval_RestoreThread): no lock, sleep or read of the program's.
const Frame* gil_wait(const HostThread& t) {
  if (const Frame* f = native_frame(t, "take_gil")) {
    return f;
  }
  const Frame* wait = nullptr;
  for (std::size_t i = 0; i < t.frames.size() && i < 12; ++i) {
    const Frame& f = t.frames[i];
    const std::string_view fn = f.function;
    if (f.python || fn == "_PyEval_EvalFrameDefault") {
      return i > 0 ? wait : nullptr;
    }
    if (detail::contains(fn, "futex") || detail::contains(fn, "pthread_cond_")) {
      wait = wait == nullptr ? &f : wait;
    } else if (!fn.empty() && fn != "??" && fn != "PyEval_RestoreThread" &&
               fn != "PyEval_AcquireThread" && fn != "PyGILState_Ensure") {
      return nullptr; // a named call of its own: a lock, a sleep, a read
    }
  }
  return nullptr;
}

// The GPU call a host thread waits in, and whether it needs every dispatch (a device-wide
// synchronize) or one of them (a stream, an event, a copy, `.item()`). Empty when none.
struct GpuCall {
  std::string name;
  bool device_wide = false;
  bool launch = false;
};

GpuCall gpu_call(const HostThread& t) {
  for (const auto& f : t.frames) {
    if (f.python) {
      break;
    }
    const std::string_view fn = f.function;
    if (!detail::contains(fn, "Synchronize") && !detail::contains(fn, "Memcpy") &&
        !detail::contains(fn, "_local_scalar_dense") && !detail::contains(fn, "hsa_signal_wait") &&
        !detail::contains(fn, "LaunchKernel") && !detail::contains(fn, "launchKernel")) {
      continue;
    }
    std::string name = short_function_name(f.function);
    GpuCall c;
    c.device_wide = name == "cudaDeviceSynchronize" || name == "hipDeviceSynchronize" ||
                    name == "cuCtxSynchronize";
    c.launch = detail::contains(name, "aunchKernel");
    if (detail::contains(name, "_local_scalar_dense")) {
      name = "_local_scalar_dense (.item())";
    }
    c.name = std::move(name);
    // The outermost GPU call names it best (cudaDeviceSynchronize over cuCtxSynchronize).
    GpuCall outer = c;
    for (const auto* g = &f + 1; g < t.frames.data() + t.frames.size() && !g->python; ++g) {
      std::string n = short_function_name(g->function);
      if (n.starts_with("cuda") || n.starts_with("hip") || n == "_local_scalar_dense_cuda") {
        if (detail::contains(n, "Synchronize") || detail::contains(n, "Memcpy") ||
            detail::contains(n, "aunchKernel")) {
          outer.name = n;
          outer.device_wide = outer.device_wide || detail::contains(n, "DeviceSynchronize");
          outer.launch = detail::contains(n, "aunchKernel");
        }
      }
    }
    return outer;
  }
  return {};
}

// The user's line a thread's calls are made from: its innermost Python frame, else its innermost
// user frame; frames.size() when it has neither.
std::size_t anchor_of(const HostThread& t) {
  for (std::size_t i = 0; i < t.frames.size(); ++i) {
    if (t.frames[i].python) {
      return i;
    }
  }
  const Frame* user = innermost_user_frame(t);
  return user == nullptr ? t.frames.size() : static_cast<std::size_t>(user - t.frames.data());
}

bool same_frame(const Frame& a, const Frame& b) {
  return a.function == b.function && a.python == b.python &&
         (a.python ? a.line == b.line && a.file == b.file : a.pc == b.pc);
}

// A thread that stayed inside one call in every sample while the frames inside it moved: the
// call's frame (the innermost named one whose function is the same in every sample, with every
// frame from it out to the user's line identical), else nullptr; `cpu` and `ran` sum its figures
// between samples. Progress calls such a thread moving: its frame 0 moved.
const Frame* call_never_returning(const HostThread& t, const std::vector<Sample>& samples,
                                  double& cpu, double& ran) {
  if (samples.size() < 2 || t.frames.empty()) {
    return nullptr;
  }
  // The user's line the call is made from must stay put (a C++ loop in main() moves: not one
  // call). Stacks are compared from it inward: a backtrace cut at its depth limit loses outer
  // frames, more of them the deeper the thread is inside the call.
  const std::size_t anchor = anchor_of(t);
  if (anchor == t.frames.size()) {
    return nullptr;
  }
  std::size_t call = 0; // index into t.frames, the outermost of each sample's answer
  cpu = 0;
  ran = 0;
  for (std::size_t k = 1; k < samples.size(); ++k) {
    const HostThread* other = nullptr;
    for (const auto& u : samples[k].snapshot.host_threads) {
      if ((t.lwp && u.lwp == t.lwp) || (!t.lwp && u.id == t.id)) {
        other = &u;
        break;
      }
    }
    if (other == nullptr || other->frames.empty()) {
      return nullptr;
    }
    if (other->figures && other->figures->run_seconds > 0) {
      cpu += other->figures->cpu_seconds;
      ran += other->figures->run_seconds;
    }
    const std::size_t other_anchor = anchor_of(*other);
    if (other_anchor == other->frames.size() ||
        !same_frame(t.frames[anchor], other->frames[other_anchor])) {
      return nullptr; // the user's line moved
    }
    // From the anchor inward: identical frames, then one of the same function.
    std::size_t i = anchor;
    std::size_t j = other_anchor;
    std::size_t here = t.frames.size(); // none yet
    while (i > 0 && j > 0) {
      const Frame& a = t.frames[i - 1];
      const Frame& b = other->frames[j - 1];
      if (a.function != b.function || a.python != b.python) {
        break;
      }
      if (!a.function.empty() && a.function != "??") {
        here = i - 1; // an unnamed frame cannot name the call
      }
      if (!same_frame(a, b)) {
        break; // the same call, somewhere else inside it
      }
      --i;
      --j;
    }
    if (i == 0 && j == 0) {
      return nullptr; // the very same stack: progress already calls it stuck or blocked
    }
    if (here == t.frames.size() || t.frames[here].python) {
      return nullptr; // no common call, or only a Python line: not one native call
    }
    call = std::max(call, here);
  }
  // Name the call by a named frame: outward past any unnamed one.
  while (call + 1 < t.frames.size() &&
         (t.frames[call].function.empty() || t.frames[call].function == "??")) {
    ++call;
  }
  return &t.frames[call];
}

// wait_graph_host.cpp: the waits /proc tells (children, pipes, a process asleep for good).
void host_kernel_waits(graph::Graph& g, const Snapshot& s,
                       const std::map<std::uint64_t, NodeId>& target_threads);

struct Builder {
  const GraphInputs& in;
  const Snapshot& s;
  graph::Graph g;
  std::map<std::string, const ProgressEntry*> progress; // `kind:id`
  std::map<std::string, NodeId> thread_nodes;           // by HostThread::id
  std::vector<NodeId> dispatch_nodes;

  const ProgressEntry* entry(std::string_view kind, std::string_view id) const {
    auto it = progress.find(fmt::format("{}:{}", kind, id));
    return it == progress.end() ? nullptr : it->second;
  }

  void threads() {
    for (const auto& t : s.host_threads) {
      if (t.frames.empty() || detail::is_runtime_helper_thread(t.name)) {
        continue; // a runtime's own threads poll whatever the program does: never a headline
      }
      State st = State::Unknown;
      std::string doing;
      std::string never_returns; // the call it runs in for ever
      if (const ProgressEntry* e = entry("thread", t.id)) {
        st = state_of(e->motion);
        doing = e->motion == Motion::Unknown ? std::string() : e->why;
      }
      if (in.samples != nullptr && st == State::Moving) {
        double cpu = 0;
        double ran = 0;
        if (const Frame* call = call_never_returning(t, *in.samples, cpu, ran)) {
          const GpuCall gpu = gpu_call(t);
          if (!gpu.name.empty() && !gpu.launch) {
            // A GPU synchronize spin-waits in the driver (CUDA's default): waiting, not stuck;
            // what it waits for decides.
            st = State::Blocked;
            doing = fmt::format("waits for the GPU in {} in every sample", gpu.name);
          } else if ((ran <= 0 || cpu / ran >= kRunningShare) &&
                     detail::blocking_frame(t) == nullptr) {
            // Outside any wait and not asleep (or not measured, as progress judges a thread
            // whose frames stayed): running inside the call.
            st = State::Spinning;
            never_returns = short_function_name(call->function);
            doing = fmt::format("in one call ({}) in every sample, {}: a call that never returns",
                                frame_where(*call),
                                ran > 0 ? fmt::format("{:.1f} s of CPU in {:.1f} s", cpu, ran)
                                        : std::string("its CPU time not measured"));
          }
        }
      }
      const bool python =
          std::any_of(t.frames.begin(), t.frames.end(), [](const Frame& f) { return f.python; });
      const int weight = is_main(t, s) ? 3 : python ? 2 : 1;
      graph::Node node =
          graph_node(thread_id(t), "thread", thread_label(t, s), st, where_of(t), doing, weight);
      node.call_path = user_python_path(t);
      node.name = never_returns;
      thread_nodes[t.id] = g.add(std::move(node));
    }
  }

  NodeId node_of(const HostThread& t) const {
    auto it = thread_nodes.find(t.id);
    return it == thread_nodes.end() ? graph::Graph::npos : it->second;
  }

  void gil() {
    const HostThread* holder = nullptr;
    std::vector<std::pair<const HostThread*, const Frame*>> waiters;
    for (const auto& t : s.host_threads) {
      if (t.holds_gil) {
        holder = &t;
      } else if (const Frame* f = gil_wait(t)) {
        waiters.emplace_back(&t, f);
      }
    }
    if (waiters.empty()) {
      return;
    }
    const NodeId gil =
        g.add(graph_node("gil", "gil", "the GIL", holder ? State::Blocked : State::Unknown, {},
                         holder ? std::string() : "its holder was not read"));
    for (const auto& [t, f] : waiters) {
      if (NodeId w = node_of(*t); w != graph::Graph::npos) {
        g.node(w).state = g.node(w).state == State::Moving ? State::Moving : State::Blocked;
        g.wait(w, gil, EdgeKind::One,
               detail::contains(f->function, "take_gil")
                   ? fmt::format("frame {} take_gil", f->level)
                   : fmt::format("frame {} {}: a futex wait right under the eval loop (take_gil "
                                 "in a stripped interpreter)",
                                 f->level, short_function_name(f->function)));
      }
    }
    if (holder == nullptr) {
      return;
    }
    NodeId h = node_of(*holder);
    if (h == graph::Graph::npos) {
      return;
    }
    graph::Node& hn = g.node(h);
    if (hn.state == State::Unknown) {
      // One sample: a holder asleep in a wait keeps the GIL as long as the wait lasts.
      if (const Frame* w = detail::blocking_frame(*holder)) {
        hn.state = State::Blocked;
        hn.doing = fmt::format("holds the GIL while it waits in {}", frame_where(*w));
      }
    }
    if (hn.state == State::Blocked && detail::blocking_frame(*holder) != nullptr) {
      // Asleep holding the GIL: no other Python thread can run a line to wake it or release it.
      hn.dead_end = true;
    }
    if (!hn.doing.starts_with("holds the GIL")) {
      hn.doing = hn.doing.empty() ? "holds the GIL" : "holds the GIL; " + hn.doing;
    }
    g.wait(gil, h, EdgeKind::One,
           fmt::format("the interpreter's GIL holder: thread {}", holder->id));
  }

  void mutexes() {
    std::map<std::uint64_t, const HostThread*> by_lwp;
    for (const auto& t : s.host_threads) {
      if (t.lwp) {
        by_lwp[*t.lwp] = &t;
      }
    }
    for (const auto& t : s.host_threads) {
      if (!t.mutex_wait || !native_frame(t, "mutex_lock", 12)) {
        continue;
      }
      NodeId w = node_of(t);
      if (w == graph::Graph::npos) {
        continue;
      }
      const MutexWait& m = *t.mutex_wait;
      const std::string id = m.address ? fmt::format("mutex:{:#x}", *m.address) : "mutex:?" + t.id;
      const std::string label =
          !m.symbol.empty() ? m.symbol
                            : (m.address ? fmt::format("mutex {:#x}", *m.address) : "a mutex");
      if (!m.owner || *m.owner <= 0) {
        continue; // unlocked at that instant, or not read: nothing to wait for
      }
      auto owner = by_lwp.find(static_cast<std::uint64_t>(*m.owner));
      const NodeId mu = g.add(graph_node(id, "mutex", label, State::Blocked));
      if (g.node(w).state == State::Unknown) {
        g.node(w).state = State::Blocked;
      }
      g.wait(w, mu, EdgeKind::One, "blocked in pthread_mutex_lock");
      NodeId o = owner == by_lwp.end() ? graph::Graph::npos : node_of(*owner->second);
      if (o == graph::Graph::npos) {
        o = g.add(graph_node(fmt::format("thread:{}", *m.owner), "thread",
                             fmt::format("LWP {}", *m.owner), State::Unknown, {},
                             "not a thread of this snapshot"));
      }
      g.wait(mu, o, EdgeKind::One, fmt::format("glibc's owner field: LWP {}", *m.owner));
    }
  }

  // A Python thread asleep acquiring a threading.Lock that a `with` block of some frame holds
  // (pyframes: the lock's `__exit__` on that frame's value stack; the sleeper's futex word).
  void python_locks() {
    const detail::PythonLockHolders holders(s);
    for (const auto& t : s.host_threads) {
      const auto held = holders.of_waiter(t);
      const NodeId w = node_of(t);
      if (!held || w == graph::Graph::npos) {
        continue;
      }
      const NodeId h = node_of(*held->thread);
      if (h == graph::Graph::npos) {
        continue;
      }
      const std::uint64_t address = *t.python_lock_wait;
      const NodeId lock =
          g.add(graph_node(fmt::format("lock:{:#x}", address), "lock",
                           fmt::format("threading.Lock {:#x}", address), State::Blocked));
      if (g.node(w).state == State::Unknown) {
        g.node(w).state = State::Blocked;
      }
      g.wait(w, lock, EdgeKind::One,
             fmt::format("asleep acquiring it at {} (its futex word is the lock's)", where_of(t)));
      g.wait(lock, h, EdgeKind::One,
             fmt::format("held by the frame at {}, inside a `with` block on it (its __exit__ is "
                         "on that frame's stack)",
                         frame_where(*held->frame)));
    }
  }

  // The finding that names a dispatch, for its place.
  const Finding* finding_of(const Dispatch& d, std::string_view id = {}) const {
    if (in.findings == nullptr) {
      return nullptr;
    }
    for (const auto& f : *in.findings) {
      if (!id.empty() && f.id != id) {
        continue;
      }
      for (const auto& ref : f.dispatches) {
        if (ref.id == d.id) {
          return &f;
        }
      }
    }
    return nullptr;
  }

  void dispatches() {
    for (const auto& d : s.dispatches) {
      State st = State::Unknown;
      std::string doing;
      if (const ProgressEntry* e = entry("dispatch", d.id)) {
        st = state_of(e->motion);
        doing = e->motion == Motion::Unknown ? std::string() : e->why;
      }
      std::string where;
      if (const Finding* f = finding_of(d); f != nullptr && !f->locations.empty()) {
        const Location& l = f->locations.front();
        where = l.file.empty() ? l.function
                               : fmt::format("{} at {}{}", short_function_name(l.function),
                                             l.file.substr(l.file.rfind('/') + 1),
                                             l.line ? fmt::format(":{}", *l.line) : "");
      }
      // A collective's kernel names it for the incident's join (missing rank, order mismatch).
      graph::Node node = graph_node(
          "dispatch:" + d.id, detail::is_collective(d) ? "collective" : "dispatch",
          fmt::format("{} (dispatch {})", short_function_name(detail::kernel_label(d)), d.id), st,
          where, doing, 2);
      node.name = short_function_name(d.kernel_name);
      const NodeId n = g.add(std::move(node));
      dispatch_nodes.push_back(n);
      // A split-K `_clean` kernel's reduction leaders poll the shared workspace counter.
      NodeId counter = graph::Graph::npos;
      if (finding_of(d, kSplitKCleanRace) != nullptr &&
          detail::ends_with(d.kernel_name, "_clean")) {
        counter = g.add(
            graph_node("counter:splitk-workspace", "flag", "the shared split-K workspace counter",
                       st == State::Moving ? State::Moving : State::Blocked, {},
                       "tested with `==` by each _clean kernel; another writer already counted"));
        g.node(counter).dead_end = st != State::Moving;
      }
      if (!lanes(d, n, counter) && counter != graph::Graph::npos) {
        g.wait(n, counter, EdgeKind::One, "splitk-clean-race: _clean kernels on two queues");
      }
      // A collective kernel not moving and not otherwise explained waits for its peer ranks,
      // unseen from one process: an open end, joined to the peers' graphs in an incident.
      if (g.node(n).state != State::Moving && g.node(n).kind == "collective" && !has_out_edge(n)) {
        const NodeId peers = g.add(graph_node("peers:" + d.id, "rank", "the peer ranks",
                                              State::Unknown, {}, "not seen from this process"));
        g.wait(n, peers, EdgeKind::And, "a collective completes only when every peer joins it");
      }
    }
  }

  bool has_out_edge(NodeId n) const {
    return std::any_of(g.edges().begin(), g.edges().end(),
                       [&](const graph::Edge& e) { return e.from == n; });
  }

  // Lanes behind a barrier wait for the lanes still polling; those wait for the flag they read
  // (`polled`, when a producer knows it better). False when the lanes are not in that shape.
  bool lanes(const Dispatch& d, NodeId dn, NodeId polled) {
    if (in.classes == nullptr) {
      return false;
    }
    const auto mine = detail::classes_of(*in.classes, d);
    const auto spin = detail::leader_spin(mine, s);
    if (!spin || spin->spin.empty()) {
      return false;
    }
    const bool moving = g.node(dn).state == State::Moving;
    std::uint64_t rest_threads = 0;
    for (const auto* c : spin->rest) {
      rest_threads += c->threads;
    }
    const bool cuda = s.debugger == DebuggerKind::CudaGdb;
    auto units = [&](std::uint64_t n) {
      return fmt::format("{} {}{}", n, cuda ? "thread" : "wave", n == 1 ? "" : "s");
    };
    const NodeId poll = g.add(graph_node(
        "lanes:" + d.id + ":poll", "lanes",
        fmt::format("{} in one loop in {} block(s)", units(spin->spin_threads),
                    spin->spin_workgroups),
        moving ? State::Moving : State::Spinning, detail::where(*spin->spin.front(), s)));
    const bool collective = detail::is_collective(d);
    NodeId flag = polled;
    if (flag == graph::Graph::npos && spin->rest.empty() && !collective) {
      // Every lane in one loop and none behind a barrier: the loop itself is what never ends
      // (a clock spin such as torch.cuda._sleep, or a poll whose flag cannot be told).
      g.wait(dn, poll, EdgeKind::And, "the dispatch ends when every lane does");
      return true;
    }
    if (flag == graph::Graph::npos) {
      flag = g.add(graph_node("flag:" + d.id, "flag",
                              collective ? "the peers' flags the looping lanes read"
                                         : "the flag the looping lanes read",
                              moving ? State::Moving : State::Blocked, {},
                              collective ? "no writer seen (a peer never wrote its slot)"
                                         : "no writer seen in this process"));
      // Its only writers would be lanes of this dispatch, and every lane is accounted for: the
      // polling ones and those behind the barrier. A peer's write is another rank's graph.
      g.node(flag).dead_end = !moving;
    }
    g.wait(poll, flag, EdgeKind::One,
           fmt::format("lane table: {}", detail::describe(*spin->spin.front(), s)));
    if (!spin->rest.empty()) {
      const NodeId rest = g.add(graph_node(
          "lanes:" + d.id + ":rest", "lanes", units(rest_threads) + " waiting behind them",
          moving ? State::Moving : State::Blocked, detail::where(*spin->rest.front(), s)));
      g.wait(dn, rest, EdgeKind::And, "the dispatch ends when every lane does");
      g.wait(rest, poll, EdgeKind::And,
             fmt::format("lane table: {}", detail::describe(*spin->rest.front(), s)));
    } else {
      g.wait(dn, poll, EdgeKind::And, "the dispatch ends when every lane does");
    }
    return true;
  }

  // Queues with packets the GPU has not taken (Read behind Write).
  std::vector<NodeId> pending_queues() {
    std::vector<NodeId> out;
    for (const auto& q : s.queues) {
      if (!q.read || !q.write || *q.write <= *q.read) {
        continue;
      }
      State st = State::Unknown;
      std::string doing = fmt::format("Read {} / Write {}: {} packet(s) pending", *q.read, *q.write,
                                      *q.write - *q.read);
      if (const ProgressEntry* e = entry("queue", q.id)) {
        st = state_of(e->motion);
        doing += "; " + e->why;
      }
      const NodeId qn =
          g.add(graph_node("queue:" + q.id, "queue",
                           q.target_id.empty() ? "queue " + q.id : q.target_id, st, {}, doing));
      out.push_back(qn);
      // Its head packet: a dispatch of that queue in flight, else unknown.
      NodeId head = graph::Graph::npos;
      for (std::size_t i = 0; i < s.dispatches.size(); ++i) {
        const Dispatch& d = s.dispatches[i];
        if (d.agent == q.agent && d.queue == q.queue_no && q.queue_no) {
          head = dispatch_nodes.at(i);
          break;
        }
      }
      if (head == graph::Graph::npos) {
        head = g.add(graph_node(
            "queue:" + q.id + ":head", "packet", "its head packet", State::Unknown, {},
            s.coverage.dispatches ? "no dispatch of this queue in flight: not a kernel (a barrier "
                                    "or signal wait)"
                                  : "dispatches were not asked"));
      }
      g.wait(qn, head, EdgeKind::One, fmt::format("Read {} < Write {}", *q.read, *q.write));
    }
    return out;
  }

  void host_waits_on_gpu() {
    const auto queues = pending_queues();
    for (const auto& t : s.host_threads) {
      NodeId w = node_of(t);
      if (w == graph::Graph::npos) {
        continue;
      }
      const GpuCall call = gpu_call(t);
      if (call.name.empty()) {
        continue;
      }
      graph::Node& wn = g.node(w);
      if (wn.doing.empty() || wn.state != State::Spinning) {
        wn.doing = "in " + call.name + (wn.doing.empty() ? "" : "; " + wn.doing);
      }
      if (wn.state == State::Unknown) {
        wn.state = State::Blocked;
      }
      if (call.launch && wn.state == State::Spinning) {
        // A launch that burns the CPU in every sample: the module load waits for the device.
        wn.doing += " (a lazy module load waits for the device)";
      }
      const std::string evidence = fmt::format("frame {}", call.name);
      if (!dispatch_nodes.empty()) {
        for (NodeId d : dispatch_nodes) {
          g.wait(w, d, call.device_wide ? EdgeKind::And : EdgeKind::Or, evidence);
        }
      } else if (!queues.empty()) {
        for (NodeId q : queues) {
          g.wait(w, q, EdgeKind::Or, evidence);
        }
      } else if (!s.coverage.dispatches &&
                 (s.debugger == DebuggerKind::RocGdb || s.debugger == DebuggerKind::CudaGdb)) {
        const NodeId gpu = g.add(graph_node("gpu", "gpu", "the GPU work", State::Unknown, {},
                                            "dispatches were not asked"));
        g.wait(w, gpu, EdgeKind::Or, evidence);
      }
    }
  }

  void fault() {
    if (!s.fault || in.findings == nullptr) {
      return;
    }
    for (const auto& f : *in.findings) {
      if (f.id != kGpuFault && f.id != kHostFault) {
        continue;
      }
      graph::Node n = graph_node("fault", "fault", f.title, State::Blocked);
      if (!f.locations.empty()) {
        const Location& l = f.locations.front();
        n.where = l.file.empty() ? l.function
                                 : fmt::format("{} at {}{}", short_function_name(l.function),
                                               l.file.substr(l.file.rfind('/') + 1),
                                               l.line ? fmt::format(":{}", *l.line) : "");
      }
      n.fault = true;
      n.weight = 10;
      g.add(std::move(n));
      return;
    }
  }
};

} // namespace wfg

graph::Graph wait_graph(const GraphInputs& in) {
  static const Snapshot kEmpty;
  wfg::Builder b{in, in.snapshot != nullptr ? *in.snapshot : kEmpty, {}, {}, {}, {}};
  if (in.progress != nullptr) {
    for (const auto& e : in.progress->entries) {
      b.progress.emplace(e.kind + ":" + e.id, &e);
    }
  }
  b.threads();
  b.fault();
  b.dispatches();
  b.host_waits_on_gpu();
  b.gil();
  b.mutexes();
  b.python_locks();
  std::map<std::uint64_t, graph::NodeId> by_lwp;
  for (const auto& t : b.s.host_threads) {
    if (auto n = b.node_of(t); n != graph::Graph::npos && t.lwp) {
      by_lwp[*t.lwp] = n;
    }
  }
  wfg::host_kernel_waits(b.g, b.s, by_lwp);
  return std::move(b.g);
}

std::vector<Finding> graph_findings(const graph::Graph& g, const std::vector<Finding>& findings) {
  std::vector<Finding> out;
  for (const auto& f : findings) {
    if (f.severity >= Severity::Error) {
      return out;
    }
  }
  for (const auto& root : graph::find_roots(g)) {
    const graph::Node& n = g.node(root.node);
    if (root.cycle || n.kind != "thread" || n.state != graph::State::Spinning || n.name.empty()) {
      continue;
    }
    Finding f;
    f.id = std::string(kHostCallNeverReturns);
    f.severity = Severity::Error;
    f.confidence = 0.6;
    f.title = fmt::format("{} never returns from {}{}", n.label, n.name,
                          n.where.empty() ? "" : " (" + n.where + ")");
    std::string who = n.label;
    if (!who.empty()) {
      who.front() = static_cast<char>(std::toupper(static_cast<unsigned char>(who.front())));
    }
    f.summary = fmt::format(
        "{} stood in {} in every sample, running outside any wait: the call never returns, and "
        "everything stuck in this process waits behind it. What the call itself waits for is not "
        "visible to the debugger ({}).",
        who, n.name,
        n.name.starts_with("cu") ? "a lazy module load behind a busy device, a spin in the driver"
                                 : "a loop in native code, a wait inside a library");
    // CUDA's own calls (cuLaunchKernel, cudaMemcpy...) get CUDA's likeliest cause; anything else
    // is native code the debugger shows only from outside.
    const bool cuda = n.name.starts_with("cu");
    f.next_step =
        cuda ? "Read the call at the line named. A CUDA launch that never returns under lazy "
               "loading (the default) waits for a device that a stream wait or a spinning kernel "
               "holds: try CUDA_MODULE_LOADING=EAGER, or make what the device waits for happen "
               "first."
             : "Read the call at the line named and the thread's stack below: a native loop or "
               "a wait the debugger cannot see into. If it holds the GIL or a lock others wait "
               "for (the `Cause:` chain), release it around the long call.";
    f.evidence.push_back(fmt::format("{}: {}", graph::describe(n), n.doing));
    for (const auto& chain : root.chains) {
      if (chain.size() > 1) {
        std::vector<std::string> names;
        for (auto id : chain) {
          names.push_back(graph::describe(g.node(id)));
        }
        f.evidence.push_back("waiting behind it: " + fmt::format("{}", fmt::join(names, " -> ")));
      }
    }
    out.push_back(std::move(f));
    break; // one headline; the graph's Cause lines list the other roots
  }
  return out;
}

nlohmann::json graph_to_json(const graph::Graph& g) {
  nlohmann::json nodes = nlohmann::json::array();
  for (const auto& n : g.nodes()) {
    nlohmann::json j = {
        {"id", n.id}, {"kind", n.kind}, {"label", n.label}, {"state", graph::to_string(n.state)}};
    if (!n.where.empty()) {
      j["where"] = n.where;
    }
    if (!n.doing.empty()) {
      j["doing"] = n.doing;
    }
    if (!n.name.empty()) {
      j["name"] = n.name;
    }
    if (n.fault) {
      j["fault"] = true;
    }
    if (n.dead_end) {
      j["dead_end"] = true;
    }
    nodes.push_back(std::move(j));
  }
  auto id = [&](graph::NodeId n) { return g.node(n).id; };
  auto ids = [&](const std::vector<graph::NodeId>& chain) {
    nlohmann::json out = nlohmann::json::array();
    for (auto n : chain) {
      out.push_back(id(n));
    }
    return out;
  };
  nlohmann::json edges = nlohmann::json::array();
  for (const auto& e : g.edges()) {
    edges.push_back({{"from", id(e.from)},
                     {"to", id(e.to)},
                     {"kind", graph::to_string(e.kind)},
                     {"evidence", e.evidence}});
  }
  nlohmann::json roots = nlohmann::json::array();
  for (const auto& r : graph::find_roots(g)) {
    nlohmann::json j = {{"node", id(r.node)},
                        {"cycle", r.cycle},
                        {"chain", r.chains.empty() ? ids({r.node}) : ids(r.chains.front())},
                        {"waiters", r.waiters}};
    if (r.cycle) {
      j["cycle_nodes"] = ids(r.cycle_nodes);
    }
    roots.push_back(std::move(j));
  }
  nlohmann::json ends = nlohmann::json::array();
  for (const auto& e : graph::open_ends(g)) {
    ends.push_back({{"node", id(e.node)}, {"chain", ids(e.chain)}});
  }
  return {{"nodes", std::move(nodes)},
          {"edges", std::move(edges)},
          {"roots", std::move(roots)},
          {"open_ends", std::move(ends)}};
}

std::vector<std::uint64_t> polling_pcs(const Snapshot& snapshot,
                                       const std::vector<snapshot::WaveClass>& classes,
                                       const Dispatch& dispatch) {
  const auto mine = detail::classes_of(classes, dispatch);
  std::vector<std::uint64_t> pcs;
  if (const auto spin = detail::leader_spin(mine, snapshot)) {
    for (const auto* c : spin->spin) {
      if (c->pc) {
        pcs.push_back(*c->pc);
      }
    }
  }
  return pcs;
}

} // namespace rocplay::heuristics
