// `rocplay mi2json` as a person runs it: raw MI logs and rocplay's own recordings, the lossless
// shape, and a non-zero exit when nothing in the input was MI.
#include "cli_util.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

using namespace rocplay;
using namespace rocplay::testing;

namespace {

std::string mi2json_fixture(const std::string& rel) {
  return std::string(ROCPLAY_SOURCE_DIR) + "/fixtures/" + rel;
}

} // namespace

TEST_CASE("mi2json reads a rocplay recording: MI payloads with direction and time") {
  const auto r = run_rocplay({"mi2json", mi2json_fixture("playbook/spin-gdb.rec"), "--summary"});
  INFO("stderr: " << r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.err.find("not MI") != std::string::npos); // the summary
  CHECK(r.err.find(", 0 not MI") != std::string::npos);
  const auto lines = json_lines(r.out);
  REQUIRE(lines.size() > 10);
  bool saw_command = false;
  bool saw_result = false;
  bool saw_note = false;
  for (const auto& j : lines) {
    INFO(j.dump());
    const std::string kind = j.at("kind");
    CHECK(j.at("line").is_number_unsigned());
    if (kind == "command") {
      saw_command = true;
      CHECK(j.at("dir") == "sent");
      CHECK(j.at("time").is_number());
      CHECK(j.at("command").get<std::string>().rfind('-', 0) == 0);
    } else if (kind == "note") {
      saw_note = true;
      CHECK(j.at("time").is_number());
    } else {
      CHECK(j.at("dir") == "received");
      CHECK(j.at("time").is_number());
      if (kind == "result") {
        saw_result = true;
        CHECK(j.contains("class"));
      }
    }
  }
  CHECK(saw_command);
  CHECK(saw_result);
  CHECK(saw_note);
}

TEST_CASE("mi2json keeps order, repeated names and the two list kinds apart") {
  TempDir dir;
  const std::string log = dir.file("x.mi", "^done,b=\"2\",a=\"1\"\n"
                                           "^done,a=\"x\",a=\"y\"\n"
                                           "^done,a=[\"x\",\"y\"]\n"
                                           "^done,l=[a=\"1\"]\n"
                                           "^done,l=[{a=\"1\"}]\n"
                                           "(gdb) \n");
  const auto r = run_rocplay({"mi2json", log});
  REQUIRE(r.exit_code == 0);
  std::vector<std::string> values;
  std::istringstream in(r.out);
  for (std::string line; std::getline(in, line);) {
    const auto at = line.find("\"values\":");
    REQUIRE(at != std::string::npos);
    values.push_back(line.substr(at + 9, line.size() - at - 10));
  }
  REQUIRE(values.size() == 5);
  CHECK(values[0] == R"({"b":"2","a":"1"})");
  CHECK(values[1] == R"({"$tuple":[["a","x"],["a","y"]]})");
  CHECK(values[2] == R"({"a":["x","y"]})");
  CHECK(values[3] == R"({"l":{"$list":[["a","1"]]}})");
  CHECK(values[4] == R"({"l":[{"a":"1"}]})");
}

TEST_CASE("mi2json exits non-zero when nothing in the input is MI") {
  TempDir dir;
  const auto text = run_rocplay({"mi2json", dir.file("hello.txt", "hello world\nbye\n")});
  CHECK(text.exit_code == 65);
  CHECK(text.out.empty());
  CHECK(text.err.find("hello.txt:1:1: not MI") != std::string::npos);
  CHECK(text.err.find("holds no GDB/MI: none of its 2 line(s) is an MI record") !=
        std::string::npos);
  // A file with no MI at all lists its first 10 lines, not 100, before the verdict.
  std::string prose;
  for (int i = 0; i < 50; ++i) {
    prose += "line " + std::to_string(i) + " of a log\n";
  }
  const auto log = run_rocplay({"mi2json", dir.file("server.log", prose)});
  CHECK(log.exit_code == 65);
  CHECK(log.err.find("server.log:10:1: not MI") != std::string::npos);
  CHECK(log.err.find("server.log:11:1") == std::string::npos);
  CHECK(log.err.find("further lines that are not MI are counted") != std::string::npos);
  CHECK(log.err.find("none of its 50 line(s) is an MI record") != std::string::npos);
  const auto empty = run_rocplay({"mi2json", dir.file("empty.mi", "")});
  CHECK(empty.exit_code == 65);
  CHECK(empty.err.find("is empty") != std::string::npos);
  // One MI line among junk is enough to succeed (--strict still refuses the junk).
  const std::string mixed = dir.file("mixed.mi", "junk\n^done\n");
  CHECK(run_rocplay({"mi2json", mixed}).exit_code == 0);
  CHECK(run_rocplay({"mi2json", mixed, "--strict"}).exit_code == 65);
}
