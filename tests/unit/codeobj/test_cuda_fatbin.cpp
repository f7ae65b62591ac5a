// CUDA device code in host files (rocplay/codeobj/cuda_fatbin.hpp), on sections nvcc 13.0 wrote
// for syncspin.cu on an H200 (fixtures/cuda-fatbin/README.md).
#include "rocplay/codeobj/cuda_fatbin.hpp"
#include "rocplay/isa/sass_listing.hpp"

#include <catch2/catch.hpp>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>

using namespace rocplay;

namespace {

std::string fixture(const std::string& name) {
  return std::string(ROCPLAY_SOURCE_DIR) + "/fixtures/cuda-fatbin/" + name;
}

std::vector<std::uint8_t> bytes_of(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  REQUIRE(in);
  return {std::istreambuf_iterator<char>(in), {}};
}

std::string text_of(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

bool same(std::span<const std::uint8_t> a, std::span<const std::uint8_t> b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end());
}

const std::string kText = ".text._Z13allgather_vecPViiPKfPf";

} // namespace

TEST_CASE("fatbin: the cubins nvcc linked, as cuobjdump extracts them") {
  const auto fatbin = bytes_of(fixture("native.nv_fatbin"));
  const auto cubin = bytes_of(fixture("native.cubin"));
  const auto cubins = codeobj::fatbin_cubins(fatbin);
  REQUIRE(cubins.size() == 2); // two containers; the first module holds no code
  CHECK(cubins[0].size() == 1536);
  CHECK_FALSE(codeobj::elf_section(cubins[0], kText));
  CHECK(same(cubins[1], cubin));

  // Two architectures: both cubins, sm_80's first.
  const auto two = bytes_of(fixture("two.nv_fatbin"));
  const auto both = codeobj::fatbin_cubins(two);
  REQUIRE(both.size() == 4);
  CHECK(std::any_of(both.begin(), both.end(), [&](auto c) { return same(c, cubin); }));
  CHECK(codeobj::fatbin_cubins(two, 1).size() == 1);

  // Compressed entries are passed over, not misread.
  CHECK(codeobj::fatbin_cubins(bytes_of(fixture("compressed.nv_fatbin"))).empty());
}

TEST_CASE("fatbin: truncated, garbled and empty sections read what is whole, never past the end") {
  const auto fatbin = bytes_of(fixture("native.nv_fatbin"));
  CHECK(codeobj::fatbin_cubins({}).empty());
  for (std::size_t cut = 0; cut < fatbin.size(); cut += 97) {
    const auto part = std::span<const std::uint8_t>(fatbin).first(cut);
    const auto cubins = codeobj::fatbin_cubins(part);
    CHECK(cubins.size() <= 1); // the second container is whole only at the full size
    for (const auto c : cubins) {
      CHECK(c.data() >= part.data());
      CHECK(c.data() + c.size() <= part.data() + part.size());
    }
  }
  auto garbled = fatbin;
  garbled[8] = 0xff; // the first container's size, now past the end
  garbled[15] = 0x7f;
  CHECK(codeobj::fatbin_cubins(garbled).empty());
  garbled = fatbin;
  garbled[16 + 8] = 0xff;                             // an entry's payload size past its container
  CHECK(codeobj::fatbin_cubins(garbled).size() == 1); // the next container still reads
}

TEST_CASE(
    "ELF sections: a loaded module's code is where cuda-gdb's copy says, with the same bytes") {
  const auto cubin = bytes_of(fixture("native.cubin"));
  const auto kept = bytes_of(fixture("kept.elf"));
  const auto linked = codeobj::elf_section(cubin, kText);
  const auto loaded = codeobj::elf_section(kept, kText);
  REQUIRE(linked);
  REQUIRE(loaded);
  CHECK(linked->address == 0);
  CHECK(loaded->address == 0x7f94037a0000);
  CHECK(linked->contents.size() == 640);
  CHECK(same(linked->contents, loaded->contents));
  CHECK(codeobj::elf_sections(std::span<const std::uint8_t>(cubin).first(100)).empty());
  CHECK_FALSE(codeobj::elf_section(cubin, ".text.nothing"));
}

TEST_CASE("ELF file sections: read alone, bounded") {
  const std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
  std::string why;
  const auto text = codeobj::read_elf_file_section(self, ".text", 1u << 30, why);
  REQUIRE(text);
  CHECK(text->size() > 1000);
  CHECK_FALSE(codeobj::read_elf_file_section(self, ".text", 100, why));
  CHECK(why == "the section is larger than the bound");
  CHECK_FALSE(codeobj::read_elf_file_section(self, ".nv_fatbin", 1u << 20, why));
  CHECK(why == "no such section");
  CHECK_FALSE(codeobj::read_elf_file_section(fixture("README.md"), ".text", 100, why));
  CHECK(why == "not an ELF file");
  CHECK_FALSE(codeobj::read_elf_file_section("/nonexistent/file", ".text", 100, why));
  CHECK_FALSE(why.empty());
  // A device ELF is an ELF too: the cubin's code section from the file.
  const auto code = codeobj::read_elf_file_section(fixture("native.cubin"), kText, 4096, why);
  REQUIRE(code);
  CHECK(code->size() == 640);
}

TEST_CASE(
    "nvdisasm listings: a linked cubin's, moved to where the code runs, read as the loaded one") {
  const std::string fn = "_Z13allgather_vecPViiPKfPf";
  const auto linked =
      isa::read_nvdisasm_listing(text_of(fixture("native.sass")), fn, 100'000, 0x7f94037a0000);
  const auto loaded = isa::read_nvdisasm_listing(text_of(fixture("kept.sass")), fn);
  REQUIRE(loaded.instructions.size() == 40);
  CHECK(linked.instructions == loaded.instructions); // label targets moved too
  CHECK(linked.instructions[13].text == "@!P0 BRA 0x7f94037a00a0");
  // A first line that does not read still sets where the section starts.
  auto text = text_of(fixture("native.sass"));
  const auto first = text.find("/*0000*/");
  REQUIRE(first != std::string::npos);
  text.replace(first, text.find('\n', first) - first, "/*0000*/ ;");
  const auto damaged = isa::read_nvdisasm_listing(text, fn, 100'000, 0x7f94037a0000);
  REQUIRE(damaged.instructions.size() == 39);
  CHECK(damaged.instructions[0].address == 0x7f94037a0010);
  CHECK(damaged.problems.size() == 1);
  // Without the address, the listing's own offsets.
  CHECK(isa::read_nvdisasm_listing(text_of(fixture("native.sass")), fn).instructions[13].text ==
        "@!P0 BRA 0xa0");
}
