// A partial stack query (`-stack-list-frames --thread N LOW HIGH`) adds to what is known of the
// thread's stack instead of replacing it: frames merge by level.
#include "support.hpp"

#include "rocplay/snapshot/snapshot.hpp"

#include <catch2/catch.hpp>

#include <algorithm>

using namespace rocplay;

namespace {

const HostThread* thread_named(const Snapshot& s, const std::string& id) {
  for (const auto& t : s.host_threads) {
    if (t.id == id) {
      return &t;
    }
  }
  return nullptr;
}

void check_levels(const HostThread& t) {
  for (std::size_t i = 0; i < t.frames.size(); ++i) {
    CHECK(t.frames[i].level == i);
  }
}

} // namespace

TEST_CASE("real gdb: -stack-list-frames 1 1 after the full listing keeps the whole stack",
          "[snapshot]") {
  // Recorded by `rocplay run` against tests/targets/spin_target: host backtraces of every thread,
  // then `-stack-list-frames --thread 1 1 1` (fixtures/mi/README.md). Before frames merged by
  // level, thread 1 was left with the one frame of the last query.
  const Snapshot s = snapshot::build_from_transcript(
      test::read_file(test::fixture_path("mi/gdb-partial-stack.rec")));
  test::check_invariants(s);
  const HostThread* main_thread = thread_named(s, "1");
  REQUIRE(main_thread != nullptr);
  INFO("frames: " << main_thread->frames.size());
  REQUIRE(main_thread->frames.size() >= 3);
  check_levels(*main_thread);
  CHECK(std::any_of(main_thread->frames.begin(), main_thread->frames.end(),
                    [](const Frame& f) { return f.function == "main"; }));
}

TEST_CASE("stack queries merge by level in either order", "[snapshot]") {
  const std::string full =
      "> 0.1 5-stack-list-frames --thread 2\n"
      "< 0.2 5^done,stack=[frame={level=\"0\",addr=\"0x10\",func=\"a\"},"
      "frame={level=\"1\",addr=\"0x20\",func=\"b\"},frame={level=\"2\",addr=\"0x30\",func=\"c\"},"
      "frame={level=\"3\",addr=\"0x40\",func=\"main\"}]\n";
  const std::string partial =
      "> 0.3 6-stack-list-frames --thread 2 2 2\n"
      "< 0.4 6^done,stack=[frame={level=\"2\",addr=\"0x30\",func=\"c2\"}]\n";
  const std::string head = "# rocplay-transcript 1\n"
                           "> 0.0 4-thread-info\n"
                           "< 0.0 4^done,threads=[{id=\"2\",target-id=\"Thread 0x1 (LWP 7)\","
                           "frame={level=\"0\",addr=\"0x10\",func=\"a\"},state=\"stopped\"}],"
                           "current-thread-id=\"2\"\n";
  for (const bool partial_first : {false, true}) {
    const Snapshot s =
        snapshot::build_from_transcript(head + (partial_first ? partial + full : full + partial));
    const HostThread* t = thread_named(s, "2");
    REQUIRE(t != nullptr);
    REQUIRE(t->frames.size() == 4);
    check_levels(*t);
    // The later answer wins at the level both name.
    CHECK(t->frames[2].function == (partial_first ? "c" : "c2"));
    CHECK(t->frames[3].function == "main");
  }
}
