// `rocplay watch` against a fake server tree (tests/targets/fake_server.cpp) with real gdb: a log
// that goes quiet is captured once, the stuck threads named, everything left running; a server
// that exits; a log that rotates or is truncated (no false capture); workers that restart;
// SIGTERM while healthy; SIGINT during a capture.
#include "cli_util.hpp"

#include <catch2/catch.hpp>

#include <dirent.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <optional>
#include <regex>
#include <thread>

using namespace rocplay::testing;
using namespace std::chrono_literals;

namespace {

class FakeServer {
public:
  FakeServer(const std::string& log, const std::string& device,
             const std::vector<std::string>& options) {
    std::vector<std::string> args = {find_built("fake_server"), log, device};
    args.insert(args.end(), options.begin(), options.end());
    std::string text;
    pid_ = start_until_ready(args, {}, &text);
    std::istringstream in(text);
    std::string word;
    long pid = 0;
    while (in >> word) {
      if (word == "worker" && in >> pid) {
        workers_.push_back(pid);
      }
    }
  }
  ~FakeServer() {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
  FakeServer(const FakeServer&) = delete;
  FakeServer& operator=(const FakeServer&) = delete;
  pid_t pid() const { return pid_; }
  const std::vector<long>& workers() const { return workers_; }

private:
  pid_t pid_ = -1;
  std::vector<long> workers_;
};

std::string task_stat(long pid, const std::string& tid) {
  return read_file("/proc/" + std::to_string(pid) + "/task/" + tid + "/stat");
}

// Every thread of `pid`: not stopped, no tracer; and the process uses CPU (its spinner runs).
void require_running_untraced(long pid, bool spins) {
  const std::string task = "/proc/" + std::to_string(pid) + "/task";
  DIR* d = ::opendir(task.c_str());
  REQUIRE(d != nullptr);
  std::size_t threads = 0;
  while (const dirent* e = ::readdir(d)) {
    if (e->d_name[0] == '.') {
      continue;
    }
    ++threads;
    const std::string stat = task_stat(pid, e->d_name);
    const auto close = stat.rfind(')');
    REQUIRE(close != std::string::npos);
    const char state = stat.size() > close + 2 ? stat[close + 2] : '?';
    INFO("pid " << pid << " thread " << e->d_name << " state " << state);
    CHECK(state != 'T');
    CHECK(state != 't');
    const std::string status = read_file(task + "/" + e->d_name + "/status");
    CHECK(status.find("TracerPid:\t0\n") != std::string::npos);
  }
  ::closedir(d);
  CHECK(threads >= 1);
  if (spins) {
    const auto cpu = [pid] {
      const std::string stat = read_file("/proc/" + std::to_string(pid) + "/stat");
      std::istringstream in(stat.substr(stat.rfind(')') + 2));
      std::string field;
      unsigned long long utime = 0;
      for (int i = 3; i <= 14 && in >> field; ++i) {
        if (i == 14) {
          utime = std::stoull(field);
        }
      }
      return utime;
    };
    const auto before = cpu();
    std::this_thread::sleep_for(500ms);
    CHECK(cpu() > before);
  }
}

std::vector<std::string> files_in(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    out.push_back(e.path().filename().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string joined(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) {
    out += s + " ";
  }
  return out;
}

std::vector<std::string> watch_args(const FakeServer& s, const std::string& device,
                                    const std::string& log, const std::string& out,
                                    std::vector<std::string> more) {
  std::vector<std::string> a = {"watch",
                                "--workers-of",
                                std::to_string(s.pid()),
                                "--gpu-device",
                                device,
                                "--log",
                                log,
                                "--out",
                                out,
                                "--debugger",
                                "gdb",
                                "--attach-timeout",
                                "30",
                                "--check-every",
                                "100ms"};
  a.insert(a.end(), more.begin(), more.end());
  return a;
}

} // namespace

TEST_CASE("watch: a log that goes quiet is captured once, stuck threads named, all running") {
  TempDir dir;
  const std::string device = dir.file("fake-kfd");
  const std::string log = dir.path() + "/server.log";
  const std::string out = dir.path() + "/captures";
  FakeServer server(log, device, {"--workers", "2", "--quiet-after", "1"});
  REQUIRE(server.workers().size() == 2);
  // The hook records the workers' state and tracer as it sees them, and its argument.
  std::string hook;
  for (const long w : server.workers()) {
    hook += "grep -E '^(State|TracerPid)' /proc/" + std::to_string(w) + "/status; ";
  }
  hook = "{ " + hook + "echo \"report=$1\"; echo \"exit=$ROCPLAY_CAPTURE_EXIT\"; } > " +
         dir.path() + "/hook.txt";
  const auto r = run_rocplay(
      watch_args(server, device, log, out,
                 {"--quiet-for", "2s", "--samples", "2", "--interval", "1s", "--on-capture", hook}),
      120s);
  INFO("stderr: " << r.err << "\nstdout: " << r.out);
  REQUIRE_FALSE(r.timed_out);
  CHECK(r.exit_code == 1);
  CHECK(r.err.find("HANG (log quiet") != std::string::npos);
  CHECK(r.err.find("capturing 2 target(s) at once") != std::string::npos);
  CHECK(r.err.find("--on-capture finished (exit 0)") != std::string::npos);

  // One capture: report, summary, one recording per rank; names with host, time and rank.
  char host[256] = {};
  REQUIRE(::gethostname(host, sizeof host - 1) == 0);
  const auto files = files_in(out);
  INFO("files: " << joined(files));
  const std::regex stamp("rocplay-" + std::string(host) + "-[0-9]{8}T[0-9]{6}Z");
  std::string report;
  std::string summary;
  int recordings = 0;
  for (const auto& f : files) {
    CHECK(std::regex_search(f, stamp));
    if (f.ends_with(".report.txt")) {
      report = out + "/" + f;
    } else if (f.ends_with(".summary.txt")) {
      summary = out + "/" + f;
    } else if (f.ends_with(".rocplay")) {
      ++recordings;
      CHECK(
          (f.find("-rank0-pid") != std::string::npos || f.find("-rank1-pid") != std::string::npos));
    }
  }
  CHECK(files.size() == 4);
  CHECK(recordings == 2);
  REQUIRE_FALSE(report.empty());
  REQUIRE_FALSE(summary.empty());
  const std::string line = read_file(summary);
  CHECK(std::count(line.begin(), line.end(), '\n') == 1);
  CHECK(r.out == line);
  CHECK(line.find("hang captured (log quiet") != std::string::npos);
  CHECK(line.find("2/2 targets examined") != std::string::npos);
  CHECK(line.find("thread in start_sync") != std::string::npos);
  CHECK(line.find("fake_server.cpp") != std::string::npos);
  CHECK(line.find("no-progress") != std::string::npos);
  CHECK(line.find("report: " + report) != std::string::npos);
  const std::string text = read_file(report);
  CHECK(text.find("=== pid " + std::to_string(server.workers()[0])) != std::string::npos);
  CHECK(text.find("start_sync") != std::string::npos);

  // The hook ran after every worker was detached and running, with the report's path.
  const std::string seen = read_file(dir.path() + "/hook.txt");
  INFO("hook saw: " << seen);
  CHECK(seen.find("report=" + report) != std::string::npos);
  CHECK(seen.find("exit=1") != std::string::npos);
  CHECK(seen.find("TracerPid:\t0") != std::string::npos);
  CHECK(seen.find("TracerPid:\t1") == std::string::npos);
  CHECK(seen.find("tracing stop") == std::string::npos);
  CHECK(seen.find("(stopped)") == std::string::npos);
  for (const long w : server.workers()) {
    require_running_untraced(w, true);
  }
  require_running_untraced(server.pid(), false);
}

TEST_CASE("watch: --format html writes the page beside the text report, the hook gets the page") {
  TempDir dir;
  const std::string device = dir.file("fake-kfd");
  const std::string log = dir.path() + "/server.log";
  const std::string out = dir.path() + "/captures";
  FakeServer server(log, device, {"--workers", "2", "--quiet-after", "1"});
  REQUIRE(server.workers().size() == 2);
  const std::string hook = "echo \"$1\" > " + dir.path() + "/hook.txt";
  const auto r = run_rocplay(watch_args(server, device, log, out,
                                        {"--quiet-for", "2s", "--samples", "2", "--interval", "1s",
                                         "--format", "html", "--on-capture", hook}),
                             120s);
  INFO("stderr: " << r.err << "\nstdout: " << r.out);
  REQUIRE_FALSE(r.timed_out);
  CHECK(r.exit_code == 1);
  std::string page;
  std::string text;
  for (const auto& f : files_in(out)) {
    if (f.ends_with(".report.html")) {
      page = out + "/" + f;
    } else if (f.ends_with(".report.txt")) {
      text = out + "/" + f;
    }
  }
  INFO("files: " << joined(files_in(out)));
  REQUIRE_FALSE(page.empty());
  REQUIRE_FALSE(text.empty());
  // One capture: the page and the text report share their name up to the extension.
  CHECK(page.substr(0, page.size() - 4) == text.substr(0, text.size() - 3));
  const std::string html = read_file(page);
  CHECK(html.starts_with("<!DOCTYPE html>"));
  CHECK(html.find("<section id=\"cause\">") != std::string::npos);
  CHECK(html.find("start_sync") != std::string::npos);
  CHECK(html.find("<script") == std::string::npos);
  CHECK(read_file(text).find("=== pid " + std::to_string(server.workers()[0])) !=
        std::string::npos);
  CHECK(read_file(dir.path() + "/hook.txt") == page + "\n");
  CHECK(r.out.find("report: " + page) != std::string::npos);
  for (const long w : server.workers()) {
    require_running_untraced(w, true);
  }
}

TEST_CASE("watch: the server exits: said, exit 67, nothing captured") {
  TempDir dir;
  const std::string device = dir.file("fake-kfd");
  const std::string log = dir.path() + "/server.log";
  FakeServer server(log, device, {"--workers", "1", "--exit-after", "1"});
  const auto t0 = std::chrono::steady_clock::now();
  const auto r = run_rocplay(
      watch_args(server, device, log, dir.path() + "/out", {"--quiet-for", "30s"}), 60s);
  INFO("stderr: " << r.err);
  REQUIRE_FALSE(r.timed_out);
  CHECK(r.exit_code == 67);
  CHECK(std::chrono::steady_clock::now() - t0 < 20s);
  CHECK(r.err.find("server " + std::to_string(server.pid()) + " (fake_server) exited") !=
        std::string::npos);
  CHECK(r.err.find("nothing was captured") != std::string::npos);
  CHECK(files_in(dir.path() + "/out").empty());
}

TEST_CASE("watch: a log rotated by rename or truncated is followed, no false capture") {
  TempDir dir;
  const std::string device = dir.file("fake-kfd");
  const std::string log = dir.path() + "/server.log";
  // The watch follows the log through `rotation` (its words on stderr) and ends at --watch-for
  // with no capture.
  auto watch_through = [&](const FakeServer& server, const std::string& watch_for,
                           const std::string& rotation) {
    const auto r = run_rocplay(watch_args(server, device, log, dir.path() + "/out",
                                          {"--quiet-for", "1s", "--watch-for", watch_for}),
                               60s);
    INFO("stderr: " << r.err);
    REQUIRE_FALSE(r.timed_out);
    CHECK(r.exit_code == 0);
    CHECK(r.err.find(rotation) != std::string::npos);
    CHECK(r.err.find("HANG") == std::string::npos);
    CHECK(r.err.find("--watch-for " + watch_for + " elapsed") != std::string::npos);
    CHECK(files_in(dir.path() + "/out").empty());
  };
  SECTION("rename, the workers writing the old file for 2 s before they reopen") {
    FakeServer server(
        log, device,
        {"--workers", "1", "--rotate", "rename", "--rotate-every", "3", "--reopen-after", "2"});
    watch_through(server, "7s", "was rotated");
  }
  SECTION("copytruncate") {
    FakeServer server(log, device,
                      {"--workers", "1", "--rotate", "truncate", "--rotate-every", "1"});
    watch_through(server, "4s", "truncated");
  }
}

TEST_CASE("watch: workers restarting with new pids are followed") {
  TempDir dir;
  const std::string device = dir.file("fake-kfd");
  const std::string log = dir.path() + "/server.log";
  FakeServer server(log, device, {"--workers", "2", "--restart-after", "1"});
  const auto r = run_rocplay(watch_args(server, device, log, dir.path() + "/out",
                                        {"--quiet-for", "2s", "--watch-for", "4s"}),
                             60s);
  INFO("stderr: " << r.err);
  REQUIRE_FALSE(r.timed_out);
  CHECK(r.exit_code == 0);
  CHECK(r.err.find("workers of server " + std::to_string(server.pid()) + " changed") !=
        std::string::npos);
  CHECK(r.err.find("HANG") == std::string::npos);
}

TEST_CASE("watch: SIGTERM while healthy exits at once, SIGINT during a capture detaches all") {
  TempDir dir;
  const std::string device = dir.file("fake-kfd");
  const std::string log = dir.path() + "/server.log";
  SECTION("healthy") {
    FakeServer server(log, device, {"--workers", "1"});
    bool sent = false;
    const auto r =
        run_rocplay(watch_args(server, device, log, dir.path() + "/out", {"--quiet-for", "30s"}),
                    30s, {}, [&](pid_t pid, const std::string& err) {
                      if (!sent && err.find("rocplay watch: watching") != std::string::npos) {
                        sent = true;
                        ::kill(pid, SIGTERM);
                      }
                    });
    INFO("stderr: " << r.err);
    REQUIRE_FALSE(r.timed_out);
    CHECK(r.exit_code == 143);
    CHECK(r.err.find("SIGTERM") != std::string::npos);
    require_running_untraced(server.workers()[0], false);
  }
  SECTION("during the capture") {
    FakeServer server(log, device, {"--workers", "2", "--quiet-after", "0.5"});
    std::optional<std::chrono::steady_clock::time_point> hang_seen;
    bool sent = false;
    const auto r = run_rocplay(watch_args(server, device, log, dir.path() + "/out",
                                          {"--quiet-for", "1s", "--samples", "2", "--interval",
                                           "3s", "--on-capture", "touch " + dir.path() + "/ran"}),
                               120s, {}, [&](pid_t pid, const std::string& err) {
                                 if (!hang_seen && err.find("HANG") != std::string::npos) {
                                   hang_seen = std::chrono::steady_clock::now();
                                 }
                                 if (hang_seen && !sent &&
                                     std::chrono::steady_clock::now() - *hang_seen > 2s) {
                                   sent = true;
                                   ::kill(pid, SIGINT);
                                 }
                               });
    INFO("stderr: " << r.err << "\nstdout: " << r.out);
    REQUIRE_FALSE(r.timed_out);
    CHECK(sent);
    CHECK(r.exit_code == 130);
    CHECK_FALSE(std::filesystem::exists(dir.path() + "/ran"));
    for (const long w : server.workers()) {
      require_running_untraced(w, true);
    }
  }
}
