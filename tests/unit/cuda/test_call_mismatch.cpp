// Ranks stuck in collectives their code reached by different lines (issue 41): two H200 ranks,
// each blocked in an all_reduce of a different process group (graph_group_order.py: rank 0
// reduces on A then B, rank 1 on B then A), recorded with cuda-gdb over two samples. Both stand
// at one line, the helper every reduce goes through; their paths part in main's branch.
#include "replay.hpp"
#include "rocplay/heuristics/heuristics.hpp"

#include <catch2/catch.hpp>

#include <string>
#include <vector>

using namespace rocplay;

namespace {

bool fires(const test::ReplayedRanks& r) {
  for (const auto& f : heuristics::run_ranks(r.last, r.history)) {
    if (f.id == heuristics::kCollectiveCallMismatch) {
      return true;
    }
  }
  return false;
}

} // namespace

TEST_CASE("collective-call-mismatch: two groups entered in different orders, named by the lines") {
  const auto r = test::replayed_ranks(
      {"cuda-gdb/h200x2-graph41-order/rank0.rec", "cuda-gdb/h200x2-graph41-order/rank1.rec"});
  const auto found = heuristics::run_ranks(r.last, r.history);
  REQUIRE(found.size() == 1);
  const Finding& f = found.front();
  CHECK(f.id == heuristics::kCollectiveCallMismatch);
  CHECK(f.severity == Severity::Error);
  // main's branch: `step_rank0(...)` on rank 0, `step_rank1(...)` on rank 1.
  CHECK(f.title.find("rank 0 from main (graph_group_order.py:47)") != std::string::npos);
  CHECK(f.title.find("rank 1 from main (graph_group_order.py:49)") != std::string::npos);
  REQUIRE(f.evidence.size() == 2);
  CHECK(f.evidence[0].find("reduce_on (graph_group_order.py:19) <- step_rank0 "
                           "(graph_group_order.py:23)") != std::string::npos);
  CHECK(f.evidence[1].find("step_rank1 (graph_group_order.py:28)") != std::string::npos);
}

TEST_CASE("collective-call-mismatch: silent on healthy jobs and on a rank gone elsewhere") {
  // Healthy: the ranks reach their all_reduce by one path (or are not in it at both samples).
  CHECK_FALSE(fires(test::replayed_ranks({"cuda-gdb/x2-healthy/nopreload-default-0.rec",
                                          "cuda-gdb/x2-healthy/nopreload-default-1.rec"})));
  CHECK_FALSE(fires(test::replayed_ranks(
      {"cuda-gdb/x4-healthy/default-0.rec", "cuda-gdb/x4-healthy/default-1.rec",
       "cuda-gdb/x4-healthy/default-2.rec", "cuda-gdb/x4-healthy/default-3.rec"})));
  // Rank 3 skipped the all_reduce: missing-rank says it, this rule does not.
  const auto server = test::replayed_ranks(
      {"cuda-gdb/h200x4-server/server-rank0.rec", "cuda-gdb/h200x4-server/server-rank1.rec",
       "cuda-gdb/h200x4-server/server-rank2.rec", "cuda-gdb/h200x4-server/server-rank3.rec"});
  CHECK_FALSE(fires(server));
}
