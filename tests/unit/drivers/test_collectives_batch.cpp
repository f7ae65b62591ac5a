// `rocplay postmortem DIR` over the job's own collective records (rocplay/collectives) through the
// offline driver and the one writer: dumps found by content whatever their names, each directory
// one job, the verdict's first five lines naming the first diverging seq, the kind and the ranks,
// a damaged dump said per file, and a rank's recording joined with its records.
#include "postmortem_text.hpp"

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

const fs::path kCollFixtures = fs::path(ROCPLAY_SOURCE_DIR) / "fixtures";
const fs::path kCollDumps = kCollFixtures / "collectives" / "reconstructed";

struct CollCorpus {
  fs::path root = fs::temp_directory_path() / ("rocplay-coll-" + std::to_string(::getpid()));
  CollCorpus() {
    std::error_code ec;
    fs::remove_all(root, ec);
  }
  ~CollCorpus() {
    std::error_code ec;
    fs::remove_all(root, ec);
  }
  CollCorpus(const CollCorpus&) = delete;
  CollCorpus& operator=(const CollCorpus&) = delete;
  void copy(const fs::path& from, const std::string& to) const {
    fs::create_directories((root / to).parent_path());
    fs::copy_file(from, root / to);
  }
  void write(const std::string& to, const std::string& bytes) const {
    fs::create_directories((root / to).parent_path());
    std::ofstream(root / to, std::ios::binary) << bytes;
  }
};

} // namespace

TEST_CASE("postmortem DIR: each hang's verdict names the seq, the kind and the ranks first",
          "[drivers][postmortem][collectives]") {
  struct Case {
    const char* dir;
    std::vector<std::string> expected; // all within the first five lines
  };
  const std::vector<Case> cases = {
      {"missing_rank", {"missing rank", "seq 4", "rank(s) 1 never entered", "rank(s) 0 wait"}},
      {"op_mismatch", {"op mismatch", "seq 4", "ranks 0,1", "_allgather_base"}},
      {"size_mismatch", {"size mismatch", "seq 4", "ranks 0,1", "262144 elements"}},
      // The cycle of the wait-for graph, each rank's call with its group and sequence number.
      {"order_deadlock",
       {"order deadlock", "seq 2", "ranks 0,1", "a cycle of waits: rank 0: all_reduce",
        "#2 of group 1"}},
  };
  for (const auto& c : cases) {
    CAPTURE(c.dir);
    // Only the pickles, renamed as a user might: found by content, the rank from the name.
    const CollCorpus corpus;
    corpus.copy(kCollDumps / c.dir / "nccl_trace_rank_0", "run/fr_dump.0");
    corpus.copy(kCollDumps / c.dir / "nccl_trace_rank_1", "run/fr_dump.1");
    const auto w = report_text::postmortem_text({corpus.root.string()});
    const std::string head = report_text::first_lines(w.out, 5);
    INFO(w.out);
    for (const auto& e : c.expected) {
      CHECK(head.find(e) != std::string::npos);
    }
    for (const auto& r : w.inputs) {
      CHECK(r.kind == postmortem::InputKind::CollectiveRecord);
      CHECK(r.status == postmortem::InputStatus::Ok);
      CHECK(r.rank.has_value());
    }
    REQUIRE(!w.result.incident.cross_rank.empty());
    CHECK(w.result.incident.cross_rank.front().id.starts_with("collective-"));
  }
}

TEST_CASE("postmortem DIR: two runs in two directories are two jobs, and a clean one says so",
          "[drivers][postmortem][collectives]") {
  const CollCorpus corpus;
  for (const char* dir : {"healthy", "missing_rank"}) {
    corpus.copy(kCollDumps / dir / "nccl_trace_rank_0", std::string(dir) + "/nccl_trace_rank_0");
    corpus.copy(kCollDumps / dir / "nccl_trace_rank_1", std::string(dir) + "/nccl_trace_rank_1");
  }
  const auto w = report_text::postmortem_text({corpus.root.string()});
  const auto& events = w.result.summary.events;
  REQUIRE(events.size() == 2);
  // The one with a finding first; the healthy run reads as no finding.
  CHECK(events[0].key.ends_with("missing_rank"));
  REQUIRE(events[0].findings.size() == 1);
  CHECK(events[0].findings[0].id == "collective-missing-rank");
  CHECK(events[1].key.ends_with("healthy"));
  CHECK(events[1].findings.empty());
  CHECK(w.out.find("no cross-rank finding") != std::string::npos);
}

TEST_CASE("postmortem DIR: a damaged dump is said per file and the others still match",
          "[drivers][postmortem][collectives]") {
  const CollCorpus corpus;
  std::ifstream in(kCollDumps / "missing_rank" / "nccl_trace_rank_1", std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  corpus.copy(kCollDumps / "missing_rank" / "nccl_trace_rank_0", "job/nccl_trace_rank_0");
  corpus.write("job/nccl_trace_rank_1", bytes.substr(0, bytes.size() / 2));
  // A pickle that asks to run code: refused, never run.
  corpus.write("job/nccl_trace_rank_2", std::string("\x80\x02}X\x07\x00\x00\x00"
                                                    "version"
                                                    "X\x07\x00\x00\x00"
                                                    "entries"
                                                    "cos\nsystem\n.",
                                                    39));
  const auto w = report_text::postmortem_text({corpus.root.string()});
  std::size_t unreadable = 0;
  for (const auto& r : w.inputs) {
    if (r.path.ends_with("rank_1")) {
      CHECK(r.status == postmortem::InputStatus::Unreadable);
      CHECK(r.error.starts_with("unreadable pickle: offset "));
      ++unreadable;
    }
    if (r.path.ends_with("rank_2")) {
      CHECK(r.status == postmortem::InputStatus::Unreadable);
      CHECK(r.error.find("GLOBAL (0x63)") != std::string::npos);
      ++unreadable;
    }
  }
  CHECK(unreadable == 2);
  CHECK(w.out.find("unreadable pickle: offset ") != std::string::npos);
}

TEST_CASE("postmortem DIR: a rank's recording joins its records in one incident",
          "[drivers][postmortem][collectives]") {
  // The mechanism, not one run: the two-H200 recordings of an all_reduce/all_gather mismatch
  // (fixtures/cuda-gdb/h200x2-rocplay, ranks 0 and 1 from their meta) beside reconstructed dumps
  // of the same shape of hang. Real dumps and recordings of one run join the same way.
  const CollCorpus corpus;
  corpus.copy(kCollDumps / "op_mismatch" / "nccl_trace_rank_0", "job/nccl_trace_rank_0");
  corpus.copy(kCollDumps / "op_mismatch" / "nccl_trace_rank_1", "job/nccl_trace_rank_1");
  corpus.copy(kCollFixtures / "cuda-gdb" / "h200x2-rocplay" / "nccl-rank0.rec", "job/rank0.rec");
  corpus.copy(kCollFixtures / "cuda-gdb" / "h200x2-rocplay" / "nccl-rank1.rec", "job/rank1.rec");
  const auto w = report_text::postmortem_text({corpus.root.string()});
  const auto& events = w.result.summary.events;
  REQUIRE(!events.empty());
  REQUIRE(!events[0].findings.empty());
  const Finding& f = events[0].findings[0];
  CHECK(f.id == "collective-op-mismatch");
  bool joined_rank0 = false;
  for (const auto& e : f.evidence) {
    if (e.starts_with("joined: rank 0's recording rank0.rec")) {
      joined_rank0 = true;
      CHECK(e.find("ncclDevKernel_AllReduce") != std::string::npos);
      CHECK(e.find("that is group 0 seq 4 all_reduce (flight-recorder)") != std::string::npos);
    }
  }
  CHECK(joined_rank0);
  // One incident holds both: the records' verdict leads, the recordings' cases are in it.
  CHECK(w.result.incident.cross_rank.front().id == "collective-op-mismatch");
  CHECK(w.result.incident.cases.size() == 4);
}

// What two H200s left behind (fixtures/collectives/h200x2, README): PyTorch 2.11's Flight
// Recorder dumps, NCCL 2.28's INFO logs, the watchdog's lines and RAS, read as they came.
TEST_CASE("postmortem DIR over a real run's records: the first divergence first, and one "
          "incident with the debugger's recordings beside them",
          "[drivers][postmortem][collectives]") {
  struct Case {
    const char* dir;
    std::vector<std::string> expected; // all within the first five lines
    bool recorded;                     // rocplay's cuda-gdb recordings of both ranks beside
  };
  const std::vector<Case> cases = {
      {"missing_rank",
       {"missing rank", "seq 4", "rank(s) 1 never entered",
        "rank 1: not in ncclDevKernel_AllReduce", "fr_hang.py:161"},
       true},
      {"op_mismatch",
       {"op mismatch", "seq 4", "ranks 0,1", "a cycle of waits", "fr_hang.py:164",
        "_all_gather_base", "fr_hang.py:167"},
       false},
      {"size_mismatch",
       {"size mismatch", "seq 4", "ranks 0,1", "1024 elements", "262144 elements"},
       false},
      {"order_deadlock",
       {"order deadlock", "seq 2", "ranks 0,1", "a cycle of waits: rank 0: all_reduce",
        "#2 of group 1", "rank 1: all_reduce of 1024 elements #2 of group 2"},
       true},
  };
  for (const auto& c : cases) {
    CAPTURE(c.dir);
    const auto w =
        report_text::postmortem_text({(kCollFixtures / "collectives" / "h200x2" / c.dir).string()});
    const std::string head = report_text::first_lines(w.out, 5);
    INFO(w.out);
    for (const auto& e : c.expected) {
      CHECK(head.find(e) != std::string::npos);
    }
    for (const auto& r : w.inputs) {
      CHECK(r.status == postmortem::InputStatus::Ok); // every file of the run read, none left out
    }
    REQUIRE(!w.result.incident.cross_rank.empty());
    CHECK(w.result.incident.cross_rank.front().id.starts_with("collective-"));
    std::size_t recordings = 0;
    for (const auto& r : w.inputs) {
      recordings += fs::path(r.path).extension() == ".rec" ? 1 : 0;
    }
    CHECK(recordings == (c.recorded ? 2U : 0U));
    if (c.recorded) { // the ranks' kernels wait on what the records say they are in
      CHECK(report_text::first_lines(w.out, 12).find(
                "<- rank 0: ncclDevKernel_AllReduce_Sum_f32_RING_LL") != std::string::npos);
    }
  }
}
