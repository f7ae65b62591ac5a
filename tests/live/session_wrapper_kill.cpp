// Live: a debugger started through a wrapper script that runs the real gdb as its child (not
// exec'd) and never passes `-target-detach` on. rocplay's detach then times out and it kills the
// debugger: the whole process group, so the wrapper's gdb cannot stay behind tracing the target.
#include "cli_util.hpp"
#include "session_target.hpp"

#include <catch2/catch.hpp>

using namespace rocplay;
using rocplay::testing::SpinTarget;

TEST_CASE("a wrapper's child gdb is killed with it: the target runs after a lost detach",
          "[live][session]") {
  testing::TempDir dir;
  const session::Debugger debugger = testing::gdb_holding_back(dir, "-target-detach");

  SpinTarget target;
  session::Options options = testing::test_options();
  options.detach_timeout = std::chrono::milliseconds(1'000);
  std::vector<std::string> warnings;
  {
    session::Session s(debugger, options);
    s.attach(target.pid());
    CHECK(process::is_stopped(target.state()));
    s.detach(); // held back by the wrapper: times out, and rocplay kills the debugger
    warnings = s.warnings();
  }
  std::string all;
  for (const auto& w : warnings) {
    all += w + "\n";
  }
  INFO(all);
  CHECK(all.find("still stopped") == std::string::npos);
  testing::require_running_again(target);
  const auto status = process::read_status(target.pid());
  REQUIRE(status.has_value());
  CHECK(status->tracer_pid.value_or(-1) == 0);
}
