// dbgapi/ROCgdb diagnostics of a live debugger named with their next step
// (src/session/dbgapi_diagnostics.hpp), whatever prefix printed them.
#include "session/dbgapi_diagnostics.hpp"

#include <catch2/catch.hpp>

using namespace rocplay::session::detail;

TEST_CASE("known dbgapi diagnostics carry what happened and the next step") {
  auto busy = dbgapi_diagnostic(
      "amd-dbgapi: warning: At least one agent is busy (debugging may be enabled by another "
      "process)");
  REQUIRE(busy);
  CHECK(busy->fatal);
  CHECK(std::string(busy->next).find("HSA_TOOLS_LIB") != std::string::npos);
  const std::string text = explain(*busy, "At least one agent is busy");
  CHECK(text.find("debugger hook") != std::string::npos);
  CHECK(text.find("next: ") != std::string::npos);

  auto memory = dbgapi_diagnostic("rocm-dbgapi: warning: Per-queue memory reserved for the "
                                  "debugger is missing");
  REQUIRE(memory);
  CHECK(std::string(memory->what).find("driver") != std::string::npos);
  auto attach = dbgapi_diagnostic("warning: Could not attach to process 7711 (rc=-2)");
  REQUIRE(attach);
  CHECK(std::string(attach->next).find("CAP_SYS_PTRACE") != std::string::npos);
  CHECK(dbgapi_diagnostic("fatal error: queue_snapshot failed (rc=-12)"));
  CHECK(dbgapi_diagnostic("warning: architecture gfx1201 not supported"));
  CHECK(!dbgapi_diagnostic("warning: Error disabling address space randomization"));
}

TEST_CASE("GDB 17+ emoji prefixes are removed before the line is classified") {
  CHECK(without_emoji("\xE2\x9A\xA0\xEF\xB8\x8F warning: x") == "warning: x");
  CHECK(without_emoji("\xE2\x9D\x8C\xEF\xB8\x8F Undefined info command") ==
        "Undefined info command");
  CHECK(without_emoji("\xE2\x9A\xA0 warning: no selector") == "warning: no selector");
  CHECK(without_emoji("warning: plain") == "warning: plain");
  CHECK(dbgapi_diagnostic(without_emoji("\xE2\x9A\xA0\xEF\xB8\x8F At least one agent is busy")));
}
