// The one exit-code rule (issue 42): README.md's exit-code table, `--help` of run, record and
// postmortem, and the man page say the same words for 0 (nothing), 1 (a finding) and 2
// (unreadable); and every format of one post-mortem exits with the same code, the one its JSON
// names (incident.exit_code), the text leading with VERDICT exactly when that code is 1. Inputs
// are fixtures (fixtures/rocgdb: a sync-lane spin, a dispatcher with nothing active, a healthy
// sample), an empty recording and a file that is no recording.
#include "cli_util.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <fstream>
#include <map>
#include <regex>

using namespace rocplay;
using namespace rocplay::testing;

namespace exit_rule_test {

// Runs of spaces, newlines and roff's line breaks as one space: wrapping is not wording.
std::string one_spaced(std::string s) {
  s = std::regex_replace(s, std::regex("\\\\-"), "-");
  s = std::regex_replace(s, std::regex("\\s+"), " ");
  return s;
}

// README.md's row for `code` in the exit-code table: its meaning.
std::string readme_meaning(int code) {
  std::ifstream in(std::string(ROCPLAY_SOURCE_DIR) + "/README.md");
  const std::string prefix = "| " + std::to_string(code) + " | ";
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(prefix, 0) == 0 && line.size() > prefix.size() + 2) {
      return line.substr(prefix.size(), line.size() - prefix.size() - 2);
    }
  }
  return {};
}

} // namespace exit_rule_test

using namespace exit_rule_test;

TEST_CASE("issue 42: README's exit-code table, --help and the man page say the same rule") {
  const std::string man =
      one_spaced(read_file(std::string(ROCPLAY_SOURCE_DIR) + "/docs/man/rocplay.1.in"));
  std::map<std::string, std::string> helps;
  for (const char* cmd : {"run", "record", "postmortem"}) {
    const auto h = run_rocplay({cmd, "--help"}, std::chrono::seconds(30));
    REQUIRE(h.exit_code == 0);
    helps[cmd] = one_spaced(h.out);
  }
  for (int code : {0, 1, 2}) {
    const std::string meaning = readme_meaning(code);
    INFO("exit " << code << ": " << meaning);
    REQUIRE(meaning.size() > 20);
    for (const auto& [cmd, help] : helps) {
      INFO(cmd << " --help: " << help);
      CHECK(help.find(std::to_string(code) + " " + meaning) != std::string::npos);
    }
    CHECK(man.find(".B " + std::to_string(code) + " " + meaning) != std::string::npos);
  }
  // JSON's key for it is named alike everywhere.
  for (const auto& [cmd, help] : helps) {
    CHECK(help.find("incident.exit_code") != std::string::npos);
  }
  CHECK(man.find("incident.exit_code") != std::string::npos);
}

TEST_CASE("issue 42: one post-mortem, the same exit code in every format") {
  TempDir dir;
  const std::string empty = dir.path() + "/hang.rec";
  std::ofstream(empty).flush();
  const std::string garbage = dir.path() + "/notes.rec";
  std::ofstream(garbage) << "this is not a recording\n";
  const std::string rocgdb = std::string(ROCPLAY_SOURCE_DIR) + "/fixtures/rocgdb/";
  const std::vector<std::pair<std::string, int>> cases = {
      {rocgdb + "tp8-allgather-sync-spin/snapshot.mi", 1},
      {rocgdb + "dispatcher-nothing-active/snapshot.mi", 1}, // no GPU agents: an error finding
      {rocgdb + "healthy-progress/snapshot-1.mi", 0},
      {empty, 2},
      {garbage, 2},
  };
  for (const auto& [input, expected] : cases) {
    INFO(input);
    std::map<std::string, int> codes;
    for (const char* format : {"text", "json", "jsonl", "sarif"}) {
      const auto r = run_rocplay({"postmortem", "--no-progress", "--format", format, input});
      INFO(format << ": " << r.out << r.err);
      REQUIRE_FALSE(r.timed_out);
      codes[format] = r.exit_code;
      if (std::string(format) == "json") {
        CHECK(nlohmann::json::parse(r.out).at("incident").at("exit_code") == r.exit_code);
      }
      if (std::string(format) == "text" && expected != 2) {
        // A finding is called a verdict; a note or nothing is not.
        CHECK((r.out.rfind("VERDICT  [", 0) == 0) == (r.exit_code == 1));
      }
    }
    for (const auto& [format, code] : codes) {
      INFO(format);
      CHECK(code == expected);
    }
  }
}
