// The kernel's view of a process's waits (rocplay/core/kernel_waits.hpp): /proc/PID/task/TID/
// syscall, fd links and fdinfo modes, children, pipe holders; and the `kernel waits:` notes that
// carry them in a recording. Every read is bounded; a vanished process or thread is left out.
#include "rocplay/core/kernel_waits.hpp"

#include "rocplay/core/proc_file.hpp"
#include "rocplay/core/procfs.hpp"

#include <dirent.h>
#include <unistd.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <charconv>
#include <map>
#include <set>

namespace rocplay {

const ProcessWaits* KernelWaits::process(std::int64_t pid) const {
  for (const auto& p : processes) {
    if (p.pid == pid) {
      return &p;
    }
  }
  return nullptr;
}

const PipeHolders* KernelWaits::pipe(std::uint64_t inode) const {
  for (const auto& p : pipes) {
    if (p.inode == inode) {
      return &p;
    }
  }
  return nullptr;
}

std::optional<std::uint64_t> pipe_inode(std::string_view file) {
  constexpr std::string_view kHead = "pipe:[";
  if (!file.starts_with(kHead) || !file.ends_with("]")) {
    return std::nullopt;
  }
  const std::string_view digits = file.substr(kHead.size(), file.size() - kHead.size() - 1);
  std::uint64_t v = 0;
  const auto r = std::from_chars(digits.data(), digits.data() + digits.size(), v);
  if (r.ec != std::errc{} || r.ptr != digits.data() + digits.size() || digits.empty()) {
    return std::nullopt;
  }
  return v;
}

namespace {

bool reads(std::string_view call) {
  return call == "read" || call == "readv" || call == "pread64" || call == "recvfrom" ||
         call == "recvmsg";
}

bool writes(std::string_view call) {
  return call == "write" || call == "writev" || call == "pwrite64" || call == "sendto" ||
         call == "sendmsg";
}

} // namespace

bool only_own_waker(const KernelWait& w, std::int64_t pid, const KernelWaits& all) {
  if (w.timed) {
    return false;
  }
  if (w.call == "futex") {
    return !w.shared;
  }
  if (reads(w.call) || writes(w.call)) {
    const auto inode = pipe_inode(w.file);
    const PipeHolders* p = inode ? all.pipe(*inode) : nullptr;
    if (p == nullptr || !p->complete) {
      return false; // a socket, a terminal, a file: or holders not known
    }
    const auto& others = reads(w.call) ? p->writers : p->readers;
    return std::all_of(others.begin(), others.end(), [&](std::int64_t h) { return h == pid; });
  }
  return false;
}

namespace {

// Syscall numbers of this machine's ABI. A recording made elsewhere carries the names.
struct SyscallName {
  long nr;
  const char* name;
};
#if defined(__x86_64__)
constexpr SyscallName kSyscalls[] = {
    {0, "read"},
    {1, "write"},
    {7, "poll"},
    {17, "pread64"},
    {18, "pwrite64"},
    {19, "readv"},
    {20, "writev"},
    {23, "select"},
    {34, "pause"},
    {35, "nanosleep"},
    {42, "connect"},
    {43, "accept"},
    {44, "sendto"},
    {45, "recvfrom"},
    {46, "sendmsg"},
    {47, "recvmsg"},
    {61, "wait4"},
    {128, "rt_sigtimedwait"},
    {130, "rt_sigsuspend"},
    {202, "futex"},
    {230, "clock_nanosleep"},
    {232, "epoll_wait"},
    {247, "waitid"},
    {270, "pselect6"},
    {271, "ppoll"},
    {281, "epoll_pwait"},
    {288, "accept4"},
    {441, "epoll_pwait2"},
    {449, "futex_waitv"},
};
#elif defined(__aarch64__)
constexpr SyscallName kSyscalls[] = {
    {22, "epoll_pwait"},
    {63, "read"},
    {64, "write"},
    {65, "readv"},
    {66, "writev"},
    {67, "pread64"},
    {68, "pwrite64"},
    {72, "pselect6"},
    {73, "ppoll"},
    {95, "waitid"},
    {98, "futex"},
    {101, "nanosleep"},
    {115, "clock_nanosleep"},
    {133, "rt_sigsuspend"},
    {137, "rt_sigtimedwait"},
    {202, "accept"},
    {203, "connect"},
    {206, "sendto"},
    {207, "recvfrom"},
    {211, "sendmsg"},
    {212, "recvmsg"},
    {242, "accept4"},
    {260, "wait4"},
    {441, "epoll_pwait2"},
    {449, "futex_waitv"},
};
#else
constexpr SyscallName kSyscalls[] = {{-1, ""}};
#endif

std::string syscall_name(long nr) {
  for (const auto& s : kSyscalls) {
    if (s.nr == nr) {
      return s.name;
    }
  }
  return fmt::format("syscall {}", nr);
}

std::optional<std::uint64_t> hex(std::string_view s) {
  if (s.starts_with("0x")) {
    s.remove_prefix(2);
  }
  std::uint64_t v = 0;
  const auto r = std::from_chars(s.data(), s.data() + s.size(), v, 16);
  if (r.ec != std::errc{} || r.ptr != s.data() + s.size()) {
    return std::nullopt;
  }
  return v;
}

std::string read_link(const std::string& path) {
  char buf[512];
  const ssize_t n = ::readlink(path.c_str(), buf, sizeof buf - 1);
  return n <= 0 ? std::string() : std::string(buf, static_cast<std::size_t>(n));
}

// The fd's open mode from fdinfo's `flags:` (octal): `r`, `w` or `rw`.
std::string fd_access(std::int64_t pid, std::int64_t fd) {
  const auto text = process::read_proc_file(fmt::format("/proc/{}/fdinfo/{}", pid, fd), 4096);
  if (!text) {
    return {};
  }
  const auto at = text->find("flags:");
  if (at == std::string::npos) {
    return {};
  }
  std::size_t i = at + 6;
  while (i < text->size() && ((*text)[i] == ' ' || (*text)[i] == '\t')) {
    ++i;
  }
  unsigned long flags = 0;
  const auto r = std::from_chars(text->data() + i, text->data() + text->size(), flags, 8);
  if (r.ec != std::errc{}) {
    return {};
  }
  switch (flags & 3u) {
  case 0:
    return "r";
  case 1:
    return "w";
  default:
    return "rw";
  }
}

std::vector<std::int64_t> numeric_entries(const std::string& dir, std::size_t max) {
  std::vector<std::int64_t> out;
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) {
    return out;
  }
  while (const dirent* e = ::readdir(d)) {
    std::int64_t v = 0;
    const char* end = e->d_name + std::char_traits<char>::length(e->d_name);
    const auto r = std::from_chars(e->d_name, end, v);
    if (r.ec != std::errc{} || r.ptr != end) {
      continue;
    }
    if (out.size() >= max) {
      break;
    }
    out.push_back(v);
  }
  ::closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

} // namespace

namespace process {

std::optional<KernelWait> read_kernel_wait(std::int64_t pid, std::int64_t tid) {
  const auto text = read_proc_file(fmt::format("/proc/{}/task/{}/syscall", pid, tid), 512);
  if (!text) {
    return std::nullopt;
  }
  KernelWait w;
  w.tid = tid;
  std::vector<std::string_view> f;
  std::string_view rest(*text);
  while (!rest.empty() && f.size() < 9) {
    const auto sp = rest.find_first_of(" \n");
    if (sp != 0) {
      f.push_back(rest.substr(0, sp));
    }
    if (sp == std::string_view::npos) {
      break;
    }
    rest.remove_prefix(sp + 1);
  }
  if (f.empty()) {
    return std::nullopt;
  }
  if (f.front() == "running") {
    w.call = "running";
    return w;
  }
  long nr = 0;
  const auto r = std::from_chars(f.front().data(), f.front().data() + f.front().size(), nr);
  if (r.ec != std::errc{}) {
    return std::nullopt;
  }
  if (nr < 0 || f.size() < 7) {
    w.call = "none"; // blocked, but not in a system call (a page fault, a stop)
    return w;
  }
  std::uint64_t a[6] = {};
  for (int i = 0; i < 6; ++i) {
    a[i] = hex(f[static_cast<std::size_t>(i) + 1]).value_or(0);
  }
  w.call = syscall_name(nr);
  const std::string_view c = w.call;
  if (reads(c) || writes(c) || c == "accept" || c == "accept4" || c == "connect") {
    w.fd = static_cast<std::int32_t>(a[0]);
    w.file = read_link(fmt::format("/proc/{}/fd/{}", pid, *w.fd));
    w.access = fd_access(pid, *w.fd);
  } else if (c == "wait4") {
    w.child = static_cast<std::int32_t>(a[0]);
  } else if (c == "waitid") {
    w.child = a[0] == 1 ? static_cast<std::int64_t>(static_cast<std::int32_t>(a[1])) : -1;
  } else if (c == "futex") {
    w.futex = a[0];
    const std::uint64_t cmd = a[1] & 0x7f;
    w.shared = (a[1] & 128u) == 0;
    // FUTEX_WAIT, LOCK_PI, WAIT_BITSET, WAIT_REQUEUE_PI, LOCK_PI2: the 4th argument is a timeout.
    w.timed = (cmd == 0 || cmd == 6 || cmd == 9 || cmd == 11 || cmd == 13) && a[3] != 0;
  } else if (c == "poll") {
    w.timed = static_cast<std::int32_t>(a[2]) >= 0;
  } else if (c == "epoll_wait" || c == "epoll_pwait") {
    w.timed = static_cast<std::int32_t>(a[3]) >= 0;
  } else if (c == "select" || c == "pselect6") {
    w.timed = a[4] != 0;
  } else if (c == "ppoll" || c == "rt_sigtimedwait") {
    w.timed = a[2] != 0;
  } else if (c == "epoll_pwait2") {
    w.timed = a[3] != 0;
  } else if (c == "nanosleep" || c == "clock_nanosleep") {
    w.timed = true;
  }
  return w;
}

namespace {

ProcessWaits read_process(std::int64_t pid, std::string role, std::size_t max_threads) {
  ProcessWaits p;
  p.pid = pid;
  p.role = std::move(role);
  if (const auto st = read_stat(pid)) {
    p.ppid = st->ppid;
    p.comm = st->comm;
    p.state = std::string(1, st->state);
  }
  p.cmdline = read_cmdline(pid, 200);
  for (std::int64_t tid : numeric_entries(fmt::format("/proc/{}/task", pid), max_threads)) {
    if (auto w = read_kernel_wait(pid, tid)) {
      p.threads.push_back(std::move(*w));
    }
  }
  return p;
}

} // namespace

KernelWaits read_kernel_waits(std::int64_t pid) {
  KernelWaits out;
  if (pid <= 0) {
    return out;
  }
  out.processes.push_back(read_process(pid, "target", kMaxWaitThreads));
  if (out.processes.front().threads.empty()) {
    out.processes.clear();
    return out;
  }
  // The children the target's threads wait for, and theirs (a shell between them), bounded.
  std::vector<std::int64_t> all_pids; // read once, when some wait needs it
  auto pids = [&]() -> const std::vector<std::int64_t>& {
    if (all_pids.empty()) {
      all_pids = numeric_entries("/proc", kMaxPipeScan);
    }
    return all_pids;
  };
  for (std::size_t i = 0; i < out.processes.size() && out.processes.size() < kMaxWaitProcesses;
       ++i) {
    std::set<std::int64_t> wanted;
    bool any_child = false;
    for (const auto& t : out.processes[i].threads) {
      if (t.child && *t.child > 0) {
        wanted.insert(*t.child);
      } else if (t.child) {
        any_child = true;
      }
    }
    if (any_child) {
      for (std::int64_t p : pids()) {
        if (const auto st = read_stat(p); st && st->ppid == out.processes[i].pid) {
          wanted.insert(p);
        }
      }
    }
    for (std::int64_t c : wanted) {
      if (out.processes.size() >= kMaxWaitProcesses || out.process(c) != nullptr) {
        continue;
      }
      auto child = read_process(c, "child", 256);
      if (!child.state.empty()) {
        out.processes.push_back(std::move(child));
      }
    }
  }
  // The pipes a thread blocks on, and who holds their ends.
  std::set<std::uint64_t> inodes;
  for (const auto& p : out.processes) {
    for (const auto& t : p.threads) {
      if (const auto inode = pipe_inode(t.file); inode && inodes.size() < kMaxWaitPipes) {
        inodes.insert(*inode);
      }
    }
  }
  if (inodes.empty()) {
    return out;
  }
  std::map<std::uint64_t, PipeHolders> found;
  for (std::uint64_t i : inodes) {
    found[i].inode = i;
  }
  constexpr std::size_t kMaxLinks = 200'000;
  std::size_t links = 0;
  bool complete = pids().size() < kMaxPipeScan;
  for (std::int64_t p : pids()) {
    const std::string dir = fmt::format("/proc/{}/fd", p);
    for (std::int64_t fd : numeric_entries(dir, 4096)) {
      if (++links > kMaxLinks) {
        complete = false;
        break;
      }
      const auto inode = pipe_inode(read_link(fmt::format("{}/{}", dir, fd)));
      auto it = inode ? found.find(*inode) : found.end();
      if (it == found.end()) {
        continue;
      }
      const std::string mode = fd_access(p, fd);
      auto add = [p](std::vector<std::int64_t>& v) {
        if (std::find(v.begin(), v.end(), p) == v.end()) {
          v.push_back(p);
        }
      };
      if (mode != "r") {
        add(it->second.writers);
      }
      if (mode != "w") {
        add(it->second.readers);
      }
    }
    if (links > kMaxLinks) {
      break;
    }
  }
  for (auto& [inode, h] : found) {
    h.complete = complete;
    out.pipes.push_back(std::move(h));
  }
  return out;
}

} // namespace process

// ---- notes ----

namespace {

constexpr std::string_view kNoteHead = "kernel waits: ";
constexpr std::size_t kNoteBytes = 3'000;
constexpr std::size_t kMaxText = 200;

nlohmann::json thread_json(const KernelWait& w) {
  nlohmann::json j = {{"t", w.tid}, {"c", w.call}};
  if (w.fd) {
    j["fd"] = *w.fd;
  }
  if (!w.file.empty()) {
    j["f"] = w.file;
  }
  if (!w.access.empty()) {
    j["a"] = w.access;
  }
  if (w.child) {
    j["ch"] = *w.child;
  }
  if (w.futex) {
    j["fx"] = fmt::format("{:#x}", *w.futex);
  }
  if (w.timed) {
    j["tm"] = 1;
  }
  if (w.shared) {
    j["sh"] = 1;
  }
  return j;
}

std::string dump(const nlohmann::json& j) {
  return std::string(kNoteHead) + j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string text_of(const nlohmann::json& j, const char* key) {
  const auto it = j.find(key);
  if (it == j.end() || !it->is_string()) {
    return {};
  }
  return it->get_ref<const std::string&>().substr(0, kMaxText);
}

template <class T> std::optional<T> int_of(const nlohmann::json& j, const char* key) {
  const auto it = j.find(key);
  if (it == j.end() || !it->is_number_integer()) {
    return std::nullopt;
  }
  return it->get<T>();
}

std::vector<std::int64_t> pids_of(const nlohmann::json& j, const char* key) {
  std::vector<std::int64_t> out;
  const auto it = j.find(key);
  if (it == j.end() || !it->is_array()) {
    return out;
  }
  for (const auto& v : *it) {
    if (v.is_number_integer() && out.size() < kMaxPipeScan) {
      out.push_back(v.get<std::int64_t>());
    }
  }
  return out;
}

} // namespace

std::vector<std::string> kernel_wait_notes(const KernelWaits& waits) {
  std::vector<std::string> notes;
  for (const auto& p : waits.processes) {
    nlohmann::json head = {{"pid", p.pid},         {"ppid", p.ppid},   {"comm", p.comm},
                           {"cmdline", p.cmdline}, {"state", p.state}, {"role", p.role}};
    nlohmann::json threads = nlohmann::json::array();
    std::size_t bytes = 0;
    bool written = false;
    auto flush = [&] {
      written = true;
      nlohmann::json j = head;
      j["threads"] = std::move(threads);
      notes.push_back(dump(j));
      threads = nlohmann::json::array();
      bytes = 0;
    };
    for (const auto& t : p.threads) {
      auto j = thread_json(t);
      bytes += j.dump().size() + 1;
      threads.push_back(std::move(j));
      if (bytes > kNoteBytes) {
        flush();
      }
    }
    if (!threads.empty() || !written) {
      flush();
    }
  }
  nlohmann::json pipes = nlohmann::json::array();
  for (const auto& p : waits.pipes) {
    pipes.push_back({{"i", p.inode}, {"w", p.writers}, {"r", p.readers}, {"all", p.complete}});
    if (pipes.dump().size() > kNoteBytes) {
      notes.push_back(dump({{"pipes", std::move(pipes)}}));
      pipes = nlohmann::json::array();
    }
  }
  if (!pipes.empty()) {
    notes.push_back(dump({{"pipes", std::move(pipes)}}));
  }
  return notes;
}

bool read_kernel_wait_note(std::string_view note, KernelWaits& into) {
  if (!note.starts_with(kNoteHead)) {
    return false;
  }
  const auto j = nlohmann::json::parse(note.substr(kNoteHead.size()), nullptr, false);
  if (!j.is_object()) {
    return true; // ours, but not readable
  }
  if (const auto it = j.find("pipes"); it != j.end() && it->is_array()) {
    for (const auto& p : *it) {
      const auto inode = p.is_object() ? int_of<std::uint64_t>(p, "i") : std::nullopt;
      if (!inode) {
        continue;
      }
      for (auto it = into.pipes.begin(); it != into.pipes.end(); ++it) {
        if (it->inode == *inode) {
          into.pipes.erase(it); // the later look's holders
          break;
        }
      }
      if (into.pipes.size() >= kMaxWaitPipes) {
        continue;
      }
      PipeHolders h;
      h.inode = *inode;
      h.writers = pids_of(p, "w");
      h.readers = pids_of(p, "r");
      const auto all = p.find("all");
      h.complete = all != p.end() && all->is_boolean() && all->get<bool>();
      into.pipes.push_back(std::move(h));
    }
    return true;
  }
  const auto pid = int_of<std::int64_t>(j, "pid");
  if (!pid) {
    return true;
  }
  ProcessWaits* p = nullptr;
  for (auto& q : into.processes) {
    p = q.pid == *pid ? &q : p;
  }
  if (p == nullptr) {
    if (into.processes.size() >= kMaxWaitProcesses) {
      return true;
    }
    ProcessWaits q;
    q.pid = *pid;
    q.ppid = int_of<std::int64_t>(j, "ppid").value_or(0);
    q.comm = text_of(j, "comm");
    q.cmdline = text_of(j, "cmdline");
    q.state = text_of(j, "state").substr(0, 1);
    q.role = text_of(j, "role");
    into.processes.push_back(std::move(q));
    p = &into.processes.back();
  }
  const auto threads = j.find("threads");
  if (threads == j.end() || !threads->is_array()) {
    return true;
  }
  for (const auto& t : *threads) {
    const auto tid = t.is_object() ? int_of<std::int64_t>(t, "t") : std::nullopt;
    if (!tid) {
      continue;
    }
    if (p->threads.size() >= kMaxWaitThreads) {
      break;
    }
    KernelWait w;
    w.tid = *tid;
    w.call = text_of(t, "c");
    w.fd = int_of<std::int64_t>(t, "fd");
    w.file = text_of(t, "f");
    w.access = text_of(t, "a");
    w.child = int_of<std::int64_t>(t, "ch");
    if (const std::string fx = text_of(t, "fx"); !fx.empty()) {
      w.futex = hex(fx);
    }
    w.timed = t.contains("tm");
    w.shared = t.contains("sh");
    // A later note of the same thread (the next look before the same stop) replaces it.
    auto same = std::find_if(p->threads.begin(), p->threads.end(),
                             [&](const KernelWait& k) { return k.tid == w.tid; });
    if (same != p->threads.end()) {
      *same = std::move(w);
    } else {
      p->threads.push_back(std::move(w));
    }
  }
  return true;
}

} // namespace rocplay
