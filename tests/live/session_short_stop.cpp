// Live: what keeps the stop short, against a real gdb and a real process. The debugger writes MI
// through its buffered logging stream (one write per record, not one per byte), frames carry no
// argument values, plain gdb attaches through its all-stop target, and on gdb the preloaded symbols
// stand in for the attach's own reading (cuda-gdb has no preload). Every case ends with the target
// running.
#include "session_target.hpp"

#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

using namespace rocplay;
using rocplay::testing::SpinTarget;

namespace short_stop {

// How many write() calls process `pid` has made (`syscw` in /proc/PID/io), or -1.
long long write_calls(std::int64_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/io");
  std::string key;
  long long value = 0;
  while (in >> key >> value) {
    if (key == "syscw:") {
      return value;
    }
  }
  return -1;
}

struct StopWrites {
  long long writes = -1; // the debugger's write() calls from before the attach to after detach
  bool buffered = false;
  bool running_after = false;
};

StopWrites attach_and_detach(SpinTarget& target, bool buffered) {
  auto options = testing::test_options();
  options.buffered_output = buffered;
  session::Session s(testing::test_gdb(), options);
  StopWrites out;
  out.buffered = s.output_buffered();
  const long long before = write_calls(s.debugger_pid());
  s.attach(target.pid());
  const auto ex = s.execute("-thread-info");
  REQUIRE(ex.result() != nullptr);
  CHECK(ex.result()->klass() == "done");
  CHECK(ex.result()->results()["threads"].size() == 102);
  s.detach();
  const long long after = write_calls(s.debugger_pid());
  if (before >= 0 && after >= before) {
    out.writes = after - before;
  }
  CHECK_FALSE(s.times().left_stopped);
  out.running_after = !process::is_stopped(target.state()) && target.advances();
  return out;
}

std::vector<std::string> sent_commands(const std::string& recording) {
  // `> SECONDS TOKENcommand`, one line per command sent.
  std::vector<std::string> out;
  std::istringstream in(recording);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("> ", 0) != 0) {
      continue;
    }
    const std::size_t time_end = line.find(' ', 2);
    if (time_end == std::string::npos) {
      continue;
    }
    std::size_t cmd = time_end + 1;
    while (cmd < line.size() && line[cmd] >= '0' && line[cmd] <= '9') {
      ++cmd; // the token
    }
    out.push_back(line.substr(cmd));
  }
  return out;
}

std::ptrdiff_t index_of(const std::vector<std::string>& commands, const std::string& prefix,
                        bool last = false) {
  std::ptrdiff_t found = -1;
  for (std::size_t i = 0; i < commands.size(); ++i) {
    if (commands[i].rfind(prefix, 0) == 0) {
      found = static_cast<std::ptrdiff_t>(i);
      if (!last) {
        break;
      }
    }
  }
  return found;
}

} // namespace short_stop

using namespace short_stop;

TEST_CASE("the debugger's MI output comes one record per write, not one byte",
          "[live][session][short-stop]") {
  // 100 napping threads, main and one blocked: 102. Attaching and detaching writes three records
  // per thread (=thread-created, *running, =thread-exited), about 100 bytes together.
  SpinTarget::Config config;
  config.spin_threads = 100;
  config.sleepy = true;
  SpinTarget target(config);

  const StopWrites unbuffered = attach_and_detach(target, false);
  const StopWrites buffered = attach_and_detach(target, true);
  CHECK_FALSE(unbuffered.buffered);
  CHECK(buffered.buffered);
  CHECK(unbuffered.running_after);
  CHECK(buffered.running_after);
  INFO("write() calls from attach to detach: unbuffered " << unbuffered.writes << ", buffered "
                                                          << buffered.writes);
  REQUIRE(unbuffered.writes >= 0);
  REQUIRE(buffered.writes >= 0);
  // GDB 13 measured: about 120 writes per thread unbuffered, 4 or 5 buffered.
  CHECK(unbuffered.writes > 30 * 102);
  CHECK(buffered.writes < 10 * 102);
  testing::require_running_again(target);
}

TEST_CASE("frames carry argument names, not values, unless asked", "[live][session][short-stop]") {
  SpinTarget target; // two threads spinning in start_sync(int rank)
  for (const bool values : {false, true}) {
    auto options = testing::test_options();
    options.frame_argument_values = values;
    session::Session s(testing::test_gdb(), options);
    s.attach(target.pid());
    const auto ex = s.execute("-thread-info");
    REQUIRE(ex.result() != nullptr);
    int checked = 0;
    for (const auto t : ex.result()->results()["threads"]) {
      const auto frame = t["frame"];
      if (frame["func"].text().find("start_sync") == std::string::npos) {
        continue;
      }
      const auto args = frame["args"];
      REQUIRE(args.size() == 1);
      CHECK(args.at(0)["name"].text() == "rank");
      CHECK(args.at(0)["value"].valid() == values);
      ++checked;
    }
    CHECK(checked == 2);
    s.detach();
    testing::require_running_again(target);
  }
}

TEST_CASE("gdb's preload is followed by auto-solib-add off, rocgdb's is not, cuda-gdb has none",
          "[live][session][short-stop]") {
  // Plain gdb standing in for cuda-gdb and rocgdb: the session decides by the debugger's kind.
  // cuda-gdb attaches as raw cuda-gdb does: with symbols preloaded, its in-target attach call
  // failed in the CUDA driver and froze healthy jobs (docs/hardware-validation.md, "Do no harm").
  SpinTarget target;
  for (const auto kind : {DebuggerKind::CudaGdb, DebuggerKind::Gdb, DebuggerKind::RocGdb}) {
    char path[] = "/tmp/rocplay-cuda-order-XXXXXX";
    const int fd = ::mkstemp(path);
    REQUIRE(fd >= 0);
    ::close(fd);
    auto dbg = testing::test_gdb();
    dbg.kind = kind;
    auto options = testing::test_options();
    options.record_path = path;
    bool named_frames = false;
    {
      session::Session s(dbg, options);
      s.attach(target.pid());
      const auto ex = s.execute("-thread-info");
      REQUIRE(ex.result() != nullptr);
      // The frames are named, libc's included: by the preloaded symbols, or by the attach's own
      // reading of the libraries.
      named_frames = ex.result()->line().find("start_sync") != std::string_view::npos &&
                     ex.result()->line().find("func=\"??\"") == std::string_view::npos;
      s.detach();
    }
    const auto commands = sent_commands(testing::read_file(path));
    ::unlink(path);
    INFO("debugger kind " << to_string(kind));
    CHECK(named_frames);
    const auto exec = index_of(commands, "-file-exec-and-symbols ");
    const auto last_lib = index_of(commands, "-interpreter-exec console \"add-symbol-file ", true);
    const auto solib_off = index_of(commands, "-gdb-set auto-solib-add off");
    const auto attach = index_of(commands, "-target-attach ");
    REQUIRE(attach >= 0);
    if (kind == DebuggerKind::CudaGdb) {
      CHECK(exec == -1);
      CHECK(last_lib == -1);
      CHECK(solib_off == -1);
      testing::require_running_again(target);
      continue;
    }
    REQUIRE(exec >= 0);
    REQUIRE(last_lib > exec);
    REQUIRE(attach > last_lib);
    if (kind == DebuggerKind::Gdb) {
      CHECK(solib_off > last_lib);
      CHECK(solib_off < attach);
    } else {
      CHECK(solib_off == -1); // rocgdb's GPU code objects arrive as shared libraries
    }
    // Every library this target maps was preloaded: nothing is read inside the stop.
    CHECK(index_of(commands, "-interpreter-exec console \"sharedlibrary ") == -1);
    testing::require_running_again(target);
  }
}

TEST_CASE("with auto-solib-add off, a library the preload skipped is read after the attach",
          "[live][session][short-stop]") {
  // A copy of libz under a directory whose name needs quoting, which the preload skips: the
  // attach finds it in the dynamic linker's list, and the session asks for its symbols.
  char dir[] = "/tmp/rocplay-unpreloaded-XXXXXX";
  REQUIRE(::mkdtemp(dir) != nullptr);
  const std::string spaced = std::string(dir) + "/a b";
  REQUIRE(::mkdir(spaced.c_str(), 0700) == 0);
  const std::string lib = spaced + "/libz.so.1";
  {
    std::ifstream in("/lib/x86_64-linux-gnu/libz.so.1", std::ios::binary);
    REQUIRE(in.good());
    std::ofstream out(lib, std::ios::binary);
    out << in.rdbuf();
  }
  std::string symbols;
  std::string recording;
  {
    testing::ReadyProcess target(
        {"/usr/bin/python3", "-c",
         "import ctypes, sys, time; ctypes.CDLL(sys.argv[1]); print('ready', flush=True); "
         "time.sleep(600)",
         lib});
    auto options = testing::test_options();
    char path[] = "/tmp/rocplay-unpreloaded-rec-XXXXXX";
    const int fd = ::mkstemp(path);
    REQUIRE(fd >= 0);
    ::close(fd);
    options.record_path = path;
    {
      session::Session s(testing::test_gdb(), options);
      s.attach(target.pid());
      symbols = s.console("info sharedlibrary").console();
      s.detach();
    }
    recording = testing::read_file(path);
    ::unlink(path);
    testing::require_no_thread_stopped(target.pid(), 1);
  }
  std::filesystem::remove_all(dir);
  INFO(symbols);
  const auto commands = sent_commands(recording);
  CHECK(index_of(commands, "-gdb-set auto-solib-add off") >= 0);
  CHECK(index_of(commands, "-interpreter-exec console \"sharedlibrary /libz\\\\.so\\\\.1$\"") >
        index_of(commands, "-target-attach "));
  // `info sharedlibrary`: its line reads `Yes` (symbols read), not `No`.
  std::istringstream lines(symbols);
  std::string line;
  bool found = false;
  while (std::getline(lines, line)) {
    if (line.find("a b/libz.so.1") != std::string::npos) {
      found = true;
      CHECK(line.find(" Yes ") != std::string::npos);
    }
  }
  CHECK(found);
}

TEST_CASE("plain gdb attaches through its all-stop target", "[live][session][short-stop]") {
  SpinTarget::Config config;
  config.spin_threads = 50;
  config.sleepy = true;
  SpinTarget target(config);
  for (const bool all_stop : {true, false}) {
    auto options = testing::test_options();
    options.all_stop_target = all_stop;
    session::Session s(testing::test_gdb(), options);
    s.attach(target.pid());
    const std::string shown = s.console("maint show target-non-stop").console();
    INFO(shown);
    if (all_stop) {
      CHECK(shown.find("is off.") != std::string::npos);
    } else {
      CHECK(shown.find("auto (currently on)") != std::string::npos);
    }
    const auto ex = s.execute("-thread-info");
    REQUIRE(ex.result() != nullptr);
    CHECK(ex.result()->results()["threads"].size() == 52);
    s.detach();
    CHECK_FALSE(s.times().left_stopped);
    testing::require_running_again(target);
  }
}
