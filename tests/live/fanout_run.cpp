// Every rank at once, with real gdb: `rocplay run --pids` over several CPU targets, one of them
// made to fail, and the multi-node merge path (per-node JSONL merged by `rocplay postmortem`).
#include "cli_util.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <thread>

#include <set>
#include <sstream>

using namespace rocplay::testing;

TEST_CASE("run --pids: every target examined in parallel, a bad one reported, all running") {
  SpinTarget a;
  SpinTarget b;
  SpinTarget c;
  const std::string bogus = "99999999";
  const std::string pids = std::to_string(a.pid()) + "," + bogus + "," + std::to_string(b.pid()) +
                           "," + std::to_string(c.pid());
  const CliRun r = run_rocplay(
      {"run", "host-stacks", "--pids", pids, "--debugger", "gdb", "--format", "json", "-q"},
      std::chrono::seconds(120));
  INFO(r.err);
  REQUIRE_FALSE(r.timed_out);
  CHECK(r.exit_code == 2); // some targets could not be examined
  CHECK(r.err.find("1 of 4 targets could not be examined") != std::string::npos);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j["schema"] == "rocplay.run.multi");
  CHECK(j["schema_version"] == 3);
  // The incident (v2): four targets, three examined, grouped by where each stands.
  CHECK(j["incident"]["cases"] == 4);
  CHECK(j["incident"]["examined"] == 3);
  CHECK(j["incident"]["exit_code"] == 2);
  REQUIRE(j["targets"].size() == 4);
  // The report keeps the order given; ranks follow it when the targets have no RANK variable.
  CHECK(j["targets"][0]["pid"] == a.pid());
  CHECK(j["targets"][1]["pid"] == std::stoll(bogus));
  CHECK(j["targets"][1]["exit_code"] == 67);
  CHECK(j["targets"][1]["error"]["message"].get<std::string>().find(bogus) != std::string::npos);
  for (int i : {0, 2, 3}) {
    const auto& t = j["targets"][i];
    CHECK(t["rank"] == i);
    CHECK(t["exit_code"].get<int>() < 2);
    const auto& threads = t["report"]["snapshot"]["host_threads"];
    REQUIRE(threads.is_array());
    CHECK(threads.size() >= 3); // main, the spinners and the blocked thread
  }
  for (SpinTarget* t : {&a, &b, &c}) {
    require_running_again(*t);
  }
}

TEST_CASE("multi-node: per-node JSONL outputs merge in rocplay postmortem") {
  TempDir dir;
  SpinTarget a;
  SpinTarget b;
  SpinTarget c;
  const std::string node1 = dir.path() + "/node-1.jsonl";
  // %h: one command line for every node, each writing its own file.
  const std::string node2 = dir.path() + "/node-2-%h.jsonl";
  const CliRun r1 = run_rocplay({"run", "host-stacks", "--pids",
                                 std::to_string(a.pid()) + "," + std::to_string(b.pid()),
                                 "--debugger", "gdb", "--format", "jsonl", "-o", node1, "-q"},
                                std::chrono::seconds(120));
  const CliRun r2 = run_rocplay({"run", "host-stacks", "--pids", std::to_string(c.pid()),
                                 "--debugger", "gdb", "--format", "jsonl", "-o", node2, "-q"},
                                std::chrono::seconds(120));
  INFO(r1.err << r2.err);
  REQUIRE(r1.exit_code < 2);
  REQUIRE(r2.exit_code < 2);
  char host[256] = {};
  REQUIRE(::gethostname(host, sizeof host - 1) == 0);
  CHECK(std::filesystem::exists(dir.path() + "/node-2-" + host + ".jsonl"));

  const CliRun pm = run_rocplay({"postmortem", dir.path(), "--format", "jsonl", "--no-progress"});
  INFO(pm.err);
  CHECK(pm.exit_code < 2);
  const auto lines = json_lines(pm.out);
  // Schema v2: the incident first, then three snapshots (each run's incident line holds none, so
  // it is no input) and the summary.
  REQUIRE(lines.size() == 5);
  CHECK(lines[0]["schema"] == "rocplay.postmortem.incident");
  CHECK(lines[0]["cases"] == 3);
  std::set<std::int64_t> pids;
  for (std::size_t i = 1; i < 4; ++i) {
    CHECK(lines[i]["kind"] == "report-json");
    CHECK(lines[i]["status"] == "ok");
    CHECK(lines[i]["snapshot"]["host_threads"].get<int>() >= 3);
  }
  CHECK(lines[1]["path"].get<std::string>().find("node-1.jsonl") != std::string::npos);
  CHECK(lines[1]["member"] == "#0");
  CHECK(lines[2]["member"] == "#1");
  CHECK(lines[3]["path"].get<std::string>().find("node-2-") != std::string::npos);
  CHECK(lines[4]["schema"] == "rocplay.postmortem.summary");
  CHECK(lines[4]["inputs"] == 2);
  CHECK(lines[4]["unreadable"] == 0);
  for (const SpinTarget* t : {&a, &b, &c}) {
    CHECK(t->advances());
  }
}

// `-o /dev/null` once replaced /dev/null with a plain file (the report was renamed over it).
TEST_CASE("run --pids -o FIFO writes through it and leaves it a FIFO") {
  TempDir dir;
  SpinTarget a;
  const std::string fifo = dir.path() + "/report.fifo";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  std::string received;
  std::thread reader([&] {
    std::ifstream in(fifo, std::ios::binary);
    received.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  });
  const CliRun r = run_rocplay({"run", "host-stacks", "--pids", std::to_string(a.pid()),
                                "--debugger", "gdb", "--format", "json", "-o", fifo, "-q"},
                               std::chrono::seconds(120));
  reader.join();
  INFO(r.err);
  CHECK(r.exit_code < 2);
  struct stat st {};
  REQUIRE(::lstat(fifo.c_str(), &st) == 0);
  CHECK(S_ISFIFO(st.st_mode));
  CHECK(received.find("rocplay.run.multi") != std::string::npos);
  require_running_again(a);
}
