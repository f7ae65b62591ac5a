#include "heuristics/common.hpp"
#include "rocplay/snapshot/frames.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <set>
#include <stdexcept>

namespace rocplay::heuristics::detail {

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

bool contains(std::string_view s, std::string_view needle) {
  return s.find(needle) != std::string_view::npos;
}

std::string kernel_label(const Dispatch& d) {
  if (!d.kernel_name.empty()) {
    return d.kernel_name;
  }
  if (d.kernel_address) {
    return fmt::format("kernel at {:#x}", *d.kernel_address);
  }
  return d.target_id.empty() ? fmt::format("dispatch {}", d.id) : d.target_id;
}

bool has_python_frames(const Snapshot& s) {
  return std::any_of(s.host_threads.begin(), s.host_threads.end(), [](const HostThread& t) {
    return std::any_of(t.frames.begin(), t.frames.end(), [](const Frame& f) { return f.python; });
  });
}

std::string dispatch_key(std::optional<std::uint32_t> agent, std::optional<std::uint32_t> queue,
                         std::optional<std::uint64_t> number) {
  auto part = [](const auto& v) { return v ? std::to_string(*v) : std::string("?"); };
  return part(agent) + ":" + part(queue) + ":" + part(number);
}

std::string launch_key(const Dispatch& d) {
  std::string key = d.dispatch_no ? dispatch_key(d.agent, d.queue, d.dispatch_no) : "id " + d.id;
  if (d.packet_id) {
    key += fmt::format("#{}", *d.packet_id);
  }
  return key + " " + d.kernel_name;
}

bool is_collective(const Dispatch& d) {
  if (d.kernel_name.empty()) {
    return false;
  }
  KernelInfo info = classify_kernel(d.kernel_name);
  if (info.category == KernelCategory::Collective || info.family == KernelFamily::Collective) {
    return true;
  }
  std::string lower = d.kernel_name;
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  for (std::string_view k :
       {"nccl", "rccl", "msccl", "allgather", "all_gather", "allreduce", "all_reduce",
        "reduce_scatter", "reducescatter", "alltoall", "all_to_all", "cross_device_reduce",
        "quickreduce", "quick_reduce", "allreduce_fusion", "lamport", "nvshmem"}) {
    if (contains(lower, k)) {
      return true;
    }
  }
  return false;
}

const Frame* fault_source_frame(const Fault& fault) {
  for (const auto& f : fault.frames) {
    if (!f.file.empty() && f.line && !short_function_name(f.function).starts_with("__") &&
        !is_system_frame(f)) {
      return &f;
    }
  }
  return nullptr;
}

const Dispatch* WaveDispatches::operator()(const Wave& wave) {
  // dispatch_of reads nothing else of the wave.
  if (!last_wave_ || wave.agent != last_wave_->agent || wave.queue != last_wave_->queue ||
      wave.dispatch != last_wave_->dispatch) {
    last_dispatch_ = snapshot_.dispatch_of(wave);
  }
  last_wave_ = &wave;
  return last_dispatch_;
}

std::size_t Kernels::index_of(const Dispatch& dispatch) const {
  const auto& all = snapshot_.dispatches;
  if (all.empty() || &dispatch < all.data() || &dispatch >= all.data() + all.size()) {
    throw std::logic_error("heuristics: a dispatch classified against another snapshot");
  }
  return static_cast<std::size_t>(&dispatch - all.data());
}

void Kernels::find_source_files() {
  files_found_ = true;
  const auto& dispatches = snapshot_.dispatches;
  files_.assign(dispatches.size(), {});
  std::vector<bool> found(dispatches.size(), false);
  std::size_t missing = dispatches.size();
  auto settle = [&](const Dispatch* d, std::string_view file) {
    const std::size_t i = index_of(*d);
    if (!found[i]) {
      files_[i] = file;
      found[i] = true;
      --missing;
    }
  };
  // A GPU fault's own frame names the file of the dispatch it happened in: the CUDA focus's
  // kernel, else the faulting wave's dispatch.
  const Fault* fault = snapshot_.fault && snapshot_.fault->on_gpu ? &*snapshot_.fault : nullptr;
  if (const Frame* frame = fault ? fault_source_frame(*fault) : nullptr) {
    if (fault->kernel) {
      for (const auto& d : dispatches) {
        if (d.dispatch_no == fault->kernel) {
          settle(&d, frame->file);
        }
      }
    } else {
      auto wave = std::find_if(snapshot_.waves.begin(), snapshot_.waves.end(),
                               [&](const Wave& w) { return w.thread_id == fault->thread_id; });
      if (const Dispatch* d =
              wave != snapshot_.waves.end() ? snapshot_.dispatch_of(*wave) : nullptr) {
        settle(d, frame->file);
      }
    }
  }
  WaveDispatches dispatch_of(snapshot_);
  std::optional<std::uint64_t> last_pc;
  const SourceLine* last_line = nullptr;
  for (auto w = snapshot_.waves.begin(); missing > 0 && w != snapshot_.waves.end(); ++w) {
    const Dispatch* d = dispatch_of(*w);
    if (!d || found[index_of(*d)]) {
      continue;
    }
    if (!w->file.empty()) {
      settle(d, w->file.view());
      continue;
    }
    if (!w->pc) {
      continue;
    }
    if (w->pc != last_pc) {
      last_pc = w->pc;
      last_line = snapshot_.source_line(*w->pc);
    }
    if (last_line && !last_line->file.empty()) {
      settle(d, last_line->file);
    }
  }
}

const std::string& Kernels::source_file(const Dispatch& dispatch) {
  const std::size_t i = index_of(dispatch);
  if (!files_found_) {
    find_source_files();
  }
  return files_[i];
}

const KernelInfo& Kernels::of(const Dispatch& dispatch) {
  const std::size_t i = index_of(dispatch);
  infos_.resize(snapshot_.dispatches.size());
  if (!infos_[i]) {
    infos_[i] = classify_kernel(dispatch.kernel_name, source_file(dispatch));
  }
  return *infos_[i];
}

std::string dispatch_label(const Dispatch& d) {
  if (d.target_id.empty()) {
    return fmt::format("dispatch {}", d.id);
  }
  return fmt::format("dispatch {} ({})", d.id, d.target_id);
}

std::string hex(const std::optional<std::uint64_t>& pc) {
  return pc ? fmt::format("{:#x}", *pc) : std::string("?");
}

std::string where(const snapshot::WaveClass& c, const Snapshot& s) {
  std::string func = !c.inline_function.empty() ? c.inline_function : c.function;
  std::string file = c.file;
  std::optional<std::uint32_t> line = c.line;
  const SourceLine* sl = c.pc ? s.source_line(*c.pc) : nullptr;
  if (sl && file.empty()) {
    file = sl->file;
    line = sl->line;
  }
  if (func.empty() && sl && !sl->function.empty()) {
    func = sl->offset ? fmt::format("{}+{}", sl->function, *sl->offset) : sl->function;
  }
  std::string out = func.empty() ? std::string("??") : func;
  if (!file.empty()) {
    out += fmt::format(" at {}{}", file, line ? fmt::format(":{}", *line) : std::string());
  }
  if (sl && !sl->inlined_from.empty()) {
    out += fmt::format(" (inlined from {})", sl->inlined_from);
  }
  return out;
}

std::string describe(const snapshot::WaveClass& c, const Snapshot& s) {
  std::string unit = c.threads != c.waves ? fmt::format("{} threads", c.threads)
                                          : fmt::format("{} waves", c.waves);
  std::string slots;
  if (!c.wave_in_group.empty()) {
    slots = fmt::format(", wave-in-group {}", snapshot::format_ranges(c.wave_in_group));
  }
  if (c.work_items) {
    slots += c.work_items->first == c.work_items->last
                 ? fmt::format(", work-item {}", c.work_items->first)
                 : fmt::format(", work-items {}-{}", c.work_items->first, c.work_items->last);
  }
  return fmt::format("{} at pc {} in {}: {} work-groups {}{}", unit, hex(c.pc), where(c, s),
                     c.workgroups, snapshot::format_workgroups(c), slots);
}

nlohmann::json class_json(const snapshot::WaveClass& c, const Snapshot& s) {
  nlohmann::json j = snapshot::to_json(c);
  if (c.pc) {
    if (const SourceLine* sl = s.source_line(*c.pc)) {
      nlohmann::json src = {{"file", sl->file}, {"function", sl->function}};
      if (sl->line) {
        src["line"] = *sl->line;
      }
      if (!sl->inlined_from.empty()) {
        src["inlined_from"] = sl->inlined_from;
      }
      j["source"] = std::move(src);
    }
  }
  return j;
}

Location location_of(const snapshot::WaveClass& c, const Snapshot& s) {
  Location l;
  l.pc = c.pc;
  l.function = !c.inline_function.empty() ? c.inline_function : c.function;
  l.file = c.file;
  l.line = c.line;
  if (c.pc) {
    if (const SourceLine* sl = s.source_line(*c.pc)) {
      if (l.file.empty()) {
        l.file = sl->file;
        l.line = sl->line;
      }
      if (l.function.empty()) {
        l.function = sl->function;
      }
    }
  }
  return l;
}

std::vector<snapshot::WaveClass> classes_of(const std::vector<snapshot::WaveClass>& classes,
                                            const Dispatch& d) {
  std::vector<snapshot::WaveClass> out;
  for (const auto& c : classes) {
    if (!c.dispatch || c.dispatch != d.dispatch_no) {
      continue;
    }
    if (c.agent && d.agent && *c.agent != *d.agent) {
      continue;
    }
    if (c.queue && d.queue && *c.queue != *d.queue) {
      continue;
    }
    out.push_back(c);
  }
  return out;
}

nlohmann::json dispatch_json(const Dispatch& d, Kernels& kernels) {
  nlohmann::json j = {{"id", d.id}, {"kernel", kernel_label(d)}};
  if (!kernels.details) {
    return j;
  }
  if (!d.linkage_name.empty()) {
    j["linkage_name"] = d.linkage_name;
  }
  if (!d.target_id.empty()) {
    j["target_id"] = d.target_id;
  }
  if (d.agent) {
    j["agent"] = *d.agent;
  }
  if (d.queue) {
    j["queue"] = *d.queue;
  }
  if (!d.grid.empty()) {
    j["grid"] = d.grid;
  }
  if (!d.workgroup.empty()) {
    j["workgroup"] = d.workgroup;
  }
  if (!d.fence_text.empty()) {
    j["fence"] = d.fence_text;
  }
  if (d.kernel_address) {
    j["kernel_address"] = fmt::format("{:#x}", *d.kernel_address);
  }
  if (!d.kernel_name.empty()) {
    const KernelInfo& k = kernels.of(d);
    nlohmann::json info = {{"short_name", k.short_name},
                           {"family", to_string(k.family)},
                           {"category", to_string(k.category)}};
    if (!k.op.empty()) {
      info["op"] = k.op;
    }
    if (!k.dtype_hint.empty()) {
      info["dtype"] = k.dtype_hint;
    }
    if (!k.source_hint.empty()) {
      info["source"] = k.source_hint;
    }
    j["kernel_info"] = std::move(info);
  }
  return j;
}

namespace {

bool holds_first_work_items(const snapshot::WaveClass& c) {
  if (!c.wave_in_group.empty() && c.wave_in_group.front().first == 0) {
    return true;
  }
  return c.work_items && c.work_items->first == 0;
}

// Wave 0 of each group only, or a work-item range starting at 0 no wider than a wave.
bool only_leaders(const snapshot::WaveClass& c) {
  if (!c.wave_in_group.empty()) {
    return c.wave_in_group.size() == 1 && c.wave_in_group.front().first == 0 &&
           c.wave_in_group.front().last == 0;
  }
  return c.work_items && c.work_items->first == 0 && c.work_items->last < 64;
}

// The source line of a class: its frame's, else the PC's `info line`.
std::pair<std::string, std::optional<std::uint32_t>> line_of(const snapshot::WaveClass& c,
                                                             const Snapshot& s) {
  if (!c.file.empty() && c.line) {
    return {c.file, c.line};
  }
  if (const SourceLine* sl = c.pc ? s.source_line(*c.pc) : nullptr; sl && sl->line) {
    return {sl->file, sl->line};
  }
  return {std::string(), std::nullopt};
}

} // namespace

std::optional<LeaderSpin> leader_spin(const std::vector<snapshot::WaveClass>& classes,
                                      const Snapshot& s) {
  LeaderSpin out;
  for (const auto& c : classes) {
    out.unknown += c.unknown_coordinates;
    (holds_first_work_items(c) ? out.spin : out.rest).push_back(&c);
  }
  if (out.spin.empty()) {
    return std::nullopt;
  }
  std::uint64_t lo = UINT64_MAX;
  std::uint64_t hi = 0;
  for (const auto* c : out.spin) {
    if (!only_leaders(*c) || !c->pc) {
      return std::nullopt;
    }
    lo = std::min(lo, *c->pc);
    hi = std::max(hi, *c->pc);
  }
  // Several PCs are one loop when they are close together or on one source line.
  const auto first_line = line_of(*out.spin.front(), s);
  if (hi - lo > kLoopWindow) {
    for (const auto* c : out.spin) {
      if (!first_line.second || line_of(*c, s) != first_line) {
        return std::nullopt;
      }
    }
  }
  // Nothing else of the dispatch may sit in that loop: then every wave spins, no leader pattern.
  // With line information, "in the loop" is "on its line" (a barrier right after a poll loop is a
  // few bytes away but on another line); without, anything within kLoopWindow may be the loop.
  for (const auto* c : out.rest) {
    const auto rest_line = line_of(*c, s);
    const bool in_span = c->pc && *c->pc >= lo && *c->pc <= hi;
    const bool in_loop = first_line.second && rest_line.second
                             ? rest_line == first_line
                             : c->pc && *c->pc + kLoopWindow >= lo && *c->pc <= hi + kLoopWindow;
    if (in_span || in_loop) {
      return std::nullopt;
    }
  }
  std::stable_sort(out.spin.begin(), out.spin.end(),
                   [](const auto* a, const auto* b) { return a->threads > b->threads; });
  for (const auto* c : out.spin) {
    out.spin_threads += c->threads;
    out.spin_workgroups += c->workgroups;
    if (c->work_items) {
      if (!out.work_items) {
        out.work_items = c->work_items;
      } else {
        out.work_items->first = std::min(out.work_items->first, c->work_items->first);
        out.work_items->last = std::max(out.work_items->last, c->work_items->last);
      }
    }
  }
  return out;
}

std::string kernel_line(const Dispatch& d, Kernels& kernels) {
  if (d.kernel_name.empty()) {
    return {};
  }
  const KernelInfo& k = kernels.of(d);
  std::string out =
      fmt::format("kernel {}: {} ({})", k.short_name.empty() ? d.kernel_name : k.short_name,
                  to_string(k.family), to_string(k.category));
  if (!k.op.empty()) {
    out += fmt::format(", {}", k.op);
  }
  if (!k.dtype_hint.empty()) {
    out += fmt::format(", {}", k.dtype_hint);
  }
  if (!k.source_hint.empty()) {
    out += fmt::format("; source: {}", k.source_hint);
  }
  return out;
}

namespace {
std::string lower_text(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return out;
}

} // namespace

// A frame 0 that waits in the kernel or a runtime: a thread there is blocked, not spinning.
bool is_wait_function(std::string_view function) {
  std::string f = lower_text(short_function_name(function));
  // `__GI___clock_nanosleep`, `__libc_read`, `__futex_abstimed_wait_common64`: the base name.
  for (bool again = true; again;) {
    again = false;
    while (!f.empty() && f.front() == '_') {
      f.erase(0, 1);
      again = true;
    }
    for (std::string_view prefix : {"gi_", "libc_", "new_"}) {
      if (f.rfind(prefix, 0) == 0) {
        f.erase(0, prefix.size());
        again = true;
      }
    }
  }
  static const std::set<std::string, std::less<>> kExact = {
      "read",         "pread64",     "readv",        "recv",
      "recvfrom",     "recvmsg",     "accept",       "accept4",
      "poll",         "ppoll",       "select",       "pselect6",
      "epoll_wait",   "epoll_pwait", "nanosleep",    "clock_nanosleep",
      "usleep",       "sleep",       "pause",        "sigsuspend",
      "sigtimedwait", "sigwaitinfo", "ioctl",        "syscall",
      "wait4",        "waitpid",     "waitid",       "pthread_join",
      "msgrcv",       "semop",       "io_getevents", "sched_yield"};
  if (kExact.count(f) != 0) {
    return true;
  }
  for (std::string_view prefix :
       {"futex", "pthread_cond_", "sem_wait", "sem_timedwait", "lll_lock", "do_futex", "epoll_",
        "pthread_mutex_lock", "pthread_rwlock_", "std::condition_variable"}) {
    if (f.rfind(prefix, 0) == 0) {
      return true;
    }
  }
  return false;
}

// The innermost frame of the stack inside a blocking call (futex, pthread_cond_*wait, poll,
// nanosleep, read ...); nullptr when none is. Frame 0 is often an unsymbolised libc address
// with the wait one frame out, so every frame counts.
const Frame* blocking_frame(const HostThread& t) {
  for (const auto& f : t.frames) {
    if (!f.function.empty() && is_wait_function(f.function)) {
      return &f;
    }
  }
  return nullptr;
}

// Threads a runtime keeps for itself (PyTorch's NCCL watchdog and heartbeat, CUDA's event
// handler): they poll or sleep on timers whatever the program does, so they are evidence at
// most, never the headline.
bool is_runtime_helper_thread(std::string_view name) {
  for (std::string_view prefix : {"pt_nccl_", "pt_autograd", "cuda-EvtHandlr", "cuda0"}) {
    if (name.substr(0, prefix.size()) == prefix) {
      return true;
    }
  }
  return false;
}

std::string thread_where(const HostThread& t) {
  if (const Frame* user = innermost_user_frame(t)) {
    return frame_where(*user);
  }
  // Every frame is the system's: the call that waits, and the frame outside it. Under the
  // interpreter alone (no Python frames read) that frame is the Python code, not its C API.
  for (std::size_t i = 0; i < t.frames.size(); ++i) {
    if (!t.frames[i].function.empty() && is_wait_function(t.frames[i].function)) {
      const auto outside = t.frames.begin() + static_cast<std::ptrdiff_t>(i) + 1;
      if (std::any_of(outside, t.frames.end(), is_interpreter_frame)) {
        return fmt::format("Python code waiting in {}", short_function_name(t.frames[i].function));
      }
      // Where the thread or program began (`_start`, `start_thread`) names no caller either.
      const auto says_nothing = [](const Frame& f) {
        return f.function.empty() || is_wait_function(f.function) || is_entry_frame(f);
      };
      std::size_t j = i + 1;
      while (j < t.frames.size() && says_nothing(t.frames[j])) {
        ++j;
      }
      if (j < t.frames.size()) {
        return fmt::format("{} (waits in {})", frame_where(t.frames[j]),
                           short_function_name(t.frames[i].function));
      }
      return frame_where(t.frames[i]);
    }
  }
  for (const auto& f : t.frames) {
    if (!f.function.empty()) {
      return frame_where(f);
    }
  }
  return t.frames.empty() ? std::string("?") : frame_where(t.frames.front());
}

const KernelWait* kernel_wait_of(const Snapshot& s, const HostThread& t) {
  if (!s.pid || !t.lwp) {
    return nullptr;
  }
  const ProcessWaits* p = s.kernel_waits.process(*s.pid);
  if (p == nullptr) {
    return nullptr;
  }
  for (const auto& w : p->threads) {
    if (w.tid == static_cast<std::int64_t>(*t.lwp)) {
      return &w;
    }
  }
  return nullptr;
}

PythonLockHolders::PythonLockHolders(const Snapshot& snapshot) {
  for (const auto& t : snapshot.host_threads) {
    for (const auto& f : t.frames) {
      for (const std::uint64_t lock : f.held_locks) {
        by_lock_.try_emplace(lock, PythonLockHolder{&t, &f});
      }
    }
  }
}

std::optional<PythonLockHolder> PythonLockHolders::of_waiter(const HostThread& waiter) const {
  if (!waiter.python_lock_wait) {
    return std::nullopt;
  }
  auto it = by_lock_.find(*waiter.python_lock_wait);
  return it == by_lock_.end() ? std::nullopt : std::optional<PythonLockHolder>(it->second);
}

const ProcessWaits* asleep_without_waker(const Snapshot& s) {
  if (!s.pid || s.host_threads.empty()) {
    return nullptr;
  }
  const ProcessWaits* p = s.kernel_waits.process(*s.pid);
  if (p == nullptr || p->threads.empty() || p->state == "Z") {
    return nullptr;
  }
  for (const auto& w : p->threads) {
    if (only_own_waker(w, p->pid, s.kernel_waits)) {
      continue;
    }
    // pthread_join sleeps on the joined thread's tid word as a shared futex (the kernel's wake
    // at that thread's exit): still a wait only a thread of this process ends.
    const HostThread* joiner = nullptr;
    for (const auto& t : s.host_threads) {
      joiner = t.lwp && static_cast<std::int64_t>(*t.lwp) == w.tid ? &t : joiner;
    }
    const bool join =
        w.call == "futex" && !w.timed && joiner != nullptr &&
        std::any_of(joiner->frames.begin(), joiner->frames.end(), [](const Frame& f) {
          return contains(f.function, "pthread_join") || contains(f.function, "clockjoin");
        });
    if (!join) {
      return nullptr;
    }
  }
  // Every thread the debugger saw was read by /proc (a thread born after the read could wake).
  for (const auto& t : s.host_threads) {
    if (kernel_wait_of(s, t) == nullptr) {
      return nullptr;
    }
  }
  return p;
}

bool in_queue_get(const HostThread& t) {
  for (const auto& f : t.frames) {
    if (!f.python) {
      continue;
    }
    const bool standard = (contains(f.file, "/lib/python3") && !contains(f.file, "-packages/")) ||
                          f.file.starts_with("<frozen ");
    if (!standard) {
      return false; // the user's own frame came first: not inside queue.get
    }
    if (ends_with(f.file, "/queue.py") && (f.function == "get" || ends_with(f.function, ".get"))) {
      return true;
    }
  }
  return false;
}

} // namespace rocplay::heuristics::detail
