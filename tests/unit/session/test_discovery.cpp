// Debugger discovery against real (tiny) executables in a temporary directory.
#include "rocplay/session/session.hpp"

#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

using namespace rocplay;
namespace fs = std::filesystem;

namespace {

// A scratch directory with fake debuggers: shell scripts that print a banner for --version.
class FakeBin {
public:
  FakeBin() {
    char tmpl[] = "/tmp/rocplay-bin-XXXXXX";
    const char* dir = ::mkdtemp(tmpl);
    REQUIRE(dir != nullptr);
    root_ = dir;
  }
  ~FakeBin() {
    std::error_code ec;
    fs::remove_all(root_, ec);
  }
  std::string dir(const std::string& sub) const {
    const fs::path p = fs::path(root_) / sub;
    fs::create_directories(p);
    return p.string();
  }
  std::string add(const std::string& sub, const std::string& name, const std::string& banner,
                  bool executable = true) {
    const std::string path = dir(sub) + "/" + name;
    std::ofstream out(path);
    out << "#!/bin/sh\necho '" << banner << "'\necho 'Copyright (C) 2023'\n";
    out.close();
    ::chmod(path.c_str(), executable ? 0755 : 0644);
    return path;
  }

private:
  std::string root_;
};

session::SearchEnv env_with(const std::string& path_var) {
  session::SearchEnv env;
  env.path_var = path_var;
  env.rocplay_debugger = std::string();
  env.extra_dirs = {};
  return env;
}

} // namespace

TEST_CASE("kind and version from the --version banner", "[session][discovery]") {
  CHECK(debugger_kind_from_banner("GNU gdb (Debian 13.1-3) 13.1") == DebuggerKind::Gdb);
  CHECK(debugger_kind_from_banner("GNU gdb (rocm-rel-6.4-75) 15.2.50.20241010-git") ==
        DebuggerKind::RocGdb);
  CHECK(debugger_kind_from_banner("NVIDIA (R) cuda-gdb 13.0") == DebuggerKind::CudaGdb);
  CHECK(debugger_kind_from_banner("NVIDIA (R) CUDA Debugger") == DebuggerKind::CudaGdb);
  // A source build of rocgdb without `rocm` in its package version: the name tells.
  CHECK(debugger_kind_from_banner("GNU gdb (GDB) 16.3", "/opt/rocm-7.2/bin/rocgdb") ==
        DebuggerKind::RocGdb);
  CHECK(debugger_kind_from_banner("something else", "/usr/bin/lldb") == DebuggerKind::Unknown);

  CHECK(session::version_number("GNU gdb (Debian 13.1-3) 13.1") == "13.1");
  CHECK(session::version_number("GNU gdb (rocm-rel-6.4-75) 15.2.50.20241010-git") == "15.2");
  CHECK(session::version_number("NVIDIA (R) cuda-gdb 13.0") == "13.0");
  CHECK(session::version_number("no digits") == "");

  // CUDA 13's cuda-gdb is a wrapper script that first traces what it runs (seen on the H200).
  CHECK(session::banner_line("exec: /usr/local/cuda/bin/cuda-gdb-python3.12-tui --version\n"
                             "NVIDIA (R) cuda-gdb 13.0\nPortions Copyright (C) 2007-2025\n") ==
        "NVIDIA (R) cuda-gdb 13.0");
  CHECK(session::banner_line("\r\nGNU gdb (Debian 13.1-3) 13.1 \r\n") ==
        "GNU gdb (Debian 13.1-3) 13.1");
  CHECK(session::banner_line("exec: x\n\n") == "");
}

TEST_CASE("a wrapper's exec: line is not taken for the banner", "[session][discovery]") {
  FakeBin bin;
  const auto path = bin.add("cuda/bin", "cuda-gdb",
                            "exec: /usr/local/cuda/bin/cuda-gdb-python3.12-tui --version\n"
                            "NVIDIA (R) cuda-gdb 13.0");
  const auto dbg = session::find_debugger(path, env_with(""));
  CHECK(dbg.kind == DebuggerKind::CudaGdb);
  CHECK(dbg.version == "NVIDIA (R) cuda-gdb 13.0");
}

TEST_CASE("cuda-gdb's wrapper script is passed over for the minimal binary beside it",
          "[session][discovery]") {
  FakeBin bin;
  const auto wrapper = bin.add("cuda/bin", "cuda-gdb",
                               "exec: /usr/local/cuda/bin/cuda-gdb-python3.12-tui --version\n"
                               "NVIDIA (R) cuda-gdb 13.0");
  const auto minimal = bin.add("cuda/bin", "cuda-gdb-minimal", "NVIDIA (R) cuda-gdb 13.0");
  ::unsetenv("CUDA_GDB_BINARIES");
  auto env = env_with(bin.dir("cuda/bin"));

  for (const bool defer : {false, true}) {
    env.defer_banner = defer;
    for (const std::string& named : {std::string(), std::string("cuda-gdb"), wrapper}) {
      const auto d = session::find_debugger(named, env);
      CHECK(d.path == minimal);
      CHECK(d.kind == (defer ? DebuggerKind::Unknown : DebuggerKind::CudaGdb));
    }
  }
  env.defer_banner = false;
  // The script's own list of binaries keeps its choice.
  ::setenv("CUDA_GDB_BINARIES", "cuda-gdb-python3.12-tui", 1);
  CHECK(session::find_debugger(wrapper, env).path == wrapper);
  ::unsetenv("CUDA_GDB_BINARIES");
  // A minimal binary that does not run here: the script, which finds one that does.
  {
    std::ofstream out(minimal);
    out << "#!/bin/sh\nexit 127\n";
  }
  const auto d = session::find_debugger(wrapper, env);
  CHECK(d.path == wrapper);
  CHECK(d.version == "NVIDIA (R) cuda-gdb 13.0");
  // A cuda-gdb that is the debugger itself (not a script) is run as it is.
  fs::remove(wrapper);
  fs::copy_file("/bin/true", wrapper);
  bin.add("cuda/bin", "cuda-gdb-minimal", "NVIDIA (R) cuda-gdb 13.0");
  env.defer_banner = true;
  CHECK(session::find_debugger(wrapper, env).path == wrapper);
}

TEST_CASE("search order: rocgdb, then cuda-gdb, then gdb", "[session][discovery]") {
  FakeBin bin;
  const auto gdb = bin.add("a", "gdb", "GNU gdb (Debian 13.1-3) 13.1");
  const auto cuda = bin.add("b", "cuda-gdb", "NVIDIA (R) cuda-gdb 13.0");
  const std::string path_var = bin.dir("a") + ":" + bin.dir("b");

  session::DebuggerChoice choice;
  auto d = session::find_debugger("", env_with(path_var), &choice);
  CHECK(d.path == cuda);
  CHECK(d.kind == DebuggerKind::CudaGdb);
  CHECK(d.version == "NVIDIA (R) cuda-gdb 13.0");
  // rocgdb was looked for first, in every PATH directory.
  REQUIRE(choice.tried.size() >= 3);
  CHECK(choice.tried[0] == bin.dir("a") + "/rocgdb");

  // rocgdb in an extra directory (/opt/rocm/bin in real life) wins over everything else.
  const auto rocgdb = bin.add("rocm/bin", "rocgdb", "GNU gdb (rocm-rel-6.4-75) 15.2");
  auto env = env_with(path_var);
  env.extra_dirs = {bin.dir("rocm/bin")};
  d = session::find_debugger("", env);
  CHECK(d.path == rocgdb);
  CHECK(d.kind == DebuggerKind::RocGdb);

  // A name asks for that debugger only.
  d = session::find_debugger("gdb", env);
  CHECK(d.path == gdb);
  CHECK(d.kind == DebuggerKind::Gdb);
}

TEST_CASE("the debugger option and $ROCPLAY_DEBUGGER", "[session][discovery]") {
  FakeBin bin;
  const auto custom = bin.add("x", "my-gdb", "GNU gdb (GDB) 14.2");
  const auto gdb = bin.add("a", "gdb", "GNU gdb (Debian 13.1-3) 13.1");
  auto env = env_with(bin.dir("a"));

  auto d = session::find_debugger(custom, env);
  CHECK(d.path == custom);
  CHECK(d.kind == DebuggerKind::Gdb);

  env.rocplay_debugger = custom;
  CHECK(session::find_debugger("", env).path == custom);
  // --debugger beats the environment.
  CHECK(session::find_debugger("gdb", env).path == gdb);
}

TEST_CASE("defer_banner: a named debugger is not run, a search still runs --version",
          "[session][discovery]") {
  FakeBin bin;
  const auto gdb = bin.add("a", "gdb", "GNU gdb (Debian 13.1-3) 13.1");
  const std::string ran = bin.dir("a") + "/ran";
  { // the fake leaves a mark when it runs
    std::ofstream out(gdb);
    out << "#!/bin/sh\ntouch '" << ran << "'\necho 'GNU gdb (Debian 13.1-3) 13.1'\n";
  }
  auto env = env_with(bin.dir("a"));
  env.defer_banner = true;
  for (const std::string& named : {std::string("gdb"), gdb}) {
    const auto d = session::find_debugger(named, env);
    CHECK(d.path == gdb);
    CHECK(d.kind == DebuggerKind::Unknown); // the session's -gdb-version decides
    CHECK(d.version.empty());
    CHECK_FALSE(fs::exists(ran));
  }
  // Still not found when nothing executable is there.
  CHECK_THROWS_AS(session::find_debugger("/nonexistent/dir/gdb", env), Error);
  // A search with one executable candidate has nothing to choose: deferred as well.
  auto lone = session::find_debugger("", env);
  CHECK(lone.path == gdb);
  CHECK(lone.version.empty());
  CHECK_FALSE(fs::exists(ran));
  // With two, a search passes over one whose --version fails, so it runs them.
  const auto broken = bin.add("a", "rocgdb", "");
  {
    std::ofstream out(broken);
    out << "#!/bin/sh\nexit 1\n";
  }
  const auto d = session::find_debugger("", env);
  CHECK(d.path == gdb);
  CHECK(d.kind == DebuggerKind::Gdb);
  CHECK(d.version == "GNU gdb (Debian 13.1-3) 13.1");
  CHECK(fs::exists(ran));
}

TEST_CASE("debugger not found says what was tried", "[session][discovery]") {
  FakeBin bin;
  bin.add("a", "gdb", "GNU gdb 13.1", /*executable=*/false); // not executable: skipped
  const auto env = env_with(bin.dir("a"));
  try {
    session::find_debugger("", env);
    FAIL("expected DebuggerNotFound");
  } catch (const Error& e) {
    CHECK(e.code() == ExitCode::DebuggerNotFound);
    const std::string msg = e.what();
    CHECK(msg.find(bin.dir("a") + "/rocgdb") != std::string::npos);
    CHECK(msg.find(bin.dir("a") + "/cuda-gdb") != std::string::npos);
    CHECK(msg.find(bin.dir("a") + "/gdb") != std::string::npos);
    CHECK_FALSE(e.hint().empty());
  }
  // A directory twice in $PATH is looked at, and listed, once.
  auto twice = env;
  twice.path_var = bin.dir("a") + ":" + bin.dir("a");
  try {
    session::find_debugger("gdb", twice);
    FAIL("expected DebuggerNotFound");
  } catch (const Error& e) {
    const std::string msg = e.what();
    const std::string path = bin.dir("a") + "/gdb";
    REQUIRE(msg.find(path) != std::string::npos);
    CHECK(msg.find(path, msg.find(path) + path.size()) == std::string::npos);
  }
  try {
    session::find_debugger("/nonexistent/dir/rocgdb", env);
    FAIL("expected DebuggerNotFound");
  } catch (const Error& e) {
    CHECK(e.code() == ExitCode::DebuggerNotFound);
    CHECK(std::string(e.what()).find("/nonexistent/dir/rocgdb") != std::string::npos);
    CHECK(std::string(e.what()).find("--debugger") != std::string::npos);
  }
}

TEST_CASE("the real gdb of this machine is found", "[session][discovery]") {
  // CI installs Debian's gdb; a machine without one is told so clearly instead.
  try {
    const auto d = session::find_debugger("gdb");
    CHECK(d.kind == DebuggerKind::Gdb);
    CHECK(d.version.find("GNU gdb") != std::string::npos);
  } catch (const Error& e) {
    CHECK(e.code() == ExitCode::DebuggerNotFound);
  }
}
