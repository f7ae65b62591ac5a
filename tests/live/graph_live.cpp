// The wait-for graph against real processes under real gdb (issue 41). A Python helper thread
// holds the GIL inside one C call that never returns (tests/targets/py_gil_ccall.py through
// ctypes.PyDLL into libbusy_lib.so) while the main thread waits for the GIL in take_gil: `rocplay
// run hang-triage` with two samples must name the helper's Python line as the cause, in one call,
// with the GIL and the main thread's line behind it, in the first three lines of the text report
// and as the JSON graph's first root.
#include "cli_util.hpp"
#include "session_target.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <sstream>

using namespace rocplay;
using namespace rocplay::testing;

namespace {

const std::string kScript = std::string(ROCPLAY_SOURCE_DIR) + "/tests/targets/py_gil_ccall.py";

} // namespace

TEST_CASE("the GIL held in one C call: the holder's Python line is the cause", "[live][graph]") {
  if (::access("/usr/bin/python3", X_OK) != 0) {
    WARN("no /usr/bin/python3: skipped");
    return;
  }
  ReadyProcess target({"/usr/bin/python3", kScript, find_built("libbusy_lib.so")});
  // The main thread has reached its loop and lost the GIL to the helper's call.
  ::usleep(500 * 1000);
  const int call_line = marker_line("py_gil_ccall.py", "rocplay-test: GIL C call line");
  const int loop_line = marker_line("py_gil_ccall.py", "rocplay-test: train loop line");
  TempDir dir;
  const std::string rec = dir.path() + "/gil.rocplay";
  const auto r =
      run_rocplay({"run", "hang-triage", "--pid", std::to_string(target.pid()), "--debugger", "gdb",
                   "--samples", "2", "--interval", "1s", "--format", "json", "--record", rec},
                  std::chrono::seconds(180));
  INFO("stderr: " << r.err);
  REQUIRE_FALSE(r.timed_out);
  const auto report = nlohmann::json::parse(r.out);
  REQUIRE(report.at("schema_version") == 3);
  const auto& g = report.at("graph");
  REQUIRE_FALSE(g.at("roots").empty());
  const auto& root = g.at("roots").at(0);
  INFO(g.dump(2));
  CHECK_FALSE(root.at("cycle").get<bool>());
  // The chain: the main thread -> the GIL -> the helper.
  const auto& chain = root.at("chain");
  REQUIRE(chain.size() == 3);
  CHECK(chain.at(1) == "gil");
  auto node = [&](const std::string& id) {
    for (const auto& n : g.at("nodes")) {
      if (n.at("id") == id) {
        return n;
      }
    }
    return nlohmann::json();
  };
  const auto helper = node(root.at("node"));
  const auto main = node(chain.at(0));
  CHECK(helper.value("where", "") ==
        "tokenize_batch (py_gil_ccall.py:" + std::to_string(call_line) + ")");
  CHECK(helper.value("state", "") == "spinning");
  CHECK(main.value("label", "") == "main thread");
  // Taking the GIL back happens at the loop's backward jump: the loop's line or its `while`.
  const std::string main_where = main.value("where", "");
  CHECK((main_where == "train_loop (py_gil_ccall.py:" + std::to_string(loop_line) + ")" ||
         main_where == "train_loop (py_gil_ccall.py:" + std::to_string(loop_line - 1) + ")"));

  // The same from the recording, as text: the cause in the first three lines.
  const auto pm = run_rocplay({"postmortem", rec, "--no-progress", "--wide"});
  INFO(pm.out);
  const std::string head = first_lines(pm.out, 3);
  CHECK_THAT(head, Catch::Contains("Cause:") &&
                       Catch::Contains("py_gil_ccall.py:" + std::to_string(call_line)) &&
                       Catch::Contains("the GIL"));
  require_no_thread_stopped(target.pid(), 2);
}
