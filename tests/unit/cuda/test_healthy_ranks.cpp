// Healthy NCCL jobs looked at on real GPUs (issue 40): a look at a job that keeps stepping must not
// name a missing rank. A single moment often catches one rank a step ahead of another; what tells
// a job that keeps completing its collectives from one that waits is whether the collective in
// flight at the last sample was already in flight at the first, and one sample cannot tell.
#include "../finding_of.hpp"
#include "replay.hpp"

#include "rocplay/heuristics/heuristics.hpp"

#include <catch2/catch.hpp>

#include <string>
#include <vector>

using namespace rocplay;

namespace {

bool in_all_reduce(const Snapshot& s) {
  for (const auto& d : s.dispatches) {
    if (d.kernel_name.find("ncclDevKernel_AllReduce") != std::string::npos) {
      return true;
    }
  }
  return false;
}

} // namespace

TEST_CASE("healthy four ranks: the ranks are judged at their last sample, as the live run does") {
  const auto r = test::replayed_ranks(
      {"cuda-gdb/x4-healthy/default-0.rec", "cuda-gdb/x4-healthy/default-1.rec",
       "cuda-gdb/x4-healthy/default-2.rec", "cuda-gdb/x4-healthy/default-3.rec"});
  REQUIRE(r.history.size() == 4);
  for (const auto& h : r.history) {
    CHECK(h.samples == 2);
  }
  // The first moment: three ranks in the all_reduce, rank 0 not yet. The post-mortem judged it
  // (a critical missing rank 0) while the live run judged the last sample.
  CHECK(!in_all_reduce(r.first[0]));
  CHECK(in_all_reduce(r.first[1]));
  const auto moment = heuristics::run_ranks(r.first);
  const Finding* claimed = test::finding_of(moment, "missing-rank");
  REQUIRE(claimed != nullptr);
  CHECK(claimed->rank == 0);
  // The last sample, 2 s later: every rank in its next step's matmuls.
  for (const auto& s : r.last) {
    CHECK(!in_all_reduce(s));
  }
  CHECK(test::finding_of(heuristics::run_ranks(r.last, r.history), "missing-rank") == nullptr);
}

TEST_CASE("a rank in a collective it launched since its first sample waits for no missing rank") {
  // The real moment of a healthy job (rank 0 in the all_reduce, rank 1 in its matmuls), with the
  // first sample each rank would have had: the collective already in flight (a wait), or not yet.
  const auto r = test::replayed_ranks(
      {"cuda-gdb/x2-healthy/nopreload-s1-0.rec", "cuda-gdb/x2-healthy/nopreload-s1-1.rec"});
  REQUIRE(in_all_reduce(r.last[0]));
  const auto launched_since = heuristics::run_ranks(
      r.last, {heuristics::RankHistory{2, {}}, heuristics::RankHistory{2, {}}});
  CHECK(test::finding_of(launched_since, "missing-rank") == nullptr);
  // Rank 0's first sample the same moment: its all_reduce already in flight.
  std::vector<Sample> rank0(2);
  rank0[0].snapshot = r.last[0];
  rank0[1].snapshot = r.last[0];
  const auto waited = heuristics::run_ranks(
      r.last, {heuristics::rank_history(rank0), heuristics::RankHistory{2, {}}});
  const Finding* missing = test::finding_of(waited, "missing-rank");
  REQUIRE(missing != nullptr);
  CHECK(missing->rank == 1);
  CHECK(missing->severity >= Severity::Error);
}

TEST_CASE("healthy two ranks, one sample: a rank outside the collective is a warning, not an "
          "error") {
  const auto r = test::replayed_ranks(
      {"cuda-gdb/x2-healthy/nopreload-s1-0.rec", "cuda-gdb/x2-healthy/nopreload-s1-1.rec"});
  CHECK(in_all_reduce(r.last[0]));
  CHECK(!in_all_reduce(r.last[1]));
  // Without knowing how many samples there were, the moment is judged as it always was.
  const auto judged_alone = heuristics::run_ranks(r.last);
  const Finding* unknown = test::finding_of(judged_alone, "missing-rank");
  REQUIRE(unknown != nullptr);
  CHECK(unknown->severity == Severity::Error);
  // A live run knows it took one sample.
  const auto judged = heuristics::run_ranks(r.last, r.history);
  const Finding* one = test::finding_of(judged, "missing-rank");
  REQUIRE(one != nullptr);
  CHECK(one->severity == Severity::Warning);
  CHECK(one->rank == 1);
  bool said = false;
  for (const auto& e : one->evidence) {
    said = said || e.find("one sample: a rank only late") != std::string::npos;
  }
  CHECK(said);
}

TEST_CASE("the hung four-rank server over two samples still names the rank that never arrived") {
  const auto r = test::replayed_ranks(
      {"cuda-gdb/h200x4-server/server-rank0.rec", "cuda-gdb/h200x4-server/server-rank1.rec",
       "cuda-gdb/h200x4-server/server-rank2.rec", "cuda-gdb/h200x4-server/server-rank3.rec"});
  const auto findings = heuristics::run_ranks(r.last, r.history);
  const Finding* missing = test::finding_of(findings, "missing-rank");
  REQUIRE(missing != nullptr);
  CHECK(missing->rank == 3);
  CHECK(missing->severity >= Severity::Error);
  bool waited = false;
  for (const auto& e : missing->evidence) {
    waited = waited || e.find("was in flight already at the first sample") != std::string::npos;
  }
  CHECK(waited);
}

TEST_CASE("one live sample: a collective waiting for its peers is a warning with the reason") {
  // A rank of the hung server, one moment of it: the same lanes a healthy all_reduce shows for a
  // moment (seen on a healthy TP=2 job under --samples 1, issue 40).
  const auto r = test::replay_samples("cuda-gdb/h200x4-server/server-rank0.rec");
  REQUIRE(!r.samples.empty());
  auto findings = heuristics::run(r.samples.front().snapshot, r.context);
  const Finding* before = test::finding_of(findings, "collective-wait");
  REQUIRE(before != nullptr);
  REQUIRE(before->severity >= Severity::Error);
  const double confidence = before->confidence;
  heuristics::judge_one_moment(findings);
  const Finding* after = test::finding_of(findings, "collective-wait");
  REQUIRE(after != nullptr);
  CHECK(after->severity == Severity::Warning);
  CHECK(after->confidence == Approx(confidence * 0.5));
  CHECK(after->evidence.back().starts_with("one sample: the lanes of a healthy collective"));
  for (const auto& f : findings) {
    CHECK(f.severity <= Severity::Warning);
  }
}
