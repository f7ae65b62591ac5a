// Snapshot JSON: every fixture round-trips (check_invariants), and bad JSON names its field.
#include "rocplay/core/error.hpp"
#include "support.hpp"

#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>

using namespace rocplay;

TEST_CASE("every rocgdb fixture round-trips through JSON", "[snapshot][json]") {
  std::size_t files = 0;
  for (const auto& dir : std::filesystem::directory_iterator(test::fixture_path("rocgdb"))) {
    if (!dir.is_directory()) {
      continue;
    }
    for (const auto& f : std::filesystem::directory_iterator(dir.path())) {
      if (f.path().extension() != ".mi") {
        continue;
      }
      auto rel = std::filesystem::relative(f.path(), test::fixture_path("")).string();
      DYNAMIC_SECTION(rel) {
        Snapshot s = test::load(rel); // check_invariants does the round trip
        CHECK(s.pid.has_value());
      }
      ++files;
    }
  }
  CHECK(files >= 18);
}

TEST_CASE("JSON carries schema, version and hex addresses", "[snapshot][json]") {
  Snapshot s = test::load("rocgdb/tp8-allgather-sync-spin/snapshot.mi");
  nlohmann::json j = to_json(s);
  CHECK(j["schema"] == "rocplay.snapshot");
  CHECK(j["format_version"] == Snapshot::kFormatVersion);
  CHECK(j["debugger"] == "rocgdb");
  CHECK(j["waves"][0]["pc"] == "0x7fe8a5e41b3c");
  CHECK(j["dispatches"][0]["kernel_address"] == "0x7fe8a5e40000");
  CHECK(j["dispatches"][0]["fence"]["acquire"] == "agent");
  // `?` coordinates are nulls; absent values are left out.
  Snapshot late = test::load("rocgdb/late-attach-unknown-coordinates/snapshot.mi");
  nlohmann::json lj = to_json(late);
  CHECK_FALSE(lj["waves"][0].contains("workgroup"));
  CHECK_FALSE(lj["waves"][0].contains("dispatch"));
  CHECK(lj["waves"][0]["unattributed"] == true);
}

TEST_CASE("malformed snapshot JSON names the field", "[snapshot][json]") {
  Snapshot s = test::load("rocgdb/splitk-clean-two-queues/snapshot.mi");
  auto expect_error = [](nlohmann::json j, const std::string& field) {
    try {
      (void)snapshot_from_json(j);
      FAIL("accepted bad JSON at " << field);
    } catch (const Error& e) {
      CHECK(e.code() == ExitCode::DataError);
      CHECK_THAT(e.what(), Catch::Contains(field));
      CHECK_FALSE(e.hint().empty());
    }
  };
  nlohmann::json good = to_json(s);
  {
    auto j = good;
    j["waves"][3]["pc"] = "not-hex";
    expect_error(j, "waves[3].pc");
  }
  {
    auto j = good;
    j["dispatches"][1]["grid"] = {1, 2, 3, 4};
    expect_error(j, "dispatches[1].grid");
  }
  {
    auto j = good;
    j["agents"][0]["cores"] = -4;
    expect_error(j, "agents[0].cores");
  }
  {
    auto j = good;
    j["dispatches"][0]["fence"]["acquire"] = "galaxy";
    expect_error(j, "dispatches[0].fence.acquire");
  }
  {
    auto j = good;
    j["schema"] = "something.else";
    expect_error(j, "schema");
  }
  {
    auto j = good;
    j["format_version"] = Snapshot::kFormatVersion + 1;
    try {
      (void)snapshot_from_json(j);
      FAIL("accepted a newer format_version");
    } catch (const Error& e) {
      CHECK_THAT(e.hint(), Catch::Contains("upgrade"));
    }
  }
}

namespace {
// The strict dump `rocplay run --format json` once used: it throws on bytes that are not UTF-8.
std::string strict_dump(const nlohmann::json& j) {
  return j.dump();
}
} // namespace

// Found by tests/fuzz/fuzz_snapshot: MI c-strings may hold any bytes, and a console line with
// raw 0xff bytes became the snapshot's debugger_version, which made the strict JSON dump of
// `rocplay run --format json` throw.
TEST_CASE("texts taken from raw console bytes dump as valid UTF-8", "[snapshot][json]") {
  const std::string transcript = "~\"No l\xff\xff\xff\xffnumber information available for address "
                                 "0x7f0145b194b0 <pthread_oncuda-gdbce@plt>\\n\"\n"
                                 "~\"Thread \xfe\xfe (LWP 7) \\\"py\xff\\\" in loop ()\\n\"\n"
                                 "^done\n";
  const Snapshot s = snapshot::build_from_transcript(transcript);
  CHECK(s.debugger == DebuggerKind::CudaGdb);
  CHECK(s.debugger_version.find("\xef\xbf\xbd") != std::string::npos); // U+FFFD stands in
  const nlohmann::json j = to_json(s);
  CHECK_NOTHROW(strict_dump(j));
  CHECK(snapshot_from_json(j) == s);
}

// Also found by the fuzzer: console tables are cut at the header's byte columns, and a column
// edge inside a multi-byte character (here the U+FFFD that stands for a raw 0xff) left half of
// it in each cell.
TEST_CASE("table cells cut at byte columns keep whole characters", "[snapshot][json]") {
  const std::string transcript =
      "~\"NVIDIA (R) cuda-gdb 13.0\\n\"\n"
      "~\"  Dev PCI Bus/Dev ID        Name Description SM Type SMs Warps/SM Lanes/Warp "
      "Max Regs/Lane Active SMs Mask \\n\"\n"
      "~\"*   0        00:06.0 NVIDIA H200   GH1\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff"
      "00GL-A   sm_90 132       64         32           255 0x0550 \\n\"\n"
      "^done\n";
  const Snapshot s = snapshot::build_from_transcript(transcript);
  REQUIRE(s.agents.size() == 1);
  const nlohmann::json j = to_json(s);
  CHECK_NOTHROW(strict_dump(j));
  CHECK(strict_dump(j).find("\xef\xbf\xbd") != std::string::npos);
}

// Found by the fuzzer too: a recording's command lines are its bytes as well, and a thread id
// taken from `--thread` and the warning naming a failed command carried them into the report.
TEST_CASE("texts taken from a recording's command lines dump as valid UTF-8", "[snapshot][json]") {
  const std::string transcript =
      "# rocplay-transcript 1\n"
      "> 0.1 5-stack-list-frames --thread 1\xff\xff\n"
      "< 0.2 5^done,stack=[frame={level=\"0\",addr=\"0x10\",func=\"f\"}]\n"
      "> 0.3 6-bogus \xfe\n"
      "< 0.4 6^error,msg=\"Undefined command\"\n";
  const Snapshot s = snapshot::build_from_transcript(transcript);
  REQUIRE(s.host_threads.size() == 1);
  CHECK(s.host_threads[0].id == "1\xef\xbf\xbd\xef\xbf\xbd");
  REQUIRE_FALSE(s.warnings.empty());
  const nlohmann::json j = to_json(s);
  CHECK_NOTHROW(strict_dump(j));
}

// The JSON of every debugger fixture, byte for byte, as committed under fixtures/snapshot-json/:
// the writer's output is a format others read, so a change to it must show as a diff here.
// ROCPLAY_UPDATE_GOLDENS=1 rewrites them (then review the diff: it is a format change).
TEST_CASE("every fixture's snapshot JSON is byte-identical to its golden", "[snapshot][json]") {
  const bool update = std::getenv("ROCPLAY_UPDATE_GOLDENS") != nullptr;
  std::size_t files = 0;
  for (const char* kind : {"rocgdb", "cuda-gdb", "mi"}) {
    for (const auto& f : std::filesystem::recursive_directory_iterator(test::fixture_path(kind))) {
      const auto ext = f.path().extension();
      if (!f.is_regular_file() || (ext != ".mi" && ext != ".rec")) {
        continue;
      }
      const auto rel = std::filesystem::relative(f.path(), test::fixture_path("")).string();
      const auto golden = test::fixture_path("snapshot-json") / (rel + ".json");
      DYNAMIC_SECTION(rel) {
        const std::string written = to_json(test::load(rel)).dump(1) + "\n";
        if (update) {
          std::filesystem::create_directories(golden.parent_path());
          std::ofstream(golden, std::ios::binary) << written;
        }
        CHECK(written == test::read_file(golden));
      }
      ++files;
    }
  }
  CHECK(files >= 50);
}
