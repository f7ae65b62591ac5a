// Real PyTorch + NCCL workers on two H200s (fixtures/cuda-gdb/h200x2-workers/, issue 27): rank 0
// in all_reduce, rank 1 in all_gather. The verdict leads with the stuck NCCL kernel, never with
// PyTorch's watchdog threads asleep in pthread_cond_timedwait; /proc thread figures and the
// attach's run window, when a recording has them, decide what the stacks alone cannot.
#include "replay.hpp"

#include "rocplay/heuristics/progress.hpp"
#include "snapshot/cuda_api_errors.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <string>
#include <tuple>
#include <vector>

using namespace rocplay;

namespace {

const std::string kRank0 = "cuda-gdb/h200x2-workers/mismatch-rank0.rec";
const std::string kRank1 = "cuda-gdb/h200x2-workers/mismatch-rank1.rec";

// The fixture with `line` inserted just before the first line that starts with `before`.
std::string with_line(const std::string& rel, std::string_view before, const std::string& line) {
  std::string text = test::read_file(test::fixture_path(rel));
  const auto at = text.find("\n" + std::string(before));
  REQUIRE(at != std::string::npos);
  text.insert(at + 1, line + "\n");
  return text;
}

const ProgressEntry* entry(const SampleProgress& p, std::string_view kind,
                           std::string_view label_part) {
  for (const auto& e : p.entries) {
    if (e.kind == kind && e.label.find(label_part) != std::string::npos) {
      return &e;
    }
  }
  return nullptr;
}

void check_no_helper_headline(const std::vector<Finding>& findings) {
  for (const auto& f : findings) {
    INFO(f.id << ": " << f.title);
    CHECK(f.title.find("host thread(s) spin") == std::string::npos);
    for (const auto& ev : f.evidence) {
      CHECK(ev.find("pt_nccl_watchdg") == std::string::npos);
      CHECK(ev.find("pt_nccl_heartbt") == std::string::npos);
    }
  }
}

} // namespace

TEST_CASE("x2 workers: rank 0's NCCL kernel reads stuck and heads the verdict") {
  const auto r = test::replay_samples(kRank0);
  REQUIRE(r.samples.size() == 2);
  const auto s = heuristics::run_samples(r.samples, r.context);
  CHECK(s.progress.verdict == Motion::Stuck);
  const auto* d = entry(s.progress, "dispatch", "ncclDevKernel_AllReduce_Sum_f32_RING_LL");
  REQUIRE(d != nullptr);
  INFO(d->why);
  CHECK(d->motion == Motion::Stuck);
  // The measure over the whole dispatch: nearly every thread on its PC.
  const auto total = d->details.at("total").get<std::uint64_t>();
  const auto stayed = d->details.at("stayed").get<std::uint64_t>();
  CHECK(total > 1000);
  CHECK(stayed * 100 >= total * 99);
  CHECK(d->why.find(" threads stayed on their PC over 2 samples") != std::string::npos);
  REQUIRE_FALSE(s.findings.empty());
  const Finding& head = s.findings.front();
  INFO(head.id << ": " << head.title);
  CHECK(head.severity >= Severity::Error);
  CHECK((head.kernel.find("ncclDevKernel_AllReduce") != std::string::npos ||
         head.title.find("ncclDevKernel_AllReduce") != std::string::npos ||
         head.details.dump().find("ncclDevKernel_AllReduce") != std::string::npos));
  CHECK(head.title.find("slow, not stuck") == std::string::npos);
  check_no_helper_headline(s.findings);
}

TEST_CASE("x2 workers: PyTorch's watchdog and heartbeat threads are blocked, not spinning") {
  for (const auto& rel : {kRank0, kRank1}) {
    INFO(rel);
    const auto r = test::replay_samples(rel);
    const auto p = heuristics::analyze_progress(r.samples);
    for (std::string_view name : {"pt_nccl_watchdg", "pt_nccl_heartbt"}) {
      const auto* t = entry(p, "thread", name);
      REQUIRE(t != nullptr);
      INFO(t->label << ": " << t->why);
      CHECK(t->motion == Motion::Blocked);
      CHECK(t->why.find("pthread_cond_timedwait") != std::string::npos);
    }
    for (const auto& e : p.entries) {
      if (e.kind == "thread") {
        INFO(e.label << ": " << e.why);
        CHECK(e.motion != Motion::Stuck);
      }
    }
  }
}

TEST_CASE("x2 workers: rank 1 (all_gather returned, asleep) has no spinning headline") {
  const auto r = test::replay_samples(kRank1);
  const auto s = heuristics::run_samples(r.samples, r.context);
  CHECK(s.progress.verdict != Motion::Stuck);
  check_no_helper_headline(s.findings);
  for (const auto& f : s.findings) {
    CHECK(f.id != heuristics::kNoProgress);
  }
}

// Rank 1's main thread: clock_nanosleep, unnamed libc frames, the interpreter's C API, then
// __libc_start_main and _start; no Python frames were read. `_start` had been taken for the user's
// code, and libc's wait alone says nothing of the program.
TEST_CASE("x2 workers: the cross-rank finding places rank 1 in Python code, not libc or _start") {
  const auto a = test::replay_samples(kRank0);
  const auto b = test::replay_samples(kRank1);
  std::vector<Snapshot> ranks = {a.samples.back().snapshot, b.samples.back().snapshot};
  ranks[0].rank = 0;
  ranks[1].rank = 1;
  const auto fs = heuristics::run_ranks(ranks);
  REQUIRE_FALSE(fs.empty());
  const std::string all = fs.front().summary + " " + fs.front().title;
  std::string ev;
  for (const auto& e : fs.front().evidence) {
    ev += e + "\n";
  }
  INFO(all << "\n" << ev);
  CHECK((all + ev).find("_start") == std::string::npos);
  CHECK((all + ev).find("in __GI___clock_nanosleep") == std::string::npos);
  CHECK(ev.find("rank 1 (missing): no dispatch in flight; host thread 1 in Python code waiting in "
                "clock_nanosleep") != std::string::npos);
}

TEST_CASE("thread figures: no CPU between samples is never a spin, a burned run is") {
  // The figures a live run writes before sample 2's stop: the main thread idle, the watchdog
  // burning the whole run (as if it spun).
  const std::string note =
      "! 18.313800 threads while running: 2.000 s, 100 ticks/s: 1612:S:0 1750:R:199 1751:S:0";
  const auto r = test::replay_text(with_line(kRank0, "! 18.381299 sample 2:", note));
  REQUIRE(r.samples.size() == 2);
  const HostThread* main = nullptr;
  for (const auto& t : r.samples[1].snapshot.host_threads) {
    if (t.lwp == 1612U) {
      main = &t;
    }
  }
  REQUIRE(main != nullptr);
  REQUIRE(main->figures);
  CHECK(main->figures->state == "S");
  CHECK(main->figures->cpu_seconds == 0);
  CHECK(main->figures->run_seconds == Approx(2.0));
  CHECK_FALSE(r.samples[0].snapshot.host_threads.front().figures); // sample 1: none
  // JSON round trip keeps them.
  const Snapshot back = snapshot_from_json(to_json(r.samples[1].snapshot));
  CHECK(back.host_threads == r.samples[1].snapshot.host_threads);

  const auto p = heuristics::analyze_progress(r.samples);
  const auto* dog = entry(p, "thread", "pt_nccl_watchdg");
  REQUIRE(dog != nullptr);
  INFO(dog->why);
  CHECK(dog->motion == Motion::Stuck); // burned the run in one place, despite the wait frame
  CHECK(dog->why.find("used 1.99 s of CPU") != std::string::npos);
  const auto* beat = entry(p, "thread", "pt_nccl_heartbt");
  REQUIRE(beat != nullptr);
  CHECK(beat->motion == Motion::Blocked);
  CHECK(beat->why.find("used 0.00 s of CPU") != std::string::npos);
  // A runtime's own thread is never the headline, even spinning.
  const auto s = heuristics::run_samples(r.samples, r.context);
  REQUIRE_FALSE(s.findings.empty());
  CHECK(s.findings.front().title.find("host thread(s) spin") == std::string::npos);
}

TEST_CASE("thread figures: malformed notes are ignored") {
  for (std::string note :
       {"! 18.3 threads while running: x s, 100 ticks/s: 1612:S:0",
        "! 18.3 threads while running: 2.0 s, 0 ticks/s: 1612:S:0",
        "! 18.3 threads while running: 2.0 s, 100 ticks/s: 1612:S 1750:RR:1 :S:3",
        "! 18.3 threads while running: 2.0 s, 100 ticks/s:"}) {
    INFO(note);
    const auto r = test::replay_text(with_line(kRank0, "! 18.381299 sample 2:", note));
    REQUIRE(r.samples.size() == 2);
    for (const auto& t : r.samples[1].snapshot.host_threads) {
      CHECK_FALSE(t.figures);
    }
  }
}

TEST_CASE("attach run window: the time cuda-gdb let the target run is not counted as stopped") {
  const auto plain = test::replay_samples(kRank0);
  const std::string note = "! 16.134990 the target ran during the attach: the debugger resumed "
                           "every thread at 1.315420 s and stopped them at 16.134932 s";
  const auto r = test::replay_text(with_line(kRank0, "! 16.310261 sample 1:", note));
  REQUIRE(r.samples.size() == 2);
  CHECK(r.samples[0].stop_seconds ==
        Approx(plain.samples[0].stop_seconds - (16.134932 - 1.315420)).margin(1e-6));
  REQUIRE(r.samples[0].ran_in_stop.size() == 1);
  CHECK(r.samples[0].ran_in_stop[0].first == Approx(1.315420));
  CHECK(r.samples[1].stop_seconds == Approx(plain.samples[1].stop_seconds));
}

TEST_CASE("expected CUDA API failures are notes, not findings") {
  CHECK(snapshot::is_expected_cuda_api_failure(
      "Returning 201 (CUDA_ERROR_INVALID_CONTEXT) from cuCtxGetDevice_v2"));
  CHECK(snapshot::is_expected_cuda_api_failure(
      "Returning 600 (CUDA_ERROR_NOT_READY) from cuStreamQuery"));
  CHECK_FALSE(snapshot::is_expected_cuda_api_failure(
      "Returning 715 (CUDA_ERROR_ILLEGAL_INSTRUCTION) from cuCtxSynchronize_v2"));
  CHECK_FALSE(snapshot::is_expected_cuda_api_failure(
      "Returning 201 (CUDA_ERROR_INVALID_CONTEXT) from cuLaunchKernel"));
  const std::string mi =
      "~\"warning: Cuda Driver error detected: Returning 201 (CUDA_ERROR_INVALID_CONTEXT) from "
      "cuCtxGetDevice_v2\\n\"\n"
      "~\"warning: Cuda Driver error detected: Returning 715 (CUDA_ERROR_ILLEGAL_INSTRUCTION) "
      "from cuCtxSynchronize_v2\\n\"\n";
  const Snapshot s = snapshot::build_from_transcript(mi);
  REQUIRE(s.api_errors.size() == 1);
  CHECK(s.api_errors[0].find("CUDA_ERROR_ILLEGAL_INSTRUCTION") != std::string::npos);
  bool noted = false;
  for (const auto& n : s.notes) {
    noted |= n.find("expected CUDA API failure") != std::string::npos &&
             n.find("cuCtxGetDevice_v2") != std::string::npos;
  }
  CHECK(noted);
  const Snapshot only_probe = snapshot::build_from_transcript(mi.substr(0, mi.find('\n') + 1));
  CHECK(only_probe.api_errors.empty());
  CHECK(heuristics::cuda_api_error(only_probe).empty());
}

// tests/hardware/x2_scenarios.sh on two H200s (fixtures/cuda-gdb/h200x2-scenarios/): each
// recording with its expected verdict.
namespace {

const std::string kDir = "cuda-gdb/h200x2-scenarios/";

heuristics::SampledFindings sampled(const std::string& name, test::Replayed* keep = nullptr) {
  auto r = test::replay_samples(kDir + name);
  REQUIRE(r.samples.size() == 2);
  auto s = heuristics::run_samples(r.samples, r.context);
  if (keep != nullptr) {
    *keep = std::move(r);
  }
  return s;
}

void check_head_names(const heuristics::SampledFindings& s, std::string_view kernel) {
  REQUIRE_FALSE(s.findings.empty());
  const Finding& head = s.findings.front();
  INFO(head.id << ": " << head.title);
  CHECK(head.severity >= Severity::Error);
  CHECK(head.id != heuristics::kHostBlockedOnGpu);
  CHECK((head.title.find(kernel) != std::string::npos ||
         head.kernel.find(kernel) != std::string::npos));
  CHECK(head.title.find("slow, not stuck") == std::string::npos);
}

} // namespace

TEST_CASE("x2 scenarios: every recording carries thread figures and the attach's run window") {
  for (std::string name :
       {"graph.rec", "mapped.rec", "healthy_long.rec", "ipc-rank0.rec", "ipc-rank1.rec",
        "server-rank0.rec", "server-rank1.rec", "skip_rank-rank0.rec", "skip_rank-rank1.rec",
        "mismatch-rank0.rec", "mismatch-rank1.rec"}) {
    INFO(name);
    const auto r = test::replay_samples(kDir + name);
    REQUIRE(r.samples.size() == 2);
    std::size_t with = 0;
    for (const auto& t : r.samples[1].snapshot.host_threads) {
      with += t.figures ? 1 : 0;
    }
    CHECK(with > 0);
    CHECK_FALSE(r.samples[0].ran_in_stop.empty()); // cuda-gdb resumed every thread in the attach
    CHECK(r.samples[0].stop_seconds > 0);
  }
}

TEST_CASE("x2 scenarios: NCCL ranks waiting for a missing peer read stuck, the kernel leads") {
  for (std::string name : {"server-rank0.rec", "skip_rank-rank0.rec", "mismatch-rank0.rec"}) {
    INFO(name);
    const auto s = sampled(name);
    CHECK(s.progress.verdict == Motion::Stuck);
    check_head_names(s, "ncclDevKernel_AllReduce");
    check_no_helper_headline(s.findings);
  }
  for (std::string name : {"server-rank1.rec", "skip_rank-rank1.rec", "mismatch-rank1.rec"}) {
    INFO(name);
    const auto s = sampled(name);
    CHECK(s.progress.verdict != Motion::Stuck);
    check_no_helper_headline(s.findings);
    for (const auto& f : s.findings) {
      CHECK(f.id != heuristics::kNoProgress);
    }
  }
}

TEST_CASE("x2 scenarios: the missing rank is named across ranks") {
  for (std::string stem : {"server", "skip_rank", "mismatch", "ipc"}) {
    INFO(stem);
    const auto a = test::replay_samples(kDir + stem + "-rank0.rec");
    const auto b = test::replay_samples(kDir + stem + "-rank1.rec");
    std::vector<Snapshot> ranks = {a.samples.back().snapshot, b.samples.back().snapshot};
    ranks[0].rank = 0;
    ranks[1].rank = 1;
    const auto fs = heuristics::run_ranks(ranks);
    REQUIRE_FALSE(fs.empty());
    CHECK(fs.front().id == heuristics::kMissingRank);
    CHECK(fs.front().title.find("rank 1") != std::string::npos);
  }
}

TEST_CASE("x2 scenarios: graph-replayed and host-mapped flag polls lead with the kernel's line") {
  for (auto [name, kernel, file] : {std::tuple<std::string, std::string, std::string>{
                                        "graph.rec", "flag_wait", "graph_flag.cu"},
                                    {"mapped.rec", "poll_host_flag", "mapped_flag.cu"}}) {
    INFO(name);
    const auto s = sampled(name);
    CHECK(s.progress.verdict == Motion::Stuck);
    check_head_names(s, kernel);
    const Finding& head = s.findings.front();
    REQUIRE_FALSE(head.locations.empty());
    CHECK(head.locations.front().file.find(file) != std::string::npos);
    CHECK(head.locations.front().line.has_value());
    bool host_as_evidence = false;
    for (const auto& ev : head.evidence) {
      host_as_evidence |= ev.find("the host waits for it") != std::string::npos;
    }
    CHECK(host_as_evidence);
  }
}

TEST_CASE("x2 scenarios: the healthy minute-long kernel reads moving, nothing above info") {
  const auto s = sampled("healthy_long.rec");
  CHECK(s.progress.verdict == Motion::Moving);
  for (const auto& f : s.findings) {
    INFO(f.id << ": " << f.title);
    CHECK(f.severity < Severity::Warning);
  }
}

TEST_CASE("x2 scenarios: the IPC all-reduce's sync lanes are the lanes still polling") {
  const auto s = sampled("ipc-rank0.rec");
  CHECK(s.progress.verdict == Motion::Stuck);
  const Finding* f = nullptr;
  for (const auto& x : s.findings) {
    if (x.id == heuristics::kSyncLaneBarrierSpin) {
      f = &x;
    }
  }
  REQUIRE(f != nullptr);
  INFO(f->title << "\n" << f->details.dump());
  CHECK(f->details.value("lane_level", false));
  CHECK(f->details.at("polling_lanes") == nlohmann::json::array({1}));
  CHECK(f->details.at("missing_peer_slots") == nlohmann::json::array({1}));
  CHECK(f->details.at("ngpus") == 2);
  CHECK(f->title.find("peer slot(s) 1") != std::string::npos);
}

// tests/hardware/x2_scenarios.sh server at TP=4 on four H200s (fixtures/cuda-gdb/h200x4-server/,
// issue 31): rank 3 skipped the all_reduce; ranks 0 and 1 wait in NCCL's LL128 code, where over
// half their threads change PC between samples; cuda-gdb's attach to rank 2's GPU side failed.
TEST_CASE("x4 server: NCCL LL128 ranks waiting for a peer read stuck though their PCs move") {
  const std::string dir = "cuda-gdb/h200x4-server/";
  for (std::string name : {"server-rank0.rec", "server-rank1.rec"}) {
    INFO(name);
    auto r = test::replay_samples(dir + name);
    REQUIRE(r.samples.size() == 2);
    const auto s = heuristics::run_samples(r.samples, r.context);
    CHECK(s.progress.verdict == Motion::Stuck);
    check_head_names(s, "ncclDevKernel_AllReduce");
  }
}

TEST_CASE("x4 server: a rank whose GPU attach failed is unseen, not missing") {
  const std::string dir = "cuda-gdb/h200x4-server/";
  std::vector<Snapshot> ranks;
  for (int r = 0; r < 4; ++r) {
    auto rep = test::replay_samples(dir + "server-rank" + std::to_string(r) + ".rec");
    REQUIRE_FALSE(rep.samples.empty());
    ranks.push_back(rep.samples.back().snapshot);
    ranks.back().rank = r;
  }
  CHECK(ranks[2].gpu_attach_error.find("internal error while attaching") != std::string::npos);
  CHECK(ranks[0].gpu_attach_error.empty());
  const auto single = heuristics::run(ranks[2]);
  REQUIRE_FALSE(single.empty());
  CHECK(single.front().title.find("could not attach to the GPU side") != std::string::npos);
  CHECK(single.front().title.find("not a GPU worker") == std::string::npos);
  const auto cross = heuristics::run_ranks(ranks);
  REQUIRE_FALSE(cross.empty());
  CHECK(cross.front().id == heuristics::kMissingRank);
  CHECK(cross.front().rank == 3);
  CHECK(cross.front().title.find("rank 3 never entered") != std::string::npos);
}

// PyTorch's `torch.cuda._sleep` spin_kernel behind `.item()` (tests/hardware/torch_item_hang.py),
// triaged five times with rocplay's default two samples on an H200 (tests/hardware/verdict_cuda.sh,
// the JSON reports kept whole): its one thread waits on the clock in a 6-instruction loop of 96
// bytes, caught at 0x...bb0 in one sample and at 0x...b60 in the next in three of the five runs.
// Those three read "MOVING (slow, not stuck)" before the loop's code was consulted.
TEST_CASE("torch _sleep: a thread waiting on the clock reads stuck in every run, whichever PCs") {
  for (int run = 0; run < 5; ++run) {
    const auto rel = "cuda-gdb/h200-torch-sleep/two-samples-" + std::to_string(run) + ".json";
    INFO(rel);
    const auto j = nlohmann::json::parse(test::read_file(test::fixture_path(rel)));
    std::vector<Sample> samples(2);
    samples[0].snapshot = snapshot_from_json(j.at("snapshot"));
    samples[1].index = 2;
    samples[1].at = j.at("samples").at(1).at("at").get<double>();
    samples[1].snapshot = snapshot_from_json(j.at("samples").at(1).at("snapshot"));
    const auto r = heuristics::run_samples(samples);
    const ProgressEntry* e = entry(r.progress, "dispatch", "spin_kernel");
    REQUIRE(e != nullptr);
    INFO(e->why);
    CHECK(e->motion == Motion::Stuck);
    REQUIRE_FALSE(r.findings.empty());
    CHECK(r.findings.front().id == heuristics::kNoProgress);
    CHECK(r.findings.front().kernel.find("spin_kernel") != std::string::npos);
    const bool clock_said = e->why.find("reads the clock") != std::string::npos;
    // The runs caught at two PCs of the loop say why that is no progress.
    const bool two_pcs = samples[0].snapshot.waves.at(0).pc != samples[1].snapshot.waves.at(0).pc;
    CHECK(clock_said == two_pcs);
  }
}
