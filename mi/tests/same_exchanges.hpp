// A check shared by the mi tests and the live tests (tests/live/session_attach.cpp): the first
// `count` exchanges read back from a recording are the ones the session assembled, byte for byte
// (command, token, notes, times, each record's line).
#pragma once

#include "rocplay/mi/exchange.hpp"

#include <catch2/catch.hpp>

#include <cstddef>
#include <vector>

namespace rocplay::mi::testing {

inline void check_same_exchanges(const std::vector<Exchange>& live,
                                 const std::vector<Exchange>& replay, std::size_t count) {
  REQUIRE(live.size() >= count);
  REQUIRE(replay.size() >= count);
  for (std::size_t i = 0; i < count; ++i) {
    INFO("exchange " << i << ": `" << live[i].command << "`");
    CHECK(replay[i].command == live[i].command);
    CHECK(replay[i].token == live[i].token);
    CHECK(replay[i].notes == live[i].notes);
    CHECK(replay[i].sent_at == live[i].sent_at);
    CHECK(replay[i].done_at == live[i].done_at);
    REQUIRE(replay[i].records.size() == live[i].records.size());
    for (std::size_t j = 0; j < live[i].records.size(); ++j) {
      CHECK(replay[i].records[j].line() == live[i].records[j].line());
    }
  }
}

} // namespace rocplay::mi::testing
