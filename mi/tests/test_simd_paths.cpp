// The parser has one item scanner per instruction set (detail::SimdPath). Every path this CPU
// runs must read every line exactly as the baseline does: the same records, values and errors,
// on the fixtures and on lines damaged at every kind of byte that matters to MI.
#include "rocplay/mi/parser.hpp"

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

using namespace rocplay::mi;
namespace fs = std::filesystem;

namespace {

std::vector<std::string> fixture_lines() {
  std::vector<std::string> lines;
  for (const auto& entry :
       fs::recursive_directory_iterator(fs::path(ROCPLAY_SOURCE_DIR) / "fixtures")) {
    const std::string ext = entry.path().extension().string();
    if (!entry.is_regular_file() || (ext != ".mi" && ext != ".rocplay")) {
      continue;
    }
    std::ifstream in(entry.path(), std::ios::binary);
    std::string line;
    while (std::getline(in, line)) {
      // Recordings carry a `< T ` prefix; the MI is what follows it.
      if (line.rfind("< ", 0) == 0 && line.find(' ', 2) != std::string::npos) {
        line = line.substr(line.find(' ', 2) + 1);
      }
      lines.push_back(line);
    }
  }
  return lines;
}

std::string describe(detail::SimdPath path, std::string_view line, const Limits& limits) {
  NodeTable nodes;
  ParseError error;
  const RecordView r = detail::parse_line(path, line, 1, nodes, error, limits);
  std::string out(to_string(r.kind()));
  out += '|';
  out += r.token() ? std::to_string(*r.token()) : "";
  out += '|';
  out += r.klass();
  out += '|';
  out += r.is_error() ? r.error().message() : r.results().to_mi();
  return out;
}

// Checks every path against the baseline on `line`; returns how many lines disagreed.
int disagreements(std::string_view line, const Limits& limits = {}) {
  const std::string expected = describe(detail::SimdPath::Baseline, line, limits);
  int bad = 0;
  for (const detail::SimdPath path : detail::simd_paths()) {
    const std::string got = describe(path, line, limits);
    if (got != expected) {
      UNSCOPED_INFO("path " << static_cast<int>(path) << " on `" << line
                            << "`:\n  baseline: " << expected << "\n  this:     " << got);
      ++bad;
    }
  }
  return bad;
}

} // namespace

TEST_CASE("the baseline path is always there", "[simd]") {
  const auto paths = detail::simd_paths();
  REQUIRE_FALSE(paths.empty());
  CHECK(paths.front() == detail::SimdPath::Baseline);
}

TEST_CASE("every SIMD path reads every fixture line as the baseline does", "[simd][fixtures]") {
  const auto lines = fixture_lines();
  REQUIRE(lines.size() > 1000);
  int bad = 0;
  for (const auto& line : lines) {
    bad += disagreements(line);
  }
  CHECK(bad == 0);
}

TEST_CASE("every SIMD path agrees on damaged lines", "[simd]") {
  // Lines long enough for the 32-byte windows, with names, strings, escapes and nesting.
  const std::vector<std::string> seeds = {
      R"mi(^done,threads=[{id="1",target-id="Thread 0x7ffff7d8a740 (LWP 4242)",frame={level="0",addr="0x00007ffff7e5e7fd",func="__GI___clock_nanosleep",args=[],file="../sysdeps/unix/sysv/linux/clock_nanosleep.c",fullname="/build/glibc/sysdeps/unix/sysv/linux/clock_nanosleep.c",line="78",arch="i386:x86-64"},state="stopped",core="3"}],current-thread-id="1")mi",
      R"mi(~"Breakpoint 1, \"main\" (argc=1, argv=0x7fffffffe0b8) at \\tmp\\a.c:3\n\t\033[0m\r\001\377")mi",
      R"mi(*stopped,reason="breakpoint-hit",disp="keep",bkptno="1",frame={addr="0x0000555555555131",func="main",args=[{name="argc",value="1"},{name="argv",value="0x7fffffffe0b8"}]},thread-id="1",stopped-threads="all",a-very-long-result-name-well-past-thirty-two-bytes="x")mi",
      R"mi(^done,bkpt={number="1",type="breakpoint"},{number="1.1",enabled="y"},list=["a","b",{c="d"},["e"]],empty={},none=[])mi",
  };
  const std::string hazards = std::string("\"\\{}[],= \t/_-.09azAZ\x01\x7f\x80\xff", 24);
  int bad = 0;
  int lines = 0;
  for (const auto& seed : seeds) {
    for (std::size_t at = 0; at <= seed.size(); ++at) {
      bad += disagreements(std::string_view(seed).substr(0, at)); // cut short
      ++lines;
      if (at == seed.size()) {
        break;
      }
      for (const char c : hazards) {
        std::string damaged = seed;
        damaged[at] = c;
        bad += disagreements(damaged);
        std::string inserted = seed;
        inserted.insert(at, 1, c);
        bad += disagreements(inserted);
        lines += 2;
      }
    }
  }
  CHECK(lines > 20000);
  CHECK(bad == 0);
}

TEST_CASE("every SIMD path agrees on names and strings of every length", "[simd]") {
  // The 32-byte window: a name's '=' and quotes land on each of its bytes and past its end.
  int bad = 0;
  for (std::size_t name = 1; name <= 40; ++name) {
    for (std::size_t text = 0; text <= 40; ++text) {
      const std::string item = std::string(name, 'n') + "=\"" + std::string(text, 't') + "\"";
      const std::string line =
          "^done," + item + ",next={a=\"1\"},last=\"" + std::string(40, 'x') + "\"";
      bad += disagreements(line);
      bad += disagreements("^done,l=[{" + item + "}," + item + "]," + item);
    }
  }
  CHECK(bad == 0);
}

TEST_CASE("every SIMD path stops at the same limits", "[simd][limits]") {
  const std::string deep = "^done,a=" + std::string(40, '[') + "\"x\"" + std::string(40, ']');
  const std::string bare = "^done,a=[" + std::string(300, 'x') + "]"; // names, no '='
  std::string many = "^done,v=[";
  for (int i = 0; i < 400; ++i) {
    many += (i ? ",\"" : "\"") + std::to_string(i) + "\"";
  }
  many += "]";
  Limits small;
  small.max_depth = 8;
  small.max_values_per_record = 100;
  small.max_line_bytes = 4096;
  int bad = 0;
  for (const std::string& line : {deep, bare, many}) {
    bad += disagreements(line, small);
    bad += disagreements(line);
  }
  CHECK(bad == 0);
  NodeTable nodes;
  ParseError error;
  for (const detail::SimdPath path : detail::simd_paths()) {
    CHECK(detail::parse_line(path, deep, 1, nodes, error, small).error().errc ==
          Errc::DepthExceeded);
    CHECK(detail::parse_line(path, many, 1, nodes, error, small).error().errc ==
          Errc::TooManyValues);
  }
}

TEST_CASE("every SIMD path tells name bytes apart the same for all 256 byte values", "[simd]") {
  // The AVX2 path classifies name bytes by table lookups, the baseline by ranges: each byte
  // value, at each place of a name inside and at the edges of the 32-byte window.
  int bad = 0;
  for (int b = 0; b < 256; ++b) {
    if (b == '\n') {
      continue;
    }
    for (const std::size_t at : {0, 1, 5, 14, 15, 16, 17, 28, 29, 30, 31, 32, 33}) {
      std::string name(34, 'n');
      name[at] = static_cast<char>(b);
      bad += disagreements("^done," + name + "=\"v\",x=\"" + std::string(40, 'x') + "\"");
      bad += disagreements("^done,a=[" + name.substr(0, at + 1) + "={b=\"1\"}],c=\"" +
                           std::string(40, 'y') + "\"");
    }
  }
  CHECK(bad == 0);
}
