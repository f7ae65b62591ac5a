// core/read_chunks.hpp: the chunk loop the transcript, crash-log and agent-log readers share.
#include "core/read_chunks.hpp"

#include <catch2/catch.hpp>

#include <array>
#include <sstream>
#include <string>
#include <vector>

using rocplay::read_chunks;

TEST_CASE("read_chunks hands over the stream whole, in buffer-sized pieces, none empty") {
  std::istringstream in("0123456789abcdefghij-");
  std::array<char, 4> buffer{};
  std::vector<std::string> pieces;
  read_chunks(in, buffer, [&](std::string_view piece) { pieces.emplace_back(piece); });
  CHECK(pieces == std::vector<std::string>{"0123", "4567", "89ab", "cdef", "ghij", "-"});
  CHECK_FALSE(in.bad());

  std::istringstream exact("01234567");
  pieces.clear();
  read_chunks(exact, buffer, [&](std::string_view piece) { pieces.emplace_back(piece); });
  CHECK(pieces == std::vector<std::string>{"0123", "4567"}); // no empty piece at the end

  std::istringstream empty;
  pieces.clear();
  read_chunks(empty, buffer, [&](std::string_view piece) { pieces.emplace_back(piece); });
  CHECK(pieces.empty());
}

TEST_CASE("read_chunks stops at a stream that has already failed") {
  std::istringstream in("data");
  in.setstate(std::ios::badbit);
  std::array<char, 4> buffer{};
  bool called = false;
  read_chunks(in, buffer, [&](std::string_view) { called = true; });
  CHECK_FALSE(called);
  CHECK(in.bad());
}
