// The watcher's signs of a hang, read without ptrace: the log (growth, rotation, truncation), the
// GPU counters (sysfs and nvidia-smi, from fake trees and a fake nvidia-smi), the workers, the
// back-off and the decision, on real files and real processes. The summary line is in
// tests/unit/report/test_watch_summary.cpp.
#include "rocplay/core/error.hpp"
#include "rocplay/watch/watch.hpp"

#include <catch2/catch.hpp>

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

using namespace rocplay;
using namespace rocplay::watch;
using namespace std::chrono_literals;

namespace {

class Dir {
public:
  Dir() {
    char tmpl[] = "/tmp/rocplay-watch-XXXXXX";
    path_ = ::mkdtemp(tmpl);
  }
  ~Dir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  Dir(const Dir&) = delete;
  Dir& operator=(const Dir&) = delete;
  std::string write(const std::string& rel, const std::string& text) const {
    const std::string p = path_ + "/" + rel;
    std::filesystem::create_directories(std::filesystem::path(p).parent_path());
    std::ofstream(p, std::ios::binary | std::ios::trunc) << text;
    return p;
  }
  void append(const std::string& rel, const std::string& text) const {
    std::ofstream(path_ + "/" + rel, std::ios::binary | std::ios::app) << text;
  }
  const std::string& path() const { return path_; }

private:
  std::string path_;
};

bool has_event(const std::vector<std::string>& events, const std::string& text) {
  for (const auto& e : events) {
    if (e.find(text) != std::string::npos) {
      return true;
    }
  }
  return false;
}

// A child process that holds `device` open until killed: a "GPU worker" of this test process.
class Holder {
public:
  explicit Holder(const std::string& device) {
    int ready[2];
    REQUIRE(::pipe(ready) == 0);
    pid_ = ::fork();
    if (pid_ == 0) {
      const int fd = ::open(device.c_str(), O_RDONLY);
      (void)fd;
      char b = 'r';
      [[maybe_unused]] auto n = ::write(ready[1], &b, 1);
      for (;;) {
        ::pause();
      }
    }
    char b = 0;
    [[maybe_unused]] auto n = ::read(ready[0], &b, 1);
    ::close(ready[0]);
    ::close(ready[1]);
  }
  ~Holder() { kill(); }
  Holder(const Holder&) = delete;
  Holder& operator=(const Holder&) = delete;
  void kill() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
      pid_ = -1;
    }
  }
  pid_t pid() const { return pid_; }

private:
  pid_t pid_ = -1;
};

} // namespace

TEST_CASE("GPU counters: the parsers", "[watch][gpu]") {
  CHECK(parse_busy_percent("100\n") == 100);
  CHECK(parse_busy_percent(" 7 ") == 7);
  CHECK_FALSE(parse_busy_percent("101"));
  CHECK_FALSE(parse_busy_percent(""));
  CHECK_FALSE(parse_busy_percent("-1"));
  CHECK_FALSE(parse_busy_percent("1234567890123"));
  CHECK(normalize_bus_id("00000000:3B:00.0") == "0000:3b:00.0");
  CHECK(normalize_bus_id("0000:3b:00.0\n") == "0000:3b:00.0");
  const auto rows = parse_nvidia_smi_csv("00000000:3B:00.0, 100\n00000000:86:00.0, [N/A]\n"
                                         "garbage\n00000000:87:00.0, 3");
  REQUIRE(rows.size() == 2);
  CHECK(rows[0] == std::make_pair(std::string("0000:3b:00.0"), 100));
  CHECK(rows[1] == std::make_pair(std::string("0000:87:00.0"), 3));
  // /proc/driver/nvidia/gpus/BUS/information, as the driver writes it.
  CHECK(parse_nvidia_minor("Model: \t\t NVIDIA H100 80GB HBM3\nBus Location: \t 0000:3b:00.0\n"
                           "Device Minor: \t 3\nGPU Excluded:\t No\n") == 3);
  CHECK_FALSE(parse_nvidia_minor("Model: x\n"));
  CHECK_FALSE(parse_nvidia_minor("Device Minor: lots\n"));

  process::GpuOpen amd;
  amd.known = amd.kfd = amd.dri = true;
  amd.devices = {"/dev/kfd", "/dev/dri/renderD129"};
  process::GpuOpen nv;
  nv.known = nv.nvidia = true;
  nv.devices = {"/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia3"};
  process::GpuOpen kfd_only;
  kfd_only.known = kfd_only.kfd = true;
  kfd_only.devices = {"/dev/kfd"};
  const GpuSet set = gpus_of({amd, nv});
  CHECK(set.render_nodes == std::vector<std::string>{"renderD129"});
  CHECK(set.nvidia_minors == std::vector<int>{3});
  CHECK_FALSE(set.amd_unmapped);
  CHECK_FALSE(set.nvidia_unmapped);
  CHECK(gpus_of({kfd_only}).amd_unmapped);
  CHECK(gpus_of({}).empty());
}

TEST_CASE("GPU counters: AMD sysfs, the workers' render nodes or every card", "[watch][gpu]") {
  Dir sys;
  sys.write("class/drm/renderD128/device/gpu_busy_percent", "3\n");
  sys.write("class/drm/renderD129/device/gpu_busy_percent", "100\n");
  sys.write("class/drm/card0/device/gpu_busy_percent", "3\n");
  sys.write("class/drm/card1/device/gpu_busy_percent", "100\n");
  sys.write("class/drm/card1-DP-1/status", "connected\n");
  GpuProbeOptions o;
  o.sysfs_root = sys.path();
  GpuSet set;
  set.render_nodes = {"renderD128"};
  auto b = read_gpu_busy(set, o);
  CHECK(b.max_busy == 3);
  set.render_nodes = {"renderD128", "renderD129"};
  b = read_gpu_busy(set, o);
  CHECK(b.max_busy == 100);
  REQUIRE(b.gpus.size() == 2);
  CHECK(b.gpus[1].name == "renderD129");
  GpuSet all;
  all.amd_unmapped = true;
  b = read_gpu_busy(all, o);
  CHECK(b.max_busy == 100);
  CHECK(b.gpus.size() == 2); // card0, card1: not the connector

  SECTION("unreadable counters are unknown, with the reason") {
    Dir empty;
    o.sysfs_root = empty.path();
    b = read_gpu_busy(all, o);
    CHECK_FALSE(b.max_busy);
    CHECK(b.unknown_why.find("no AMD GPU") != std::string::npos);
    set.render_nodes = {"renderD128"};
    b = read_gpu_busy(set, o);
    CHECK_FALSE(b.max_busy);
    CHECK(b.unknown_why.find("gpu_busy_percent") != std::string::npos);
    sys.write("class/drm/renderD130/device/gpu_busy_percent", "garbage");
    o.sysfs_root = sys.path();
    set.render_nodes = {"renderD130"};
    b = read_gpu_busy(set, o);
    CHECK_FALSE(b.max_busy);
    CHECK(read_gpu_busy(GpuSet{}, o).unknown_why.find("hold no GPU") != std::string::npos);
  }
}

TEST_CASE("GPU counters: nvidia-smi's query mode, matched to the workers' minors", "[watch][gpu]") {
  Dir d;
  const std::string smi =
      d.write("nvidia-smi", "#!/bin/sh\n"
                            "[ \"$1\" = --query-gpu=pci.bus_id,utilization.gpu ] || exit 9\n"
                            "printf '00000000:3B:00.0, 97\\n00000000:86:00.0, 0\\n'\n");
  ::chmod(smi.c_str(), 0755);
  d.write("proc/driver/nvidia/gpus/0000:3b:00.0/information", "Device Minor: \t 0\n");
  d.write("proc/driver/nvidia/gpus/0000:86:00.0/information", "Device Minor: \t 1\n");
  GpuProbeOptions o;
  o.sysfs_root = d.path() + "/sys";
  o.proc_root = d.path() + "/proc";
  o.nvidia_smi = smi;
  GpuSet set;
  set.nvidia_minors = {1};
  auto b = read_gpu_busy(set, o);
  REQUIRE(b.gpus.size() == 1);
  CHECK(b.max_busy == 0);
  CHECK(b.gpus[0].name == "nvidia1 (0000:86:00.0)");
  set.nvidia_minors = {0, 1};
  CHECK(read_gpu_busy(set, o).max_busy == 97);

  SECTION("failing, hanging or absent nvidia-smi: unknown, never an error") {
    const std::string bad = d.write("bad-smi", "#!/bin/sh\nexit 3\n");
    ::chmod(bad.c_str(), 0755);
    o.nvidia_smi = bad;
    b = read_gpu_busy(set, o);
    CHECK_FALSE(b.max_busy);
    CHECK(b.unknown_why.find("failed") != std::string::npos);
    const std::string slow = d.write("slow-smi", "#!/bin/sh\nexec sleep 30\n");
    ::chmod(slow.c_str(), 0755);
    o.nvidia_smi = slow;
    o.nvidia_smi_timeout = 200ms;
    const auto t0 = Clock::now();
    b = read_gpu_busy(set, o);
    CHECK(Clock::now() - t0 < 5s);
    CHECK_FALSE(b.max_busy);
    CHECK(b.unknown_why.find("killed") != std::string::npos);
    o.nvidia_smi = "none";
    CHECK(read_gpu_busy(set, o).unknown_why.find("off") != std::string::npos);
    o.nvidia_smi = d.path() + "/missing-smi";
    CHECK_FALSE(read_gpu_busy(set, o).max_busy);
  }
}

TEST_CASE("log: growth, rotation by rename, truncation, gone and back", "[watch][log]") {
  Dir d;
  const std::string path = d.write("server.log", "start\n");
  auto t = Clock::now();
  LogWatch log(path, t);
  std::vector<std::string> events;
  log.check(t += 1s, events);
  CHECK_FALSE(log.grew_at_last_check());
  d.append("server.log", "output send\n");
  log.check(t += 1s, events);
  CHECK(log.grew_at_last_check());
  CHECK(log.last_activity() == t);
  CHECK(events.empty());

  // logrotate: rename, new file; the server still writes the old one through its descriptor.
  const int server_fd = ::open(path.c_str(), O_WRONLY | O_APPEND);
  REQUIRE(server_fd >= 0);
  std::filesystem::rename(path, path + ".1");
  d.write("server.log", "");
  log.check(t += 1s, events);
  CHECK(has_event(events, "was rotated"));
  CHECK_FALSE(log.grew_at_last_check());
  events.clear();
  REQUIRE(::write(server_fd, "late line\n", 10) == 10);
  log.check(t += 1s, events);
  CHECK(log.grew_at_last_check()); // the old file, still written, counts
  ::close(server_fd);
  d.append("server.log", "after reopen\n");
  log.check(t += 1s, events);
  CHECK(log.grew_at_last_check());
  CHECK(events.empty());

  // copytruncate
  d.write("server.log", "");
  log.check(t += 1s, events);
  CHECK(has_event(events, "truncated"));
  CHECK(log.grew_at_last_check());
  events.clear();

  std::filesystem::remove(path);
  log.check(t += 1s, events);
  CHECK(has_event(events, "is gone"));
  events.clear();
  log.check(t += 1s, events);
  CHECK(events.empty()); // said once
  d.write("server.log", "x\n");
  log.check(t += 1s, events);
  CHECK(has_event(events, "reappeared"));
  CHECK(log.grew_at_last_check());
}

TEST_CASE("log: a missing file fails at once, an old log's age counts as quiet", "[watch][log]") {
  Dir d;
  try {
    LogWatch missing(d.path() + "/nope.log", Clock::now());
    FAIL("a missing log was accepted");
  } catch (const Error& e) {
    CHECK(e.code() == ExitCode::NoInput);
  }
  const std::string path = d.write("old.log", "x\n");
  timespec times[2] = {{0, UTIME_OMIT}, {::time(nullptr) - 300, 0}};
  REQUIRE(::utimensat(AT_FDCWD, path.c_str(), times, 0) == 0);
  const auto now = Clock::now();
  LogWatch log(path, now);
  CHECK(now - log.last_activity() >= 299s);
  CHECK(now - log.last_activity() <= 302s);
}

TEST_CASE("back-off: doubles up to the cap, reset by a cleared hang", "[watch][backoff]") {
  Backoff b(10min, 35min);
  const auto t = Clock::now();
  CHECK(b.allows(t));
  b.captured(t);
  CHECK_FALSE(b.allows(t + 9min));
  CHECK(b.allows(t + 10min));
  b.captured(t);
  CHECK(b.current() == 20min);
  b.captured(t);
  CHECK(b.current() == 35min);
  b.captured(t);
  CHECK(b.current() == 35min);
  b.reset();
  CHECK(b.allows(t));
}

TEST_CASE("capture names: a UTC stamp for file names, whole seconds", "[watch]") {
  // 2026-11-24 03:15:00 UTC, plus a fraction that must not show.
  const std::chrono::system_clock::time_point t{std::chrono::seconds(1795490100) + 700ms};
  CHECK(utc_stamp(t) == "20261124T031500Z");
}

TEST_CASE("watcher: quiet log and busy GPUs for --quiet-for is a hang, each sign said",
          "[watch][decide]") {
  Dir d;
  const std::string device = d.write("fake-kfd", "");
  const std::string log_path = d.write("server.log", "start\n");
  d.write("sys/class/drm/card0/device/gpu_busy_percent", "100\n");
  Holder worker(device);
  Config c;
  c.log = log_path;
  c.quiet_for = 10s;
  c.gpu_busy = 90;
  c.gpu.sysfs_root = d.path() + "/sys";
  auto t = Clock::now();
  Watcher w(c, Targets::workers_of(::getpid(), {device}), t);
  REQUIRE(w.targets().pids() == std::vector<std::int64_t>{worker.pid()});

  d.append("server.log", "output send\n");
  auto r = w.check(t += 1s);
  CHECK(r.verdict == Verdict::Healthy);
  CHECK_FALSE(r.gpu_read); // the log grew: the counters are not read
  r = w.check(t += 5s);
  CHECK(r.verdict == Verdict::Quiet);
  CHECK(r.gpu_max == 100);
  r = w.check(t += 4s);
  CHECK(r.verdict == Verdict::Quiet); // 9 s quiet
  r = w.check(t += 2s);
  CHECK(r.verdict == Verdict::Hang);
  CHECK(r.reason.find("log quiet 11.0s") != std::string::npos);
  CHECK(r.reason.find("GPU busy 100% (card0)") != std::string::npos);

  SECTION("idle GPUs: a quiet log is an idle server, not a hang") {
    d.write("sys/class/drm/card0/device/gpu_busy_percent", "0\n");
    r = w.check(t += 1s);
    CHECK(r.verdict == Verdict::Healthy);
    CHECK(r.reason.find("idle") != std::string::npos);
  }
  SECTION("after a capture the back-off holds; the log growing again clears it") {
    w.captured(t, 1min, 4min);
    r = w.check(t += 1s);
    CHECK(r.verdict == Verdict::Quiet);
    CHECK(r.reason.find("back-off") != std::string::npos);
    r = w.check(t += 1min);
    CHECK(r.verdict == Verdict::Hang);
    w.captured(t, 1min, 4min);
    d.append("server.log", "output send\n");
    r = w.check(t += 1s);
    CHECK(r.verdict == Verdict::Healthy);
    CHECK(has_event(r.events, "cleared"));
  }
  SECTION("counters unreadable: said once, the log decides") {
    std::filesystem::remove_all(d.path() + "/sys");
    r = w.check(t += 1s);
    CHECK(has_event(r.events, "GPU counters unknown"));
    CHECK(r.verdict == Verdict::Hang);
    r = w.check(t += 1s);
    CHECK(r.events.empty());
  }
  SECTION("the worker restarts: said, and the quiet timer starts again") {
    worker.kill();
    Holder second(device);
    r = w.check(t += 1s);
    CHECK(has_event(r.events, "changed"));
    CHECK(r.verdict != Verdict::Hang);
    CHECK(w.targets().pids() == std::vector<std::int64_t>{second.pid()});
  }
  SECTION("every worker gone: waiting, said once") {
    worker.kill();
    r = w.check(t += 1s);
    CHECK(r.verdict == Verdict::Waiting);
    CHECK(has_event(r.events, "no GPU workers now"));
    r = w.check(t += 1s);
    CHECK(r.events.empty());
  }
}

TEST_CASE("watcher: fixed pids exiting, a server exiting", "[watch][targets]") {
  Dir d;
  const std::string device = d.write("fake-kfd", "");
  const std::string log_path = d.write("server.log", "start\n");
  Holder a(device);
  Holder b(device);
  Config c;
  c.log = log_path;
  c.gpu_busy = 0;
  auto t = Clock::now();
  Watcher w(c, Targets::fixed({a.pid(), b.pid(), 99999999}), t);
  CHECK(w.targets().pids().size() == 2);
  const auto a_pid = a.pid();
  a.kill();
  auto r = w.check(t += 1s);
  CHECK(has_event(r.events, "pid " + std::to_string(a_pid) + " "));
  CHECK(r.verdict != Verdict::Gone);
  b.kill();
  r = w.check(t += 1s);
  CHECK(r.verdict == Verdict::Gone);

  CHECK_THROWS_AS(Targets::fixed({99999999}), Error);
  CHECK_THROWS_AS(Targets::workers_of(99999999, {}), Error);
  c.log.clear();
  Holder e(device);
  CHECK_THROWS_AS(Watcher(c, Targets::fixed({e.pid()}), t), Error); // nothing to decide on

  // A server (a child of ours) that exits: Gone.
  const pid_t server = ::fork();
  if (server == 0) {
    for (;;) {
      ::pause();
    }
  }
  c.log = log_path;
  Watcher ws(c, Targets::workers_of(server, {device}), t);
  r = ws.check(t += 1s);
  CHECK(r.verdict == Verdict::Waiting);
  ::kill(server, SIGKILL);
  ::waitpid(server, nullptr, 0);
  r = ws.check(t += 1s);
  CHECK(r.verdict == Verdict::Gone);
  CHECK(has_event(r.events, "exited"));
}
