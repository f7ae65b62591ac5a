// Host threads that wait on each other (docs/heuristics.md, host-deadlock and host-waits).
//
// A thread blocked in pthread_mutex_lock sleeps on the mutex's futex word; the built-in playbooks
// read that address and glibc's owner field on the innermost frame by expressions (no calls into
// the target), and the snapshot carries them as HostThread::mutex_wait. Thread -> owner edges
// that close a loop are a lock-order deadlock. Every other kind of host wait (a mutex whose owner
// runs, a condition variable, a semaphore, a Python lock or join, a poll on the GPU driver) is
// described in its own words.
#include "heuristics/common.hpp"
#include "rocplay/snapshot/frames.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

namespace rocplay::heuristics {
namespace {

// In the order the title counts them.
enum class WaitKind : std::uint8_t {
  None,
  Mutex,
  Condition,
  Semaphore,
  GpuDriver,
  PythonLock, // threading.Lock / RLock acquire (CPython's _thread module), whatever waits below
  PythonJoin, // Thread.join: waits for another Python thread to finish
};

// What /proc says (Snapshot::kernel_waits): the process's deadlocks a frame alone cannot show.
// A thread waits for a child that reads a pipe only this process holds open; or every thread
// sleeps in a wait only another of its own threads could end. Empty when /proc was not read.
std::vector<Finding> kernel_deadlocks(const Snapshot& s);

bool any_frame(const HostThread& t, std::initializer_list<std::string_view> needles,
               std::size_t depth = 12) {
  for (std::size_t i = 0; i < t.frames.size() && i < depth; ++i) {
    for (auto n : needles) {
      if (detail::contains(t.frames[i].function, n)) {
        return true;
      }
    }
  }
  return false;
}

bool gpu_object(std::string_view from) {
  for (std::string_view lib : {"libhsa-runtime", "libhsakmt", "libamdhip", "libcuda", "libnvidia",
                               "libdrm_amdgpu", "libcudart"}) {
    if (detail::contains(from, lib)) {
      return true;
    }
  }
  return false;
}

// The innermost frame of the interpreter's own Python stack (HostThread frames marked python).
const Frame* innermost_python_frame(const HostThread& t) {
  for (const auto& f : t.frames) {
    if (f.python) {
      return &f;
    }
  }
  return nullptr;
}

// The last part of a qualified name (`Thread.join` -> `join`).
std::string_view last_name(std::string_view qualified) {
  const auto dot = qualified.rfind('.');
  return dot == std::string_view::npos ? qualified : qualified.substr(dot + 1);
}

// Python's own library (threading.py, queue.py, concurrent/futures), not an installed package.
bool in_standard_library(const Frame& f) {
  return detail::contains(f.file, "/lib/python3") && !detail::contains(f.file, "-packages/");
}

WaitKind native_wait_kind(const HostThread& t);

WaitKind wait_kind(const HostThread& t) {
  if (t.frames.empty()) {
    return WaitKind::None;
  }
  if (t.python_lock_wait) {
    return WaitKind::PythonLock; // its futex word is a lock's: the frames need no names
  }
  const Frame* py = innermost_python_frame(t);
  // threading.Thread.join: `Thread.join` and, before 3.13, `Thread._wait_for_tstate_lock`.
  if (py != nullptr && detail::ends_with(py->file, "threading.py") &&
      (last_name(py->function) == "join" || last_name(py->function) == "_wait_for_tstate_lock")) {
    return native_wait_kind(t) != WaitKind::None ||
                   any_frame(t, {"PyThread_acquire_lock_timed"}, 16)
               ? WaitKind::PythonJoin
               : WaitKind::None;
  }
  // CPython's lock acquire waits through a semaphore, or a mutex and condition variable, by
  // build. Named in its own frames when the interpreter keeps its static symbols; a stripped
  // one (Debian's python3) shows only PyThread_acquire_lock_timed.
  if (any_frame(t, {"lock_PyThread_acquire_lock", "rlock_acquire", "PyThread_acquire_lock_timed"},
                16)) {
    // Under the standard library's own waits (Condition, Event, Queue, a thread pool's idle
    // worker) the lock is how it sleeps until notified, not a lock the caller contends for.
    return py != nullptr && in_standard_library(*py) ? WaitKind::Condition : WaitKind::PythonLock;
  }
  return native_wait_kind(t);
}

WaitKind native_wait_kind(const HostThread& t) {
  if (any_frame(t, {"pthread_mutex_lock", "pthread_mutex_timedlock", "pthread_mutex_clocklock",
                    "std::mutex::lock", "__gthread_mutex_lock"})) {
    return WaitKind::Mutex;
  }
  if (any_frame(t, {"pthread_cond_wait", "pthread_cond_timedwait", "pthread_cond_clockwait",
                    "std::condition_variable::wait", "__condvar_"})) {
    return WaitKind::Condition;
  }
  if (any_frame(t, {"sem_wait", "sem_timedwait", "sem_clockwait", "do_futex_wait"})) {
    return WaitKind::Semaphore;
  }
  const std::string& top = t.frames.front().function;
  bool polls = top.find("ioctl") != std::string::npos || top.find("poll") != std::string::npos ||
               top.find("epoll_wait") != std::string::npos;
  if (polls) {
    for (std::size_t i = 0; i < t.frames.size() && i < 8; ++i) {
      if (gpu_object(t.frames[i].from)) {
        return WaitKind::GpuDriver;
      }
    }
    if (any_frame(t,
                  {"hsaKmt", "hsa_signal_wait", "hipStreamSynchronize", "hipDeviceSynchronize",
                   "cuStreamSynchronize", "cuCtxSynchronize"},
                  8)) {
      return WaitKind::GpuDriver;
    }
  }
  return WaitKind::None;
}

std::string thread_name(const HostThread& t) {
  std::string out = fmt::format("thread {}", t.id);
  if (t.lwp) {
    out += fmt::format(" (LWP {}", *t.lwp);
    out += t.name.empty() ? ")" : fmt::format(" \"{}\")", t.name);
  } else if (!t.name.empty()) {
    out += fmt::format(" (\"{}\")", t.name);
  }
  return out;
}

std::string mutex_name(const MutexWait& m) {
  if (!m.symbol.empty() && m.address) {
    return fmt::format("{} ({:#x})", m.symbol, *m.address);
  }
  if (m.address) {
    return fmt::format("mutex {:#x}", *m.address);
  }
  return "a mutex";
}

// Where the thread waits: its innermost frame in the user's code, with that frame's caller.
std::string waits_at(const HostThread& t) {
  const Frame* f = innermost_user_frame(t);
  if (f == nullptr) {
    return t.frames.empty() ? std::string("?") : frame_where(t.frames.front());
  }
  std::string out = frame_where(*f);
  for (const auto& g : t.frames) {
    if (g.level == f->level + 1 && !is_system_frame(g)) {
      out += fmt::format(" (called from {})", frame_where(g));
    }
  }
  return out;
}

Location location_of(const HostThread& t) {
  Location l;
  const Frame* f = innermost_user_frame(t);
  if (f == nullptr && !t.frames.empty()) {
    f = &t.frames.front();
  }
  if (f != nullptr) {
    l.function = f->function;
    l.file = f->file;
    l.line = f->line;
    l.pc = f->pc;
  }
  return l;
}

nlohmann::json thread_json(const HostThread& t, std::string_view wait) {
  nlohmann::json j = {{"id", t.id}, {"wait", wait}};
  if (t.lwp) {
    j["lwp"] = *t.lwp;
  }
  if (!t.name.empty()) {
    j["name"] = t.name;
  }
  if (t.mutex_wait) {
    if (t.mutex_wait->address) {
      j["mutex"] = fmt::format("{:#x}", *t.mutex_wait->address);
    }
    if (!t.mutex_wait->symbol.empty()) {
      j["mutex_symbol"] = t.mutex_wait->symbol;
    }
    if (t.mutex_wait->owner) {
      j["owner_lwp"] = *t.mutex_wait->owner;
    }
  }
  if (const Frame* f = innermost_user_frame(t)) {
    j["function"] = f->function;
    if (!f->file.empty()) {
      j["file"] = f->file;
    }
    if (f->line) {
      j["line"] = *f->line;
    }
  }
  return j;
}

std::string_view kind_name(WaitKind k) {
  switch (k) {
  case WaitKind::Mutex:
    return "mutex";
  case WaitKind::Condition:
    return "condition";
  case WaitKind::Semaphore:
    return "semaphore";
  case WaitKind::GpuDriver:
    return "gpu_driver";
  case WaitKind::PythonLock:
    return "python_lock";
  case WaitKind::PythonJoin:
    return "python_join";
  case WaitKind::None:
    break;
  }
  return "none";
}

} // namespace

std::vector<Finding> host_deadlock(const Snapshot& s) {
  std::vector<Finding> out = kernel_deadlocks(s);
  std::map<std::uint64_t, const HostThread*> by_lwp;
  std::vector<std::pair<const HostThread*, WaitKind>> waiting;
  for (const auto& t : s.host_threads) {
    if (t.lwp) {
      by_lwp[*t.lwp] = &t;
    }
    if (auto k = wait_kind(t); k != WaitKind::None) {
      waiting.emplace_back(&t, k);
    }
  }
  // Wait-for edges: a mutex waiter -> the thread that owns its mutex.
  auto owner_of = [&](const HostThread& t) -> const HostThread* {
    if (!t.mutex_wait || !t.mutex_wait->owner || *t.mutex_wait->owner <= 0) {
      return nullptr;
    }
    auto it = by_lwp.find(static_cast<std::uint64_t>(*t.mutex_wait->owner));
    return it == by_lwp.end() ? nullptr : it->second;
  };
  // ... and a Python thread asleep on a threading.Lock -> the thread whose `with` block holds it.
  const detail::PythonLockHolders python_holders(s);
  auto next_holder = [&](const HostThread& t) -> const HostThread* {
    switch (wait_kind(t)) {
    case WaitKind::Mutex:
      return owner_of(t);
    case WaitKind::PythonLock: {
      const auto held = python_holders.of_waiter(t);
      return held ? held->thread : nullptr;
    }
    default:
      return nullptr;
    }
  };
  std::set<const HostThread*> in_cycle;
  for (const auto& [start, kind] : waiting) {
    if ((kind != WaitKind::Mutex && kind != WaitKind::PythonLock) || in_cycle.count(start)) {
      continue;
    }
    // Out-degree is at most one: follow the holders until a thread repeats or the chain ends.
    std::vector<const HostThread*> path;
    std::map<const HostThread*, std::size_t> index;
    const HostThread* at = start;
    while (at != nullptr && !index.count(at) && path.size() <= s.host_threads.size()) {
      index[at] = path.size();
      path.push_back(at);
      at = next_holder(*at);
    }
    if (at == nullptr || !index.count(at)) {
      continue;
    }
    std::vector<const HostThread*> cycle(path.begin() + static_cast<std::ptrdiff_t>(index[at]),
                                         path.end());
    if (std::any_of(cycle.begin(), cycle.end(),
                    [&](const HostThread* t) { return in_cycle.count(t) > 0; })) {
      continue;
    }
    in_cycle.insert(cycle.begin(), cycle.end());
    const bool python = std::all_of(cycle.begin(), cycle.end(), [&](const HostThread* t) {
      return wait_kind(*t) == WaitKind::PythonLock;
    });
    Finding f;
    f.id = std::string(kHostDeadlock);
    f.severity = Severity::Critical;
    f.confidence = cycle.size() == 1 ? 0.8 : 0.9;
    std::vector<std::string> ids;
    std::vector<std::string> locks;
    nlohmann::json tj = nlohmann::json::array();
    for (std::size_t i = 0; i < cycle.size(); ++i) {
      const HostThread& t = *cycle[i];
      const HostThread& owner = *cycle[(i + 1) % cycle.size()];
      ids.push_back(t.id);
      if (const auto held = python_holders.of_waiter(t)) {
        locks.push_back(fmt::format("{:#x}", *t.python_lock_wait));
        f.evidence.push_back(fmt::format(
            "{} waits for threading.Lock {} at {}, held by {}, whose frame {} is inside a "
            "`with` block on it",
            thread_name(t), locks.back(), waits_at(t), thread_name(owner),
            frame_where(*held->frame)));
        tj.push_back(thread_json(t, "python_lock"));
      } else {
        locks.push_back(mutex_name(*t.mutex_wait));
        f.evidence.push_back(fmt::format("{} waits for {} held by {}, at {}", thread_name(t),
                                         locks.back(), thread_name(owner), waits_at(t)));
        tj.push_back(thread_json(t, "mutex"));
      }
      f.locations.push_back(location_of(t));
    }
    const char* noun = python ? "lock" : "mutex";
    f.title = cycle.size() == 1
                  ? fmt::format("host deadlock: thread {} waits for a {} it holds itself",
                                ids.front(), noun)
                  : fmt::format("host deadlock: threads {} wait for each other's {}",
                                fmt::join(ids, ", "), python ? "locks" : "mutexes");
    f.summary =
        python
            ? fmt::format(
                  "{} Python thread(s) each sleep acquiring a threading.Lock that the next "
                  "holds in a `with` block ({}), in a loop: a lock-order deadlock, read from the "
                  "interpreter's own state (each lock's __exit__ on its holder's frame, each "
                  "sleeper's futex word on its lock). The threads will never wake on their "
                  "own.",
                  cycle.size(), fmt::join(locks, ", "))
            : fmt::format("{} host thread(s) are blocked in pthread_mutex_lock, each on a mutex "
                          "({}) owned by the next, in a loop: a lock-order deadlock. No GPU "
                          "work is involved in this loop; the threads will never wake on "
                          "their own.",
                          cycle.size(), fmt::join(locks, ", "));
    f.details = {{"threads", std::move(tj)}, {"cycle", ids}};
    if (python) {
      f.next_step =
          cycle.size() == 1
              ? "The thread acquires a threading.Lock its own `with` block already holds: use "
                "threading.RLock, or do not take the lock again on the path to the line above."
              : "At each line above a thread, inside a `with` block on one lock, takes the next: "
                "take these locks in one order everywhere (or guard the data with one lock).";
    } else {
      f.next_step =
          cycle.size() == 1
              ? "The thread re-locks a non-recursive mutex it already holds: find the earlier "
                "lock on the path to the line above (or make the inner call not take the lock)."
              : "At each line above a thread takes its second mutex while holding its first: "
                "make every path take these mutexes in one global order (or take them together "
                "with std::scoped_lock / std::lock). Check the callers named above for where the "
                "first lock was taken.";
    }
    out.push_back(std::move(f));
  }

  if (!in_cycle.empty()) {
    // A lock loop names the deadlock better than "every thread asleep" does.
    out.erase(std::remove_if(out.begin(), out.end(),
                             [](const Finding& f) { return f.details.contains("asleep"); }),
              out.end());
  }
  const bool kernel_found = !out.empty() && in_cycle.empty();

  // Every other wait, in its own words.
  Finding w;
  w.id = std::string(kHostWaits);
  w.severity = Severity::Info;
  w.confidence = 0.5;
  nlohmann::json tj = nlohmann::json::array();
  std::size_t mutex_unknown = 0;
  std::map<WaitKind, std::size_t> counts;
  // A join waits on the threads the other waits hold up: those come first.
  std::stable_partition(waiting.begin(), waiting.end(),
                        [](const auto& w) { return w.second != WaitKind::PythonJoin; });
  for (const auto& [t, kind] : waiting) {
    if (in_cycle.count(t)) {
      continue;
    }
    if (kind == WaitKind::GpuDriver && !s.dispatches.empty()) {
      continue; // host-blocked-on-gpu and the GPU findings speak for these
    }
    counts[kind] += 1;
    tj.push_back(thread_json(*t, kind_name(kind)));
    w.locations.push_back(location_of(*t));
    switch (kind) {
    case WaitKind::Mutex:
      if (const HostThread* owner = owner_of(*t)) {
        w.evidence.push_back(
            fmt::format("{} waits for {} held by {} (which is {}), at {}", thread_name(*t),
                        mutex_name(*t->mutex_wait), thread_name(*owner),
                        wait_kind(*owner) == WaitKind::None
                            ? fmt::format("in {}", waits_at(*owner))
                            : fmt::format("itself waiting, at {}", waits_at(*owner)),
                        waits_at(*t)));
      } else {
        ++mutex_unknown;
        w.evidence.push_back(
            fmt::format("{} waits for {} ({}), at {}", thread_name(*t),
                        t->mutex_wait ? mutex_name(*t->mutex_wait) : std::string("a mutex"),
                        t->mutex_wait && t->mutex_wait->owner
                            ? fmt::format("owner LWP {} is not a thread of this snapshot",
                                          *t->mutex_wait->owner)
                            : std::string("owner not read"),
                        waits_at(*t)));
      }
      break;
    case WaitKind::Condition:
      w.evidence.push_back(fmt::format(
          "{} waits on a condition variable at {}: it sleeps until another thread signals it "
          "(not a lock-order problem; find who should notify)",
          thread_name(*t), waits_at(*t)));
      break;
    case WaitKind::Semaphore:
      w.evidence.push_back(
          fmt::format("{} waits on a semaphore at {}: it sleeps until another thread posts it",
                      thread_name(*t), waits_at(*t)));
      break;
    case WaitKind::PythonLock:
      w.evidence.push_back(fmt::format(
          "{} waits to acquire a Python lock (threading.Lock or RLock: `with lock:` or "
          "`acquire()`) at {}: it sleeps until the thread holding that lock releases it",
          thread_name(*t), waits_at(*t)));
      break;
    case WaitKind::PythonJoin:
      w.evidence.push_back(
          fmt::format("{} joins a thread (Thread.join) at {}: it waits for that thread to finish",
                      thread_name(*t), waits_at(*t)));
      break;
    case WaitKind::GpuDriver:
      w.evidence.push_back(fmt::format(
          "{} polls the GPU device file ({} in {}): it waits for the GPU runtime, with no "
          "dispatch in flight in this snapshot",
          thread_name(*t), t->frames.front().function,
          t->frames.front().from.empty() ? waits_at(*t) : t->frames.front().from));
      break;
    case WaitKind::None:
      break;
    }
  }
  // A GPU process has many idle threads in condition waits (thread pools, the runtime's event
  // thread): in one, describe the waits only when some thread is blocked on a mutex.
  const bool gpu_process = !s.agents.empty() || !s.dispatches.empty() || !s.waves.empty();
  if (tj.empty() || (gpu_process && counts[WaitKind::Mutex] == 0) || kernel_found) {
    return out; // a deadlock /proc proved speaks for these waits
  }
  std::vector<std::string> parts;
  for (const auto& [kind, n] : counts) {
    parts.push_back(fmt::format("{} {}", n,
                                kind == WaitKind::Mutex        ? "on a mutex"
                                : kind == WaitKind::Condition  ? "on a condition variable"
                                : kind == WaitKind::Semaphore  ? "on a semaphore"
                                : kind == WaitKind::PythonLock ? "on a Python lock"
                                : kind == WaitKind::PythonJoin ? "joining a Python thread"
                                                               : "in the GPU driver"));
  }
  w.title = fmt::format("host threads waiting: {}", fmt::join(parts, ", "));
  if (counts[WaitKind::PythonLock] >= 2) {
    w.severity = Severity::Warning;
    w.confidence = 0.4;
    w.summary = "Several Python threads wait to acquire locks. A threading.Lock records no owner, "
                "so which thread holds each lock cannot be read: if each of them holds a lock "
                "another one waits for, this is a lock-order deadlock, and none will wake.";
    w.next_step = "At each line above a thread takes a lock: read the `with` blocks (or "
                  "`acquire()` calls) around it for the lock it already holds. If two threads "
                  "take the same locks in opposite orders, take them in one order everywhere.";
  } else if (mutex_unknown >= 2) {
    w.severity = Severity::Warning;
    w.confidence = 0.4;
    w.summary = "Several threads are blocked on mutexes whose owners were not read: this may be a "
                "lock-order deadlock. The owners come from glibc's mutex owner field, which the "
                "built-in playbooks read on each blocked thread.";
    w.next_step =
        "Take a snapshot with `rocplay run --pid PID` (hang-triage or host-stacks), which "
        "reads each mutex's owner, or run `print *(int*)($rdi+8)` in the innermost frame "
        "of each blocked thread (x86-64) to see which thread holds it.";
  } else if (!gpu_process && in_cycle.empty() && waiting.size() == s.host_threads.size()) {
    // Every thread of the process sleeps in a wait: none runs that could wake the others. The
    // report leads with it, so it is a finding (exit 1), as a hang of Python locks is.
    w.severity = Severity::Warning;
    w.summary = "Every thread of the process sleeps in a wait, each described by what it waits "
                "for; none forms a lock loop, and none runs that could wake the others. Unless "
                "something outside the process (another process, a signal, a timer) does, it "
                "is hung.";
    w.next_step = "Start from the thread whose wait the others depend on: the code that should "
                  "signal its condition variable, post its semaphore or release its lock, and "
                  "why it never ran.";
  } else {
    w.summary =
        "Host threads sleeping in a wait, each described by what it waits for. None of them "
        "forms a lock loop.";
    w.next_step = "Start from the thread whose wait the others depend on: a mutex owner that runs, "
                  "or the code that should signal a condition variable or post a semaphore.";
  }
  w.details = {{"threads", std::move(tj)}};
  out.push_back(std::move(w));
  return out;
}

namespace {

std::string kernel_call_text(const KernelWait& w) {
  if (w.fd) {
    return fmt::format("{}() on fd {}{}", w.call, *w.fd, w.file.empty() ? "" : " (" + w.file + ")");
  }
  return w.call + "()";
}

// The child's threads all read pipes whose write ends only `parent` (or the child itself) holds:
// the reads end only when the parent writes or closes. The first such read; nullptr otherwise.
const KernelWait* child_stuck_on_parent(const Snapshot& s, const ProcessWaits& child,
                                        std::int64_t parent) {
  const KernelWait* first = nullptr;
  if (child.threads.empty() || child.state == "Z") {
    return nullptr;
  }
  for (const auto& w : child.threads) {
    const auto inode = pipe_inode(w.file);
    const PipeHolders* h = inode ? s.kernel_waits.pipe(*inode) : nullptr;
    const bool reads = w.call == "read" || w.call == "readv" || w.call == "pread64";
    if (h == nullptr || !h->complete || !reads || w.timed) {
      return nullptr;
    }
    for (std::int64_t holder : h->writers) {
      if (holder != parent && holder != child.pid) {
        return nullptr; // another process could write
      }
    }
    first = first == nullptr ? &w : first;
  }
  return first;
}

std::vector<Finding> kernel_deadlocks(const Snapshot& s) {
  std::vector<Finding> out;
  if (s.kernel_waits.empty() || !s.pid) {
    return out;
  }
  const ProcessWaits* target = s.kernel_waits.process(*s.pid);
  if (target == nullptr) {
    return out;
  }
  std::map<std::int64_t, const HostThread*> by_lwp;
  for (const auto& t : s.host_threads) {
    if (t.lwp) {
      by_lwp[static_cast<std::int64_t>(*t.lwp)] = &t;
    }
  }
  // A thread in wait4 on a child whose reads only this process could end. The target itself must
  // have no thread running (one could still write or close the pipe).
  const bool target_asleep =
      std::none_of(target->threads.begin(), target->threads.end(), [](const KernelWait& w) {
        return w.call == "running" || w.call == "none" || w.timed;
      });
  for (const auto& k : target->threads) {
    auto t = by_lwp.find(k.tid);
    if (!target_asleep || !k.child || *k.child <= 0 || t == by_lwp.end() ||
        (k.call != "wait4" && k.call != "waitid")) {
      continue;
    }
    const ProcessWaits* child = s.kernel_waits.process(*k.child);
    const KernelWait* read = child ? child_stuck_on_parent(s, *child, target->pid) : nullptr;
    if (read == nullptr) {
      continue;
    }
    Finding f;
    f.id = std::string(kHostDeadlock);
    f.severity = Severity::Error;
    f.confidence = 0.9;
    f.title = fmt::format("host deadlock: {} waits for child process {}, which waits in {} for "
                          "this process to write or close the pipe",
                          thread_name(*t->second), child->pid, kernel_call_text(*read));
    f.summary = fmt::format(
        "{} sits in {}(pid {}) at {}: it waits for child process {} ({}) to end. That child "
        "blocks in {}, and the pipe's write end is held by this process only (/proc/PID/fd): "
        "the child ends only when this process writes or closes it, and this process waits for "
        "the child. Neither will move.",
        thread_name(*t->second), k.call, child->pid, waits_at(*t->second), child->pid,
        child->cmdline.empty() ? child->comm : child->cmdline, kernel_call_text(*read));
    f.evidence.push_back(fmt::format("/proc/{}/task/{}/syscall: {}(pid {})", target->pid, k.tid,
                                     k.call, child->pid));
    f.evidence.push_back(fmt::format("/proc/{}/task/{}/syscall: {}", child->pid, read->tid,
                                     kernel_call_text(*read)));
    if (const auto inode = pipe_inode(read->file)) {
      if (const PipeHolders* h = s.kernel_waits.pipe(*inode)) {
        f.evidence.push_back(fmt::format("pipe:[{}] write end held by pid {} (every process "
                                         "looked at)",
                                         *inode, fmt::join(h->writers, ", ")));
      }
    }
    f.locations.push_back(location_of(*t->second));
    f.details = {{"threads", nlohmann::json::array({thread_json(*t->second, "child")})},
                 {"child", child->pid}};
    f.next_step = "Close the pipe's write end before waiting for the child (`proc.stdin.close()` "
                  "before `proc.wait()`, or `proc.communicate(data)`, which writes, closes and "
                  "waits), and make sure no other copy of it stays open (close_fds).";
    out.push_back(std::move(f));
  }
  if (!out.empty()) {
    return out;
  }
  if (detail::asleep_without_waker(s) == nullptr) {
    return out;
  }
  Finding f;
  f.id = std::string(kHostDeadlock);
  f.severity = Severity::Error;
  f.confidence = 0.85;
  std::vector<const HostThread*> queue_waiters;
  std::vector<const HostThread*> others;
  for (const auto& t : s.host_threads) {
    (detail::in_queue_get(t) ? queue_waiters : others).push_back(&t);
  }
  // A join waits on the threads the other waits hold up: those come first (as in host-waits).
  std::stable_partition(others.begin(), others.end(), [](const HostThread* t) {
    return wait_kind(*t) != WaitKind::PythonJoin &&
           !any_frame(*t, {"pthread_join", "clockjoin"}, 16);
  });
  nlohmann::json tj = nlohmann::json::array();
  for (const auto* list : {&queue_waiters, &others}) {
    for (const HostThread* t : *list) {
      const KernelWait* k = detail::kernel_wait_of(s, *t);
      const WaitKind kind = wait_kind(*t);
      f.locations.push_back(location_of(*t));
      tj.push_back(thread_json(*t, list == &queue_waiters ? "queue" : kind_name(kind)));
      f.evidence.push_back(
          fmt::format("{} {} at {} (/proc: {}{})", thread_name(*t),
                      list == &queue_waiters ? "waits in queue.get" : "sleeps", waits_at(*t),
                      k ? kernel_call_text(*k) : "?",
                      k && k->futex ? fmt::format(" {:#x}, untimed", *k->futex) : ""));
    }
  }
  if (!queue_waiters.empty()) {
    f.title = fmt::format("host deadlock: queue.get() at {} waits on a queue nothing will put to "
                          "(every other thread is asleep)",
                          detail::thread_where(*queue_waiters.front()));
  } else {
    f.title = fmt::format("host deadlock: all {} threads of the process are asleep, each waiting "
                          "for another",
                          s.host_threads.size());
  }
  f.summary = "Every thread of the process sleeps in a wait that only another of its own threads "
              "could end: /proc shows no timer, no fd another process holds and no futex shared "
              "with another process. None runs, so none will ever wake the others.";
  f.next_step = queue_waiters.empty()
                    ? "Read the waits above for the one the others depend on: a pool whose tasks "
                      "wait for tasks of the same pool needs more workers than the depth of that "
                      "nesting, or the inner work run inline instead of submitted."
                    : "Find the code that should put to this queue and why it never runs: its "
                      "thread waits above, or it was never started or already ended. Give the "
                      "get() a timeout, or put a sentinel when the producer ends.";
  f.details = {{"threads", std::move(tj)}, {"asleep", true}};
  out.push_back(std::move(f));
  return out;
}

} // namespace

} // namespace rocplay::heuristics
