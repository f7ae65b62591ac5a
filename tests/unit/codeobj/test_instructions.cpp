// Branch targets and loops over instruction text as each debugger prints it.
#include "rocplay/isa/instructions.hpp"

#include <catch2/catch.hpp>

using namespace rocplay::isa;

namespace {

std::vector<Instruction> listing(std::initializer_list<std::pair<std::uint64_t, const char*>> l) {
  std::vector<Instruction> out;
  for (const auto& [address, text] : l) {
    Instruction in;
    in.address = address;
    in.text = text;
    out.push_back(in);
  }
  return out;
}

} // namespace

TEST_CASE("AMDGPU branches: LLVM's word offset and a debugger's resolved address") {
  auto w = listing({{0x4f34, "s_sleep 2"},
                    {0x4f38, "global_load_dword v2, v1, s[0:1] glc"},
                    {0x4f40, "s_waitcnt vmcnt(0)"},
                    {0x4f54, "v_cmp_eq_u32_e32 vcc, 0, v2"},
                    {0x4f58, "s_cbranch_vccnz 65526"},
                    {0x4f5c, "s_branch 3"},
                    {0x4f60, "s_cbranch_scc1 65533 # 0x7fffe1c04f34 <k+52>"}});
  annotate_branches(w, Arch::Amdgpu);
  CHECK(w[4].branch_target == 0x4f34u); // 0x4f5c - 10 * 4
  CHECK(w[4].conditional);
  CHECK(w[5].branch_target == 0x4f6cu);
  CHECK(!w[5].conditional);
  CHECK(w[6].branch_target == 0x7fffe1c04f34u);
  const auto loop = find_loop(w, 0x4f40);
  REQUIRE(loop);
  CHECK(loop->count == 5);
  CHECK(loop->spin);
  CHECK(loop->describe() == "spin loop of 5 instructions: s_sleep, global_load_dword, s_waitcnt, "
                            "v_cmp_eq_u32_e32, s_cbranch_vccnz");
  // A PC after the backward branch is not in that loop.
  CHECK(!find_loop(w, 0x4f5c));
}

TEST_CASE("x86-64 jumps from gdb's disassembly, innermost loop wins") {
  auto w = listing({{0x401120, "mov    0x2ee6(%rip),%eax        # 0x40400c <flag>"},
                    {0x401126, "test   %eax,%eax"},
                    {0x401128, "je     0x401120 <spin+0>"},
                    {0x40112a, "pause"},
                    {0x40112c, "jmp    0x401120 <spin+0>"},
                    {0x40112e, "call   *%rax"},
                    {0x401130, "lock cmpxchg %edx,(%rdi)"}});
  annotate_branches(w, Arch::X86_64);
  CHECK(w[2].branch_target == 0x401120u);
  CHECK(w[2].conditional);
  CHECK(!w[4].conditional);
  CHECK(!w[5].branch_target); // indirect
  CHECK(mnemonic(w[6].text) == "cmpxchg");
  const auto loop = find_loop(w, 0x401126);
  REQUIRE(loop);
  CHECK(loop->count == 3); // the je, not the outer jmp
  CHECK(loop->spin);
}

TEST_CASE("SASS branches with predicates") {
  auto w = listing({{0x7fffd0, "LDG.E.STRONG.SYS R0, [R2.64] ;"},
                    {0x7fffe0, "ISETP.NE.AND P0, PT, R0, RZ, PT ;"},
                    {0x7ffff0, "@!P0 BRA 0x7fffd0 ;"},
                    {0x800000, "EXIT ;"}});
  annotate_branches(w, Arch::Sass);
  CHECK(w[2].branch_target == 0x7fffd0u);
  CHECK(w[2].conditional);
  CHECK(mnemonic(w[2].text) == "BRA");
  const auto loop = find_loop(w, 0x7fffe0);
  REQUIRE(loop);
  CHECK(loop->describe() == "spin loop of 3 instructions: LDG.E.STRONG.SYS, ISETP.NE.AND, BRA");
}

TEST_CASE("architecture names") {
  CHECK(arch_from_name("amdgcn:gfx90a") == Arch::Amdgpu);
  CHECK(arch_from_name("gfx942") == Arch::Amdgpu);
  CHECK(arch_from_name("i386:x86-64") == Arch::X86_64);
  CHECK(arch_from_name("sm_90") == Arch::Sass);
  CHECK(arch_from_name("aarch64") == Arch::Unknown);
  CHECK(find_loop({}, 0) == std::nullopt);
}

TEST_CASE("architecture names in JSON: each enumerator's own, none shared") {
  // A code loop's `arch` in snapshot JSON; walks every enumerator, in declaration order.
  const std::pair<Arch, std::string_view> expected[] = {{Arch::Amdgpu, "amdgpu"},
                                                        {Arch::Sass, "sass"},
                                                        {Arch::X86_64, "x86-64"},
                                                        {Arch::Unknown, "unknown"}};
  for (std::size_t i = 0; i < std::size(expected); ++i) {
    const auto arch = static_cast<Arch>(i);
    CHECK(arch == expected[i].first);
    CHECK(to_string(arch) == expected[i].second);
    for (std::size_t j = 0; j < i; ++j) {
      CHECK(to_string(arch) != to_string(expected[j].first));
    }
  }
}
