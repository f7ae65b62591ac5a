// Every real recording in fixtures/ through `rocplay postmortem`, one at a time and in one batch:
// none may end in an internal error (exit 70) or a swallowed analysis failure, and the healthy
// two-rank recordings read as issue 40 wants (HARM where a GPU attach failed, nothing stuck where
// none did).
#include "cli_util.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

namespace fs = std::filesystem;
using rocplay::testing::run_rocplay;

namespace {

const fs::path kSweepRoot = fs::path(ROCPLAY_SOURCE_DIR) / "fixtures";

std::vector<std::string> real_recordings() {
  std::vector<std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(kSweepRoot)) {
    const auto ext = e.path().extension();
    if (e.is_regular_file() && (ext == ".rec" || ext == ".mi")) {
      out.push_back(e.path().string());
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

void require_read_without_internal_error(const rocplay::testing::CliRun& r) {
  CHECK_FALSE(r.timed_out);
  CHECK(r.exit_code != 70);
  CHECK(r.out.find("analysis failed") == std::string::npos);
  CHECK(r.err.find("internal error") == std::string::npos);
}

} // namespace

TEST_CASE("every real recording reads without an internal error, one at a time",
          "[live][cli][postmortem][sweep]") {
  const auto files = real_recordings();
  REQUIRE(files.size() >= 50);
  for (const auto& f : files) {
    INFO(f);
    const auto r = run_rocplay({"postmortem", f, "--color=never"});
    require_read_without_internal_error(r);
    CHECK(!r.out.empty());
  }
}

TEST_CASE("every real recording reads without an internal error, in one batch",
          "[live][cli][postmortem][sweep]") {
  const auto r =
      run_rocplay({"postmortem", kSweepRoot.string(), "--color=never"}, std::chrono::seconds(240));
  require_read_without_internal_error(r);
  CHECK(r.out.find("INCIDENT") != std::string::npos);
}

TEST_CASE("a healthy two-rank job whose GPU attach failed: the report leads with HARM",
          "[live][cli][postmortem][harm]") {
  const fs::path dir = kSweepRoot / "cuda-gdb" / "x2-healthy";
  for (const std::string stem : {"preload-default", "preload-jobs1"}) {
    INFO(stem);
    const auto text = run_rocplay({"postmortem", (dir / (stem + "-0.rec")).string(),
                                   (dir / (stem + "-1.rec")).string(), "--color=never"});
    require_read_without_internal_error(text);
    REQUIRE(text.out.rfind("HARM", 0) == 0);
    const auto first_lines = text.out.substr(0, text.out.find("INCIDENT"));
    CHECK(first_lines.find("rank 1") != std::string::npos);
    CHECK(first_lines.find("rank 0") == std::string::npos);
    CHECK(text.out.find("missing-rank") == std::string::npos);

    const auto json = run_rocplay({"postmortem", (dir / (stem + "-0.rec")).string(),
                                   (dir / (stem + "-1.rec")).string(), "--format", "json"});
    require_read_without_internal_error(json);
    const auto j = nlohmann::json::parse(json.out);
    REQUIRE(j.contains("incident"));
    REQUIRE(j["incident"]["harm"].size() == 1);
    CHECK(j["incident"]["harm"][0].get<std::string>().rfind("rank 1 ", 0) == 0);
  }
}

TEST_CASE("a healthy two-rank job looked at without harm: nothing stuck, no missing rank",
          "[live][cli][postmortem][harm]") {
  const fs::path dir = kSweepRoot / "cuda-gdb" / "x2-healthy";
  const auto r = run_rocplay({"postmortem", (dir / "nopreload-default-0.rec").string(),
                              (dir / "nopreload-default-1.rec").string(), "--format", "json"});
  require_read_without_internal_error(r);
  CHECK(r.exit_code == 0);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j["incident"]["harm"].empty());
  CHECK(j["incident"]["verdict"].is_null());
  const auto text = run_rocplay({"postmortem", (dir / "nopreload-default-0.rec").string(),
                                 (dir / "nopreload-default-1.rec").string(), "--color=never"});
  CHECK(text.out.find("HARM") == std::string::npos);
  CHECK(text.out.find("MOVING") != std::string::npos);
  CHECK(text.out.find("STUCK") == std::string::npos);
}
