// nvdisasm listings of the device ELFs cuda-gdb kept, recorded on an H100
// (fixtures/cuda-gdb/h100-nvdisasm, `nvdisasm -c` by tests/hardware/disasm_elf.sh), and the
// .symtab index nvdisasm -fun takes, checked against llvm-readelf on a real code object.
#include "rocplay/codeobj/codeobj.hpp"
#include "rocplay/isa/instructions.hpp"
#include "rocplay/isa/sass_listing.hpp"

#include <catch2/catch.hpp>

#include <fstream>
#include <regex>
#include <sstream>

using namespace rocplay;

namespace {

std::string read_source_text(const std::string& rel) {
  std::ifstream in(std::string(ROCPLAY_SOURCE_DIR) + "/" + rel, std::ios::binary);
  REQUIRE(in.good());
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

} // namespace

TEST_CASE("nvdisasm listing: live addresses, labels resolved, the spin loop found") {
  const auto listing =
      read_source_text("fixtures/cuda-gdb/h100-nvdisasm/syncspin-allgather_vec.sass");
  const auto read = isa::read_nvdisasm_listing(listing, "_Z13allgather_vecPViiPKfPf");
  CHECK(read.problems.empty());
  auto code = read.instructions;
  REQUIRE(code.size() == 40); // 0x7f51bb7ac200 .. 0x7f51bb7ac470, 16 bytes each
  CHECK(code.front().address == 0x7f51bb7ac200u);
  CHECK(code.front().text == "LDC R1, c[0x0][0x28]");
  CHECK(code.front().function == "_Z13allgather_vecPViiPKfPf");
  CHECK(code[12].offset == 192u);
  CHECK(code[12].size == 16u);
  CHECK(code[12].text == "ISETP.GE.AND P0, PT, R6, 0x1, PT");
  // `@!P0 BRA `(.L_x_1) ;` -> the address the label marks, as cuda-gdb prints a branch.
  CHECK(code[13].text == "@!P0 BRA 0x7f51bb7ac2a0");
  CHECK(code[9].text == "@P1 BRA 0x7f51bb7ac2e0");
  CHECK(code[28].text == "BRA 0x7f51bb7ac3c0"); // the trailing self-loop, `BRA `(.L_x_2);`
  isa::annotate_branches(code, isa::Arch::Sass);
  const auto loop = isa::find_loop(code, 0x7f51bb7ac2c0u);
  REQUIRE(loop);
  CHECK(loop->spin);
  CHECK(loop->describe() ==
        "spin loop of 4 instructions: LDG.E.STRONG.SYS, YIELD, ISETP.GE.AND, BRA");
}

TEST_CASE("nvdisasm listing: PyTorch's spin_kernel, and a function filter that matches nothing") {
  const auto listing = read_source_text("fixtures/cuda-gdb/h100-nvdisasm/torch-spin_kernel.sass");
  const std::string fn = "_ZN2at4cuda40_GLOBAL__N__758183f4_8_Sleep_cu_088d913f11spin_kernelEl";
  auto code = isa::read_nvdisasm_listing(listing, fn).instructions;
  REQUIRE(code.size() == 24);
  isa::annotate_branches(code, isa::Arch::Sass);
  const auto loop = isa::find_loop(code, 0x7f2ef37d1d70u);
  REQUIRE(loop);
  CHECK(loop->start == 0x7f2ef37d1d60u);
  CHECK(loop->count == 6);
  CHECK(isa::read_nvdisasm_listing(listing).instructions.size() == 24); // every function
  CHECK(isa::read_nvdisasm_listing(listing, "_Z5otherv").instructions.empty());
}

TEST_CASE("nvdisasm listing: -hex comments, broken and truncated lines, the bound") {
  const std::string listing =
      "//--------------------- .text._Z1fv --------------------------\n"
      ".L_x_0:\n"
      "        /*0000*/                   NOP ;   /* 0x0000000000007918 */\n"
      "        /*0010*/              @!P0 BRA `(.L_x_0) ;   /* 0x000fc0000383ffff */\n"
      "        /*zz*/                   YIELD ;\n"
      "        /*0020*/\n"
      "        /*0030*/                   BRA `(.L_x_9) ;\n"
      "        /*0040*/                   EXIT";
  const auto read = isa::read_nvdisasm_listing(listing, "_Z1fv");
  REQUIRE(read.instructions.size() == 4);
  CHECK(read.instructions[0].text == "NOP");
  CHECK(read.instructions[1].text == "@!P0 BRA 0x0");
  CHECK(read.instructions[2].text == "BRA `(.L_x_9)"); // no such label: left as printed
  CHECK(read.instructions[3].text == "EXIT");
  CHECK(read.problems.size() == 2);
  CHECK(isa::read_nvdisasm_listing(listing, "_Z1fv", 2).instructions.size() == 2);
  CHECK(isa::read_nvdisasm_listing("").instructions.empty());
  CHECK(isa::read_nvdisasm_listing(std::string(1000, '/')).instructions.empty());
}

TEST_CASE("symbol_index: the .symtab index llvm-readelf prints, for nvdisasm -fun") {
  const auto text = read_source_text("tests/codeobj/kernels-gfx90a.symbols.txt");
  std::ifstream in(std::string(ROCPLAY_SOURCE_DIR) + "/tests/codeobj/kernels-gfx90a.elf",
                   std::ios::binary);
  const std::vector<std::uint8_t> elf{std::istreambuf_iterator<char>(in), {}};
  REQUIRE(!elf.empty());
  const std::regex row(R"(^\s+(\d+): [0-9a-f]+\s+\d+ FUNC .* (\S+)$)");
  std::istringstream lines(text);
  std::string line;
  std::size_t checked = 0;
  while (std::getline(lines, line)) {
    std::smatch m;
    if (std::regex_match(line, m, row)) {
      INFO(line);
      CHECK(codeobj::symbol_index(elf, m[2].str()) == std::stoul(m[1].str()));
      ++checked;
    }
  }
  CHECK(checked >= 5); // the five kernels at least
  CHECK_FALSE(codeobj::symbol_index(elf, "no_such_kernel"));
  const std::vector<std::uint8_t> text_bytes(text.begin(), text.end());
  CHECK_FALSE(codeobj::symbol_index(text_bytes, "spin_kernel"));
  const std::vector<std::uint8_t> truncated(elf.begin(), elf.begin() + 100);
  CHECK_FALSE(codeobj::symbol_index(truncated, "spin_kernel"));
}
