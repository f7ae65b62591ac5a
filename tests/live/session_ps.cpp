// `rocplay ps` as a user runs it: the real binary over this machine's processes.
#include "session_target.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <string>
#include <sys/wait.h>

namespace {

struct Output {
  int exit_code = -1;
  std::string out;
};

Output run_rocplay(const std::string& args) {
  const std::string cmd = std::string(ROCPLAY_BINARY_DIR) + "/rocplay " + args + " 2>/dev/null";
  Output o;
  std::FILE* p = ::popen(cmd.c_str(), "r");
  REQUIRE(p != nullptr);
  char buf[4096];
  std::size_t n = 0;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) {
    o.out.append(buf, n);
  }
  const int status = ::pclose(p);
  o.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return o;
}

} // namespace

TEST_CASE("rocplay ps --all --format json lists this process", "[live][ps]") {
  const auto o = run_rocplay("ps --all --format json --sample-ms 50");
  REQUIRE(o.exit_code == 0);
  const auto j = nlohmann::json::parse(o.out);
  CHECK(j.at("schema") == "rocplay.ps/1");
  bool found = false;
  for (const auto& p : j.at("processes")) {
    if (p.at("pid") == ::getpid()) {
      found = true;
      CHECK(p.at("ppid") == ::getppid());
      CHECK(p.at("holds_gpu") == false);
      CHECK(p.at("gpu").at("known") == true);
    }
  }
  CHECK(found);
}

TEST_CASE("rocplay ps without GPU holders says so", "[live][ps]") {
  const auto o = run_rocplay("ps --sample-ms 0");
  REQUIRE(o.exit_code == 0);
  // This CI machine has no GPU; a GPU machine prints the tree instead.
  if (o.out.find("<- GPU") == std::string::npos) {
    // "No process has ...: User processes ..." or "no process has ..., and no user process ...".
    CHECK(o.out.find("o process has /dev/kfd or /dev/nvidia* open") != std::string::npos);
  }
}

TEST_CASE("rocplay ps --workers-of", "[live][ps]") {
  rocplay::testing::SpinTarget target;
  const auto o =
      run_rocplay("ps --sample-ms 0 --format json --workers-of " + std::to_string(target.pid()));
  REQUIRE(o.exit_code == 0);
  const auto j = nlohmann::json::parse(o.out);
  CHECK(j.at("schema") == "rocplay.workers/1");
  CHECK(j.at("pid") == target.pid());
  CHECK(j.at("workers").empty());

  const pid_t gone = ::fork();
  if (gone == 0) {
    ::_exit(0);
  }
  ::waitpid(gone, nullptr, 0);
  CHECK(run_rocplay("ps --sample-ms 0 --workers-of " + std::to_string(gone)).exit_code == 67);
  CHECK(run_rocplay("ps --format yaml").exit_code == 64);
}
