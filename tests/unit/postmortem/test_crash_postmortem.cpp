// Crash evidence through the layers above src/crash: the verdict as a report renders it, and
// crash inputs read by a post-mortem beside transcripts (tests/unit/crash tests the readers).
#include "rocplay/crash/crash.hpp"
#include "rocplay/postmortem/postmortem.hpp"
#include "rocplay/report/crash.hpp"
#include "rocplay/report/report.hpp"

#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

using namespace rocplay;
namespace fs = std::filesystem;

namespace crash_postmortem_test {

const fs::path kCrash = fs::path(ROCPLAY_SOURCE_DIR) / "fixtures" / "crash";

crash::Evidence read_fixture(const std::string& rel) {
  const fs::path p = kCrash / rel;
  std::ifstream in(p, std::ios::binary);
  std::string head(64 * 1024, '\0');
  in.read(head.data(), static_cast<std::streamsize>(head.size()));
  head.resize(static_cast<std::size_t>(in.gcount()));
  const auto format = crash::detect(head, p.string());
  REQUIRE(format);
  in.clear();
  in.seekg(0);
  crash::ReadOptions o;
  o.source = p.string();
  return crash::read_stream(in, *format, o);
}

} // namespace crash_postmortem_test

using crash_postmortem_test::kCrash;

TEST_CASE("the four-rank crash verdict as text and SARIF") {
  crash::Joiner j;
  for (int pid = 4410; pid <= 4413; ++pid) {
    j.add(crash_postmortem_test::read_fixture("tp4-rank2-first/kernel_api_rank" +
                                              std::to_string(pid) + ".log"));
  }
  j.add(crash_postmortem_test::read_fixture("tp4-rank2-first/server_stderr.log"));
  const auto v = j.verdict();
  REQUIRE(!v.empty());
  std::ostringstream text;
  report::write_crash_verdict(text, v);
  CHECK(text.str().find("CRASH VERDICT") != std::string::npos);
  CHECK(text.str().find("crash-rank-shapes-differ") != std::string::npos);
  const auto sarif = report::to_sarif(v, "test");
  CHECK(sarif["runs"][0]["results"].size() == 2);
}

TEST_CASE("crash findings from bytes that are not UTF-8 render as JSON") {
  crash::ReadOptions o;
  o.source = "logs/dmesg_\xff.txt";
  o.limits.max_line_bytes = 120;
  const crash::Evidence ev =
      crash::read_text("[ 1203.118204] amdgpu 0000:83:00.0: amdgpu: [gfxhub] page fault (src_id:0 "
                       "ring:24 vmid:3 pasid:32770)\n"
                       "[ 1203.118210] amdgpu 00\xae\xae:83:00.0: amdgpu:  Process python pid 4411 "
                       "thread python pid 4411\n"
                       "[ 1203.118214] amdgpu 0000:83:00.0: amdgpu:   in page starting at address "
                       "0x00007f3a2c000000 from client 0x1b (UTCL2) \xe2\x82\xac\xe2\x82\xac\n",
                       o);
  const auto found = crash::findings(ev);
  CHECK(!found.empty());
  for (const auto& f : found) {
    CHECK_NOTHROW(report::finding_to_json(f).dump());
  }
}

TEST_CASE("postmortem reads crash evidence beside transcripts and joins a verdict") {
  postmortem::Options o;
  o.paths = {(kCrash / "tp4-rank2-first").string(), (kCrash / "level10").string(),
             (kCrash / "kernel-logs" / "dmesg-raw.txt").string()};
  o.jobs = 2;
  std::vector<postmortem::InputResult> results;
  const auto s =
      postmortem::run(o, [&](const postmortem::InputResult& r) { results.push_back(r); });
  CHECK(s.unreadable == 0);
  CHECK(s.inputs == 12); // 5 in tp4, 6 files under level10, 1 dmesg
  CHECK(s.partial == 1); // the cut-off dump
  REQUIRE(!s.crash.empty());
  CHECK(s.crash[0].id == crash::kCrashVerdict);
  CHECK(s.crash[0].details["first_rank"] == 2);
  CHECK(s.events.empty()); // crash inputs are not snapshots for the cross-rank heuristics
  std::size_t logs = 0;
  std::size_t dumps = 0;
  for (const auto& r : results) {
    logs += r.kind == postmortem::InputKind::CrashLog ? 1 : 0;
    dumps += r.kind == postmortem::InputKind::CrashDump ? 1 : 0;
  }
  CHECK(logs == 6);
  CHECK(dumps == 6);
}

TEST_CASE("a server log whose crash lines lie past its first 64 KiB is still read") {
  const fs::path dir = fs::temp_directory_path() / ("rocplay-crash-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::string log;
  while (log.size() < 200 * 1024) {
    log += "INFO 03-02 14:07:00 [scheduler.py:1021] Decode batch. #running-req: 32\n";
  }
  log += "RuntimeError: HIP error: an illegal memory access was encountered\n";
  std::ofstream(dir / "server.log") << log;
  postmortem::Options o;
  o.paths = {dir.string()};
  std::vector<postmortem::InputResult> results;
  const auto s =
      postmortem::run(o, [&](const postmortem::InputResult& r) { results.push_back(r); });
  REQUIRE(results.size() == 1);
  CHECK(results[0].kind == postmortem::InputKind::CrashLog);
  CHECK(results[0].warnings.empty()); // not told it lacks agent dumps
  REQUIRE(!results[0].findings.empty());
  CHECK(results[0].findings[0].id == crash::kGpuError);
  REQUIRE(!s.crash.empty());
  CHECK(s.crash[0].details["fault"]["name"] == "hipErrorIllegalAddress");
  std::error_code ec;
  fs::remove_all(dir, ec);
}
