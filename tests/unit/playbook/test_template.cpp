// `${...}` substitution: integers bare, strings quoted or refused, never a second command.
#include "playbook/internal.hpp"
#include "scope.hpp"

#include <catch2/catch.hpp>

using namespace rocplay::playbook;
using detail::parse_template;
using detail::Quoting;
using detail::render;
using detail::TextError;

namespace {

test::MapScope scope() {
  test::MapScope s;
  s.values["pid"] = Value::integer(4242);
  s.values["pc"] = Value::address(0x7f0012345678);
  s.values["word"] = Value::string("start_sync");
  s.values["spaced"] = Value::string("a b\"c\\");
  s.values["newline"] = Value::string("bt\nshell id");
  s.values["cr"] = Value::string("bt\rshell id");
  s.values["flag"] = Value::boolean(true);
  s.values["list"] = Value::list({Value::integer(1)});
  s.values["thread"] = Value::map({{"id", Value::integer(7)}, {"name", Value::string("w0")}});
  return s;
}

std::string as_mi(std::string_view text) {
  auto s = scope();
  return render(parse_template(text, {}), s, Quoting::Mi);
}
std::string as_cli(std::string_view text) {
  auto s = scope();
  return render(parse_template(text, {}), s, Quoting::Cli);
}

} // namespace

TEST_CASE("integers and addresses go in bare") {
  CHECK(as_mi("-target-attach ${pid}") == "-target-attach 4242");
  CHECK(as_cli("info line *${pc}") == "info line *0x7f0012345678");
  CHECK(as_mi("-thread-select ${thread.id}") == "-thread-select 7");
  CHECK(as_cli("thread ${thread.id}") == "thread 7");
  CHECK(as_mi("-x ${flag}") == "-x 1");
}

TEST_CASE("strings are MI c-strings in MI arguments") {
  CHECK(as_mi("-symbol-info-functions --name ${word}") ==
        "-symbol-info-functions --name \"start_sync\"");
  CHECK(as_mi("-data-evaluate-expression ${spaced}") ==
        "-data-evaluate-expression \"a b\\\"c\\\\\"");
}

TEST_CASE("inside an MI c-string or a console command, strings must be plain words") {
  CHECK(as_mi("-interpreter-exec console \"thread name ${thread.name}\"") ==
        "-interpreter-exec console \"thread name w0\"");
  CHECK(as_cli("info symbol ${word}") == "info symbol start_sync");
  CHECK_THROWS_AS(as_cli("print ${spaced}"), TextError);
  CHECK_THROWS_AS(as_mi("-interpreter-exec console \"print ${spaced}\""), TextError);
}

TEST_CASE("newlines and control bytes are refused everywhere") {
  CHECK_THROWS_AS(as_mi("-data-evaluate-expression ${newline}"), TextError);
  CHECK_THROWS_AS(as_mi("-data-evaluate-expression ${cr}"), TextError);
  CHECK_THROWS_AS(as_cli("echo ${newline}"), TextError);
  CHECK_THROWS_AS(parse_template("-thread-info\n-gdb-exit", {}), TextError);
}

TEST_CASE("undefined names, lists and bad references fail with an offset") {
  try {
    as_cli("info line *${nothing}");
    FAIL("no error");
  } catch (const TextError& e) {
    CHECK(e.offset == 11);
    CHECK(std::string(e.what()).find("${nothing}") != std::string::npos);
  }
  CHECK_THROWS_AS(as_cli("p ${list}"), TextError);
  CHECK_THROWS_AS(as_cli("p ${thread}"), TextError);
  try {
    parse_template("p ${thread.}", {});
    FAIL("no error");
  } catch (const TextError& e) {
    CHECK(e.offset == 11);
  }
  CHECK_THROWS_AS(parse_template("p ${pid", {}), TextError);
  CHECK_THROWS_AS(parse_template("p ${1x}", {}), TextError);
  CHECK_THROWS_AS(parse_template("p ${a b}", {}), TextError);
}

TEST_CASE("$${ is a literal ${, and a lone $ is left alone") {
  CHECK(as_cli("echo $${pid}") == "echo ${pid}");
  CHECK(as_cli("info line *$pc") == "info line *$pc");
  auto t = parse_template("x ${a.b.0} y", {});
  REQUIRE(t.pieces.size() == 3);
  CHECK(t.pieces[1].path == std::vector<std::string>{"a", "b", "0"});
}
