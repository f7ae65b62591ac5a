// Report writers on real fixture snapshots: text verdict first, versioned JSON, JSONL, SARIF.
#include "../snapshot/support.hpp"
#include "rocplay/core/error.hpp"
#include "rocplay/heuristics/heuristics.hpp"
#include "rocplay/report/report.hpp"
#include "rocplay/snapshot/code_loops.hpp"

#include <catch2/catch.hpp>

#include <cstdlib>
#include <sstream>

using namespace rocplay;

namespace {

struct Loaded {
  Snapshot snapshot;
  std::vector<Finding> findings;
};

Loaded tp8() {
  Loaded c{test::load("rocgdb/tp8-allgather-sync-spin/snapshot.mi"), {}};
  c.findings = heuristics::run(c.snapshot);
  return c;
}

std::vector<std::string> lines_of(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string l; std::getline(in, l);) {
    out.push_back(l);
  }
  return out;
}

} // namespace

TEST_CASE("text: the verdict comes first, then the evidence tables", "[report][text]") {
  Loaded c = tp8();
  std::ostringstream out;
  report::write_text(out, c.snapshot, c.findings);
  const std::string text = out.str();
  auto lines = lines_of(text);
  REQUIRE(lines.size() > 20);
  CHECK_THAT(lines[0],
             Catch::StartsWith("VERDICT  [critical 0.90] allgather_vec spins in start_sync"));
  CHECK_THAT(lines[1],
             Catch::StartsWith("  Stuck:   void aiter::allgather_vec<__hip_bfloat16, 8>"));
  CHECK_THAT(text, Catch::Contains("  Where:   aiter::start_sync<8> at custom_all_reduce.cuh:131 "
                                   "(pc 0x7fe8a5e41b3c)"));
  CHECK_THAT(text, Catch::Contains("  Meaning: "));
  CHECK_THAT(text, Catch::Contains("  Next:    Anchor on allgather_vec at PC 0x7fe8a5e41b3c"));
  // Evidence tables, in order.
  auto at = [&](const char* s) { return text.find(s); };
  CHECK(at("VERDICT") < at("Evidence for the verdict"));
  CHECK(at("Evidence for the verdict") < at("Agents (8)"));
  CHECK(at("Agents (8)") < at("Queues (3)"));
  CHECK(at("Queues (3)") < at("Dispatches in flight (1)"));
  CHECK(at("Dispatches in flight (1)") < at("Wave classes (2 classes, 128 waves)"));
  CHECK(at("Wave classes") < at("Source lines (2)"));
  CHECK(at("Source lines (2)") < at("Host threads (4)"));
  // 128 waves read as two lines.
  CHECK_THAT(text, Catch::Contains("0x7fe8a5e41b3c  16     16 (0-15,0,0)  /0"));
  CHECK_THAT(text, Catch::Contains("0x7fe8a5e41b80  112    16 (0-15,0,0)  /1-7"));
  // No line is wider than the tables need and nothing is colored by default.
  CHECK(text.find('\x1b') == std::string::npos);
  // ASCII only: the report goes to terminals and logs.
  CHECK(std::all_of(text.begin(), text.end(),
                    [](char ch) { return static_cast<unsigned char>(ch) < 0x80; }));
}

// The text names the stuck kernel from the finding's typed dispatches, never from `details`
// (which the post-mortem trims when no format prints it).
TEST_CASE("text: the Stuck line reads the typed dispatches, not the details", "[report][text]") {
  Loaded c = tp8();
  REQUIRE_FALSE(c.findings.empty());
  REQUIRE(c.findings.front().dispatches.size() == 1);
  auto text_of = [&](const std::vector<Finding>& fs) {
    std::ostringstream out;
    report::write_text(out, c.snapshot, fs);
    return out.str();
  };
  auto first_lines = [&](const std::vector<Finding>& fs) { return lines_of(text_of(fs)); };
  const std::string full = text_of(c.findings);
  CHECK_THAT(full, Catch::Contains("  Stuck:   " + c.findings.front().dispatches.front().kernel));
  CHECK_THAT(full, Catch::Contains("(dispatch\n           " +
                                   c.findings.front().dispatches.front().id + ")"));
  std::vector<Finding> no_details = c.findings;
  no_details.front().details = nlohmann::json::object();
  CHECK(text_of(no_details) == full);
  std::vector<Finding> no_dispatches = c.findings;
  no_dispatches.front().dispatches.clear();
  no_dispatches.front().kernel.clear();
  CHECK_THAT(first_lines(no_dispatches)[1], !Catch::StartsWith("  Stuck:"));
}

TEST_CASE("text: no findings, row limits, several snapshots", "[report][text]") {
  Snapshot s = test::load("rocgdb/rocm5-old-format/snapshot.mi");
  std::ostringstream out;
  report::TextOptions o;
  o.max_rows = 1;
  report::write_text(out, s, {}, o);
  const std::string text = out.str();
  CHECK_THAT(text, Catch::StartsWith("VERDICT  no known stuck-kernel pattern"));
  CHECK_THAT(text, Catch::Contains("... and 1 more (--wide or --format json for all)"));
  CHECK_THAT(text, Catch::Contains("29:00.0"));

  std::vector<Snapshot> pair = {test::load("rocgdb/queue-stall-two-snapshots/snapshot-1.mi"),
                                test::load("rocgdb/queue-stall-two-snapshots/snapshot-2.mi")};
  auto fs = heuristics::run_pair(pair[0], pair[1]);
  std::ostringstream two;
  report::write_text(two, pair, fs);
  CHECK_THAT(two.str(), Catch::StartsWith("VERDICT  [error 0.80] queue AMDGPU Queue 1:1 (QID 0) "
                                          "stalled"));
  CHECK_THAT(two.str(), Catch::Contains("taken 2026-11-21T16:20:00Z"));
  CHECK_THAT(two.str(), Catch::Contains("taken 2026-11-21T16:20:06Z"));
}

TEST_CASE("text: stacks start in the user's code, widths follow the option, wide cuts nothing",
          "[report][text]") {
  Snapshot s = test::load("rocgdb/host-mutex-deadlock/snapshot.mi");
  auto fs = heuristics::run(s);
  report::TextOptions o;
  o.width = 200;
  std::ostringstream wide_out;
  report::write_text(wide_out, s, fs, o);
  const std::string text = wide_out.str();
  // The innermost frame of the target's own code leads, the libc frames inside it are counted.
  CHECK_THAT(text, Catch::Contains("take_second at deadlock_target.cpp:40 (4 system frames inside) "
                                   "<- lock_in_order at deadlock_target.cpp:47"));
  CHECK_THAT(text,
             Catch::Contains("wait_forever at deadlock_target.cpp:54 (5 system frames inside)"));
  // No GPU in this snapshot: no advice about waves.
  CHECK_THAT(text, Catch::StartsWith("VERDICT  [critical 0.90] host deadlock"));

  for (std::size_t width : {60, 80, 100}) {
    o.width = width;
    std::ostringstream narrow;
    report::write_text(narrow, s, fs, o);
    bool cut = false;
    for (const auto& line : lines_of(narrow.str())) {
      // Table rows and wrapped prose fit; a single unbreakable word may not.
      if (line.find(' ') != std::string::npos && line.size() > width) {
        std::size_t longest = 0;
        std::istringstream words(line);
        for (std::string w; words >> w;) {
          longest = std::max(longest, w.size());
        }
        INFO(width << ": " << line);
        CHECK(longest > width / 3);
      }
      cut = cut || line.find("...") != std::string::npos;
    }
    CHECK(cut); // and the cuts are marked
  }
  o.width = 60;
  o.wide = true;
  std::ostringstream all;
  report::write_text(all, s, fs, o);
  CHECK_THAT(all.str(), Catch::Contains("take_second at deadlock_target.cpp:40 (4 system frames "
                                        "inside) <- lock_in_order at deadlock_target.cpp:47 <- "
                                        "lock_ab at deadlock_target.cpp:61 <- [2 system]"));
}

TEST_CASE("text_width: $COLUMNS, else the terminal, else 100", "[report][text]") {
  ::setenv("COLUMNS", "132", 1);
  CHECK(report::text_width(-1) == 132);
  ::setenv("COLUMNS", "10", 1);
  CHECK(report::text_width(-1) == 40); // bounded
  ::unsetenv("COLUMNS");
  CHECK(report::text_width(-1) == 100); // not a terminal
}

TEST_CASE("JSON report: versioned, with the snapshot and its wave classes", "[report][json]") {
  Loaded c = tp8();
  nlohmann::json j = report::report_to_json(c.snapshot, c.findings);
  CHECK(j["schema"] == "rocplay.report");
  CHECK(j["schema_version"] == report::kJsonSchemaVersion);
  REQUIRE(j["findings"].size() == 1);
  const auto& f = j["findings"][0];
  CHECK(f["id"] == "sync-lane-barrier-spin");
  CHECK(f["severity"] == "critical");
  CHECK(f["rank"] == 2);
  CHECK(f["locations"][0]["pc"] == "0x7fe8a5e41b3c");
  CHECK(f["locations"][0]["line"] == 131);
  CHECK(f["details"]["routine"] == "start_sync");
  CHECK(j["snapshot"]["wave_classes"].size() == 2);
  // The snapshot inside the report reads back as the snapshot (wave_classes are derived).
  nlohmann::json snap = j["snapshot"];
  snap.erase("wave_classes");
  CHECK(snapshot_from_json(snap) == c.snapshot);
  // It serialises (valid UTF-8 throughout).
  CHECK_NOTHROW(j.dump());

  std::vector<Snapshot> ranks = {c.snapshot, c.snapshot};
  nlohmann::json multi = report::report_to_json(ranks, c.findings);
  CHECK(multi["snapshots"].size() == 2);
}

TEST_CASE("JSON Lines: one finding per line", "[report][jsonl]") {
  Snapshot s = test::load("rocgdb/tp8-allgather-sync-spin/snapshot.mi");
  HostThread t;
  t.id = "42";
  Frame f;
  f.function = "hipDeviceSynchronize";
  t.frames.push_back(f);
  s.host_threads.push_back(t);
  auto fs = heuristics::run(s);
  REQUIRE(fs.size() == 2);
  std::ostringstream out;
  report::write_jsonl(out, fs);
  auto lines = lines_of(out.str());
  REQUIRE(lines.size() == 2);
  CHECK(nlohmann::json::parse(lines[0])["id"] == "sync-lane-barrier-spin");
  CHECK(nlohmann::json::parse(lines[1])["id"] == "host-blocked-on-gpu");
}

TEST_CASE("SARIF 2.1.0: one rule per heuristic, results point at them", "[report][sarif]") {
  std::vector<Finding> all;
  for (const char* dir : {"tp8-allgather-sync-spin", "splitk-clean-two-queues",
                          "debug-agent-holds-hook", "host-blocked-item"}) {
    Snapshot s = test::load(std::string("rocgdb/") + dir + "/snapshot.mi");
    for (auto& f : heuristics::run(s)) {
      all.push_back(std::move(f));
    }
  }
  REQUIRE(all.size() == 4);
  nlohmann::json log = report::to_sarif(all, "0.1.0");
  CHECK(log["version"] == "2.1.0");
  CHECK(log["$schema"] == "https://json.schemastore.org/sarif-2.1.0.json");
  REQUIRE(log["runs"].size() == 1);
  const auto& run = log["runs"][0];
  CHECK(run["tool"]["driver"]["name"] == "rocplay");
  CHECK(run["tool"]["driver"]["version"] == "0.1.0");
  const auto& rules = run["tool"]["driver"]["rules"];
  REQUIRE(rules.size() == heuristics::catalogue().size());
  std::set<std::string> ids;
  for (const auto& r : rules) {
    ids.insert(r["id"].get<std::string>());
    CHECK(r["shortDescription"]["text"].is_string());
  }
  CHECK(ids.size() == rules.size());
  const auto& results = run["results"];
  REQUIRE(results.size() == 4);
  for (const auto& r : results) {
    auto idx = r["ruleIndex"].get<std::size_t>();
    REQUIRE(idx < rules.size());
    CHECK(rules[idx]["id"] == r["ruleId"]);
    CHECK((r["level"] == "error" || r["level"] == "warning" || r["level"] == "note"));
    CHECK(r["message"]["text"].get<std::string>().size() > 20);
    CHECK(r["properties"]["nextStep"].is_string());
  }
  // sync-lane: a source location with a line and the PC as an address.
  const auto& spin = results[0];
  CHECK(spin["ruleId"] == "sync-lane-barrier-spin");
  CHECK(spin["level"] == "error");
  const auto& phys = spin["locations"][0]["physicalLocation"];
  CHECK(phys["artifactLocation"]["uri"] == "custom_all_reduce.cuh");
  CHECK(phys["region"]["startLine"] == 131);
  CHECK(phys["address"]["absoluteAddress"] == 0x7fe8a5e41b3cULL);
  CHECK(spin["locations"][0]["logicalLocations"][0]["name"] == "aiter::start_sync<8>");
  // nothing-visible has no code location: no empty location objects.
  for (const auto& r : results) {
    if (r["ruleId"] == "nothing-visible") {
      CHECK_FALSE(r.contains("locations"));
    }
  }
  // An id outside the catalogue still gets a rule.
  Finding extra;
  extra.id = "custom-check";
  extra.title = "custom";
  nlohmann::json more = report::to_sarif({extra}, "0.1.0");
  CHECK(more["runs"][0]["tool"]["driver"]["rules"].size() == heuristics::catalogue().size() + 1);
  CHECK(more["runs"][0]["results"][0]["ruleIndex"] == heuristics::catalogue().size());
  CHECK(more["runs"][0]["results"][0]["level"] == "warning");
}

TEST_CASE("parse_format", "[report]") {
  CHECK(report::parse_format("text") == report::Format::Text);
  CHECK(report::parse_format("json") == report::Format::Json);
  CHECK(report::parse_format("jsonl") == report::Format::Jsonl);
  CHECK(report::parse_format("sarif") == report::Format::Sarif);
  try {
    (void)report::parse_format("xml");
    FAIL("accepted xml");
  } catch (const Error& e) {
    CHECK(e.code() == ExitCode::Usage);
    CHECK_THAT(e.what(), Catch::Contains("`xml`"));
    CHECK_THAT(e.hint(), Catch::Contains("text, json, jsonl, sarif, html"));
  }
}

TEST_CASE("a label that leaves little of the line moves the text to the next line") {
  // A post-mortem series line: the label alone fills a 100-column report.
  const std::string label = "      waves 1.1 void aiter::allgather_vec<__hip_bfloat16, 8>(void*, "
                            "void*, aiter::Signal*, int): stuck: ";
  std::ostringstream out;
  report::write_wrapped(out, 100, label,
                        "stuck for 4.1 s over 3 samples: every wave stayed within 24 bytes of its "
                        "PC and the queue's read index did not move");
  const auto lines = lines_of(out.str());
  INFO(out.str());
  // The label on lines of its own, then the text deeper than the label's own indent, in two
  // lines, not one word per line; nothing past the width.
  REQUIRE(lines.size() >= 3);
  std::size_t text_at = 0;
  while (text_at < lines.size() && !lines[text_at].starts_with("          stuck for 4.1 s")) {
    ++text_at;
  }
  REQUIRE(text_at < lines.size());
  CHECK(lines.size() - text_at == 2);
  for (const auto& l : lines) {
    CHECK(l.size() <= 100);
  }
  // A short label keeps the text beside it.
  std::ostringstream short_out;
  report::write_wrapped(short_out, 100, "  verdict: ", "STUCK: dispatch 1.1");
  CHECK(short_out.str() == "  verdict: STUCK: dispatch 1.1\n");
}

TEST_CASE("the waves' spin loop in the report: JSON code windows and the text line",
          "[report][code]") {
  const Snapshot s = test::load("rocgdb/spin-loop-disassembly/snapshot.mi");
  const auto loops = snapshot::code_loops(s);
  REQUIRE(loops.size() == 1);
  const auto j = report::report_to_json(s, {});
  REQUIRE(j["snapshot"]["code"].size() == 1);
  CHECK(j["snapshot"]["code"][0]["loop"]["instructions"] == 7);
  CHECK(j["snapshot"]["code"][0]["instructions"].size() == loops[0].window.size());
  std::ostringstream text;
  report::write_text(text, s, {});
  CHECK(text.str().find("4 waves at 0x7fffe2005240 (spin_kernel): spin loop of 7 instructions") !=
        std::string::npos);
}

TEST_CASE("text: code decoded after the detach says by what, the debugger's own says nothing",
          "[report][text]") {
  const std::string note = "device code decoded after the detach by nvdisasm";
  std::ostringstream deferred;
  report::write_text(deferred, test::load("cuda-gdb/h100-rocplay/syncspin-nvdisasm.rec"), {});
  CHECK(deferred.str().find(note) != std::string::npos);
  CHECK(deferred.str().find("spin loop of 4 instructions") != std::string::npos);
  std::ostringstream in_stop;
  report::write_text(in_stop, test::load("cuda-gdb/h100-rocplay/syncspin-disasm.rec"), {});
  CHECK(in_stop.str().find("spin loop of 4 instructions") != std::string::npos);
  CHECK(in_stop.str().find(note) == std::string::npos);
}
