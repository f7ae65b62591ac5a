// A post-mortem batch through its driver (drivers::read_inputs) and the one writer (report::write
// with the batch the inputs were rendered into as they were read), over real recordings: two
// ranks of an NCCL hang on two H200s (an event), raw MI of a split-K race, two recordings of one
// process (a series), a dmesg (crash evidence), an agent log and a missing file. Every format
// opens with the incident; JSON is postmortem_to_json's document to the byte.
#include "rocplay/drivers/drivers.hpp"
#include "rocplay/report/incident.hpp"
#include "rocplay/report/postmortem.hpp"

#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

using namespace rocplay;
namespace fs = std::filesystem;

namespace {

const fs::path kBatchFixtures = fs::path(ROCPLAY_SOURCE_DIR) / "fixtures";

struct BatchCorpus {
  fs::path root = fs::temp_directory_path() / ("rocplay-batch-" + std::to_string(::getpid()));
  BatchCorpus() {
    std::error_code ec;
    fs::remove_all(root, ec);
    copy(kBatchFixtures / "cuda-gdb/h200x2-rocplay/nccl-rank0.rec", "ranks/rank0.rec");
    copy(kBatchFixtures / "cuda-gdb/h200x2-rocplay/nccl-rank1.rec", "ranks/rank1.rec");
    copy(kBatchFixtures / "rocgdb/splitk-clean-two-queues/snapshot.mi", "raw/splitk.mi");
    copy(kBatchFixtures / "cuda-gdb/h100-samples/healthy.rec", "series/first.rec");
    copy(kBatchFixtures / "cuda-gdb/h100-samples/healthy.rec", "series/second.rec");
    copy(kBatchFixtures / "crash/kernel-logs/dmesg-raw.txt", "crash/dmesg.txt");
    copy(kBatchFixtures / "agentlog/seed_sample.log", "agent/server.log");
  }
  ~BatchCorpus() {
    std::error_code ec;
    fs::remove_all(root, ec);
  }
  BatchCorpus(const BatchCorpus&) = delete;
  BatchCorpus& operator=(const BatchCorpus&) = delete;
  void copy(const fs::path& from, const std::string& to) const {
    fs::create_directories((root / to).parent_path());
    fs::copy_file(from, root / to);
  }
};

struct BatchWritten {
  std::string out;
  drivers::OfflineResult result;
  std::vector<nlohmann::json> inputs; // each input's object, rendered beside the batch
};

BatchWritten batch_of(const std::vector<std::string>& paths, report::Format format,
                      report::PostmortemWriteOptions write_options = {}) {
  postmortem::Options options;
  options.paths = paths;
  options.jobs = 2;
  BatchWritten w;
  report::PostmortemBatch batch(format, {}, write_options);
  w.result = drivers::read_inputs(
      options,
      [&](const postmortem::InputResult& r) {
        batch.add(r);
        w.inputs.push_back(report::postmortem_input_to_json(r, write_options.snapshots));
      },
      {});
  const postmortem::Summary summary = w.result.summary;
  batch.close(summary);
  std::ostringstream out;
  report::write(out, w.result.incident, format, {}, "test", &batch);
  w.out = out.str();
  return w;
}

std::vector<nlohmann::json> lines_of(const std::string& text) {
  std::vector<nlohmann::json> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    lines.push_back(nlohmann::json::parse(line));
  }
  return lines;
}

} // namespace

TEST_CASE("postmortem JSON through the one writer: the incident first, postmortem_to_json's bytes",
          "[drivers][postmortem]") {
  const BatchCorpus corpus;
  const std::vector<std::string> paths = {corpus.root.string(),
                                          (corpus.root / "missing.mi").string()};
  const BatchWritten w = batch_of(paths, report::Format::Json);
  const Incident& inc = w.result.incident;
  const postmortem::Summary& s = w.result.summary;
  REQUIRE(inc.cases.size() == 8); // 7 files and the missing one
  REQUIRE(s.events.size() == 1);
  REQUIRE(s.series.size() == 1);
  REQUIRE_FALSE(s.crash.empty());

  // The document as one nlohmann::json would print it, though it was written input by input.
  const nlohmann::json expected = report::postmortem_to_json(nlohmann::json(w.inputs), s, inc);
  CHECK(w.out == expected.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
  CHECK(w.out.rfind("{\n  \"incident\": {", 0) == 0); // first

  const nlohmann::json j = nlohmann::json::parse(w.out);
  const nlohmann::json& incident = j["incident"];
  CHECK(incident["cases"] == 8);
  CHECK(incident["exit_code"] == static_cast<int>(ExitCode::PartialInput)); // the missing file
  CHECK(incident["exit_code"] == static_cast<int>(inc.exit_code()));
  // The incident holds what holds across the inputs: the event's cross-rank findings, the crash
  // verdict, the series' findings, each as the summary has it under its key.
  CHECK(incident["cross_rank_findings"] == j["summary"]["events"][0]["findings"]);
  CHECK(incident["crash_verdict"] == j["summary"]["crash"]);
  CHECK(incident["series_findings"] == j["summary"]["series"][0]["findings"]);
  CHECK(incident["notes"].empty());
  // Each input in a group that names it; the missing one says why.
  std::size_t named = 0;
  bool missing_said = false;
  for (const auto& g : incident["groups"]) {
    named += g["inputs"].size();
    missing_said = missing_said || g["verdict"].get<std::string>().rfind("unreadable: ", 0) == 0;
  }
  CHECK(named == 8);
  CHECK(missing_said);
}

TEST_CASE("postmortem JSON Lines, SARIF and text through the one writer open with the incident",
          "[drivers][postmortem]") {
  const BatchCorpus corpus;
  const std::vector<std::string> paths = {corpus.root.string(),
                                          (corpus.root / "missing.mi").string()};

  const BatchWritten jl = batch_of(paths, report::Format::Jsonl);
  const auto lines = lines_of(jl.out);
  REQUIRE(lines.size() == 1 + 8 + 1);
  CHECK(lines[0]["type"] == "incident");
  CHECK(lines[0]["schema"] == "rocplay.postmortem.incident");
  CHECK(lines[0]["schema_version"] == postmortem::kSchemaVersion);
  CHECK(lines[0]["exit_code"] == static_cast<int>(ExitCode::PartialInput));
  nlohmann::json head = lines[0];
  for (const char* k : {"type", "schema", "schema_version"}) {
    head.erase(k);
  }
  CHECK(head == report::incident_to_json(jl.result.incident));
  for (std::size_t i = 1; i <= 8; ++i) {
    CHECK(lines[i] == jl.inputs[i - 1]); // in input order, as read
  }
  CHECK(lines.back()["schema"] == "rocplay.postmortem.summary");

  const BatchWritten sarif = batch_of(paths, report::Format::Sarif);
  const auto log = nlohmann::json::parse(sarif.out);
  const auto& run = log["runs"][0];
  CHECK(run["properties"]["incident"] == report::incident_to_json(sarif.result.incident));
  // What holds across the inputs first: the series' and the event's findings under their keys,
  // then the crash verdict, then each input's findings under its path.
  const postmortem::Summary& s = sarif.result.summary;
  const std::size_t across =
      s.series[0].findings.size() + s.events[0].findings.size() + s.crash.size();
  REQUIRE(run["results"].size() > across);
  REQUIRE_FALSE(s.events[0].findings.empty());
  const std::size_t first_event = s.series[0].findings.size();
  CHECK(run["results"][first_event]["ruleId"] == s.events[0].findings[0].id);
  CHECK(
      run["results"][first_event]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] ==
      s.events[0].key);
  CHECK(run["results"][across]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
            .get<std::string>()
            .rfind(corpus.root.string(), 0) == 0);

  const BatchWritten text = batch_of(paths, report::Format::Text);
  CHECK(text.out.rfind("INCIDENT  8 inputs, 7 read: ", 0) == 0);
  CHECK(text.out.find("\nrocplay postmortem: 8 inputs") != std::string::npos);
  // --details: the incident still first, then each input's own report, then the summary.
  report::PostmortemWriteOptions details;
  details.details = true;
  const BatchWritten detailed = batch_of(paths, report::Format::Text, details);
  CHECK(detailed.out.rfind("INCIDENT  8 inputs, 7 read: ", 0) == 0);
  const auto first_report = detailed.out.find("\n=== " + corpus.root.string());
  const auto summary_at = detailed.out.find("\nrocplay postmortem: 8 inputs");
  REQUIRE(first_report != std::string::npos);
  CHECK(first_report < summary_at);
}

TEST_CASE("postmortem of one input: the JSON carries its incident, JSON Lines stay as in v1",
          "[drivers][postmortem]") {
  const std::string rec = (kBatchFixtures / "cuda-gdb/h200x2-rocplay/nccl-rank0.rec").string();
  const BatchWritten json = batch_of({rec}, report::Format::Json);
  const auto j = nlohmann::json::parse(json.out);
  CHECK(j["incident"]["cases"] == 1);
  CHECK(j["incident"]["exit_code"] == static_cast<int>(json.result.incident.exit_code()));
  CHECK(j["inputs"].size() == 1);
  const auto lines = lines_of(batch_of({rec}, report::Format::Jsonl).out);
  REQUIRE(lines.size() == 2); // the input, the summary: no incident line for one input
  CHECK(lines[0]["schema"] == "rocplay.postmortem.input");
}

TEST_CASE("report::Spool: past its memory bound the rest goes to a temporary file, all of it "
          "comes back in order",
          "[drivers][postmortem]") {
  report::Spool spool(10);
  std::string all;
  for (int i = 0; i < 1000; ++i) {
    const std::string part = "line " + std::to_string(i) + "\n";
    spool.append(part);
    all += part;
  }
  CHECK(spool.size() == all.size());
  std::ostringstream once;
  spool.write_to(once);
  CHECK(once.str() == all);
  spool.append("more\n"); // after a read back, appends still go to the end
  std::ostringstream twice;
  spool.write_to(twice);
  CHECK(twice.str() == all + "more\n");
  report::Spool empty;
  std::ostringstream nothing;
  empty.write_to(nothing);
  CHECK(nothing.str().empty());
  CHECK(empty.empty());
}
