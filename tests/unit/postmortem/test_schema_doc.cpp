// The post-mortem JSON (`rocplay.postmortem`, `.input`, `.summary`) holds exactly the keys
// docs/json-schema.md documents, over a batch with every kind of input: ranked recordings (an
// event), raw MI with findings, rocplay JSON Lines (members), two recordings of one process with
// two samples each (a series), crash evidence, an agent log and a missing file.
#include "../report/schema_doc.hpp"
#include "rocplay/postmortem/postmortem.hpp"
#include "rocplay/report/postmortem.hpp"

#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>
#include <fstream>

using namespace rocplay;
using rocplay::testing::documented_keys;
using rocplay::testing::emitted_keys;
namespace fs = std::filesystem;

namespace {

const fs::path kCorpusFixtures = fs::path(ROCPLAY_SOURCE_DIR) / "fixtures";

struct Corpus {
  fs::path root = fs::temp_directory_path() / ("rocplay-schema-" + std::to_string(::getpid()));
  Corpus() {
    std::error_code ec;
    fs::remove_all(root, ec);
    copy(kCorpusFixtures / "cuda-gdb/h200x2-rocplay/nccl-rank0.rec", "ranks/rank0.rec");
    copy(kCorpusFixtures / "cuda-gdb/h200x2-rocplay/nccl-rank1.rec", "ranks/rank1.rec");
    copy(kCorpusFixtures / "rocgdb/splitk-clean-two-queues/snapshot.mi", "raw/splitk.mi");
    copy(kCorpusFixtures / "cuda-gdb/h100-samples/healthy.rec", "series/first.rec");
    copy(kCorpusFixtures / "cuda-gdb/h100-samples/healthy.rec", "series/second.rec");
    copy(kCorpusFixtures / "crash/kernel-logs/dmesg-raw.txt", "crash/dmesg.txt");
    copy(kCorpusFixtures / "agentlog/seed_sample.log", "agent/server.log");
    // A job's Flight Recorder dumps (docs/collectives.md): `collectives` and their event.
    copy(kCorpusFixtures / "collectives/reconstructed/missing_rank/nccl_trace_rank_0",
         "fr/nccl_trace_rank_0");
    copy(kCorpusFixtures / "collectives/reconstructed/missing_rank/nccl_trace_rank_1",
         "fr/nccl_trace_rank_1");
  }
  ~Corpus() {
    std::error_code ec;
    fs::remove_all(root, ec);
  }
  void copy(const fs::path& from, const std::string& to) const {
    fs::create_directories((root / to).parent_path());
    fs::copy_file(from, root / to);
  }
  void write(const std::string& name, const std::string& content) const {
    fs::create_directories((root / name).parent_path());
    std::ofstream(root / name, std::ios::binary) << content;
  }
};

} // namespace

TEST_CASE("post-mortem JSON holds exactly the keys docs/json-schema.md documents",
          "[postmortem][schema]") {
  const Corpus corpus;
  // rocplay's own JSON Lines: two snapshots in one file are two inputs (`member`).
  postmortem::Options first;
  first.paths = {(corpus.root / "raw/splitk.mi").string()};
  postmortem::InputResult splitk;
  postmortem::run(first, [&](const postmortem::InputResult& r) { splitk = r; });
  const std::string line = report::report_to_json(splitk.snapshot, splitk.findings).dump();
  corpus.write("jsonl/node.jsonl", line + "\n" + line + "\n");
  // Documentation beside the recordings: the walk skips it (`skipped[]`).
  corpus.write("README.md", "# Notes\nExample: `memory access fault at 0x7ef3a0000000`\n");

  postmortem::Options options;
  options.paths = {corpus.root.string(), (corpus.root / "missing.mi").string()};
  std::vector<nlohmann::json> inputs;
  std::vector<nlohmann::json> with_snapshots;
  Incident incident; // a light case per input, as the offline driver makes it
  const postmortem::Summary summary =
      postmortem::run(options, [&](const postmortem::InputResult& r) {
        inputs.push_back(report::postmortem_input_to_json(r, false));
        with_snapshots.push_back(report::postmortem_input_to_json(r, true));
        incident.cases.push_back(postmortem::case_of(r));
      });
  // The corpus holds what every documented key needs.
  REQUIRE(summary.unreadable == 1);
  REQUIRE(summary.events.size() == 2); // the ranks' recordings, the Flight Recorder dumps
  REQUIRE(summary.series.size() == 1);
  REQUIRE_FALSE(summary.classes.empty());
  REQUIRE_FALSE(summary.crash.empty());

  const auto input_keys = documented_keys("(`rocplay.postmortem.input`)");
  CHECK(emitted_keys(inputs, input_keys) == input_keys);
  CHECK(emitted_keys(with_snapshots, input_keys) == input_keys);
  for (const auto& j : inputs) {
    CHECK(j["schema"] == "rocplay.postmortem.input");
    CHECK(j["schema_version"] == postmortem::kSchemaVersion);
  }

  const auto summary_keys = documented_keys("(`rocplay.postmortem.summary`)");
  const nlohmann::json summary_json = report::postmortem_summary_to_json(summary);
  CHECK(emitted_keys({summary_json}, summary_keys) == summary_keys);
  CHECK(summary_json["schema"] == "rocplay.postmortem.summary");

  const auto document_keys = documented_keys("(`rocplay.postmortem`)");
  const nlohmann::json document =
      report::postmortem_to_json(nlohmann::json(inputs), summary, incident);
  CHECK(emitted_keys({document}, document_keys) == document_keys);
  CHECK(document["schema"] == "rocplay.postmortem");
  CHECK(document["inputs"].size() == inputs.size());
}
