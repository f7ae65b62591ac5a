// A post-mortem of a live look that took one sample (issue 40): a recording whose meta names the
// samples asked for is judged as the live run judged it, a collective's moment a warning.
#include "rocplay/postmortem/postmortem.hpp"

#include "../finding_of.hpp"
#include "../snapshot/support.hpp"

#include <catch2/catch.hpp>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

using namespace rocplay;

TEST_CASE("postmortem of a one-sample look whose meta names its samples judges it as live") {
  // The one-sample recordings with the meta key rocplay writes since (`"samples":1`): the
  // post-mortem says what the live run said, a warning, not an error.
  const auto dir =
      std::filesystem::temp_directory_path() / ("rocplay-one-sample-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  rocplay::postmortem::Options options;
  for (int r = 0; r < 2; ++r) {
    const auto rel = "cuda-gdb/x2-healthy/nopreload-s1-" + std::to_string(r) + ".rec";
    std::string text = test::read_file(test::fixture_path(rel));
    const auto at = text.find("# meta {");
    REQUIRE(at != std::string::npos);
    text.insert(at + 8, "\"samples\":1,");
    const auto path = dir / ("rank" + std::to_string(r) + ".rec");
    std::ofstream(path, std::ios::binary) << text;
    options.paths.push_back(path.string());
  }
  options.jobs = 1;
  std::vector<postmortem::InputResult> results;
  const auto summary =
      postmortem::run(options, [&](const postmortem::InputResult& r) { results.push_back(r); });
  std::filesystem::remove_all(dir);
  REQUIRE(results.size() == 2);
  for (const auto& r : results) {
    CHECK(r.one_live_sample);
    for (const auto& f : r.findings) {
      INFO(f.id << ": " << f.title);
      CHECK(f.severity <= Severity::Warning);
    }
  }
  REQUIRE(summary.events.size() == 1);
  const Finding* missing = test::finding_of(summary.events.front().findings, "missing-rank");
  REQUIRE(missing != nullptr);
  CHECK(missing->severity == Severity::Warning);
  CHECK(missing->rank == 1);
}
