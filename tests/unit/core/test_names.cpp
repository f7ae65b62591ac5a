// Enum names from one table each (rocplay/core/names.hpp), and the core enums' names: the strings
// JSON reports, SARIF, recordings and playbooks carry, written out here so a changed name fails.
#include "rocplay/core/debugger.hpp"
#include "rocplay/core/fault.hpp"
#include "rocplay/core/finding.hpp"
#include "rocplay/core/names.hpp"
#include "rocplay/core/source.hpp"

#include <catch2/catch.hpp>

#include <string>

using namespace rocplay;

namespace {

enum class Colour : std::uint8_t { Red, Green, Blue };
constexpr NameTable<Colour, 3> kColours{{
    {Colour::Red, "red"},
    {Colour::Green, "green"},
    {Colour::Blue, "blue"},
}};
static_assert(names_cover(kColours, Colour::Blue));
static_assert(name_of(kColours, Colour::Green) == "green");
static_assert(value_of(kColours, "blue") == Colour::Blue);
static_assert(!value_of(kColours, "Blue"));

// What names_cover refuses: a missing row, rows out of order, a name twice, a wrong last.
constexpr NameTable<Colour, 2> kShort{{{Colour::Red, "red"}, {Colour::Green, "green"}}};
static_assert(!names_cover(kShort, Colour::Blue));
static_assert(names_cover(kShort, Colour::Green));
constexpr NameTable<Colour, 3> kSwapped{{
    {Colour::Green, "green"},
    {Colour::Red, "red"},
    {Colour::Blue, "blue"},
}};
static_assert(!names_cover(kSwapped, Colour::Blue));
constexpr NameTable<Colour, 3> kTwice{{
    {Colour::Red, "red"},
    {Colour::Green, "red"},
    {Colour::Blue, "blue"},
}};
static_assert(!names_cover(kTwice, Colour::Blue));
constexpr NameTable<Colour, 3> kSameValue{{
    {Colour::Red, "red"},
    {Colour::Red, "green"},
    {Colour::Blue, "blue"},
}};
static_assert(!names_cover(kSameValue, Colour::Blue));

} // namespace

TEST_CASE("names: name_of and value_of are inverses over a table", "[names]") {
  for (const auto& [value, name] : kColours) {
    CHECK(name_of(kColours, value) == name);
    CHECK(value_of(kColours, name) == value);
    CHECK(value_of(kColours, name_of(kColours, value)) == value);
  }
}

TEST_CASE("names: unknown text is nullopt, never a guess", "[names]") {
  for (std::string_view text : {"", "re", "reds", "RED", " red", "red ", "purple"}) {
    INFO(std::string(text));
    CHECK(!value_of(kColours, text));
  }
}

TEST_CASE("names: a value no row names gets the fallback", "[names]") {
  const auto bad = static_cast<Colour>(7);
  CHECK(name_of(kColours, bad).empty());
  CHECK(name_of(kColours, bad, "?") == "?");
  // A table that does not pass names_cover is scanned, not indexed.
  CHECK(name_of(kSwapped, Colour::Red) == "red");
  CHECK(name_of(kShort, Colour::Blue, "none") == "none");
}

TEST_CASE("names: the core enums keep their names, and each parses back", "[names]") {
  SECTION("Severity (JSON `severity`, SARIF level mapping)") {
    constexpr NameTable<Severity, 4> expected{{{Severity::Info, "info"},
                                               {Severity::Warning, "warning"},
                                               {Severity::Error, "error"},
                                               {Severity::Critical, "critical"}}};
    for (const auto& [value, name] : expected) {
      CHECK(to_string(value) == name);
      CHECK(severity_from_string(name) == value);
    }
    CHECK(!severity_from_string("Warning"));
    CHECK(!severity_from_string("fatal"));
  }
  SECTION("DebuggerKind (playbook `requires`, recording banners, reports)") {
    constexpr NameTable<DebuggerKind, 4> expected{{{DebuggerKind::Unknown, "unknown"},
                                                   {DebuggerKind::Gdb, "gdb"},
                                                   {DebuggerKind::RocGdb, "rocgdb"},
                                                   {DebuggerKind::CudaGdb, "cuda-gdb"}}};
    for (const auto& [value, name] : expected) {
      CHECK(to_string(value) == name);
      CHECK(debugger_kind_from_string(name) == value);
    }
    CHECK(debugger_kind_from_string("lldb") == DebuggerKind::Unknown);
    CHECK(debugger_kind_from_string("") == DebuggerKind::Unknown);
  }
  SECTION("FaultKind (snapshot JSON `kind`, finding details)") {
    constexpr NameTable<FaultKind, 8> expected{
        {{FaultKind::MemoryViolation, "memory-violation"},
         {FaultKind::Assert, "assert"},
         {FaultKind::IllegalInstruction, "illegal-instruction"},
         {FaultKind::Arithmetic, "arithmetic"},
         {FaultKind::BusError, "bus-error"},
         {FaultKind::Trap, "trap"},
         {FaultKind::Exception, "exception"},
         {FaultKind::Signal, "signal"}}};
    for (const auto& [value, name] : expected) {
      CHECK(to_string(value) == name);
      CHECK(fault_kind_from_string(name) == value);
    }
    CHECK(!fault_kind_from_string("segfault"));
  }
  SECTION("RankRule (the `rank_rule` the reports print)") {
    using source::RankRule;
    constexpr NameTable<RankRule, 8> expected{{{RankRule::None, ""},
                                               {RankRule::Pattern, "--rank-from"},
                                               {RankRule::Meta, "meta"},
                                               {RankRule::Environment, "environment"},
                                               {RankRule::Prefix, "launcher prefix"},
                                               {RankRule::FileName, "file name"},
                                               {RankRule::Device, "device"},
                                               {RankRule::Order, "input order"}}};
    static_assert(names_cover(expected, RankRule::Order));
    for (const auto& [value, name] : expected) {
      CHECK(source::to_string(value) == name);
      CHECK(value_of(expected, source::to_string(value)) == value);
    }
  }
}
