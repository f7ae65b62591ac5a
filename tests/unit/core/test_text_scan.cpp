// The log readers' shared text and number helpers (src/core/text_scan.hpp): untrusted input,
// so every number is bounded by 64 bits and every malformed one is refused.
#include "core/text_scan.hpp"

#include <catch2/catch.hpp>

using namespace rocplay::text_scan;

TEST_CASE("numbers parse only when all of the text is one that fits", "[core][text]") {
  CHECK(parse_hex("0x7f20f5e534c4") == 0x7f20f5e534c4ull);
  CHECK(parse_hex("00007F20F5E534C4") == 0x7f20f5e534c4ull);
  CHECK(parse_hex("0xffffffffffffffff") == UINT64_MAX);
  CHECK_FALSE(parse_hex("0x1ffffffffffffffff")); // 65 bits
  CHECK_FALSE(parse_hex("0x"));
  CHECK_FALSE(parse_hex("0x12g"));
  CHECK_FALSE(parse_hex(" 12"));
  CHECK(parse_dec("18446744073709551615") == UINT64_MAX);
  CHECK_FALSE(parse_dec("18446744073709551616"));
  CHECK_FALSE(parse_dec("-1"));
  CHECK_FALSE(parse_dec("+1"));
  CHECK_FALSE(parse_dec(""));
  CHECK(parse_number("0x10") == 16u);
  CHECK(parse_number("010") == 10u); // no octal
  CHECK_FALSE(parse_number("12 "));
}

TEST_CASE("hex, trim, lower and sanitize", "[core][text]") {
  CHECK(hex(0) == "0x0");
  CHECK(hex(0x7f20f5e534c4) == "0x7f20f5e534c4");
  CHECK(hex(UINT64_MAX) == "0xffffffffffffffff");
  CHECK(trim(" \t\r\f\vword \t") == "word");
  CHECK(lower("AbC-9") == "abc-9");
  CHECK(sanitize("a\tb\x01\xff", 64, ' ') == "a b??");
  CHECK(sanitize("a\tb", 64, '?') == "a?b");
  CHECK(sanitize("abcdef", 3, ' ') == "abc...");
}
