// Disassembly windows from -data-disassemble (rocgdb, cuda-gdb, gdb) and the loop holding each
// stuck PC. The rocgdb case is reconstructed from the real gfx90a build of
// tests/codeobj/kernels.hip, the cuda-gdb one adds a hand-written SASS window to a real
// recording (both marked so in their first line), the gdb one is a real recording.
#include "rocplay/snapshot/code_loops.hpp"
#include "support.hpp"

#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

using namespace rocplay;

TEST_CASE("rocgdb: the waves' spin loop from -data-disassemble", "[snapshot][code]") {
  const Snapshot s = test::load("rocgdb/spin-loop-disassembly/snapshot.mi");
  REQUIRE(s.code_windows.size() == 1);
  CHECK(s.code_windows[0].thread == "5");
  CHECK(s.code_windows[0].instructions.size() == 20);
  const auto loops = snapshot::code_loops(s);
  REQUIRE(loops.size() == 1); // the host thread's PC was not disassembled
  const auto& l = loops[0];
  CHECK(l.gpu);
  CHECK(l.count == 4);
  CHECK(l.pc == 0x7fffe2005240u);
  CHECK(l.arch == isa::Arch::Amdgpu);
  REQUIRE(l.loop);
  CHECK(l.loop->spin);
  CHECK(l.loop->start == 0x7fffe2005234u);
  CHECK(l.loop->describe() ==
        "spin loop of 7 instructions: s_sleep, global_load_dword, s_waitcnt, buffer_invl2, "
        "buffer_wbinvl1_vol, v_cmp_eq_u32_e32, s_cbranch_vccnz");
}

TEST_CASE("cuda-gdb: SASS predicated branches close the spin in start_sync", "[snapshot][code]") {
  // Real: `rocplay run hang-triage --debugger cuda-gdb` on the H100 syncspin scenario, the
  // disassemble step moving the CUDA focus to each warp class's kernel first.
  const Snapshot s = test::load("cuda-gdb/h100-rocplay/syncspin-disasm.rec");
  REQUIRE(!s.code_windows.empty());
  const auto loops = snapshot::code_loops(s);
  const snapshot::CodeLoop* spin = nullptr;
  const snapshot::CodeLoop* barrier = nullptr;
  for (const auto& l : loops) {
    if (l.pc == 0x7fa7d37ac2c0u) {
      spin = &l;
    } else if (l.pc == 0x7fa7d37ac2e0u) {
      barrier = &l;
    }
  }
  REQUIRE(spin != nullptr);
  REQUIRE(spin->loop);
  CHECK(spin->gpu);
  CHECK(spin->arch == isa::Arch::Sass);
  CHECK(spin->loop->describe() ==
        "spin loop of 4 instructions: LDG.E.STRONG.SYS, YIELD, ISETP.GE.AND, BRA");
  REQUIRE(barrier != nullptr);
  CHECK(!barrier->loop); // past the backward branch: waiting at the barrier, not spinning
}

TEST_CASE("malformed -data-disassemble answers are skipped, bounded", "[snapshot][code]") {
  std::string t = "# rocplay-transcript 1\n"
                  "> 0.1 1-data-disassemble -s 0x10 -e 0x20 -- 0\n"
                  "< 0.2 1^done,asm_insns=[{address=\"zz\",inst=\"nop\"},{inst=\"x\"},"
                  "{address=\"0x10\",inst=\"jmp 0x10\",func-name=\"f\",offset=\"x\"},"
                  "src_and_asm_line={line=\"7\",file=\"a.c\",line_asm_insn=[{address=\"0x12\","
                  "inst=\"pause\"}]}]\n"
                  "< 0.3 (gdb) \n";
  const Snapshot s = snapshot::build_from_transcript(t);
  REQUIRE(s.code_windows.size() == 1);
  REQUIRE(s.code_windows[0].instructions.size() == 2);
  CHECK(s.code_windows[0].instructions[1].file == "a.c");
  CHECK(s.code_windows[0].instructions[1].line == 7);
  CHECK(snapshot_from_json(to_json(s)) == s);
}

TEST_CASE("gdb: the spin loop in start_sync from a real recording", "[snapshot][code]") {
  const Snapshot s = test::load("mi/gdb-spin-target-disasm.rec");
  CHECK(s.code_windows.size() >= 2);
  std::size_t spinning = 0;
  for (const auto& l : snapshot::code_loops(s)) {
    CHECK(!l.gpu);
    CHECK(l.arch == isa::Arch::X86_64);
    if (l.function == "start_sync") {
      ++spinning;
      REQUIRE(l.loop);
      CHECK(l.loop->spin);
      CHECK(l.loop->describe() == "spin loop of 5 instructions: mov, test, sete, test, jne");
    }
  }
  CHECK(spinning == 2);
}
