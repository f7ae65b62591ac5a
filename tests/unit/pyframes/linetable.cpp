// The location-table decoders against real code objects: fixtures/pyframes/linetables-3.X.json
// hold tables of CPython 3.10-3.13's own code objects (threading, json.decoder) with the line
// each range of code has by code.co_lines() of that interpreter (tests/targets/py_linetables.py).
// Every code unit of every range must decode to CPython's line. fixtures/pyframes/
// exception-tables-3.X.json (tests/targets/py_exception_tables.py) hold exception tables of 3.11
// and 3.13-3.15 code objects with the entries CPython's dis reads from them.
#include "rocplay/pyframes/pyframes.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <fstream>
#include <map>

using namespace rocplay::pyframes;

namespace {

nlohmann::json fixture(const std::string& name) {
  std::ifstream in(std::string(ROCPLAY_SOURCE_DIR) + "/fixtures/pyframes/" + name);
  REQUIRE(in);
  return nlohmann::json::parse(in);
}

std::vector<std::uint8_t> unhex(const std::string& hex) {
  std::vector<std::uint8_t> out;
  for (std::size_t i = 0; i + 1 < hex.size(); i += 2) {
    out.push_back(static_cast<std::uint8_t>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  }
  return out;
}

// Checks every code unit of every range; returns how many were checked.
std::size_t check_all(const nlohmann::json& j, bool v310) {
  std::size_t checked = 0;
  for (const auto& t : j["tables"]) {
    const auto table = unhex(t["linetable"].get<std::string>());
    const std::int64_t first = t["firstlineno"].get<std::int64_t>();
    for (const auto& r : t["lines"]) {
      const std::int64_t start = r[0].get<std::int64_t>();
      const std::int64_t end = r[1].get<std::int64_t>();
      const std::optional<std::int64_t> want =
          r[2].is_null() ? std::nullopt : std::optional<std::int64_t>(r[2].get<std::int64_t>());
      for (std::int64_t byte = start; byte < end; byte += 2) {
        const auto got = v310 ? line_310(table, first, byte) : line_311(table, first, byte / 2);
        INFO(t["name"].get<std::string>() << " byte " << byte);
        REQUIRE(got == want);
        ++checked;
      }
    }
  }
  return checked;
}

} // namespace

TEST_CASE("3.11+ location tables decode to CPython's own lines, every code unit") {
  for (const char* v : {"3.11", "3.12", "3.13"}) {
    INFO("CPython " << v);
    const auto j = fixture(std::string("linetables-") + v + ".json");
    CHECK(check_all(j, false) > 1000);
  }
}

TEST_CASE("3.10 line tables decode to CPython's own lines, every instruction") {
  const auto j = fixture("linetables-3.10.json");
  CHECK(check_all(j, true) > 1000);
}

TEST_CASE("location tables: a frame not started is on its first line, bad tables end cleanly") {
  const std::vector<std::uint8_t> none;
  CHECK(line_311(none, 7, -1) == 7);
  CHECK_FALSE(line_311(none, 7, 0).has_value());
  // An entry's first byte must have its top bit set.
  const std::vector<std::uint8_t> bad = {0x01, 0x02};
  CHECK_FALSE(line_311(bad, 1, 0).has_value());
  // A long-form entry cut in its varints.
  const std::vector<std::uint8_t> cut = {0xF0, 0x42};
  CHECK_FALSE(line_311(cut, 1, 0).has_value());
  // Line deltas that walk past what CPython's int holds.
  std::vector<std::uint8_t> huge;
  for (int i = 0; i < 200; ++i) {
    huge.insert(huge.end(), {0xE8, 0x7E, 0x7F, 0x7F, 0x7F, 0x7F, 0x3F}); // +2^32-ish each
  }
  CHECK_FALSE(line_311(huge, 1, 199).has_value());
  // 3.10: -128 is "no line"; an odd trailing byte is ignored.
  const std::vector<std::uint8_t> t310 = {4, 1, 4, 0x80, 4, 2, 9};
  CHECK(line_310(t310, 10, 0) == 11);
  CHECK_FALSE(line_310(t310, 10, 4).has_value());
  CHECK(line_310(t310, 10, 8) == 13);
  CHECK_FALSE(line_310(t310, 10, 12).has_value());
}

TEST_CASE("text from the target's memory is cut, valid UTF-8 and one line") {
  CHECK(clean_text("model_runner.py", 1024) == "model_runner.py");
  CHECK(clean_text("a\nb\tc", 1024) == "a?b?c");
  CHECK(clean_text("\xff\xfe", 1024) == "??");
  CHECK(clean_text("\xc3\xa9t\xc3\xa9", 1024) == "\xc3\xa9t\xc3\xa9");
  CHECK(clean_text("\xc3\xa9t\xc3\xa9", 4) == "\xc3\xa9t"); // never half a character
  CHECK(clean_text("\xed\xa0\x80", 1024) == "???");         // a surrogate
  CHECK(clean_text("\xc0\xaf", 1024) == "??");              // an overlong '/'
}

TEST_CASE(
    "3.11+ exception tables: the handler's depth at every code unit, as CPython's dis reads") {
  for (const char* version : {"3.11", "3.13", "3.14", "3.15"}) {
    const auto j = fixture(std::string("exception-tables-") + version + ".json");
    REQUIRE(j["tables"].size() > 30);
    std::size_t covered = 0;
    for (const auto& t : j["tables"]) {
      const auto table = unhex(t["table"].get<std::string>());
      std::map<std::int64_t, std::uint32_t> want;
      for (const auto& e : t["entries"]) {
        for (std::int64_t unit = e[0]; unit < e[1].get<std::int64_t>(); ++unit) {
          want[unit] = e[2].get<std::uint32_t>();
        }
      }
      for (std::int64_t unit = -1; unit <= t["units"].get<std::int64_t>(); ++unit) {
        INFO(version << " " << t["name"].get<std::string>() << " unit " << unit);
        const auto it = want.find(unit);
        REQUIRE(handler_depth(table, unit) ==
                (it == want.end() ? std::nullopt : std::optional<std::uint32_t>(it->second)));
        covered += it != want.end() ? 1 : 0;
      }
    }
    CHECK(covered > 500);
  }
  // The generator's own two nested `with` blocks come first.
  const auto j = fixture("exception-tables-3.11.json");
  CHECK(j["tables"][0]["name"] == "nested_with");
}

TEST_CASE("exception tables: malformed or cut tables give no depth, never a read past the end") {
  const std::vector<std::uint8_t> good = unhex("83052d03880116058a0c2d03"); // 3 entries (3.11)
  CHECK(handler_depth(good, 5) == 1U);
  CHECK(handler_depth(good, 8) == 2U);
  CHECK(handler_depth(good, 9) == std::nullopt);
  CHECK(handler_depth(good, 12) == 1U);
  CHECK(handler_depth({}, 0) == std::nullopt);
  for (std::size_t cut = 1; cut < good.size(); ++cut) {
    const std::span<const std::uint8_t> part(good.data(), cut);
    const auto got = handler_depth(part, 12);
    CHECK((got == std::nullopt || got == 1U)); // the third entry, whole or not at all
  }
  // Not starting an entry (bit 7 clear), and a varint that never ends.
  CHECK(handler_depth(unhex("03052d03"), 3) == std::nullopt);
  CHECK(handler_depth(unhex("c3ffffffffffffffffffffff"), 3) == std::nullopt);
}
