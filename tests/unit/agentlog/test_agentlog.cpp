// rocm-debug-agent wave dumps: parsing and fault reports over the fixtures in fixtures/agentlog
// (the seed's sample dump and variants written from its format; see that directory's README).
#include "agentlog/lines.hpp"
#include "rocplay/agentlog/agentlog.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>

using namespace rocplay;
using namespace rocplay::agentlog;

namespace {

std::string fixture_path(const std::string& name) {
  return std::string(ROCPLAY_SOURCE_DIR) + "/fixtures/agentlog/" + name;
}

std::string read_fixture(const std::string& name) {
  std::ifstream in(fixture_path(name), std::ios::binary);
  REQUIRE(in.good());
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

AgentLog parse_fixture(const std::string& name) {
  ParseOptions options;
  options.source = name;
  return parse(read_fixture(name), options);
}

const FaultGroup* group_for(const Report& r, std::string_view short_name) {
  for (const auto& g : r.groups) {
    if (g.kernel.short_name == short_name) {
      return &g;
    }
  }
  return nullptr;
}

bool any_warning(const AgentLog& log, std::string_view text) {
  return std::any_of(log.warnings.begin(), log.warnings.end(),
                     [&](const Warning& w) { return w.message.find(text) != std::string::npos; });
}

bool any_caveat(const FaultGroup& g, std::string_view text) {
  return std::any_of(g.caveats.begin(), g.caveats.end(),
                     [&](const std::string& c) { return c.find(text) != std::string::npos; });
}

const RegisterSummary* summary_for(const FaultGroup& g, std::string_view name) {
  for (const auto& r : g.registers) {
    if (r.name == name) {
      return &r;
    }
  }
  return nullptr;
}

constexpr const char* kIndexCopyFqn =
    "void at::native::index_elementwise_kernel<128, 4, "
    "at::native::index_copy_kernel_impl<at::native::OpaqueType<4> >(at::TensorIterator&, long, "
    "long, long)::{lambda(int)#1}>(long, "
    "at::native::index_copy_kernel_impl<at::native::OpaqueType<4> >(at::TensorIterator&, long, "
    "long, long)::{lambda(int)#1})";

} // namespace

TEST_CASE("the seed's sample dump: every field of the wave", "[agentlog]") {
  const auto log = parse_fixture("seed_sample.log");
  REQUIRE(log.dumps.size() == 1);
  const auto& dump = log.dumps[0];
  REQUIRE(dump.waves.size() == 1);
  const auto& w = dump.waves[0];
  CHECK(w.id == 27876);
  CHECK(w.line == 6);
  CHECK(w.pc == 0x7f20f5e534c4ULL);
  CHECK(w.kernel_code_entry == 0x7f20f5e52900ULL);
  CHECK(w.kernel == kIndexCopyFqn);
  CHECK(!w.kernargs);
  CHECK(w.reasons == std::vector<std::string>{"ASSERT_TRAP"});
  CHECK_FALSE(w.truncated);

  // Register classes in the agent's order, with the seed's `...` elisions skipped.
  std::vector<std::string> classes;
  for (const auto& c : w.registers) {
    classes.push_back(c.name);
  }
  CHECK(classes == std::vector<std::string>{"scalar", "system", "trap", "vector", "general"});
  REQUIRE(w.find_register("s3") != nullptr);
  CHECK(w.find_register("s3")->value == 0xf8000000U);
  CHECK(w.find_register("s33")->value == 2);
  CHECK(w.find_register("trapsts")->value == 0x80000000U);
  CHECK(w.find_register("ttmp4")->value == 0x6ce4);
  CHECK(w.find_register("exec")->value == 0xf800000000000000ULL);
  CHECK(w.find_register("pc")->value == 0x7f20f5e534c4ULL);
  CHECK(w.find_register("vcc")->value == 0xffffffffffffffffULL);
  const auto* v6 = w.find_register("v6");
  REQUIRE(v6 != nullptr);
  CHECK(v6->vector);
  CHECK(v6->lane(0) == 0x80a6U);
  CHECK(v6->lane(1) == 0x80a7U);
  CHECK(!v6->lane(2)); // elided in the seed
  CHECK(v6->lane(58) == 0x80e0U);
  CHECK(v6->lane(59) == 0x27ecU);
  CHECK(w.find_register("v0")->lane(59) == 0xa40U);

  REQUIRE(w.disassembly);
  const auto& d = dump.disassemblies[*w.disassembly];
  CHECK_FALSE(w.disassembly_inferred);
  CHECK(d.function.starts_with("void at::native::index_elementwise_kernel<128, 4"));
  REQUIRE(d.code_object);
  CHECK(d.code_object->protocol == "memory");
  CHECK(d.code_object->pid == 2188702);
  CHECK(d.code_object->offset == 0x546c3060ULL);
  CHECK(d.code_object->size == 4026672ULL);
  CHECK(d.code_object->saved_name == "memory___2188702_offset_0x546c3060_size_4026672");
  CHECK(d.load_begin == 0x7f20f5e00000ULL);
  CHECK(d.load_end == 0x7f20f615ff09ULL);
  REQUIRE(d.instructions.size() == 2);
  REQUIRE(d.at_pc() != nullptr);
  CHECK(d.at_pc()->address == 0x7f20f5e534c4ULL);
  CHECK(d.at_pc()->offset == 3012);
  CHECK(d.at_pc()->text == "s_endpgm");
  CHECK(d.instructions[1].text == "v_cndmask_b32_e32 v0, s0, v0, vcc");
  CHECK(d.instructions[1].offset == 3016);
  CHECK(dump.pid == 2188702);

  // The HIP runtime's abort line after the dump.
  REQUIRE(log.host_faults.size() == 1);
  CHECK(log.host_faults[0].kind == "queue-error");
  CHECK(log.host_faults[0].reason == "HSA_STATUS_ERROR_EXCEPTION (code 0x1016)");
  CHECK(log.host_faults[0].line == 35);
  CHECK(log.warnings.empty());
}

TEST_CASE("the seed's sample dump: the fault report", "[agentlog]") {
  const auto report = analyze({parse_fixture("seed_sample.log")});
  REQUIRE(report.groups.size() == 1);
  const auto& g = report.groups[0];
  CHECK(g.reason == "ASSERT_TRAP");
  CHECK(g.reason_info.severity == Severity::Error);
  CHECK(g.kernel.family == KernelFamily::Aten);
  CHECK(g.kernel.op == "Tensor.index_copy_(dim, index, source)");
  CHECK(g.kernel.dtype_hint == "4-byte dtype (int32/float32)");
  CHECK(g.kernel_source == "wave line");
  CHECK(g.meaning.find("0 <= idx < self.size(dim)") != std::string::npos);
  CHECK(g.kernel_offset == 3012);
  CHECK(g.elf_address == 0x534c4ULL);
  REQUIRE(g.instruction);
  CHECK(g.instruction->text == "s_endpgm");
  CHECK(g.context.size() == 2);
  CHECK(g.saved_file == "*memory___2188702_offset_0x546c3060_size_4026672");
  CHECK_FALSE(g.saved_file_found);
  CHECK(g.objdump_command == "/opt/rocm/llvm/bin/llvm-objdump --disassemble-all "
                             "./*memory___2188702_offset_0x546c3060_size_4026672 > fault.s");
  CHECK(g.grep_command == "grep -n -i -E -B 12 -A 4 '(^|[^0-9a-f])0*534c4:' fault.s");
  CHECK(g.exec.mask == 0xf800000000000000ULL);
  CHECK(g.exec.active_lanes == std::vector<std::uint32_t>{59, 60, 61, 62, 63});
  // Lane 59 is the only active lane the trimmed seed prints: its v6 and v0 values break the
  // lane-to-lane pattern and lie outside the other lanes' values.
  const auto* v6 = summary_for(g, "v6");
  REQUIRE(v6 != nullptr);
  CHECK(v6->basis == "exec");
  CHECK(v6->active_values == std::vector<std::uint32_t>{0x27ec});
  CHECK(v6->stands_out);
  CHECK(v6->other_min == 0x80a6U);
  CHECK(v6->other_max == 0x80e0U);
  REQUIRE(v6->samples.size() == 1);
  CHECK(v6->samples[0].lane == 59);
  CHECK(summary_for(g, "v0") != nullptr);
  CHECK(summary_for(g, "v1") == nullptr); // every lane the same: nothing stands out
  CHECK(any_caveat(g, "s_endpgm after `s_trap 2`"));
  CHECK(any_caveat(g, "HIP_LAUNCH_BLOCKING=1"));
  CHECK_FALSE(any_caveat(g, "Triton"));
  REQUIRE(g.host_fault);
  CHECK(g.host_fault->kind == "queue-error");

  // A saved-code-object listing resolves the agent's `N_` prefix to the exact file.
  AnalyzeOptions options;
  options.code_object_dir = "/app/logs_claude/debug_run";
  options.saved_code_objects = {"3_memory___2188702_offset_0x1000_size_64",
                                "7_memory___2188702_offset_0x546c3060_size_4026672"};
  const auto resolved = analyze({parse_fixture("seed_sample.log")}, options);
  CHECK(resolved.groups[0].saved_file_found);
  CHECK(resolved.groups[0].objdump_command ==
        "/opt/rocm/llvm/bin/llvm-objdump --disassemble-all "
        "/app/logs_claude/debug_run/7_memory___2188702_offset_0x546c3060_size_4026672 > fault.s");
  // Its findings, JSON and text: tests/unit/report/test_agent_log_report.cpp.
}

TEST_CASE("several waves of one kernel group into one fault, lanes summarised", "[agentlog]") {
  const auto log = parse_fixture("assert_many_waves.log");
  REQUIRE(log.dumps.size() == 1);
  REQUIRE(log.dumps[0].waves.size() == 4);
  CHECK(log.warnings.empty());
  for (const auto& w : log.dumps[0].waves) {
    CHECK_FALSE(w.truncated);
    CHECK(w.find_register("v7")->lanes.size() == 64);
    REQUIRE(w.disassembly);
    CHECK(log.dumps[0].disassemblies[*w.disassembly].complete);
  }
  const auto report = analyze({log});
  REQUIRE(report.groups.size() == 1);
  const auto& g = report.groups[0];
  CHECK(g.wave_count == 4);
  CHECK(g.dump_count == 1);
  CHECK(g.pcs.size() == 1);
  CHECK(g.exec.waves_with_exec == 4);
  CHECK(g.exec.lane_count == 64);
  CHECK(g.exec.active_lanes == std::vector<std::uint32_t>{59, 60, 61, 62, 63});
  const auto* v6 = summary_for(g, "v6");
  REQUIRE(v6 != nullptr);
  CHECK(v6->waves == 4);
  CHECK(v6->active_distinct == 20); // 5 active lanes x 4 waves, each a different index
  CHECK(v6->active_min == 0x27ecU);
  CHECK(v6->active_max == 0x27ecU + 48 + 4);
  CHECK(v6->off_pattern == 20);
  CHECK(v6->stands_out);
  CHECK(summary_for(g, "v2") == nullptr); // lane-indexed, active lanes follow the pattern
  REQUIRE(g.context.size() == 6);
  CHECK(g.instruction->text == "s_endpgm");
}

TEST_CASE("MEMORY_VIOLATION: the store's per-lane address from v[0:1]", "[agentlog]") {
  const auto log = parse_fixture("memory_violation.log");
  REQUIRE(log.dumps.size() == 1);
  REQUIRE(log.dumps[0].waves.size() == 1);
  const auto& w = log.dumps[0].waves[0];
  CHECK(w.id == 1042);
  CHECK(w.kernargs == 0x7f3a10001000ULL);
  CHECK(w.kernel.starts_with("void vllm::reshape_and_cache_flash_kernel<"));
  REQUIRE(w.memory.size() == 1);
  CHECK(w.memory[0].title == "Global memory (kernarg segment, 64 bytes)");
  CHECK(w.memory[0].size_bytes == 64U);
  REQUIRE(w.memory[0].rows.size() == 2);
  CHECK(w.memory[0].rows[0].address == 0x7f3a10001000ULL);
  CHECK(w.memory[0].rows[0].words.size() == 8);
  CHECK(w.memory[0].rows[0].words[0] == 0x7fffff00U);

  REQUIRE(log.host_faults.size() == 1);
  CHECK(log.host_faults[0].kind == "memory-access-fault");
  CHECK(log.host_faults[0].gpu == "node-4");
  CHECK(log.host_faults[0].address == 0x7f2c80000000ULL);
  CHECK(log.host_faults[0].reason == "Page not present or supervisor privilege.");

  const auto report = analyze({log});
  REQUIRE(report.groups.size() == 1);
  const auto& g = report.groups[0];
  CHECK(g.reason == "MEMORY_VIOLATION");
  CHECK(g.reason_info.severity == Severity::Critical);
  CHECK(g.kernel.family == KernelFamily::HipCpp);
  CHECK(g.kernel.category == KernelCategory::KvCache);
  REQUIRE(g.access);
  const auto& a = *g.access;
  CHECK(a.at_pc);
  CHECK(a.kind == "global");
  CHECK(a.store);
  CHECK(a.address_operand == "v[0:1]");
  CHECK(a.base_operand.empty());
  REQUIRE(a.addresses.size() == 64);
  CHECK(a.addresses[0].lane == 0);
  CHECK(a.addresses[0].address == 0x7f2c7fffff00ULL);
  CHECK_FALSE(a.addresses[0].in_fault_page);
  CHECK(a.addresses[15].address == 0x7f2c7ffffff0ULL);
  CHECK_FALSE(a.addresses[15].in_fault_page);
  CHECK(a.addresses[16].address == 0x7f2c80000000ULL);
  CHECK(a.addresses[16].in_fault_page); // lanes 16.. crossed into the unmapped page
  CHECK(a.addresses[63].in_fault_page);
  REQUIRE(g.host_fault);
  CHECK(g.host_fault->address == 0x7f2c80000000ULL);
}

TEST_CASE("two different kernels in one dump, plus a running RCCL wave", "[agentlog]") {
  const auto log = parse_fixture("two_kernels.log");
  REQUIRE(log.dumps.size() == 1);
  REQUIRE(log.dumps[0].waves.size() == 4);
  const auto& first = log.dumps[0].waves[0];
  REQUIRE(first.disassembly);
  const auto& d = log.dumps[0].disassemblies[*first.disassembly];
  REQUIRE(d.source_lines.size() == 2);
  CHECK(d.source_lines[0] == "/app/atom/atom/model_ops/state_writes.py:");
  CHECK(d.instructions.size() == 6);

  const auto report = analyze({log});
  REQUIRE(report.groups.size() == 3);
  const auto* swa = group_for(report, "_swa_write_kernel");
  const auto* upd = group_for(report, "_update_compressor_states_kernel");
  const auto* nccl = group_for(report, "ncclDevKernel_AllReduce_Sum_bf16_RING_LL");
  REQUIRE(swa != nullptr);
  REQUIRE(upd != nullptr);
  REQUIRE(nccl != nullptr);
  CHECK(swa->wave_count == 2);
  CHECK(upd->wave_count == 1);
  CHECK(swa->kernel.family == KernelFamily::Triton);
  CHECK(swa->kernel.category == KernelCategory::KvCache);
  CHECK(any_caveat(*swa, "Triton kernel: PCs can be misattributed"));
  CHECK(swa->kernel_offset == 0x2b0U);
  // The PC sits on the s_waitcnt after the store: the access is the store before it.
  REQUIRE(swa->access);
  CHECK_FALSE(swa->access->at_pc);
  CHECK(swa->access->instruction.text == "global_store_dword v[2:3], v4, off");
  CHECK(swa->access->address_operand == "v[2:3]");
  CHECK(swa->access->note.find("--precise-memory") != std::string::npos);
  // wave_310 lane 4 is the first to reach the faulting page 0x7f5b00001000; all of wave_311's
  // lanes are in it.
  REQUIRE(swa->access->addresses.size() == 128);
  CHECK(swa->access->addresses[64].wave == 311);
  CHECK(swa->access->addresses[64].in_fault_page);
  CHECK(swa->access->addresses[3].address == 0x7f5b00000ffcULL);
  CHECK_FALSE(swa->access->addresses[3].in_fault_page);
  CHECK(swa->access->addresses[4].address == 0x7f5b00001000ULL);
  CHECK(swa->access->addresses[4].in_fault_page);

  CHECK(nccl->reason == "running");
  CHECK_FALSE(nccl->reason_info.fault);
  CHECK(nccl->kernel.family == KernelFamily::Collective);
  REQUIRE(nccl->code_object);
  CHECK(nccl->code_object->protocol == "file");
  CHECK(nccl->code_object->path == "/opt/rocm/lib/librccl.so.1");
  CHECK(nccl->code_object->offset == 26812416ULL);
  CHECK(nccl->extract_command ==
        "tail -c +26812417 /opt/rocm/lib/librccl.so.1 | head -c 5120000 > code_object.elf");
  // Faults first; the running wave is no finding.
  CHECK(report.groups.back().reason == "running");
}

TEST_CASE("dumps interleaved with server output", "[agentlog]") {
  const auto log = parse_fixture("interleaved.log");
  REQUIRE(log.dumps.size() == 2);
  for (const auto& d : log.dumps) {
    REQUIRE(d.waves.size() == 1);
    CHECK_FALSE(d.waves[0].truncated);
    CHECK(d.pid == 4242);
    CHECK(d.rank == 0); // from the `(VllmWorker rank=0 pid=4242)` lines around it
    // Server lines between the trap and vector registers did not cost any register.
    CHECK(d.waves[0].find_register("v7") != nullptr);
    CHECK(d.waves[0].find_register("exec") != nullptr);
  }
  CHECK(log.dumps[0].waves[0].id == 900);
  CHECK(log.dumps[1].waves[0].id == 1200);
  CHECK(log.dumps[0].last_line < log.dumps[1].first_line);
  const auto report = analyze({log});
  REQUIRE(report.groups.size() == 1);
  CHECK(report.groups[0].wave_count == 2);
  CHECK(report.groups[0].dump_count == 2);
  CHECK(report.groups[0].ranks == std::vector<int>{0});
}

TEST_CASE("a dump cut off mid-register block", "[agentlog]") {
  const auto log = parse_fixture("truncated.log");
  REQUIRE(log.dumps.size() == 1);
  REQUIRE(log.dumps[0].waves.size() == 1);
  const auto& w = log.dumps[0].waves[0];
  CHECK(w.truncated);
  CHECK(w.id == 55);
  CHECK(w.reasons == std::vector<std::string>{"ASSERT_TRAP"});
  CHECK(w.find_register("exec") == nullptr);
  REQUIRE(w.find_register("v2") != nullptr);
  CHECK(w.find_register("v2")->lanes.size() < 64);
  // The last value on the cut line is shorter than the others: not read as a (wrong) value.
  const auto* v2 = w.find_register("v2");
  for (std::size_t lane = 0; lane < v2->lanes.size(); ++lane) {
    if (v2->lane(lane)) {
      CHECK(*v2->lane(lane) == 0x200 + lane);
    }
  }
  REQUIRE(!log.warnings.empty());
  CHECK(any_warning(log, "wave_55"));
  CHECK(any_warning(log, "cut off inside register v2"));
  CHECK(log.warnings.front().line == log.lines);

  const auto report = analyze({log});
  REQUIRE(report.groups.size() == 1);
  const auto& g = report.groups[0];
  CHECK(g.kernel.op == "Tensor.index_copy_(dim, index, source)");
  CHECK(g.kernel_offset == 3012);
  CHECK(g.exec.waves_with_exec == 0);
  // Without exec, lanes off the register's lane-to-lane pattern stand in for the active ones.
  const auto* v0 = summary_for(g, "v0");
  REQUIRE(v0 != nullptr);
  CHECK(v0->basis == "stride");
  CHECK(v0->off_pattern == 5);
  CHECK(v0->samples.front().lane == 59);
  CHECK(v0->samples.front().value == 0xa40U);
  CHECK(std::any_of(g.notes.begin(), g.notes.end(),
                    [](const std::string& n) { return n.find("cut off") != std::string::npos; }));
}

TEST_CASE("an 8-rank log where each rank wrote its own dump", "[agentlog]") {
  const auto log = parse_fixture("eight_ranks.log");
  REQUIRE(log.dumps.size() == 8);
  std::size_t waves = 0;
  for (int r = 0; r < 8; ++r) {
    const auto& d = log.dumps[static_cast<std::size_t>(r)];
    CHECK(d.pid == 61000 + 17 * r);
    CHECK(d.rank == r);
    CHECK(d.waves.size() == (r % 2 == 0 ? 2U : 1U));
    waves += d.waves.size();
  }
  CHECK(waves == 12);
  const auto report = analyze({log});
  REQUIRE(report.groups.size() == 1);
  const auto& g = report.groups[0];
  CHECK(g.wave_count == 12);
  CHECK(g.dump_count == 8);
  CHECK(g.ranks == std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7});
  CHECK(g.pids.size() == 8);
  CHECK(g.pcs.size() == 8); // one load address per process, one offset in the kernel
  CHECK(g.kernel_offset == 3012);
}

TEST_CASE("two ranks whose dump lines interleave, told apart by their tags", "[agentlog]") {
  const auto log = parse_fixture("tagged_two_ranks.log");
  REQUIRE(log.dumps.size() == 2);
  std::vector<int> ranks;
  for (const auto& d : log.dumps) {
    REQUIRE(d.waves.size() == 1);
    CHECK_FALSE(d.waves[0].truncated);
    REQUIRE(d.rank);
    ranks.push_back(*d.rank);
    CHECK(d.waves[0].find_register("v6")->lanes.size() == 64);
  }
  std::sort(ranks.begin(), ranks.end());
  CHECK(ranks == std::vector<int>{0, 1});
  const auto& rank1 = log.dumps[0].rank == 1 ? log.dumps[0] : log.dumps[1];
  CHECK(rank1.stream == "[1,1]");
  CHECK(rank1.waves[0].find_register("v6")->lane(59) == 0x4000U);
  const auto report = analyze({log});
  REQUIRE(report.groups.size() == 1);
  CHECK(report.groups[0].ranks == std::vector<int>{0, 1});
}

TEST_CASE("ROCm 6.3 format: disassembly first, no kernel on the wave line", "[agentlog]") {
  const auto log = parse_fixture("rocm63_format.log");
  REQUIRE(log.dumps.size() == 1);
  const auto& d = log.dumps[0];
  REQUIRE(d.waves.size() == 3);
  REQUIRE(d.disassemblies.size() == 1);
  for (const auto& w : d.waves) {
    CHECK(w.kernel.empty());
    CHECK(w.disassembly == 0U);
    CHECK(w.disassembly_inferred);
  }
  const auto report = analyze({log});
  REQUIRE(report.groups.size() == 1);
  const auto& g = report.groups[0];
  CHECK(g.kernel_source == "disassembly");
  CHECK(g.kernel.name == "scale_kernel(float*, float const*, int)");
  CHECK(g.kernel_offset == 288);
  CHECK(any_caveat(g, "did not name the kernel"));
  CHECK(any_caveat(g, "printed once for the fault"));
  REQUIRE(g.code_object);
  CHECK(g.code_object->path == "/home/user/app/build/scale");
  CHECK(g.extract_command ==
        "tail -c +8193 /home/user/app/build/scale | head -c 24576 > code_object.elf");
  // No memory instruction in the window: say so rather than guess.
  CHECK_FALSE(g.access);
  CHECK(std::any_of(g.notes.begin(), g.notes.end(), [](const std::string& n) {
    return n.find("no memory instruction") != std::string::npos;
  }));
  REQUIRE(g.host_fault);
  CHECK(g.host_fault->address == 0x7ffa00004000ULL);
}

TEST_CASE("a log with no dumps says so and points at hang triage", "[agentlog]") {
  const auto text = read_fixture("no_dumps.log");
  CHECK_FALSE(looks_like_agent_log(text));
  const auto log = parse(text, {});
  CHECK(log.dumps.empty());
  CHECK(log.lines == 6);
  const auto report = analyze({log});
  CHECK(report.empty());

  for (const char* name : {"seed_sample.log", "assert_many_waves.log", "memory_violation.log",
                           "two_kernels.log", "interleaved.log", "truncated.log", "eight_ranks.log",
                           "tagged_two_ranks.log", "rocm63_format.log"}) {
    INFO(name);
    CHECK(looks_like_agent_log(read_fixture(name)));
  }
}

TEST_CASE("bad input: unknown reasons, wrapped wave lines, junk, huge lines", "[agentlog]") {
  SECTION("unknown and combined reasons") {
    const auto log = parse("wave_1: pc=0x1010 (kernel_code_entry=0x1000 <k>) (stopped, reason: "
                           "FOO_BAR|MEMORY_VIOLATION)\n\ngeneral registers:\n  pc: 1010\n",
                           {});
    REQUIRE(log.wave_count() == 1);
    CHECK(log.dumps[0].waves[0].reasons == std::vector<std::string>{"FOO_BAR", "MEMORY_VIOLATION"});
    REQUIRE(log.warnings.size() == 1);
    CHECK(log.warnings[0].line == 1);
    CHECK(log.warnings[0].message.find("unknown stop reason `FOO_BAR`") != std::string::npos);
    const auto report = analyze({log});
    REQUIRE(report.groups.size() == 1);
    CHECK(report.groups[0].reason == "FOO_BAR|MEMORY_VIOLATION");
    CHECK(report.groups[0].reason_info.name == "MEMORY_VIOLATION"); // the most severe speaks
    CHECK(report.groups[0].kernel_offset == 0x10U);
  }
  SECTION("a wave line wrapped over several lines") {
    const auto log = parse("wave_8: pc=0x731fd50599c8 (kernel_code_entry=0x731fd5058700\n"
                           "  <void at::native::index_elementwise_kernel<128, 4,\n"
                           "    at::native::index_put_kernel_impl<at::native::OpaqueType<4>>(\n"
                           "        at::TensorIterator&)::{lambda(int)#1}>(long)>) (stopped, "
                           "reason: ASSERT_TRAP)\n"
                           "\n"
                           "general registers:\n"
                           "            pc: 0000731fd50599c8          exec: 0000000000000001\n",
                           {});
    REQUIRE(log.wave_count() == 1);
    const auto& w = log.dumps[0].waves[0];
    CHECK(w.pc == 0x731fd50599c8ULL);
    CHECK(w.reasons == std::vector<std::string>{"ASSERT_TRAP"});
    CHECK(classify_kernel(w.kernel).op.find("index_put_") != std::string::npos);
    CHECK(log.warnings.empty());
  }
  SECTION("binary junk and a huge line") {
    std::string junk;
    std::uint32_t x = 12345;
    for (int i = 0; i < 1 << 20; ++i) {
      x = x * 1103515245U + 12345U;
      junk.push_back(static_cast<char>(x >> 24));
    }
    junk += "\n" + std::string(2 << 20, 'w') + "\n";
    junk += read_fixture("seed_sample.log");
    const auto log = parse(junk, {});
    CHECK(log.wave_count() == 1); // the dump after the junk still parses
    CHECK(any_warning(log, "line is longer than"));
    std::istringstream in(junk);
    const auto streamed = parse(in, {});
    CHECK(streamed.wave_count() == 1);
    CHECK(streamed.lines == log.lines);
  }
  SECTION("every prefix of every fixture parses without a crash") {
    for (const char* name : {"seed_sample.log", "two_kernels.log", "memory_violation.log",
                             "rocm63_format.log", "tagged_two_ranks.log"}) {
      const auto text = read_fixture(name);
      const auto full = parse(text, {}).wave_count();
      for (std::size_t cut = 0; cut < text.size(); cut += 97) {
        const auto log = parse(std::string_view(text).substr(0, cut), {});
        CHECK(log.wave_count() <= full);
        (void)analyze({log});
      }
    }
  }
  SECTION("ordinary lines that look like parts of a dump are not dumps") {
    const auto log = parse("Disassembly for function main:\nDisassembly of section .text:\n"
                           "scalar registers:\n  s0: 1\n------------------------------------\n"
                           "wave_3 is stopped\n",
                           {});
    CHECK(log.dumps.empty());
    CHECK(log.warnings.empty());
  }
  SECTION("limits: waves beyond max_waves are counted, not kept") {
    ParseOptions options;
    options.limits.max_waves = 2;
    const auto log = parse(read_fixture("assert_many_waves.log"), options);
    CHECK(log.wave_count() == 2);
    CHECK(log.waves_dropped == 2);
    CHECK(any_warning(log, "more than 2 waves"));
  }
  SECTION("limits: the lane-value budget drops vector registers, keeps the rest") {
    ParseOptions options;
    options.limits.max_lane_values = 64 * 8; // one wave's worth
    const auto log = parse(read_fixture("assert_many_waves.log"), options);
    REQUIRE(log.wave_count() == 4);
    CHECK_FALSE(log.dumps[0].waves[0].vector_registers_dropped);
    CHECK(log.dumps[0].waves[1].vector_registers_dropped);
    CHECK(log.dumps[0].waves[1].find_register("exec") != nullptr);
  }
}

TEST_CASE("streaming and whole-text parsing agree on every fixture", "[agentlog]") {
  for (const char* name : {"seed_sample.log", "assert_many_waves.log", "memory_violation.log",
                           "two_kernels.log", "interleaved.log", "truncated.log", "eight_ranks.log",
                           "tagged_two_ranks.log", "rocm63_format.log"}) {
    INFO(name);
    const auto text = read_fixture(name);
    std::istringstream in(text);
    const auto a = parse(text, {});
    const auto b = parse(in, {});
    REQUIRE(a.dumps.size() == b.dumps.size());
    CHECK(a.lines == b.lines);
    CHECK(a.warnings.size() == b.warnings.size());
    for (std::size_t i = 0; i < a.dumps.size(); ++i) {
      REQUIRE(a.dumps[i].waves.size() == b.dumps[i].waves.size());
      for (std::size_t k = 0; k < a.dumps[i].waves.size(); ++k) {
        CHECK(a.dumps[i].waves[k].pc == b.dumps[i].waves[k].pc);
        CHECK(a.dumps[i].waves[k].line == b.dumps[i].waves[k].line);
      }
    }
  }
}

TEST_CASE("code object URIs and the names --save-code-objects gives them", "[agentlog]") {
  const auto mem = parse_code_object_uri("memory://2188702#offset=0x546c3060&size=4026672");
  REQUIRE(mem);
  CHECK(mem->saved_name == "memory___2188702_offset_0x546c3060_size_4026672");
  const auto file = parse_code_object_uri("file:///opt/my%20app/lib.so#offset=4096&size=0");
  REQUIRE(file);
  CHECK(file->path == "/opt/my app/lib.so");
  CHECK(file->offset == 4096U);
  CHECK(file->size == 0U);
  CHECK(file->saved_name == "file____opt_my%20app_lib.so_offset_4096_size_0");
  CHECK_FALSE(parse_code_object_uri("not a uri"));
  CHECK(parse_code_object_uri("memory://x#offset=zz")->pid == std::nullopt);
}

TEST_CASE("launcher prefixes read by the one rule the crash reader uses", "[agentlog]") {
  using rocplay::agentlog::detail::split_prefix;
  auto p = split_prefix("(Worker_TP3 pid=7) wave_0: pc=0x1000");
  CHECK(p.rank == 3);
  CHECK(p.pid == 7);
  CHECK(p.key == "Worker_TP3 pid=7");
  CHECK(p.rest == "wave_0: pc=0x1000");
  auto mpi = split_prefix("[1,1]<stderr>:wave_0: pc=0x1000");
  CHECK(mpi.rank == 1);
  CHECK(mpi.key == "[1,1]");
  CHECK(mpi.rest == "wave_0: pc=0x1000");
  auto none = split_prefix("Traceback (most recent call last):");
  CHECK(!none.rank);
  CHECK(none.key.empty());
}
