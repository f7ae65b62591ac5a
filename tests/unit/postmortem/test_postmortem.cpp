#include "rocplay/postmortem/postmortem.hpp"

#include "rocplay/core/error.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

using namespace rocplay;
using namespace rocplay::postmortem;
namespace fs = std::filesystem;

namespace {

const fs::path kFixtures = fs::path(ROCPLAY_SOURCE_DIR) / "fixtures";
// Two ranks of one NCCL hang, recorded by rocplay with cuda-gdb on two H200s.
const fs::path kNccl = kFixtures / "cuda-gdb/h200x2-rocplay";

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct TempDir {
  fs::path path;
  TempDir() {
    path = fs::temp_directory_path() /
           ("rocplay-pm-" + std::to_string(::getpid()) + "-" + std::to_string(counter()++));
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  static int& counter() {
    static int n = 0;
    return n;
  }
  fs::path write(const std::string& name, std::string_view content) const {
    const fs::path p = path / name;
    fs::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary) << content;
    return p;
  }
};

std::vector<InputResult> collect(const Options& options, Summary* summary = nullptr) {
  std::vector<InputResult> out;
  Summary s = run(options, [&](const InputResult& r) { out.push_back(r); });
  if (summary != nullptr) {
    *summary = s;
  }
  return out;
}

// A batch over the whole of `dir`: its summary.
Summary summary_of(const TempDir& dir) {
  Options options;
  options.paths = {dir.path.string()};
  Summary summary;
  collect(options, &summary);
  return summary;
}

bool has_signature(const InputResult& r, std::string_view heuristic) {
  for (const auto& s : r.signatures) {
    if (s.heuristic == heuristic) {
      return true;
    }
  }
  return false;
}

} // namespace

TEST_CASE("the real cuda-gdb recordings give their hangs offline", "[postmortem]") {
  Options options;
  options.paths = {(kFixtures / "cuda-gdb/syncspin-h200.mi").string(),
                   (kFixtures / "cuda-gdb/splitk-clean-h200.mi").string()};
  Summary summary;
  const auto results = collect(options, &summary);
  REQUIRE(results.size() == 2);
  CHECK(results[0].kind == InputKind::RawMi);
  CHECK(results[0].status == InputStatus::Ok);
  CHECK(has_signature(results[0], "sync-lane-barrier-spin"));
  CHECK_FALSE(results[0].snapshot.dispatches.empty());
  CHECK(summary.inputs == 2);
  CHECK(summary.unreadable == 0);
  CHECK(summary.with_findings >= 1);
}

TEST_CASE("a recording's meta gives the heuristics the workers the live run saw", "[postmortem]") {
  Options options;
  options.paths = {(kFixtures / "rocgdb/dispatcher-nothing-active/snapshot.mi").string()};
  const auto results = collect(options);
  REQUIRE(results.size() == 1);
  const Finding* nothing = nullptr;
  for (const auto& f : results[0].findings) {
    if (f.id == "nothing-visible") {
      nothing = &f;
    }
  }
  REQUIRE(nothing != nullptr);
  // `"worker_pids":[4301,...,4308]` in the recording's `# meta`.
  REQUIRE(nothing->details.contains("worker_pids"));
  CHECK(nothing->details["worker_pids"].size() == 8);
  CHECK(nothing->details["worker_pids"][0] == 4301);
  CHECK(nothing->next_step.find("4301") != std::string::npos);
}

TEST_CASE("bad inputs are reported and survived", "[postmortem]") {
  TempDir dir;
  const std::string good = slurp(kFixtures / "cuda-gdb/syncspin-h200.mi");
  dir.write("a-empty.mi", "");
  dir.write("b-junk.bin", std::string("\x7f"
                                      "ELF\x02\x01\x01\0\0\0binary",
                                      17));
  dir.write("c-truncated.mi", good.substr(0, good.size() * 2 / 3));
  dir.write("d-mixed.mi", "launched pid=478\n" + good);
  dir.write("e-good.mi", good);
  Options options;
  options.paths = {dir.path.string(), (dir.path / "does-not-exist.mi").string()};
  Summary summary;
  const auto results = collect(options, &summary);
  // The empty file is left out of the walk (nothing to read), and said so (test_doc_inputs.cpp).
  REQUIRE(results.size() == 5);
  REQUIRE(summary.skipped.size() == 1);
  CHECK(fs::path(summary.skipped[0].path).filename() == "a-empty.mi");
  CHECK(summary.skipped[0].why == "an empty file");
  // Missing inputs come first, then files in sorted order.
  CHECK(results[0].status == InputStatus::Unreadable);
  CHECK(results[0].path.find("does-not-exist") != std::string::npos);
  CHECK(results[1].status == InputStatus::Unreadable);
  CHECK(results[1].kind == InputKind::Unknown);
  CHECK_FALSE(results[1].error.empty());
  CHECK(results[2].status == InputStatus::Partial);
  bool truncation_warned = false;
  for (const auto& w : results[2].warnings) {
    truncation_warned = truncation_warned || w.find("ends inside an exchange") != std::string::npos;
  }
  CHECK(truncation_warned);
  CHECK(results[3].status == InputStatus::Partial);
  CHECK(results[3].skipped_lines == 1);
  CHECK(has_signature(results[3], "sync-lane-barrier-spin"));
  CHECK(results[4].status == InputStatus::Ok);
  CHECK(summary.unreadable == 2);
  CHECK(summary.empty == 0);
  CHECK(summary.partial == 2);
}

TEST_CASE("output order does not depend on the number of workers", "[postmortem]") {
  TempDir dir;
  const std::string spin = slurp(kFixtures / "cuda-gdb/syncspin-h200.mi");
  const std::string clean = slurp(kFixtures / "cuda-gdb/splitk-clean-h200.mi");
  for (int i = 0; i < 24; ++i) {
    dir.write("t" + std::to_string(100 + i) + ".mi", i % 3 == 0 ? clean : spin);
  }
  Options one;
  one.paths = {dir.path.string()};
  one.jobs = 1;
  Options many = one;
  many.jobs = 4;
  Summary s1;
  Summary s4;
  const auto a = collect(one, &s1);
  const auto b = collect(many, &s4);
  REQUIRE(a.size() == 24);
  REQUIRE(b.size() == 24);
  for (std::size_t i = 0; i < a.size(); ++i) {
    CHECK(a[i].path == b[i].path);
    CHECK(a[i].signatures == b[i].signatures);
  }
  REQUIRE(s1.classes.size() == s4.classes.size());
  for (std::size_t i = 0; i < s1.classes.size(); ++i) {
    CHECK(s1.classes[i].members == s4.classes[i].members);
  }
  // Inputs with the same stuck pattern group into one class.
  REQUIRE_FALSE(s1.classes.empty());
  CHECK(s1.classes[0].members.size() == 16);
  CHECK(s1.classes[0].signature.heuristic == "sync-lane-barrier-spin");
}

TEST_CASE("per-rank recordings in one directory form an event with cross-rank findings",
          "[postmortem][ranks]") {
  Options options;
  options.paths = {(kFixtures / "rocgdb/tp8-missing-rank").string()};
  Summary summary;
  const auto results = collect(options, &summary);
  std::size_t ranked = 0;
  for (const auto& r : results) {
    if (r.kind == InputKind::Recording) {
      REQUIRE(r.rank.has_value());
      ++ranked;
    }
  }
  CHECK(ranked == 8);
  REQUIRE(summary.events.size() == 1);
  CHECK(summary.events[0].ranks == std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7});
  bool missing_rank = false;
  for (const auto& f : summary.events[0].findings) {
    missing_rank = missing_rank || f.id == "missing-rank";
  }
  CHECK(missing_rank);
}

TEST_CASE("the rank-from option takes ranks from file names", "[postmortem][ranks]") {
  TempDir dir;
  const std::string spin = slurp(kFixtures / "cuda-gdb/syncspin-h200.mi");
  dir.write("node-a/worker_rank3.mi", spin);
  dir.write("node-a/worker_rank1.mi", spin);
  Options options;
  options.paths = {dir.path.string()};
  options.rank_pattern = "rank(\\d+)";
  const auto results = collect(options);
  REQUIRE(results.size() == 2);
  CHECK(results[0].rank == 1);
  CHECK(results[1].rank == 3);

  options.rank_pattern = "rank\\d+";
  CHECK_THROWS_AS(collect(options), rocplay::Error);
  options.rank_pattern = "rank(";
  CHECK_THROWS_AS(collect(options), rocplay::Error);
}

TEST_CASE("rocplay JSON output is accepted as input", "[postmortem]") {
  Options first;
  first.paths = {(kFixtures / "cuda-gdb/syncspin-h200.mi").string()};
  const auto original = collect(first);
  REQUIRE(original.size() == 1);
  TempDir dir;
  nlohmann::json line = {{"schema", "rocplay.report"}, {"snapshot", to_json(original[0].snapshot)}};
  dir.write("node1.jsonl", line.dump() + "\n" + line.dump() + "\nnot json\n");
  Options again;
  again.paths = {(dir.path / "node1.jsonl").string()};
  const auto results = collect(again);
  REQUIRE(results.size() == 2);
  CHECK(results[0].kind == InputKind::ReportJson);
  CHECK(results[0].member == "#0");
  CHECK(results[1].member == "#1");
  CHECK(results[0].snapshot == original[0].snapshot);
  CHECK(results[0].signatures == original[0].signatures);
  CHECK(results[0].skipped_lines == 1);
}

TEST_CASE("agent logs are routed to the fault path", "[postmortem]") {
  Options options;
  options.paths = {(kFixtures / "agentlog/seed_sample.log").string(),
                   (kFixtures / "agentlog/no_dumps.log").string()};
  const auto results = collect(options);
  REQUIRE(results.size() == 2);
  CHECK(results[0].kind == InputKind::AgentLog);
  CHECK_FALSE(results[0].findings.empty());
  CHECK_FALSE(results[0].signatures.empty());
  // A server log without dumps is read, found empty, and says what to do instead.
  CHECK(results[1].kind == InputKind::AgentLog);
  CHECK(results[1].status == InputStatus::Ok);
  CHECK(results[1].findings.empty());
  REQUIRE(results[1].warnings.size() == 1);
  CHECK(results[1].warnings[0].find("rocplay run hang-triage") != std::string::npos);
}

TEST_CASE("a FIFO named on the command line is read without hanging the batch", "[postmortem]") {
  // open() of a FIFO nobody writes to used to block for ever, and the good file named beside it
  // was never reported.
  TempDir dir;
  const fs::path fifo = dir.path / "pipe.mi";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  const fs::path good = dir.write("good.mi", slurp(kFixtures / "cuda-gdb/syncspin-h200.mi"));
  Options options;
  options.paths = {fifo.string(), good.string()};
  const auto results = collect(options);
  REQUIRE(results.size() == 2);
  CHECK(results[0].status == InputStatus::Empty);
  CHECK(results[0].error.find("pipe or FIFO") != std::string::npos);
  CHECK(results[1].status == InputStatus::Ok);
  CHECK(has_signature(results[1], "sync-lane-barrier-spin"));
}

TEST_CASE("a pipe's size is what was read from it", "[postmortem]") {
  // `postmortem <(cat rec)` reported 17592186044416.0 MB (file_size of a pipe) and no records.
  const std::string rec = slurp(kFixtures / "cuda-gdb/syncspin-h200.mi");
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  std::thread writer([&] {
    std::size_t off = 0;
    while (off < rec.size()) {
      const ssize_t n = ::write(fds[1], rec.data() + off, rec.size() - off);
      if (n <= 0) {
        break;
      }
      off += static_cast<std::size_t>(n);
    }
    ::close(fds[1]);
  });
  Options options;
  options.paths = {"/proc/self/fd/" + std::to_string(fds[0])};
  const auto results = collect(options);
  writer.join();
  ::close(fds[0]);
  REQUIRE(results.size() == 1);
  CHECK(results[0].bytes == rec.size());
  CHECK(results[0].status == InputStatus::Ok);
  CHECK(has_signature(results[0], "sync-lane-barrier-spin"));
}

TEST_CASE("dangling links and FIFOs inside a directory are reported, not skipped", "[postmortem]") {
  TempDir dir;
  dir.write("a-good.mi", slurp(kFixtures / "cuda-gdb/syncspin-h200.mi"));
  fs::create_symlink(dir.path / "gone.mi", dir.path / "b-dangling.mi");
  REQUIRE(::mkfifo((dir.path / "c-fifo.mi").c_str(), 0600) == 0);
  Options options;
  options.paths = {dir.path.string(), (dir.path / "b-dangling.mi").string()};
  Summary summary;
  const auto results = collect(options, &summary);
  REQUIRE(results.size() == 4);
  std::size_t dangling = 0;
  std::size_t fifo = 0;
  for (const auto& r : results) {
    if (r.path.find("b-dangling") != std::string::npos) {
      CHECK(r.status == InputStatus::Unreadable);
      CHECK(r.error.find("dangling symbolic link") != std::string::npos);
      ++dangling;
    }
    if (r.path.find("c-fifo") != std::string::npos) {
      CHECK(r.status == InputStatus::Unreadable);
      CHECK(r.error.find("FIFO") != std::string::npos);
      ++fifo;
    }
  }
  CHECK(dangling == 2); // inside the directory, and named on the command line
  CHECK(fifo == 1);
  CHECK(summary.ok == 1);
  CHECK(summary.unreadable == 3);
}

TEST_CASE("plain text is not an agent log, a server log without dumps still is", "[postmortem]") {
  TempDir dir;
  const fs::path hello = dir.write("hello.txt", "hello world\n");
  Options options;
  options.paths = {hello.string(), (kFixtures / "agentlog/no_dumps.log").string()};
  const auto results = collect(options);
  REQUIRE(results.size() == 2);
  CHECK(results[0].kind == InputKind::Unknown);
  CHECK(results[0].status == InputStatus::Unreadable);
  CHECK(results[0].error.find("plain text") != std::string::npos);
  CHECK(results[1].kind == InputKind::AgentLog);
  CHECK(results[1].status == InputStatus::Ok);
}

TEST_CASE("a character device is refused, not read", "[postmortem]") {
  Options options;
  options.paths = {"/dev/zero"};
  const auto results = collect(options);
  REQUIRE(results.size() == 1);
  CHECK(results[0].status == InputStatus::Unreadable);
  CHECK(results[0].error.find("character device") != std::string::npos);
}

namespace {

// A recording without its `# meta` line: what a raw log saved by hand tells about its rank.
std::string without_meta(const fs::path& p) {
  std::string text = slurp(p);
  const auto at = text.find("# meta ");
  if (at != std::string::npos) {
    text.erase(at, text.find('\n', at) + 1 - at);
  }
  return text;
}

bool has_finding(const Event& e, std::string_view id) {
  return std::any_of(e.findings.begin(), e.findings.end(),
                     [&](const Finding& f) { return f.id == id; });
}

} // namespace

TEST_CASE("ranks in file names: rank0, rank_1, r3, tp2, trailing -N", "[postmortem][ranks]") {
  auto t = [](const std::string& path) { return rank_in_file_name(path); };
  CHECK(t("d/hang_rank0.mi") == std::make_pair(std::string("d/hang_rank#.mi"), 0));
  CHECK(t("d/hang_rank_1.mi")->second == 1);
  CHECK(t("d/job-r3.rec")->second == 3);
  CHECK(t("d/tp2.log.mi")->second == 2);
  CHECK(t("d/worker-5.rec")->second == 5);
  CHECK(t("d/dump_12.mi")->second == 12);
  CHECK(t("d/RANK7.mi")->second == 7);
  // Numbers that are not ranks: inside a word, or no number at all.
  CHECK_FALSE(t("d/gfx942.mi").has_value());
  CHECK_FALSE(t("d/hang.mi").has_value());
  CHECK(t("d/gfx942_rank1.mi")->second == 1);
}

TEST_CASE("raw logs named rank0/rank1 form one event by their names, and say so",
          "[postmortem][ranks]") {
  TempDir dir;
  dir.write("hang/run_rank0.rec", without_meta(kNccl / "nccl-rank0.rec"));
  dir.write("hang/run_rank1.rec", without_meta(kNccl / "nccl-rank1.rec"));
  // Unrelated transcripts beside them: named differently, never joined.
  dir.write("hang/other_rank0.rec", without_meta(kNccl / "nccl-rank1.rec"));
  dir.write("hang/lonely_r5.rec", without_meta(kNccl / "nccl-rank1.rec"));
  const Summary summary = summary_of(dir);
  REQUIRE(summary.events.size() == 1);
  const Event& e = summary.events[0];
  CHECK(e.key.ends_with("run_rank#.rec"));
  CHECK(e.rule == "file name");
  CHECK(e.ranks == std::vector<int>{0, 1});
  CHECK(has_finding(e, "missing-rank"));
}

TEST_CASE("one-event joins the inputs in the order given, and meta ranks win",
          "[postmortem][ranks]") {
  TempDir dir;
  const auto a = dir.write("first.rec", without_meta(kNccl / "nccl-rank0.rec"));
  const auto b = dir.write("second.rec", without_meta(kNccl / "nccl-rank1.rec"));
  Options options;
  options.paths = {a.string(), b.string()};
  Summary summary;
  collect(options, &summary);
  CHECK(summary.events.empty()); // nothing says they belong together
  options.one_event = true;
  collect(options, &summary);
  REQUIRE(summary.events.size() == 1);
  CHECK(summary.events[0].rule == "input order");
  CHECK(summary.events[0].ranks == std::vector<int>{0, 1});
  CHECK(has_finding(summary.events[0], "missing-rank"));

  // The recordings' own environment (RANK) tells the ranks without any option.
  TempDir meta;
  meta.write("x.rec", slurp(kNccl / "nccl-rank1.rec"));
  meta.write("y.rec", slurp(kNccl / "nccl-rank0.rec"));
  options = Options{};
  options.paths = {meta.path.string()};
  const auto results = collect(options, &summary);
  REQUIRE(summary.events.size() == 1);
  CHECK(summary.events[0].rule == "meta RANK");
  CHECK(summary.events[0].ranks == std::vector<int>{0, 1});
  for (const auto& r : results) {
    CHECK(r.rank_rule == "meta RANK");
  }
}

TEST_CASE("two inputs claiming one rank are never joined into a false event",
          "[postmortem][ranks]") {
  TempDir dir;
  dir.write("a.rec", slurp(kNccl / "nccl-rank0.rec"));
  // Another process (its meta's pid changed) that also says it is rank 0: a second hang.
  std::string other = slurp(kNccl / "nccl-rank0.rec");
  const auto at = other.find("\"pid\":");
  REQUIRE(at != std::string::npos);
  other.insert(at + 6, "9");
  dir.write("b.rec", other);
  dir.write("c.rec", slurp(kNccl / "nccl-rank1.rec"));
  const Summary summary = summary_of(dir);
  CHECK(summary.events.empty());
  REQUIRE_FALSE(summary.warnings.empty());
  CHECK(summary.warnings.front().find("both are rank 0") != std::string::npos);
}

// Four ranks on H200 (fixtures/cuda-gdb/h200x4-server-alone), and rank 0 recorded again alone
// 40 s later: one process recorded twice is one rank, and the event keeps the recording made
// with the other ranks'.
TEST_CASE("a rank recorded twice from one process still makes the event", "[postmortem][ranks]") {
  const fs::path dir = kFixtures / "cuda-gdb/h200x4-server-alone";
  Options options;
  options.paths = {dir.string()};
  Summary summary;
  collect(options, &summary);
  REQUIRE(summary.events.size() == 1);
  CHECK(summary.events[0].ranks == std::vector<int>{0, 1, 2, 3});
  REQUIRE(has_finding(summary.events[0], "missing-rank"));
  bool named = false;
  for (const auto& f : summary.events[0].findings) {
    named = named || (f.id == "missing-rank" && f.title.find("rank 3") != std::string::npos);
  }
  CHECK(named);
  REQUIRE(summary.warnings.size() == 1);
  CHECK_THAT(summary.warnings[0], Catch::Contains("are recordings of one process (rank 0"));
  CHECK_THAT(summary.warnings[0], Catch::EndsWith("takes " + (dir / "server-rank0.rec").string() +
                                                  ", made with the other ranks' (the series "
                                                  "below compares both)"));
  REQUIRE(summary.series.size() == 1);
  CHECK(summary.series[0].members.size() == 2);
}

TEST_CASE("findings without their full details say the same, with the dispatch's id and kernel",
          "[postmortem]") {
  // A text report asks for no details (Options::details off): the wave classes and the
  // dispatch's other fields are left out; what the report prints and the later steps read stay.
  Options full;
  full.paths = {(kFixtures / "rocgdb/tp8-allgather-sync-spin/snapshot.mi").string()};
  Options lite = full;
  lite.details = false;
  const auto a = collect(full);
  const auto b = collect(lite);
  REQUIRE(a.size() == 1);
  REQUIRE(b.size() == 1);
  REQUIRE(a[0].findings.size() == b[0].findings.size());
  REQUIRE_FALSE(a[0].findings.empty());
  for (std::size_t i = 0; i < a[0].findings.size(); ++i) {
    const Finding& x = a[0].findings[i];
    const Finding& y = b[0].findings[i];
    CHECK(x.id == y.id);
    CHECK(x.title == y.title);
    CHECK(x.summary == y.summary);
    CHECK(x.evidence == y.evidence);
    CHECK(x.next_step == y.next_step);
    CHECK(x.locations == y.locations);
    CHECK(x.kernel == y.kernel);
    if (x.details.contains("dispatch")) {
      REQUIRE(y.details.contains("dispatch"));
      CHECK(y.details["dispatch"]["id"] == x.details["dispatch"]["id"]);
      CHECK(y.details["dispatch"]["kernel"] == x.details["dispatch"]["kernel"]);
    }
  }
  const Finding& spin = a[0].findings.front();
  REQUIRE(spin.id == "sync-lane-barrier-spin");
  CHECK(spin.details.contains("spin"));
  CHECK(spin.details["dispatch"].contains("kernel_info"));
  CHECK_FALSE(b[0].findings.front().details.contains("spin"));
  CHECK_FALSE(b[0].findings.front().details["dispatch"].contains("kernel_info"));
  CHECK(a[0].signatures == b[0].signatures);
}
