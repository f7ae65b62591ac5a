// The host shapes of issue 41 against real Python processes under real gdb: what /proc says each
// thread waits in (kernel waits, read while the target runs) joins the wait-for graph. Each test
// runs `rocplay run hang-triage --pid P --debugger gdb` on one of tests/targets/py_*.py and
// requires the root and the user's line (not the standard library's) as the JSON graph's first
// root and in the first three lines of the text report of its recording, exit code 1, and the
// target left running.
#include "cli_util.hpp"
#include "session_target.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <sstream>

using namespace rocplay;
using namespace rocplay::testing;

namespace {

std::string script(const std::string& name) {
  return std::string(ROCPLAY_SOURCE_DIR) + "/tests/targets/" + name;
}

nlohmann::json node_of(const nlohmann::json& g, const std::string& id) {
  for (const auto& n : g.at("nodes")) {
    if (n.at("id") == id) {
      return n;
    }
  }
  return nlohmann::json::object();
}

struct Looked {
  nlohmann::json graph;
  int exit_code = -1;
  std::string text; // the recording's text report, read back by postmortem
};

// hang-triage on `pid` with JSON out and a recording, then the recording's text report.
Looked look(std::int64_t pid, TempDir& dir) {
  const std::string rec = dir.path() + "/look.rocplay";
  const auto r = run_rocplay({"run", "hang-triage", "--pid", std::to_string(pid), "--debugger",
                              "gdb", "--format", "json", "--record", rec},
                             std::chrono::seconds(180));
  INFO("stderr: " << r.err);
  REQUIRE_FALSE(r.timed_out);
  const auto report = nlohmann::json::parse(r.out);
  Looked out;
  out.graph = report.at("graph");
  out.exit_code = r.exit_code;
  const auto pm = run_rocplay({"postmortem", rec, "--no-progress", "--wide"});
  out.text = pm.out;
  return out;
}

bool have_python() {
  if (::access("/usr/bin/python3", X_OK) != 0) {
    WARN("no /usr/bin/python3: skipped");
    return false;
  }
  return true;
}

} // namespace

TEST_CASE("Popen.wait on a child that reads a pipe the parent holds: a cycle named with the "
          "parent's line",
          "[live][graph][host]") {
  if (!have_python()) {
    return;
  }
  ReadyProcess target({"/usr/bin/python3", script("py_subprocess_pipe.py")});
  ::usleep(300 * 1000); // the parent has entered wait4 and the child its read
  const int line = marker_line("py_subprocess_pipe.py", "rocplay-test: Popen.wait line");
  const std::string where = "run_filter (py_subprocess_pipe.py:" + std::to_string(line) + ")";
  TempDir dir;
  const Looked l = look(target.pid(), dir);
  INFO(l.graph.dump(2));
  CHECK(l.exit_code == 1);
  REQUIRE_FALSE(l.graph.at("roots").empty());
  const auto& root = l.graph.at("roots").at(0);
  CHECK(root.at("cycle").get<bool>());
  // main thread -> the child process (its read of the pipe) -> the pipe's write end -> main.
  CHECK(root.at("node") == "thread:" + std::to_string(target.pid()));
  CHECK(node_of(l.graph, root.at("node")).value("where", "") == where);
  const auto& cycle = root.at("cycle_nodes");
  REQUIRE(cycle.size() == 3);
  const auto child = node_of(l.graph, cycle.at(1));
  CHECK(child.value("kind", "") == "process");
  CHECK_THAT(child.value("where", ""), Catch::StartsWith("read(fd 0, pipe:["));
  CHECK_THAT(cycle.at(2).get<std::string>(), Catch::StartsWith("pipe:"));
  INFO(l.text);
  CHECK_THAT(first_lines(l.text, 3), Catch::Contains("Cause:") && Catch::Contains(where) &&
                                         Catch::Contains("a cycle of waits") &&
                                         Catch::Contains("child process"));
  require_no_thread_stopped(target.pid(), 1);
}

TEST_CASE("a thread pool starved by its own tasks: every thread asleep is the root, exit 1",
          "[live][graph][host]") {
  if (!have_python()) {
    return;
  }
  ReadyProcess target({"/usr/bin/python3", script("py_pool_starved.py")});
  ::usleep(300 * 1000);
  const int task_line = marker_line("py_pool_starved.py", "rocplay-test: pool task waits line");
  TempDir dir;
  const Looked l = look(target.pid(), dir);
  INFO(l.graph.dump(2));
  CHECK(l.exit_code == 1);
  REQUIRE_FALSE(l.graph.at("roots").empty());
  const auto& root = l.graph.at("roots").at(0);
  CHECK(root.at("node") == "asleep:" + std::to_string(target.pid()));
  CHECK_FALSE(root.at("cycle").get<bool>());
  CHECK(root.at("waiters") == 3); // the main thread and both workers
  const std::string workers =
      "task (py_pool_starved.py:" + std::to_string(task_line) + ") in 2 threads";
  CHECK_THAT(node_of(l.graph, root.at("node")).value("where", ""), Catch::Contains(workers));
  INFO(l.text);
  const std::string head = first_lines(l.text, 3);
  CHECK_THAT(head, Catch::Contains("[error") && Catch::Contains("host deadlock"));
  CHECK_THAT(first_lines(l.text, 6), Catch::Contains("Cause:") && Catch::Contains(workers));
  require_no_thread_stopped(target.pid(), 3);
}

TEST_CASE("queue.get that nothing feeds: the consumer's line, a queue nothing will put to",
          "[live][graph][host]") {
  if (!have_python()) {
    return;
  }
  ReadyProcess target({"/usr/bin/python3", script("py_queue_unfed.py")});
  ::usleep(300 * 1000);
  const int get_line = marker_line("py_queue_unfed.py", "rocplay-test: queue.get line");
  const std::string where = "consume (py_queue_unfed.py:" + std::to_string(get_line) + ")";
  TempDir dir;
  const Looked l = look(target.pid(), dir);
  INFO(l.graph.dump(2));
  CHECK(l.exit_code == 1);
  REQUIRE_FALSE(l.graph.at("roots").empty());
  const auto& root = l.graph.at("roots").at(0);
  const auto queue = node_of(l.graph, root.at("node"));
  CHECK(queue.value("label", "") == "a queue nothing will put to");
  const auto& chain = root.at("chain");
  REQUIRE(chain.size() == 2);
  CHECK(node_of(l.graph, chain.at(0)).value("where", "") == where);
  INFO(l.text);
  const std::string head = first_lines(l.text, 3);
  CHECK_THAT(head, Catch::Contains("queue.get()") && Catch::Contains("Cause:") &&
                       Catch::Contains("a queue nothing will put to") && Catch::Contains(where));
  CHECK_THAT(head, !Catch::Contains("threading.py"));
  require_no_thread_stopped(target.pid(), 2);
}

TEST_CASE("a spin on a flag only a reader of an unwritten pipe would set: the read is the root",
          "[live][graph][host]") {
  ReadyProcess target({find_built("spin_reader")});
  ::usleep(300 * 1000);
  const int read_line = marker_line("spin_reader.cpp", "rocplay-test: reader line");
  const int spin_line = marker_line("spin_reader.cpp", "rocplay-test: spin line");
  const std::string reader = "load_config at spin_reader.cpp:" + std::to_string(read_line);
  TempDir dir;
  const Looked l = look(target.pid(), dir);
  INFO(l.graph.dump(2));
  REQUIRE_FALSE(l.graph.at("roots").empty());
  const auto& root = l.graph.at("roots").at(0);
  const auto read = node_of(l.graph, root.at("node"));
  CHECK(read.value("where", "") == reader);
  CHECK_THAT(read.value("doing", ""), Catch::StartsWith("blocked in read(fd "));
  // The spinner behind it: main's loop.
  const auto& chain = root.at("chain");
  REQUIRE(chain.size() == 2);
  const auto spinner = node_of(l.graph, chain.at(0));
  CHECK(spinner.value("state", "") == "spinning");
  CHECK(spinner.value("where", "") == "main at spin_reader.cpp:" + std::to_string(spin_line));
  INFO(l.text);
  CHECK_THAT(first_lines(l.text, 3),
             Catch::Contains("Cause:") && Catch::Contains(reader) && Catch::Contains("read(fd "));
  require_no_thread_stopped(target.pid(), 2);
}

TEST_CASE("the same starved pool in C++ (main in pthread_join): every thread asleep, exit 1",
          "[live][graph][host]") {
  ReadyProcess target({find_built("pool_starved")});
  ::usleep(300 * 1000);
  const int task_line = marker_line("pool_starved.cpp", "rocplay-test: pool task waits line");
  const std::string workers =
      "task at pool_starved.cpp:" + std::to_string(task_line) + " in 2 threads";
  TempDir dir;
  const Looked l = look(target.pid(), dir);
  INFO(l.graph.dump(2));
  CHECK(l.exit_code == 1);
  REQUIRE_FALSE(l.graph.at("roots").empty());
  const auto& root = l.graph.at("roots").at(0);
  CHECK(root.at("node") == "asleep:" + std::to_string(target.pid()));
  CHECK(root.at("waiters") == 3);
  INFO(l.text);
  CHECK_THAT(first_lines(l.text, 3),
             Catch::Contains("[error") && Catch::Contains("Cause:") && Catch::Contains(workers));
  require_no_thread_stopped(target.pid(), 3);
}
