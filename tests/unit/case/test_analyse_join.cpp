// The one analysis step (rocplay/case/analyse.hpp) and the one join (rocplay/case/join.hpp), over
// real inputs: the cuda-gdb recordings of a TP=4 server (fixtures/cuda-gdb/h200x4-server) and the
// crash evidence of a TP=4 job whose rank 2 faulted first (fixtures/crash/tp4-rank2-first).
#include "rocplay/case/analyse.hpp"
#include "rocplay/case/join.hpp"
#include "rocplay/crash/crash.hpp"
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

Case crash_log(const std::string& rel) {
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

TEST_CASE("join: rank 2's recording and rank 2's crash evidence are one process") {
  Incident inc;
  for (int r = 0; r < 4; ++r) {
    inc.cases.push_back(recording(kRec + std::to_string(r) + ".rec"));
  }
  for (int pid = 4410; pid < 4414; ++pid) {
    inc.cases.push_back(crash_log(kLogs + "kernel_api_rank" + std::to_string(pid) + ".log"));
  }
  // The crash logs name a pid (`%i`) and a device (`cuda:N`), no rank of their own.
  REQUIRE(inc.cases[6].crash->pid == 4412);
  REQUIRE(inc.cases[6].crash->gpu == "cuda:2");

  const auto procs = incident::processes(inc);
  REQUIRE(procs.size() == 4); // four ranks, each seen twice
  for (int r = 0; r < 4; ++r) {
    const auto& p = procs[static_cast<std::size_t>(r)];
    CHECK(p.who.rank == r);
    CHECK(p.who.rank_rule == source::RankRule::Meta);
    // The recording (pid from its meta) first, then that rank's crash log.
    REQUIRE(p.cases.size() == 2);
    CHECK(p.cases[0] == static_cast<std::size_t>(r));
    CHECK(p.cases[1] == static_cast<std::size_t>(4 + r));
  }
}

TEST_CASE("join: a crash log's pid joins the recording of that pid and takes its rank") {
  Incident inc;
  Case log = crash_log(kLogs + "kernel_api_rank4411.log");
  inc.cases.push_back(std::move(log));
  Case rec = recording(kRec + "3.rec");
  rec.source.pid = 4411; // as if the recording were of the process that wrote the log
  rec.source.rank = 3;   // the rank its meta gives wins over the log's device
  inc.cases.push_back(std::move(rec));
  const auto procs = incident::processes(inc);
  // The log alone says rank 1 (cuda:1): a different rank is a different process, pid or not.
  REQUIRE(procs.size() == 2);
  CHECK(procs[0].who.rank == 1);
  CHECK(procs[1].who.rank == 3);

  Incident by_pid;
  Case pid_only = crash_log(kLogs + "kernel_api_rank4411.log");
  auto ev = std::make_shared<crash::Evidence>(*pid_only.crash);
  ev->gpu.clear(); // no device: nothing but the pid names the process
  pid_only.crash = ev;
  by_pid.cases.push_back(std::move(pid_only));
  Case same = recording(kRec + "3.rec");
  same.source.pid = 4411;
  by_pid.cases.push_back(std::move(same));
  const auto joined = incident::processes(by_pid);
  REQUIRE(joined.size() == 1);
  CHECK(joined[0].who.pid == 4411);
  CHECK(joined[0].who.rank == 3); // the recording named the rank
  CHECK(joined[0].cases.size() == 2);
}

TEST_CASE("join: the crash verdict over the joined processes names rank 2 first") {
  Incident inc;
  for (int r = 0; r < 4; ++r) {
    inc.cases.push_back(recording(kRec + std::to_string(r) + ".rec"));
  }
  for (int pid = 4410; pid < 4414; ++pid) {
    inc.cases.push_back(crash_log(kLogs + "kernel_api_rank" + std::to_string(pid) + ".log"));
  }
  inc.cases.push_back(crash_log(kLogs + "server_stderr.log"));
  const auto verdict = incident::crash_verdict(inc);
  REQUIRE_FALSE(verdict.empty());
  CHECK(verdict.front().id == crash::kCrashVerdict);
  CHECK(verdict.front().rank == 2);

  // The same verdict as the joiner's own grouping over the crash evidence alone.
  crash::Joiner own;
  for (const auto& c : inc.cases) {
    if (c.crash) {
      own.add(*c.crash);
    }
  }
  const auto alone = own.verdict();
  REQUIRE(alone.size() == verdict.size());
  for (std::size_t i = 0; i < alone.size(); ++i) {
    CHECK(verdict[i].id == alone[i].id);
    CHECK(verdict[i].title == alone[i].title);
    CHECK(verdict[i].rank == alone[i].rank);
  }
}

TEST_CASE("join: no crash evidence, no crash verdict") {
  Incident inc;
  inc.cases.push_back(recording(kRec + "0.rec"));
  CHECK(incident::crash_verdict(inc).empty());
  CHECK(incident::processes(inc).size() == 1);
}
