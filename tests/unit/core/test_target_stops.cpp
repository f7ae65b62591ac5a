// The target's stops as a recording keeps them (rocplay/core/target_stops.hpp): written, read
// back, bounded, and summed within a window.
#include "rocplay/core/target_stops.hpp"

#include <catch2/catch.hpp>

using namespace rocplay;

TEST_CASE("target stops: notes read back as written, split to stay small") {
  StopIntervals stops;
  for (int i = 0; i < 500; ++i) {
    stops.emplace_back(i * 1.0 + 0.25, i * 1.0 + 0.5);
  }
  const auto notes = target_stops_notes(stops);
  REQUIRE(notes.size() > 1);
  StopIntervals back;
  for (const auto& n : notes) {
    CHECK(n.size() < 3'100);
    CHECK(parse_target_stops_note(n, back));
  }
  REQUIRE(back.size() == stops.size());
  CHECK(back.front().first == Approx(0.25));
  CHECK(back.back().second == Approx(499.5));
  CHECK(stopped_within(back, 0, 2.3) == Approx(0.25 + 0.25 + 0.05));
  CHECK(stopped_within(back, 0.4, 1.3) == Approx(0.1 + 0.05));
  CHECK(target_stops_notes({}).empty());
}

TEST_CASE("target stops: other notes and garbled ones") {
  const std::string head = "target stopped (its main thread's state, read every millisecond): ";
  StopIntervals stops;
  CHECK_FALSE(parse_target_stops_note("sample 2: stop began at 1.0 s", stops));
  CHECK(parse_target_stops_note(head + "1.0-2.0 3.0-2.5 4.0-5.0", stops));
  REQUIRE(stops.size() == 1); // an interval that ends before it begins ends the note
  stops.clear();
  CHECK(parse_target_stops_note(head + "1.0-2.0 -3.0-4.0", stops));
  CHECK(stops.size() == 1);
  stops.clear();
  CHECK(parse_target_stops_note(head + "1.0-2.0x 3.0-4.0", stops));
  CHECK(stops.size() == 1);
  stops.clear();
  CHECK(parse_target_stops_note(head + "1-2 3-4 5-6", stops, 2));
  CHECK(stops.size() == 2); // bounded
  stops.clear();
  CHECK(parse_target_stops_note(head + "nan-inf 1e400-1e401", stops));
  CHECK(stops.empty());
  CHECK(parse_target_stops_note(head + "1.0-inf", stops));
  CHECK(stops.empty()); // never an endless stop
}
