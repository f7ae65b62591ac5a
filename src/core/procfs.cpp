// Readers of /proc/PID/{stat,status,environ,cmdline,fd}. Bounded reads; a vanished process or an
// unreadable file is "unknown", not an error.
#include "rocplay/core/procfs.hpp"
#include "rocplay/core/proc_file.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <optional>
#include <set>

namespace rocplay::process {

namespace {

std::string proc_path(std::int64_t pid, const char* leaf) {
  return "/proc/" + std::to_string(pid) + "/" + leaf;
}

template <class T> std::optional<T> to_int(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) {
    s.remove_prefix(1);
  }
  T value{};
  const auto res = std::from_chars(s.data(), s.data() + s.size(), value);
  if (res.ec != std::errc{} || res.ptr == s.data()) {
    return std::nullopt;
  }
  return value;
}

// The line at `pos` (without its '\n'), advancing `pos` past it; nullopt at the end.
std::optional<std::string_view> next_line(std::string_view text, std::size_t& pos) {
  if (pos >= text.size()) {
    return std::nullopt;
  }
  std::size_t end = text.find('\n', pos);
  if (end == std::string_view::npos) {
    end = text.size();
  }
  const std::string_view line = text.substr(pos, end - pos);
  pos = end + 1;
  return line;
}

std::vector<std::string_view> split_ws(std::string_view s) {
  std::vector<std::string_view> out;
  std::size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n')) {
      ++i;
    }
    const std::size_t start = i;
    while (i < s.size() && s[i] != ' ' && s[i] != '\t' && s[i] != '\n') {
      ++i;
    }
    if (i > start) {
      out.push_back(s.substr(start, i - start));
    }
  }
  return out;
}

} // namespace

std::optional<Stat> parse_stat(std::string_view text) {
  // `pid (comm) state ppid pgrp ...`; comm may contain `)` and spaces, so split at the last `)`.
  const std::size_t open = text.find('(');
  const std::size_t close = text.rfind(')');
  if (open == std::string_view::npos || close == std::string_view::npos || close < open) {
    return std::nullopt;
  }
  Stat st;
  const auto pid = to_int<std::int64_t>(text.substr(0, open));
  if (!pid) {
    return std::nullopt;
  }
  st.pid = *pid;
  st.comm = std::string(text.substr(open + 1, close - open - 1));
  const auto fields = split_ws(text.substr(close + 1));
  // fields[0] is field 3 (state); utime is field 14, stime 15, num_threads 20, starttime 22.
  if (fields.size() < 20 || fields[0].size() != 1) {
    return std::nullopt;
  }
  st.state = fields[0][0];
  auto field = [&](std::size_t number) { return fields[number - 3]; };
  const auto ppid = to_int<std::int64_t>(field(4));
  const auto pgrp = to_int<std::int64_t>(field(5));
  const auto utime = to_int<std::uint64_t>(field(14));
  const auto stime = to_int<std::uint64_t>(field(15));
  const auto threads = to_int<std::int64_t>(field(20));
  const auto start = to_int<std::uint64_t>(field(22));
  st.flags = to_int<std::uint64_t>(field(9)).value_or(0);
  if (!ppid || !pgrp || !utime || !stime || !threads || !start) {
    return std::nullopt;
  }
  st.ppid = *ppid;
  st.pgrp = *pgrp;
  st.utime = *utime;
  st.stime = *stime;
  st.num_threads = *threads;
  st.starttime = *start;
  return st;
}

std::optional<Stat> read_stat(std::int64_t pid) {
  if (pid <= 0) {
    return std::nullopt;
  }
  const auto text = read_proc_file(proc_path(pid, "stat"), 4096);
  if (!text) {
    return std::nullopt;
  }
  return parse_stat(*text);
}

Status parse_status(std::string_view text) {
  Status st;
  std::size_t pos = 0;
  while (const auto next = next_line(text, pos)) {
    const std::string_view line = *next;
    const std::size_t colon = line.find(':');
    if (colon == std::string_view::npos) {
      continue;
    }
    const std::string_view key = line.substr(0, colon);
    std::string_view value = line.substr(colon + 1);
    while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) {
      value.remove_prefix(1);
    }
    if (key == "Name") {
      st.name = std::string(value);
    } else if (key == "TracerPid") {
      st.tracer_pid = to_int<std::int64_t>(value);
    } else if (key == "CapEff") {
      std::uint64_t cap = 0;
      const auto res = std::from_chars(value.data(), value.data() + value.size(), cap, 16);
      if (res.ec == std::errc{} && res.ptr != value.data()) {
        st.cap_eff = cap;
      }
    } else if (key == "Uid") {
      const auto ids = split_ws(value);
      if (ids.size() >= 3) {
        st.uid_real = to_int<std::int64_t>(ids[0]);
        st.uid_effective = to_int<std::int64_t>(ids[1]);
        st.uid_saved = to_int<std::int64_t>(ids[2]);
      }
    }
  }
  return st;
}

std::optional<Status> read_status(std::int64_t pid) {
  if (pid <= 0) {
    return std::nullopt;
  }
  const auto text = read_proc_file(proc_path(pid, "status"), 16384);
  if (!text) {
    return std::nullopt;
  }
  return parse_status(*text);
}

std::vector<ThreadTracer> traced_threads(std::int64_t pid, std::int64_t ignore,
                                         std::size_t max_threads) {
  std::vector<ThreadTracer> out;
  if (pid <= 0) {
    return out;
  }
  DIR* dir = ::opendir(proc_path(pid, "task").c_str());
  if (dir == nullptr) {
    return out;
  }
  std::size_t seen = 0;
  while (const dirent* e = ::readdir(dir)) {
    const auto tid = to_int<std::int64_t>(e->d_name);
    if (!tid) {
      continue; // `.` and `..`
    }
    if (++seen > max_threads) {
      break;
    }
    const auto text = read_proc_file(
        "/proc/" + std::to_string(pid) + "/task/" + std::to_string(*tid) + "/status", 16384);
    if (!text) {
      continue; // the thread ended
    }
    const Status st = parse_status(*text);
    // TracerPid names the tracing thread; any thread of `ignore` counts as `ignore`.
    const bool ignored =
        ignore > 0 && st.tracer_pid &&
        (*st.tracer_pid == ignore ||
         ::access(("/proc/" + std::to_string(ignore) + "/task/" + std::to_string(*st.tracer_pid))
                      .c_str(),
                  F_OK) == 0);
    if (st.tracer_pid && *st.tracer_pid > 0 && !ignored) {
      out.push_back({*tid, *st.tracer_pid});
    }
  }
  ::closedir(dir);
  std::sort(out.begin(), out.end(),
            [](const ThreadTracer& a, const ThreadTracer& b) { return a.tid < b.tid; });
  return out;
}

std::vector<TaskStat> read_task_stats(std::int64_t pid, std::size_t max_threads) {
  std::vector<TaskStat> out;
  if (pid <= 0) {
    return out;
  }
  DIR* dir = ::opendir(proc_path(pid, "task").c_str());
  if (dir == nullptr) {
    return out;
  }
  while (const dirent* e = ::readdir(dir)) {
    const auto tid = to_int<std::int64_t>(e->d_name);
    if (!tid) {
      continue; // `.` and `..`
    }
    if (out.size() >= max_threads) {
      break;
    }
    const auto text = read_proc_file(
        "/proc/" + std::to_string(pid) + "/task/" + std::to_string(*tid) + "/stat", 4096);
    if (!text) {
      continue; // the thread ended
    }
    if (const auto st = parse_stat(*text)) {
      out.push_back({*tid, st->state, st->utime + st->stime});
    }
  }
  ::closedir(dir);
  std::sort(out.begin(), out.end(),
            [](const TaskStat& a, const TaskStat& b) { return a.tid < b.tid; });
  return out;
}

long clock_ticks_per_second() {
  const long t = ::sysconf(_SC_CLK_TCK);
  return t > 0 ? t : 100;
}

std::optional<bool> ptrace_read_allowed(std::int64_t pid) {
  char buf[256];
  const ssize_t n = ::readlink(proc_path(pid, "ns/pid").c_str(), buf, sizeof buf);
  if (n >= 0) {
    return true;
  }
  if (errno == EACCES || errno == EPERM) {
    return false;
  }
  return std::nullopt;
}

std::optional<int> read_ptrace_scope() {
  const auto text = read_proc_file("/proc/sys/kernel/yama/ptrace_scope", 64);
  if (!text) {
    return std::nullopt;
  }
  return to_int<int>(*text);
}

std::map<std::string, std::string> parse_environ(std::string_view raw, std::size_t max_entries) {
  std::map<std::string, std::string> env;
  std::size_t pos = 0;
  while (pos < raw.size() && env.size() < max_entries) {
    std::size_t end = raw.find('\0', pos);
    if (end == std::string_view::npos) {
      end = raw.size();
    }
    const std::string_view entry = raw.substr(pos, end - pos);
    pos = end + 1;
    const std::size_t eq = entry.find('=');
    if (eq == std::string_view::npos || eq == 0) {
      continue;
    }
    env.emplace(std::string(entry.substr(0, eq)), std::string(entry.substr(eq + 1)));
  }
  return env;
}

std::optional<std::map<std::string, std::string>> read_environ(std::int64_t pid) {
  if (pid <= 0) {
    return std::nullopt;
  }
  const auto raw = read_proc_file(proc_path(pid, "environ"), std::size_t{4} << 20);
  if (!raw) {
    return std::nullopt;
  }
  return parse_environ(*raw);
}

const std::vector<std::string_view>& relevant_env_names() {
  static const std::vector<std::string_view> kNames = {
      "HSA_TOOLS_LIB",        "HSA_TOOLS_REPORT_LOAD_FAILURE",
      "HSA_ENABLE_DEBUG",     "ROCR_VISIBLE_DEVICES",
      "HIP_VISIBLE_DEVICES",  "GPU_DEVICE_ORDINAL",
      "CUDA_VISIBLE_DEVICES", "CUDA_LAUNCH_BLOCKING",
      "AMD_SERIALIZE_KERNEL", "RANK",
      "LOCAL_RANK",           "WORLD_SIZE",
      "LOCAL_WORLD_SIZE",     "NCCL_DEBUG",
      "RCCL_DEBUG",
  };
  return kNames;
}

std::map<std::string, std::string> relevant_env(const std::map<std::string, std::string>& env) {
  std::map<std::string, std::string> out;
  for (const auto name : relevant_env_names()) {
    const auto it = env.find(std::string(name));
    if (it != env.end()) {
      out.emplace(it->first, it->second);
    }
  }
  return out;
}

std::string read_cmdline(std::int64_t pid, std::size_t max_bytes) {
  auto raw = read_proc_file(proc_path(pid, "cmdline"), max_bytes);
  if (!raw) {
    return {};
  }
  while (!raw->empty() && raw->back() == '\0') {
    raw->pop_back();
  }
  for (char& c : *raw) {
    if (c == '\0') {
      c = ' ';
    } else if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      c = '?';
    }
  }
  return *raw;
}

std::string host_name() {
  char buf[256] = {};
  return ::gethostname(buf, sizeof buf - 1) == 0 ? std::string(buf) : std::string();
}

std::string read_exe(std::int64_t pid) {
  char buf[4096];
  const std::string link = proc_path(pid, "exe");
  const ssize_t n = ::readlink(link.c_str(), buf, sizeof buf - 1);
  if (n <= 0) {
    return {};
  }
  return std::string(buf, static_cast<std::size_t>(n));
}

std::string read_wchan(std::int64_t pid, std::int64_t tid) {
  auto text = read_proc_file(proc_path(pid, "task/") + std::to_string(tid) + "/wchan", 256);
  if (!text) {
    return {};
  }
  while (!text->empty() && (text->back() == '\n' || text->back() == '\0')) {
    text->pop_back();
  }
  return *text == "0" ? std::string() : *text;
}

GpuOpen read_gpu_open(std::int64_t pid, const std::vector<std::string>& device_prefixes) {
  static const std::vector<std::string> kDefault = {"/dev/kfd", "/dev/nvidia", "/dev/dri/render"};
  const auto& prefixes = device_prefixes.empty() ? kDefault : device_prefixes;
  GpuOpen out;
  const std::string dir = proc_path(pid, "fd");
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) {
    return out;
  }
  out.known = true;
  std::set<std::string> seen;
  std::size_t scanned = 0;
  while (const dirent* e = ::readdir(d)) {
    if (e->d_name[0] == '.') {
      continue;
    }
    // A process with a million sockets should not make `ps` crawl.
    if (++scanned > 65536) {
      break;
    }
    char target[512];
    const std::string link = dir + "/" + e->d_name;
    const ssize_t n = ::readlink(link.c_str(), target, sizeof target - 1);
    if (n <= 0) {
      continue;
    }
    const std::string path(target, static_cast<std::size_t>(n));
    for (const auto& prefix : prefixes) {
      if (path.compare(0, prefix.size(), prefix) != 0) {
        continue;
      }
      if (path.compare(0, 11, "/dev/nvidia") == 0) {
        out.nvidia = true;
      } else if (path.compare(0, 15, "/dev/dri/render") == 0) {
        out.dri = true;
      } else {
        out.kfd = true;
      }
      seen.insert(path);
      break;
    }
  }
  ::closedir(d);
  out.devices.assign(seen.begin(), seen.end());
  return out;
}

} // namespace rocplay::process
