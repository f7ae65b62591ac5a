// Crash-evidence readers and the joined verdict, over the reconstructed fixtures in
// fixtures/crash (written from the formats in docs/crash-evidence.md).
#include "rocplay/crash/crash.hpp"

#include "../finding_of.hpp"

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

using namespace rocplay;
using namespace rocplay::crash;
namespace fs = std::filesystem;

namespace {

const fs::path kCrash = fs::path(ROCPLAY_SOURCE_DIR) / "fixtures" / "crash";

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

Evidence read_fixture(const std::string& rel, std::optional<int> rank = std::nullopt) {
  const fs::path p = kCrash / rel;
  std::ifstream in(p, std::ios::binary);
  std::string head(64 * 1024, '\0');
  in.read(head.data(), static_cast<std::streamsize>(head.size()));
  head.resize(static_cast<std::size_t>(in.gcount()));
  const auto format = detect(head, p.string());
  REQUIRE(format);
  in.clear();
  in.seekg(0);
  ReadOptions o;
  o.source = p.string();
  o.rank = rank;
  return read_stream(in, *format, o);
}

std::vector<const Event*> of_kind(const Evidence& ev, EventKind kind) {
  std::vector<const Event*> out;
  for (const auto& e : ev.events) {
    if (e.kind == kind) {
      out.push_back(&e);
    }
  }
  return out;
}

} // namespace

TEST_CASE("level 1: the last call is the suspect, the %i in the name is the pid") {
  const Evidence ev = read_fixture("api-level1/kernel_api_4411.log");
  REQUIRE(ev.api.suspect);
  CHECK(ev.api.level == 1);
  CHECK(ev.api.calls == 22);
  CHECK(ev.api.suspect->function == "BatchDecodeWithPagedKVCacheWrapper.run");
  CHECK(ev.api.suspect->sequence == 22);
  CHECK(ev.api.suspect->library == "SGLang Kernel");
  CHECK(ev.api.suspect->timestamp == "2026-03-02 14:07:31");
  CHECK(ev.api.last_completed == "fused_add_rmsnorm");
  CHECK(ev.pid == 4411);
  CHECK(ev.api.system_info.find("MI300X") != std::string::npos);
  const auto fs = findings(ev);
  REQUIRE(!fs.empty());
  CHECK(fs.front().id == kUnfinishedCall);
  CHECK(fs.front().severity == Severity::Warning); // level 1 cannot say it never returned
}

TEST_CASE("level 3: the call without an output block, with its inputs") {
  const Evidence ev = read_fixture("api-level3/kernel_api_7702.log");
  REQUIRE(ev.api.suspect);
  const ApiCall& c = *ev.api.suspect;
  CHECK(ev.api.level == 3);
  CHECK(ev.api.calls == 4);
  CHECK(ev.api.returned == 3);
  CHECK(c.function == "BatchDecodeWithPagedKVCacheWrapper.run");
  CHECK(c.sequence == 4);
  CHECK_FALSE(c.returned);
  CHECK(ev.api.last_completed == "rmsnorm");
  CHECK(ev.gpu == "cuda:3");
  REQUIRE(c.inputs.size() == 5);
  CHECK(c.inputs[0].name == "arg[0]");
  REQUIRE(c.inputs[0].tensors.size() == 1);
  CHECK(c.inputs[0].tensors[0].shape == std::vector<std::int64_t>{32, 8, 128});
  CHECK(c.inputs[0].tensors[0].stride == std::vector<std::int64_t>{1024, 128, 1});
  CHECK(c.inputs[0].tensors[0].dtype == "torch.bfloat16");
  CHECK(c.inputs[0].tensors[0].contiguous == true);
  CHECK(c.inputs[0].tensors[0].extent_bytes() == 32u * 8 * 128 * 2);
  REQUIRE(c.inputs[1].tensors.size() == 2); // a list of two tensors
  CHECK(c.inputs[1].tensors[1].path == "[1]");
  CHECK(c.inputs[1].tensors[1].shape == std::vector<std::int64_t>{2048, 16, 8, 128});
  CHECK(c.inputs[2].name == "causal");
  CHECK(c.inputs[2].section == "keyword");
  CHECK(c.inputs[2].value == "True");
  CHECK(c.inputs[4].name == "window_left");
  CHECK(c.inputs[4].section == "default");
  CHECK(c.inputs[4].value == "-1");
  const auto fs = findings(ev);
  REQUIRE(!fs.empty());
  CHECK(fs.front().id == kUnfinishedCall);
  CHECK(fs.front().severity == Severity::Error);
  CHECK(fs.front().title.find("call #4 began and never returned") != std::string::npos);
}

TEST_CASE("level 5 and the HSA fault line: the address falls just past an input") {
  const Evidence ev = read_fixture("api-level5-fault/server_stderr_5120.log");
  REQUIRE(ev.api.suspect);
  CHECK(ev.api.level == 5);
  CHECK(ev.api.suspect->function == "BatchPrefillWithPagedKVCacheWrapper.run");
  CHECK(ev.api.suspect->inputs[1].tensors[0].data_ptr == 0x7f1c44a1d000u);
  const auto faults = of_kind(ev, EventKind::MemoryAccessFault);
  REQUIRE(faults.size() == 1);
  CHECK(faults[0]->address == 0x7f1c44a21000u);
  CHECK(faults[0]->device == "node-2");
  CHECK(faults[0]->reason == "Page not present or supervisor privilege.");
  const auto dumps = of_kind(ev, EventKind::CoreDump);
  REQUIRE(dumps.size() == 1);
  CHECK(dumps[0]->pid == 5120);

  Joiner j;
  j.add(ev);
  const auto v = j.verdict();
  REQUIRE(!v.empty());
  CHECK(v[0].id == kCrashVerdict);
  CHECK(v[0].details["kernel"] == "BatchPrefillWithPagedKVCacheWrapper.run");
  CHECK(v[0].details["address_in_input"]["input"] == "arg[1]");
  CHECK(v[0].details["address_in_input"]["relation"] == "after");
  CHECK(v[0].details["address_in_input"]["distance_bytes"] == 0);
  CHECK(v[0].details["last_call"]["calls_before"] == 1);
  CHECK(v[0].next_step.find("SGLANG_KERNEL_API_LOGLEVEL=10") != std::string::npos);
  CHECK(v[0].next_step.find("HIP_LAUNCH_BLOCKING=1") != std::string::npos);
}

TEST_CASE("raw dmesg: a gfxhub fault block, ring timeouts and a reset") {
  const Evidence ev = read_fixture("kernel-logs/dmesg-raw.txt");
  const auto faults = of_kind(ev, EventKind::PageFault);
  REQUIRE(faults.size() == 1);
  const Event& e = *faults[0];
  CHECK(e.time == "1203.118204");
  CHECK(e.device == "0000:83:00.0");
  CHECK(e.pid == 4411);
  CHECK(e.process == "python");
  CHECK(e.address == 0x7fa912340000u);
  REQUIRE(e.fault);
  CHECK(e.fault->hub == "gfxhub");
  CHECK(e.fault->pasid == 32770u);
  CHECK(e.fault->vmid == 3u);
  CHECK(e.fault->client == "10");
  CHECK(e.fault->status == 0x00801A3Bu);
  CHECK(e.fault->status_register == "GCVM_L2_PROTECTION_FAULT_STATUS");
  CHECK(e.fault->utcl2_client == "SDMA1 (0xe)");
  CHECK(e.fault->walker_error == 5u);
  CHECK(e.fault->permission_faults == 3u);
  CHECK(e.fault->mapping_error == 1u);
  CHECK(e.fault->rw == 0u);
  CHECK(explain_utcl2_client(e.fault->utcl2_client).find("copy engine") != std::string_view::npos);
  CHECK(of_kind(ev, EventKind::RingTimeout).size() == 2);
  CHECK(of_kind(ev, EventKind::GpuReset).size() == 3);
}

TEST_CASE("dmesg -T: mmhub retry fault, process on the header line, tabs and blank lines") {
  const Evidence ev = read_fixture("kernel-logs/dmesg-T.txt");
  const auto faults = of_kind(ev, EventKind::PageFault);
  REQUIRE(faults.size() == 1);
  const Event& e = *faults[0];
  CHECK(e.time == "Wed Oct  8 17:27:57 2026");
  CHECK(e.fault->hub == "mmhub0");
  CHECK(e.fault->retry);
  CHECK(e.pid == 90210);
  CHECK(e.fault->tid == 90214);
  CHECK(e.process == "python3");
  CHECK(e.address == 0x7f3b00000000u);
  CHECK(e.fault->client == "0x1b (UTCL2)");
  CHECK(e.fault->utcl2_client == "TCP (0x8)");
  CHECK(e.fault->rw == 1u);
  CHECK(e.fault->status_register == "MMVM_L2_PROTECTION_FAULT_STATUS");
}

TEST_CASE("journalctl: a driver fault (pid 0) and an `in process` fault") {
  const Evidence ev = read_fixture("kernel-logs/journalctl.txt");
  const auto faults = of_kind(ev, EventKind::PageFault);
  REQUIRE(faults.size() == 2);
  CHECK(faults[0]->time == "Mar 11 02:13:40");
  CHECK(faults[0]->fault->pasid == 0u);
  CHECK(faults[0]->pid == 0);
  CHECK(faults[0]->fault->utcl2_client == "CPC (0x5)");
  CHECK(faults[1]->pid == 31337);
  CHECK(faults[1]->fault->tid == 31340);
  CHECK(faults[1]->fault->utcl2_client == "SQC (inst) (0x9)");
  CHECK(explain_utcl2_client("SQC (inst) (0x9)").find("instruction") != std::string_view::npos);
}

TEST_CASE("NVIDIA Xid lines are explained") {
  const Evidence ev = read_fixture("kernel-logs/nvidia-xid.txt");
  const auto xids = of_kind(ev, EventKind::Xid);
  REQUIRE(xids.size() == 3);
  CHECK(xids[0]->number == 31);
  CHECK(xids[0]->pid == 1234);
  CHECK(xids[0]->process == "python3");
  CHECK(xids[0]->device == "0000:3b:00");
  CHECK(xids[0]->meaning.find("page fault") != std::string::npos);
  CHECK(xids[1]->number == 45);
  CHECK(xids[2]->number == 79);
  CHECK(xids[2]->meaning.find("fallen off the bus") != std::string::npos);
}

TEST_CASE("runtime messages: HIP errors, OOM, watchdog, no binary, exit status") {
  const Evidence ev = read_fixture("runtime/server.log");
  const auto errors = of_kind(ev, EventKind::GpuError);
  REQUIRE(errors.size() == 2);
  CHECK(errors[0]->name == "hipErrorIllegalAddress");
  CHECK(errors[1]->name == "hipErrorNoBinaryForGpu");
  const auto oom = of_kind(ev, EventKind::OutOfMemory);
  REQUIRE(oom.size() == 1);
  CHECK(oom[0]->reason == "tried to allocate 2.00 GiB");
  CHECK(oom[0]->device == "GPU 0");
  const auto wd = of_kind(ev, EventKind::CollectiveTimeout);
  REQUIRE(wd.size() == 1);
  CHECK(wd[0]->rank == 1);
  CHECK(wd[0]->number == 4412);
  CHECK(wd[0]->name == "ALLREDUCE");
  const auto exits = of_kind(ev, EventKind::ExitStatus);
  REQUIRE(exits.size() == 1);
  CHECK(exits[0]->number == 139); // exitcode -11: SIGSEGV
  CHECK(exits[0]->pid == 5120);
  const auto fs = findings(ev);
  CHECK(test::finding_of(fs, kArchMismatch) == nullptr); // the first GPU error names the finding
  CHECK(test::finding_of(fs, kOutOfMemory) != nullptr);
  CHECK(test::finding_of(fs, kCollectiveTimeout) != nullptr);
  CHECK(test::finding_of(fs, kProcessExit) != nullptr);
}

TEST_CASE("the seed's diagnostics JSON: exit code, arch and the API-log tail") {
  const Evidence ev = read_fixture("diagnostics/crash_diagnostics.json");
  CHECK(ev.formats.front() == Format::Diagnostics);
  CHECK(ev.exit_code == 139);
  CHECK(ev.gpu_arch == "gfx950");
  REQUIRE(ev.api.suspect);
  CHECK(ev.api.suspect->function == "moe_align_block_size");
  CHECK(ev.api.calls == 7);
  Joiner j;
  j.add(ev);
  const auto v = j.verdict();
  REQUIRE(!v.empty());
  CHECK(v[0].details["exit_code"] == 139);
  CHECK(v[0].next_step.find("level 10") != std::string::npos);
}

TEST_CASE("level-10 dumps: inputs_saved never returned, a cut-off dump is counted") {
  const auto dir = std::string("level10/crash_dumps/");
  const Evidence done =
      read_fixture(dir + "20260302_140733_101_moe_align_block_size_call0006/metadata.json");
  REQUIRE(done.dumps.size() == 1);
  CHECK(done.dumps[0].returned());
  CHECK(done.dumps[0].outputs_file);
  CHECK(findings(done).empty());
  const Evidence open =
      read_fixture(dir + "20260302_140733_120_moe_align_block_size_call0007/metadata.json");
  REQUIRE(open.dumps.size() == 1);
  CHECK_FALSE(open.dumps[0].returned());
  CHECK(open.dumps[0].call_sequence == 7u);
  CHECK(open.dumps[0].inputs_file);
  CHECK(open.pid == 6001);
  CHECK(open.dumps[0].input_tensor_keys.size() == 2);
  const auto fs = findings(open);
  REQUIRE(fs.size() == 1);
  CHECK(fs[0].id == kUnfinishedCall);
  const Evidence cut =
      read_fixture(dir + "20260302_140733_140_silu_and_mul_call0008/metadata.json");
  CHECK(cut.truncated);
  CHECK(cut.counters.malformed >= 1);
  REQUIRE(cut.dumps.size() == 1);
  CHECK(cut.dumps[0].function == "silu_and_mul"); // from the directory's name
  CHECK(cut.dumps[0].call_sequence == 8u);

  Joiner j;
  j.add(done);
  j.add(open);
  j.add(cut);
  const auto v = j.verdict();
  REQUIRE(!v.empty());
  CHECK(v[0].details["dump"]["function"] == "moe_align_block_size");
  CHECK(v[0].next_step.find("inputs.pt") != std::string::npos);
}

TEST_CASE("four ranks: rank 2 failed first, and its last call had other shapes") {
  Joiner j;
  for (int pid = 4410; pid <= 4413; ++pid) {
    j.add(read_fixture("tp4-rank2-first/kernel_api_rank" + std::to_string(pid) + ".log"));
  }
  SECTION("from the API logs alone: the rank whose last call began earliest") {
    const auto v = j.verdict();
    REQUIRE(v.size() == 2);
    CHECK(v[0].details["first_rank"] == 2);
    CHECK(v[0].rank == 2);
    CHECK(v[0].details["kernel"] == "BatchDecodeWithPagedKVCacheWrapper.run");
    CHECK(v[0].details["process"]["pid"] == 4412);
    CHECK(v[1].id == kShapeMismatch);
    CHECK(v[1].details["odd"] == nlohmann::json::array({"rank 2 (pid 4412)"}));
  }
  SECTION("with the shared stderr: rank 2's fault, the others' watchdog timeouts") {
    j.add(read_fixture("tp4-rank2-first/server_stderr.log"));
    const auto v = j.verdict();
    REQUIRE(!v.empty());
    CHECK(v[0].details["first_rank"] == 2);
    CHECK(v[0].details["fault"]["address"] == "0x7ef3a0000000");
    CHECK(v[0].details["fault"]["device"] == "node-4");
    CHECK(v[0].title.find("rank 2") == 0);
    bool victims = false;
    for (const auto& o : v[0].details["other_processes"]) {
      victims = victims || o["how"] == "collective timeout (a victim)";
    }
    CHECK(victims);
  }
}

TEST_CASE("bad input is counted and skipped, never a crash") {
  SECTION("binary junk") {
    std::mt19937 rng(7);
    std::string junk(1 << 20, '\0');
    for (auto& c : junk) {
      c = static_cast<char>(rng());
    }
    const Evidence ev = read_text(junk);
    CHECK(ev.counters.binary_lines > 0);
    CHECK(!detect(junk.substr(0, 65536), "junk.bin"));
  }
  SECTION("a line of megabytes") {
    std::string text = std::string(5u << 20, 'x') + " API Call: never_seen\n" +
                       "[2026-03-02 14:07:31] FlashInfer API Call: after_the_long_line\n";
    const Evidence ev = read_text(text);
    CHECK(ev.counters.long_lines == 1);
    REQUIRE(ev.api.suspect);
    CHECK(ev.api.suspect->function == "after_the_long_line");
  }
  SECTION("missing fields") {
    const Evidence ev = read_text("[2026-03-02 14:07:31] FlashInfer API Call:\n"
                                  "Memory access fault by GPU node-1 on address zz. Reason: x\n"
                                  "NVRM: Xid (PCI:0000:3b:00): oops\n"
                                  "amdgpu 0000:83:00.0: amdgpu: [gfxhub] page fault (src_id:x)\n"
                                  "amdgpu 0000:83:00.0: amdgpu:  Process python pid x thread\n");
    CHECK(ev.counters.malformed >= 3);
    CHECK(!ev.api.suspect);
  }
  SECTION("a block cut off mid-tensor, then another header") {
    const Evidence ev = read_text("================================================================"
                                  "================\n"
                                  "[t] FlashInfer API Call: a\n"
                                  "------------------------------------------------------------"
                                  "--------------------\n"
                                  "Positional input arguments:\n  arg[0]:\n    Tensor(\n"
                                  "      shape=(1, \n");
    REQUIRE(ev.api.suspect);
    CHECK(ev.api.suspect->function == "a");
  }
  SECTION("bytes that are not UTF-8 are repaired, so the JSON still dumps") {
    // Found by fuzz_crash: a kernel-log device name with stray high bytes; a Latin-1 path; a
    // line cut inside a 3-byte character.
    ReadOptions o;
    o.source = "logs/dmesg_\xff.txt";
    o.limits.max_line_bytes = 120;
    const Evidence ev =
        read_text("[ 1203.118204] amdgpu 0000:83:00.0: amdgpu: [gfxhub] page fault (src_id:0 "
                  "ring:24 vmid:3 pasid:32770)\n"
                  "[ 1203.118210] amdgpu 00\xae\xae:83:00.0: amdgpu:  Process python pid 4411 "
                  "thread python pid 4411\n"
                  "[ 1203.118214] amdgpu 0000:83:00.0: amdgpu:   in page starting at address "
                  "0x00007f3a2c000000 from client 0x1b (UTCL2) \xe2\x82\xac\xe2\x82\xac\n",
                  o);
    CHECK(ev.source == "logs/dmesg_\xef\xbf\xbd.txt");
    std::string json;
    REQUIRE_NOTHROW(json = to_json(ev).dump());
    CHECK(json.find("\xef\xbf\xbd") != std::string::npos);
  }
  SECTION("a word cut at its length cap inside a character stays UTF-8") {
    // Found by fuzz_crash: a ring name of 3-byte characters longer than the 256-byte word cap.
    std::string name = "gfx_0.0.0";
    for (int i = 0; i < 100; ++i) {
      name += "\xef\xbf\xbf";
    }
    const Evidence ev =
        read_text("[ 1213.200010] amdgpu 0000:83:00.0: amdgpu: ring " + name + " timeout\n");
    const auto rings = of_kind(ev, EventKind::RingTimeout);
    REQUIRE(rings.size() == 1);
    CHECK(rings[0]->name.size() <= 256);
    CHECK(rings[0]->name.starts_with("gfx_0.0.0\xef\xbf\xbf"));
    CHECK_NOTHROW(to_json(ev).dump());
    const auto found = findings(ev);
    REQUIRE_FALSE(found.empty());
    for (const auto& f : found) {
      CHECK_NOTHROW(nlohmann::json({f.title, f.evidence}).dump()); // the title cuts at 160 bytes
    }
  }
  SECTION("fed one byte at a time, the same as in one piece") {
    const std::string text = slurp(kCrash / "api-level3" / "kernel_api_7702.log");
    TextReader r;
    for (char c : text) {
      r.feed(std::string_view(&c, 1));
    }
    const Evidence ev = r.finish();
    REQUIRE(ev.api.suspect);
    CHECK(ev.api.suspect->inputs.size() == 5);
    CHECK(ev.api.calls == 4);
  }
}

TEST_CASE("runtime-line variants: read-only page, Unknown, core dump failed, logger errors") {
  const Evidence ev = read_text(
      "Memory access fault by GPU node-3 (Agent handle: 0x1) on address 0x7f0000001000. Reason: "
      "Write access to a read-only page.\n"
      "Memory access fault by GPU node-5 (Agent handle: 0x2) on address 0x10. Reason: Unknown.\n"
      "GPU core dump failed\n"
      "[LOGGING ERROR in rmsnorm (pre-execution)]: cannot format argument\n");
  const auto faults = of_kind(ev, EventKind::MemoryAccessFault);
  REQUIRE(faults.size() == 2);
  CHECK(faults[0]->meaning.find("read-only") != std::string::npos);
  CHECK(faults[1]->reason == "Unknown.");
  CHECK(faults[1]->address == 0x10u);
  const auto dumps = of_kind(ev, EventKind::CoreDump);
  REQUIRE(dumps.size() == 1);
  CHECK(dumps[0]->name == "core dump failed");
  CHECK(ev.api.logger_errors == 1);
}

TEST_CASE("kernel-log evidence alone gives a node verdict") {
  Joiner j;
  j.add(read_fixture("kernel-logs/nvidia-xid.txt"));
  const auto v = j.verdict();
  REQUIRE(!v.empty());
  CHECK(v[0].id == kCrashVerdict);
  CHECK(v[0].title.find("Xid 31") != std::string::npos);
  CHECK(v[0].next_step.find("LOGLEVEL=1") != std::string::npos); // no API log: start one
}

TEST_CASE(
    "an SGLang `(Worker_TP3 pid=7)` line is rank 3, pid 7, as the agent-log reader reads it") {
  // Before the one rank rule (rocplay/core/source.hpp) this reader needed `rank=` in the prefix.
  const Evidence ev =
      read_text("(Worker_TP3 pid=7) RuntimeError: HIP error: an illegal memory access was "
                "encountered\n");
  const auto errors = of_kind(ev, EventKind::GpuError);
  REQUIRE(errors.size() == 1);
  CHECK(errors[0]->rank == 3);
  CHECK(errors[0]->name == "hipErrorIllegalAddress");
}
