// Helper programs run with a bound on time and output (nvdisasm after a cuda-gdb detach, a
// debugger's --version), against /bin/sh.
#include "rocplay/session/helper_program.hpp"

#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <string>

using namespace rocplay::session;
using namespace std::chrono_literals;

TEST_CASE("run_program: exit code, stdout and stderr together, arguments passed as they are") {
  const auto run = run_program(
      "/bin/sh", {"-c", "echo out; echo err >&2; echo \"$0\"; exit 3", "a b;c"}, 5s, 4096);
  REQUIRE(run.exit_code);
  CHECK(*run.exit_code == 3);
  CHECK(run.output == "out\nerr\na b;c\n");
  CHECK_FALSE(run.timed_out);
  CHECK_FALSE(run.truncated);
  const auto quiet =
      run_program("/bin/sh", {"-c", "echo out; echo err >&2"}, 5s, 4096, Stderr::Discard);
  CHECK(quiet.output == "out\n");
}

TEST_CASE("run_program: the deadline kills it, the output bound cuts it") {
  const auto start = std::chrono::steady_clock::now();
  const auto slow = run_program("/bin/sh", {"-c", "echo started; exec sleep 30"}, 300ms, 4096);
  CHECK(slow.timed_out);
  CHECK_FALSE(slow.exit_code);
  CHECK(std::chrono::steady_clock::now() - start < 10s);
  const auto loud = run_program("/bin/sh", {"-c", "head -c 200000 /dev/zero"}, 5s, 1000);
  CHECK(loud.truncated);
  CHECK(loud.output.size() == 1000);
  REQUIRE(loud.exit_code);
  CHECK(*loud.exit_code == 0); // read to the end, so it was not blocked on a full pipe
}

TEST_CASE("run_program and find_program: what is not there") {
  const auto missing = run_program("/nonexistent/nvdisasm", {}, 1s, 100);
  CHECK_FALSE(missing.exit_code);
  CHECK_FALSE(missing.error.empty());
  CHECK(find_program("sh", {"/nonexistent"}).value_or("").ends_with("/sh"));
  CHECK(find_program("sh", {"/bin"}) == "/bin/sh");
  CHECK_FALSE(find_program("rocplay-no-such-program", {"/bin"}));
  CHECK(split_path_var("/a::/b") == std::vector<std::string>{"/a", ".", "/b"});
}

TEST_CASE("run_program: the child keeps no descriptor of rocplay's but its own stdio") {
  // A descriptor without close-on-exec, as another thread's launch pipe is between its pipe() and
  // fcntl(): Boost 1.81 leaves every descriptor below its own launch pipe open in the child, and
  // a child holding another launch's pipe held that launch up until the child exited.
  int leak[2] = {-1, -1};
  REQUIRE(::pipe(leak) == 0);
  struct stat st {};
  REQUIRE(::fstat(leak[1], &st) == 0);
  const std::string pipe_name = "pipe:[" + std::to_string(st.st_ino) + "]";
  const auto run =
      run_program("/bin/sh", {"-c", "for f in /proc/self/fd/*; do readlink \"$f\"; done; exit 0"},
                  5s, 65536, Stderr::Discard);
  ::close(leak[0]);
  ::close(leak[1]);
  REQUIRE(run.exit_code);
  CHECK(*run.exit_code == 0);
  INFO(run.output);
  CHECK(run.output.find(pipe_name) == std::string::npos);
}
