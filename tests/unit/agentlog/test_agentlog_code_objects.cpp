// agent-log --code-objects: the saved code object of a fault group is opened and decoded (the
// fixture's object is the real gfx90a build of tests/codeobj/kernels.hip).
#include "rocplay/agentlog/agentlog.hpp"

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

using namespace rocplay;
using namespace rocplay::agentlog;

namespace {

Report analyze_trap_fixture(bool read_code_objects) {
  const std::string dir = std::string(ROCPLAY_SOURCE_DIR) + "/fixtures/agentlog/";
  std::ifstream in(dir + "trap_kernel_gfx90a.log", std::ios::binary);
  REQUIRE(in.good());
  std::ostringstream ss;
  ss << in.rdbuf();
  ParseOptions po;
  po.source = "trap_kernel_gfx90a.log";
  const auto log = parse(ss.str(), po);
  AnalyzeOptions ao;
  ao.code_object_dir = dir + "code-objects";
  for (const auto& e : std::filesystem::directory_iterator(ao.code_object_dir)) {
    ao.saved_code_objects.push_back(e.path().filename().string());
  }
  ao.read_code_objects = read_code_objects;
  return analyze({log}, ao);
}

} // namespace

TEST_CASE("agent-log --code-objects decodes the fault from the saved object and confirms the "
          "assert") {
  const auto report = analyze_trap_fixture(true);
  REQUIRE(report.groups.size() == 1);
  const auto& g = report.groups.front();
  REQUIRE(g.saved_file_found);
  REQUIRE(g.saved_object.has_value());
  const auto& v = *g.saved_object;
  INFO(v.problem);
  CHECK(v.problem.empty());
  CHECK(v.arch == "gfx90a");
  CHECK(v.function == "trap_kernel");
  CHECK(v.pc == 0x51a4u);
  CHECK(v.trap);
  CHECK(v.trap_address == 0x51a0u);
  CHECK(v.assert_confirmed);
  // The faulting instruction with the 16 before it (and what follows, to the function's end).
  REQUIRE(v.window.size() >= 17);
  const auto at_pc = std::find_if(v.window.begin(), v.window.end(),
                                  [](const auto& in) { return in.address == 0x51a4u; });
  REQUIRE(at_pc != v.window.end());
  CHECK(at_pc->text == "s_endpgm");
  CHECK(at_pc - v.window.begin() == 16);
  CHECK((at_pc - 1)->text == "s_trap 2");
  CHECK(v.kernel == "trap_kernel");
  REQUIRE(v.fit.has_value());
  CHECK(v.fit->arch == "gfx90a");
  CHECK(v.fit->waves == 8);
  // How the report shows it: tests/unit/report/test_agent_log_report.cpp.
}

TEST_CASE("agent-log without reading code objects keeps today's commands only") {
  const auto report = analyze_trap_fixture(false);
  REQUIRE(report.groups.size() == 1);
  CHECK(!report.groups.front().saved_object);
  CHECK(!report.groups.front().objdump_command.empty());
}
