// The run section of a playbook run's report (JSON and text), over a replayed gdb session
// (fixtures/playbook/spin-gdb.rec): the playbook fills a RunResult, the report renders it.
#include "../playbook/replay_driver.hpp"
#include "rocplay/report/run.hpp"

#include <catch2/catch.hpp>

#include <sstream>

using namespace rocplay;
using namespace rocplay::playbook;

namespace {

const std::string& recording() {
  return test::spin_gdb_recording();
}

RunResult replay(const Playbook& pb, test::ReplayDriver& driver) {
  RunOptions ro;
  ro.pid = 24224;
  return run(pb, driver, ro);
}

Playbook user(const std::string& yaml) {
  return load(yaml, "unit.yaml", LoadOptions{});
}

} // namespace

TEST_CASE("the run's report says unsafe commands were allowed and which ran") {
  test::ReplayDriver driver(recording());
  LoadOptions lo;
  lo.allow_unsafe_commands = true;
  const auto pb = load("steps:\n  - threads\n  - cli: info threads\n", "unit.yaml", lo);
  const auto r = replay(pb, driver);
  CHECK(r.unsafe_commands_allowed);
  CHECK(r.unsafe_commands_run.empty()); // `info threads` needed no flag
  const auto j = report::run_section_to_json(r);
  CHECK(j.at("unsafe_commands") ==
        nlohmann::json({{"allowed", true}, {"ran", nlohmann::json::array()}}));
  std::ostringstream text;
  report::write_run_section_text(text, r);
  CHECK(text.str().find("Unsafe commands: allowed by --allow-unsafe-commands; none ran") !=
        std::string::npos);
}

TEST_CASE("the run's report: JSON and text") {
  test::ReplayDriver driver(recording());
  const auto r = replay(user("steps:\n  - threads\n  - mi: -no-such-command\n    name: bad\n"
                             "    on_error: continue\n"),
                        driver);
  const auto j = report::run_section_to_json(r);
  CHECK(j.at("playbook") == "unit");
  CHECK(j.at("pid") == 24224);
  CHECK(j.at("debugger").at("kind") == "gdb");
  CHECK(j.at("target").at("detached") == true);
  const auto& steps = j.at("steps");
  REQUIRE(steps.size() == 4); // implicit attach, threads, bad, implicit detach
  CHECK(steps[0].at("name") == "attach (implicit)");
  CHECK(steps[1].at("kind") == "threads");
  CHECK(steps[1].at("commands") == nlohmann::json::array({"-thread-info"}));
  CHECK(steps[2].at("status") == "ignored");
  CHECK(steps[2].at("position") == "unit.yaml:3:5");
  CHECK(steps[3].at("always") == true);
  CHECK(j.at("exit_code") == static_cast<int>(r.exit_code()));
  std::ostringstream text;
  report::write_run_section_text(text, r);
  const std::string t = text.str();
  CHECK(t.find("Playbook unit on pid 24224 with gdb") != std::string::npos);
  CHECK(t.find("ignored") != std::string::npos);
  CHECK(t.find("bad: Undefined MI command: no-such-command") != std::string::npos);
}
