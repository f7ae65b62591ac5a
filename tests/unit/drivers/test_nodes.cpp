// Past one node (rocplay/drivers/nodes.hpp): the frames a node's report travels in (untrusted:
// every error with its line and column), Slurm's outputs read, and the one join.
#include "rocplay/drivers/nodes.hpp"

#include "rocplay/report/incident.hpp"
#include "rocplay/report/report.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <sstream>
#include <string>
#include <tuple>
#include <vector>

using namespace rocplay;
using namespace rocplay::drivers;

namespace {

std::vector<std::string> frame_lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    out.push_back(line);
  }
  return out;
}

std::string framed_text(const std::string& name, const std::string& bytes) {
  std::ostringstream out;
  write_frame(out, name, bytes);
  return out.str();
}

// A node's report as `rocplay run --format json` writes it, for cases made here.
std::string node_report_json(const Incident& inc) {
  std::ostringstream out;
  report::write(out, inc, report::Format::Json, {}, "test");
  return out.str();
}

Case node_case(std::int64_t pid, int rank, const std::string& function) {
  Case c;
  c.source.pid = pid;
  c.source.rank = rank;
  HostThread t;
  t.id = "1";
  t.lwp = pid;
  Frame f;
  f.function = function;
  f.file = "worker.cpp";
  f.line = 10;
  t.frames.push_back(f);
  c.snapshot.host_threads.push_back(t);
  c.snapshot.pid = pid;
  auto run = std::make_shared<playbook::RunResult>();
  run->pid = pid;
  run->attached = true;
  run->times.detached = true;
  run->times.state_after = 'S';
  c.run = run;
  return c;
}

} // namespace

TEST_CASE("frames: a file of any bytes survives labels and other lines between its lines",
          "[nodes]") {
  std::string bytes;
  for (int i = 0; i < 5000; ++i) {
    bytes += static_cast<char>(i * 7 % 256); // every byte value, NUL and newline included
  }
  const auto lines =
      frame_lines(framed_text("record/12-3.rocplay", bytes) + framed_text("report.json", "{}"));
  REQUIRE(lines.size() > 6);
  FrameReader r("node7");
  r.line("srun: warning: something the launcher said");
  for (std::size_t i = 0; i < lines.size(); ++i) {
    r.line("0: " + lines[i]); // srun --label's prefix
    if (i == 2) {
      r.line("rocplay: a message between two frame lines");
    }
  }
  CHECK(r.errors().empty());
  REQUIRE(r.files().size() == 2);
  CHECK(r.files().at("record/12-3.rocplay") == bytes);
  CHECK(r.files().at("report.json") == "{}");
  CHECK(r.other_lines().size() == 2);
  CHECK(r.unfinished().empty());
  for (const auto& l : lines) {
    CHECK(l.size() <= kMaxFrameLine);
  }
}

TEST_CASE("frames: malformed input is an error with its line and column, never a file", "[nodes]") {
  const std::string m(kFrameMarker);
  const std::string good = framed_text("a.json", "hello world");
  const auto g = frame_lines(good); // begin, data, end
  REQUIRE(g.size() == 3);
  using Row = std::tuple<std::string, std::vector<std::string>, std::string>;
  auto row = GENERATE_COPY(table<std::string, std::vector<std::string>, std::string>({
      Row{"a checksum that does not match",
          {g[0], g[1], m + "end 0000000000000000"},
          "line 3, column 22: `a.json`: checksum does not match"},
      Row{"a name that climbs out", {m + "begin ../etc/passwd 3"}, "line 1, column 24: expected"},
      Row{"an absolute name", {m + "begin /etc/passwd 3"}, "line 1, column 24: expected"},
      Row{"a size past the limit", {m + "begin a 999999999999"}, "not a size up to"},
      Row{"not base64", {g[0], m + "data aGVs*G8=", g[2]}, "line 2, column 27: not base64"},
      Row{"fewer bytes than said",
          {m + "begin a.json 12", g[1], g[2]},
          "has 11 bytes, its begin said 12"},
      Row{"data outside a file", {g[1]}, "line 1, column 18: `data` outside a file"},
      Row{"an unknown kind", {g[0], m + "mystery x"}, "unknown frame kind `mystery`"},
      Row{"a line too long", {g[0], m + "data " + std::string(5000, 'A')}, "longer than 4096"},
  }));
  DYNAMIC_SECTION(std::get<0>(row)) {
    FrameReader r("n1");
    for (const auto& l : std::get<1>(row)) {
      r.line(l);
    }
    CHECK(r.files().empty());
    REQUIRE_FALSE(r.errors().empty());
    INFO(r.errors().front());
    CHECK(r.errors().front().rfind("n1: line ", 0) == 0);
    CHECK(r.errors().front().find(std::get<2>(row)) != std::string::npos);
  }
}

TEST_CASE("frames: a stream cut in the middle of a file names it unfinished", "[nodes]") {
  const auto g = frame_lines(framed_text("report.json", std::string(2000, 'x')));
  FrameReader r("n2");
  r.line(g[0]);
  r.line(g[1]);
  CHECK(r.files().empty());
  CHECK(r.unfinished() == "report.json");
}

TEST_CASE("slurm: scontrol's job line and listpids table are read, bad ones refused with a "
          "position",
          "[nodes]") {
  const SlurmJob job =
      parse_slurm_job("42", "JobId=42 JobName=train UserId=root(0) JobState=RUNNING Reason=None "
                            "NodeList=rpnode[1-2] BatchHost=rpnode1 NumNodes=2 WorkDir=/a b\n");
  CHECK(job.state == "RUNNING");
  REQUIRE(job.nodes.size() == 1);
  CHECK(job.nodes.front() == "rpnode[1-2]"); // expanded by `scontrol show hostnames`
  CHECK_THROWS_WITH(parse_slurm_job("42", "JobId=42 ReqNodeList=x JobState=RUNNING\n"),
                    Catch::Contains("line 1: no NodeList="));
  CHECK_THROWS_AS(check_slurm_job_id("42; rm -rf /"), Error);
  CHECK_NOTHROW(check_slurm_job_id("42_7"));

  const std::string listpids = "PID      JOBID    STEPID   LOCALID GLOBALID\n"
                               "2200     42       1        0       0\n"
                               "2174     42       0        1       3\n"
                               "2173     42       0        0       2\n"
                               "2175     42       0        -       -\n"
                               "2150     42       batch    0       0\n"
                               "2151     42       extern   -       -\n";
  const auto tasks = parse_slurm_listpids(listpids, "1"); // rocplay runs in step 1
  REQUIRE(tasks.size() == 2);
  CHECK(tasks[0].pid == 2173);
  CHECK(tasks[0].global_id == 2);
  CHECK(tasks[1].pid == 2174);
  CHECK(tasks[1].global_id == 3);
  CHECK(tasks[1].step == "0");
  CHECK_THROWS_WITH(parse_slurm_listpids("PID JOBID STEPID LOCALID GLOBALID\n12x 42 0 0 0\n", ""),
                    Catch::Contains("line 2, column 1: `12x` is not a pid"));
  CHECK_THROWS_WITH(parse_slurm_listpids("PID JOBID STEPID LOCALID GLOBALID\n12 42 0 0\n", ""),
                    Catch::Contains("line 2, column 9: expected 5 columns, found 4"));
  CHECK_THROWS_WITH(parse_slurm_listpids("12 42 0 0 0\n", ""),
                    Catch::Contains("line 1, column 1: expected the header"));
}

TEST_CASE("join: nodes' reports become one incident, every case with its host, a silent node "
          "named",
          "[nodes]") {
  Incident node1;
  node1.title = "hang-triage";
  node1.several = true;
  node1.cases.push_back(node_case(101, 0, "wait_for_peer"));
  node1.cases.push_back(node_case(102, 1, "wait_for_peer"));
  Incident node2 = node1;
  node2.cases[0] = node_case(201, 2, "wait_for_peer");
  node2.cases[1] = node_case(202, 3, "stuck_elsewhere");
  node2.notes.push_back("a note of node 2");

  std::vector<NodePart> parts;
  parts.push_back(node_part_from_report("n1", node_report_json(node1)));
  parts.push_back(node_part_from_report("n2", node_report_json(node2)));
  NodePart silent;
  silent.host = "n3";
  silent.error = "n3 did not answer in time";
  silent.code = ExitCode::Timeout;
  parts.push_back(silent);
  const Incident inc = join_nodes("hang-triage", std::move(parts));
  REQUIRE(inc.cases.size() == 5);
  CHECK(inc.cases[0].source.host == "n1");
  CHECK(inc.cases[3].source.host == "n2");
  CHECK(inc.cases[3].source.rank == 3);
  CHECK(inc.cases[3].source.pid == 202);
  CHECK(inc.cases[3].examined());
  REQUIRE(inc.cases[3].run != nullptr);
  CHECK(inc.cases[3].run->times.detached);
  CHECK(inc.cases[4].source.host == "n3");
  CHECK_FALSE(inc.cases[4].examined());
  CHECK(inc.exit_code() == ExitCode::PartialInput);
  CHECK(std::find(inc.notes.begin(), inc.notes.end(), "n2: a note of node 2") != inc.notes.end());

  const auto groups = incident::rank_groups(inc);
  std::vector<std::string> who;
  for (const auto& g : groups) {
    who.push_back(incident::who(inc, g));
  }
  CHECK(who.at(0) == "ranks 0-2 (n1: 0-1 pids 101-102; n2: 2 pid 201)");
  CHECK(who.at(1) == "rank 3 (n2 pid 202)");
  CHECK(who.at(2) == "n3 (no report)");

  // What a node sends is checked: a report of another schema is refused, saying whose it is.
  CHECK_THROWS_WITH(node_part_from_report("n9", R"({"schema":"other"})"),
                    Catch::Contains("n9's report is not a rocplay.run.multi document"));
  CHECK_THROWS_WITH(node_part_from_report("n9", "{\"schema\":"), Catch::Contains("byte"));
  CHECK_THROWS_WITH(node_part_from_report("n9", std::string(200, '[') + std::string(200, ']')),
                    Catch::Contains("nested deeper than"));
}
