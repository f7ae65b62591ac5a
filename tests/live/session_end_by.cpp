// Live: a look's bound (Options::end_by, a --slurm-job node's end) that comes while the debugger
// reads the libraries' symbols before the attach. The error says it was the bound, not the
// attach timeout, whose deadline is far off, and the target was never stopped. (CI's `live:slurm`
// once read "took longer than the attach timeout (90 s)" after 9 s: the time left to a deadline
// was cut down to whole milliseconds, so the wait ended a hair before the bound.)
#include "cli_util.hpp"
#include "session_target.hpp"

#include <catch2/catch.hpp>

#include <chrono>

using namespace rocplay;
using rocplay::testing::SpinTarget;

TEST_CASE("the look's bound during the symbol preload is named as the bound", "[live][session]") {
  testing::TempDir dir;
  // The preload waits in vain for its first add-symbol-file.
  const session::Debugger debugger = testing::gdb_holding_back(dir, "add-symbol-file");

  SpinTarget target;
  session::Options options = testing::test_options();
  options.preload_symbols = true;
  options.detach_timeout = std::chrono::milliseconds(1'000);
  const auto t0 = std::chrono::steady_clock::now();
  options.end_by = t0 + std::chrono::seconds(3);
  std::string message;
  ExitCode code = ExitCode::Ok;
  {
    session::Session s(debugger, options);
    try {
      s.attach(target.pid());
    } catch (const Error& e) {
      message = e.what();
      code = e.code();
    }
  }
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  INFO(message);
  CHECK(code == ExitCode::Timeout);
  CHECK(message.find("when this look's bound came") != std::string::npos);
  CHECK(message.find("attach timeout") == std::string::npos);
  CHECK(took < 15); // the bound (3 s), the wrapper killed after it: not the 30 s attach timeout
  testing::require_running_again(target);
}
