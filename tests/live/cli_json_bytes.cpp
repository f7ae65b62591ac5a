// Reports are JSON, and JSON must be UTF-8, but what goes into a report need not be: file names
// and MI c-strings may carry any bytes. Every JSON output replaces them (U+FFFD); a strict dump
// used to throw and lose the whole report.
#include "cli_util.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <filesystem>

using namespace rocplay::testing;

TEST_CASE("rocplay postmortem writes valid JSON for a file name that is not UTF-8") {
  TempDir dir;
  const std::string name = dir.path() + "/rank\xff" + "0.mi";
  std::filesystem::copy_file(std::filesystem::path(ROCPLAY_SOURCE_DIR) /
                                 "fixtures/rocgdb/tp8-allgather-sync-spin/snapshot.mi",
                             name);
  for (const std::string format : {"json", "jsonl", "sarif"}) {
    CAPTURE(format);
    const CliRun r = run_rocplay({"postmortem", name, "--format", format, "--no-progress"});
    INFO(r.err);
    CHECK(r.exit_code == 1); // the fixture's findings
    CHECK(r.err.find("UTF-8") == std::string::npos);
    if (format == "jsonl") {
      const auto lines = json_lines(r.out);
      REQUIRE(lines.size() == 2);
      const std::string replaced = std::string("rank") + "\xef\xbf\xbd" + "0.mi"; // U+FFFD
      CHECK(lines[0]["path"].get<std::string>().find(replaced) != std::string::npos);
    } else {
      CHECK_NOTHROW(nlohmann::json::parse(r.out));
    }
  }
}
