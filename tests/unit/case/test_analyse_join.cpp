// The one analysis step (rocplay/analyse.hpp) and the one join (rocplay/join.hpp), over real
// inputs: the cuda-gdb recordings of a TP=4 server (fixtures/cuda-gdb/h200x4-server) and the
// crash evidence of a TP=4 job whose rank 2 faulted first (fixtures/crash/tp4-rank2-first).
#include "rocplay/analyse.hpp"
#include "rocplay/crash.hpp"
#include "rocplay/mi/transcript.hpp"

#include <catch2/catch.hpp>

#include <fstream>
#include <memory>
#include <sstream>
#include <string>

using namespace rocplay;

namespace {

const std::string kRoot = ROCPLAY_SOURCE_DIR;

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  REQUIRE(in);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A recording read the way a post-mortem reads it: exchanges streamed into a SampleBuilder.
Case recording(const std::string& rel) {
  const std::string path = kRoot + "/" + rel;
  const std::string text = slurp(path); // the reader parses lines where they lie
  mi::TranscriptReader reader;
  reader.feed(text);
  reader.finish();
  std::optional<snapshot::SampleBuilder> builder;
  while (auto ex = reader.next()) {
    if (!builder) {
      snapshot::BuildOptions bo;
      bo.label = rel;
      bo.meta_json = reader.info().meta_json;
      builder.emplace(bo);
    }
    builder->add(*ex);
  }
  REQUIRE(builder);
  source::Source src;
  src.path = rel;
  incident::AnalyseOptions ao;
  ao.context = heuristics::context_from_meta(reader.info().meta_json);
  return incident::analyse(builder->finish(), src, ao);
}

[[maybe_unused]] Case crash_log(const std::string& rel) {
  crash::ReadOptions ro;
  ro.source = rel; // the file name's `%i` is the pid
  std::istringstream in(slurp(kRoot + "/" + rel));
  Case c;
  c.source.path = rel;
  c.crash =
      std::make_shared<const crash::Evidence>(crash::read_stream(in, crash::Format::Text, ro));
  return c;
}

const std::string kRec = "fixtures/cuda-gdb/h200x4-server/server-rank";
const std::string kLogs = "fixtures/crash/tp4-rank2-first/";

} // namespace

TEST_CASE("analyse: a recording's samples become one case with its rank, classes and findings") {
  const Case c = recording(kRec + "2.rec");
  REQUIRE(c.source.rank == 2); // from the recording's meta
  CHECK(c.source.rank_rule == source::RankRule::Meta);
  CHECK(c.snapshot.rank == 2);
  CHECK(c.snapshot.pid == 1577);
  CHECK(c.snapshot.debugger == DebuggerKind::CudaGdb);
  CHECK_FALSE(c.snapshot.host_threads.empty());
  // The waves grouped once, on the case: the same classes a writer would group.
  CHECK(c.classes.size() == snapshot::group_waves(c.snapshot).size());
  // The same findings the heuristics give over the snapshot alone.
  const auto again = heuristics::run(c.snapshot, heuristics::context_from_meta(""));
  REQUIRE(c.findings.size() == again.size());
  for (std::size_t i = 0; i < again.size(); ++i) {
    CHECK(c.findings[i].id == again[i].id);
    CHECK(c.findings[i].rank == 2);
  }
}

TEST_CASE("analyse: --rank-from's rank wins over the meta's and goes onto every snapshot") {
  const std::string text = slurp(kRoot + "/" + kRec + "1.rec");
  mi::TranscriptReader reader;
  reader.feed(text);
  reader.finish();
  std::vector<mi::Exchange> exchanges;
  while (auto ex = reader.next()) {
    exchanges.push_back(std::move(*ex));
  }
  snapshot::BuildOptions bo;
  bo.meta_json = reader.info().meta_json;
  source::Source src;
  src.offer_rank(7, source::RankRule::Pattern);
  const Case c = incident::analyse(exchanges, bo, src);
  CHECK(c.source.rank == 7);
  CHECK(c.source.rank_rule == source::RankRule::Pattern);
  CHECK(c.snapshot.rank == 7);
  for (const auto& f : c.findings) {
    CHECK(f.rank == 7);
  }
}

TEST_CASE("analyse: no samples is an empty case, not an exception") {
  const Case c = incident::analyse(std::vector<Sample>{}, source::Source{});
  CHECK(c.findings.empty());
  CHECK(c.samples.empty());
  CHECK(c.snapshot.waves.empty());
}
