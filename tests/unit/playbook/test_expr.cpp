// The condition language: parsing, positions of errors, and evaluation.
#include "core/text_scan.hpp"
#include "playbook/internal.hpp"
#include "scope.hpp"

#include <catch2/catch.hpp>

using namespace rocplay::playbook;
using rocplay::playbook::detail::evaluate;
using rocplay::playbook::detail::parse_expr;
using rocplay::playbook::detail::TextError;

namespace {

test::MapScope sample_scope() {
  test::MapScope s;
  s.values["pid"] = Value::integer(4242);
  s.values["debugger"] = Value::string("rocgdb");
  s.values["thread"] = Value::map({
      {"id", Value::integer(3)},
      {"function", Value::string("start_sync(int)")},
      {"file", Value::string("spin_target.cpp")},
      {"line", Value::integer(81)},
      {"pc", Value::address(0x401136)},
      {"name", Value::string("")},
  });
  s.values["agents"] = Value::map({
      {"class", Value::string("done")},
      {"results", Value::map({{"agents", Value::list({Value::map({{"id", Value::string("1.1")}}),
                                                      Value::map({{"id", Value::string("1.2")}})})},
                              {"current-agent-id", Value::string("1")}})},
  });
  s.mi_commands = {"agent-info", "queue-info"};
  return s;
}

bool holds(std::string_view text) {
  auto scope = sample_scope();
  return evaluate(*parse_expr(text), scope).truthy();
}

std::uint32_t error_offset(std::string_view text) {
  try {
    parse_expr(text);
  } catch (const TextError& e) {
    return e.offset;
  }
  FAIL("no error for: " << text);
  return 0;
}

} // namespace

TEST_CASE("conditions compare numbers, addresses and strings") {
  CHECK(holds("pid == 4242"));
  CHECK_FALSE(holds("pid != 4242"));
  CHECK(holds("pid > 100 and pid <= 4242"));
  CHECK(holds("thread.pc == 0x401136"));
  CHECK(holds("thread.pc > 4198000"));
  CHECK(holds("thread.line >= 81"));
  CHECK(holds("debugger == \"rocgdb\""));
  CHECK(holds("debugger == 'rocgdb'"));
  CHECK_FALSE(holds("debugger == \"gdb\""));
  CHECK(holds("debugger < \"zzz\""));
  // MI values are strings: "1" compares equal to 1 when the other side is a number.
  CHECK(holds("agents.results.current-agent-id == 1"));
  CHECK_FALSE(holds("agents.results.current-agent-id == 2"));
  CHECK(holds("-5 < 3"));
  CHECK(holds("-5 < 0x10"));
}

TEST_CASE("string operators, boolean logic and functions") {
  CHECK(holds("thread.function startswith \"start_sync\""));
  CHECK(holds("thread.file endswith \".cpp\""));
  CHECK(holds("thread.function contains \"sync\""));
  CHECK_FALSE(holds("thread.function contains \"end_sync\""));
  CHECK(holds("not (thread.line == 1) and (pid == 1 or pid == 4242)"));
  CHECK(holds("!false && true"));
  CHECK(holds("has_mi_command(agent-info)"));
  CHECK(holds("has_mi_command(-queue-info)"));
  CHECK(holds("has_mi_command(\"agent-info\")"));
  CHECK_FALSE(holds("has_mi_command(dispatch-info)"));
  CHECK(holds("defined(thread.function)"));
  CHECK_FALSE(holds("defined(thread.nothing)"));
  CHECK_FALSE(holds("defined(nothing)"));
  CHECK(holds("len(agents.results.agents) == 2"));
  CHECK(holds("agents.results.agents.1.id == \"1.2\""));
  CHECK(holds("agents.results contains \"agents\""));
  CHECK(holds("len(thread.name) == 0"));
}

TEST_CASE("undefined names and mismatched types are false, never an error") {
  CHECK_FALSE(holds("missing == 1"));
  CHECK(holds("missing == null"));
  CHECK_FALSE(holds("missing > 1"));
  CHECK_FALSE(holds("thread.function > 3"));
  CHECK_FALSE(holds("true == 1"));
  CHECK_FALSE(holds("thread.nothing.deeper == 1"));
}

TEST_CASE("syntax errors carry the offset of the problem") {
  CHECK(error_offset("pid = 3") == 4);
  CHECK(error_offset("pid == ") == 7);
  CHECK(error_offset("(pid == 3") == 9);
  CHECK(error_offset("pid == \"abc") == 7);
  CHECK(error_offset("pid == 3 4") == 9);
  CHECK(error_offset("has_mi_comand(agent-info)") == 0);
  CHECK(error_offset("thread. == 1") == 7);
  CHECK(error_offset("") == 0);
  CHECK(error_offset("and") == 0);
  try {
    parse_expr("has_mi_comand(agent-info)");
  } catch (const TextError& e) {
    CHECK(std::string(e.hint).find("has_mi_command") != std::string::npos);
  }
}

TEST_CASE("conditions are bounded") {
  std::string deep(100, '(');
  deep += "1";
  deep += std::string(100, ')');
  CHECK_THROWS_AS(parse_expr(deep), TextError);
  CHECK_THROWS_AS(parse_expr(std::string(5000, 'a')), TextError);
  std::string long_chain = "1";
  for (int i = 0; i < 200; ++i) {
    long_chain += " and 1";
  }
  // A long flat chain is fine: depth is nesting, not length.
  auto scope = sample_scope();
  CHECK(evaluate(*parse_expr(long_chain), scope).truthy());
}

TEST_CASE("edit distance suggestions") {
  using detail::nearest;
  CHECK(nearest("stpes", {"steps", "name", "always"}) == std::optional<std::string>("steps"));
  CHECK(nearest("fail_wehn", {"fail_when", "when"}) == std::optional<std::string>("fail_when"));
  CHECK_FALSE(nearest("zzzzzz", {"steps", "name"}).has_value());
  CHECK(text_scan::edit_distance("kitten", "sitting") == 3);
}
