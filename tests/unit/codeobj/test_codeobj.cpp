// Code objects read from real HIP builds (tests/codeobj, rebuilt by tests/codeobj/rebuild.sh):
// the metadata is compared with what `llvm-readelf-14 --notes` printed for the same file and the
// disassembly with `llvm-objdump-14 -d`; malformed inputs give problems, never crashes.
#include "rocplay/codeobj/codeobj.hpp"
#include "rocplay/codeobj/disasm.hpp"
#include "rocplay/codeobj/fit.hpp"
#include "rocplay/codeobj/kernel_info.hpp"

#include <catch2/catch.hpp>

#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>

using namespace rocplay;
using namespace rocplay::codeobj;

namespace {

std::string data_path(const std::string& name) {
  return std::string(ROCPLAY_SOURCE_DIR) + "/tests/codeobj/" + name;
}

std::vector<std::uint8_t> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  REQUIRE(in.good());
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::string read_text(const std::string& path) {
  const auto b = read_file(path);
  return {b.begin(), b.end()};
}

const CodeObject& only_object(const ReadResult& r) {
  INFO((r.problems.empty() ? std::string() : r.problems.front().message));
  REQUIRE(r.problems.empty());
  REQUIRE(r.objects.size() == 1);
  return r.objects.front();
}

// `llvm-readelf --notes` YAML: each kernel map starts at "  - ." and its keys are at 4 spaces.
std::vector<std::map<std::string, std::string>> readelf_kernels(const std::string& text) {
  std::vector<std::map<std::string, std::string>> kernels;
  std::istringstream in(text);
  std::string line;
  const std::regex key(R"(^  (- |  )\.([a-z_]+):\s+(\S+)\s*$)");
  while (std::getline(in, line)) {
    std::smatch m;
    if (line.starts_with("  - .")) {
      kernels.emplace_back();
    }
    if (std::regex_match(line, m, key) && !kernels.empty()) {
      kernels.back()[m[2]] = m[3];
    }
  }
  return kernels;
}

struct ObjdumpLine {
  std::uint64_t address;
  std::string text;
  std::string bytes;
};

// `llvm-objdump -d` lines: "\tTEXT   // 0000000050A0: BYTES [<comment>]", grouped by symbol.
std::map<std::string, std::vector<ObjdumpLine>> objdump_functions(const std::string& text) {
  std::map<std::string, std::vector<ObjdumpLine>> out;
  std::istringstream in(text);
  std::string line;
  std::string current;
  const std::regex head(R"(^[0-9a-f]+ <([^>]+)>:$)");
  const std::regex ins(R"(^\s+(.*\S)\s*// ([0-9A-F]+): ((?:[0-9A-F]{8} ?)+)(.*)$)");
  while (std::getline(in, line)) {
    std::smatch m;
    if (std::regex_match(line, m, head)) {
      current = m[1];
    } else if (!current.empty() && std::regex_match(line, m, ins)) {
      std::string t = m[1];
      std::string collapsed;
      for (char c : t) {
        if ((c == ' ' || c == '\t') && (collapsed.empty() || collapsed.back() == ' ')) {
          continue;
        }
        collapsed.push_back(c == '\t' ? ' ' : c);
      }
      std::string bytes = m[3];
      while (!bytes.empty() && bytes.back() == ' ') {
        bytes.pop_back();
      }
      out[current].push_back({std::stoull(m[2].str(), nullptr, 16), collapsed, bytes});
    }
  }
  return out;
}

std::optional<std::uint32_t> as_u32(const std::map<std::string, std::string>& m,
                                    const std::string& key) {
  auto it = m.find(key);
  if (it == m.end()) {
    return std::nullopt;
  }
  return static_cast<std::uint32_t>(std::stoul(it->second));
}

std::string temp_dir(const std::string& name) {
  auto dir = std::filesystem::temp_directory_path() /
             ("rocplay-codeobj-" + name + "-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  return dir.string();
}

} // namespace

TEST_CASE("an offload bundle yields one object per GPU target with every kernel") {
  const auto r = read_input(data_path("kernels.hsaco"));
  REQUIRE(r.problems.empty());
  REQUIRE(r.objects.size() == 2);
  std::map<std::string, const CodeObject*> by_arch;
  for (const auto& o : r.objects) {
    by_arch[o.arch] = &o;
    CHECK(o.kernels.size() == 5);
    CHECK(o.code_object_version() == 4);
    CHECK(o.triple == "hipv4-amdgcn-amd-amdhsa--" + o.arch);
    CHECK(o.label.find("kernels.hsaco[hipv4-amdgcn-amd-amdhsa--") != std::string::npos);
  }
  REQUIRE(by_arch.count("gfx90a") == 1);
  REQUIRE(by_arch.count("gfx1030") == 1);
  CHECK(by_arch["gfx90a"]->e_flags == 0x53f);
  CHECK(by_arch["gfx90a"]->target == "amdgcn-amd-amdhsa--gfx90a");
  CHECK(!by_arch["gfx90a"]->xnack.has_value()); // "any"
}

TEST_CASE("kernel metadata matches llvm-readelf --notes for gfx90a and gfx1030") {
  for (const std::string arch : {"gfx90a", "gfx1030"}) {
    SECTION(arch) {
      const auto r = read_input(data_path("kernels-" + arch + ".elf"));
      const auto& co = only_object(r);
      CHECK(co.arch == arch);
      const auto expected = readelf_kernels(read_text(data_path("kernels-" + arch + ".notes.txt")));
      REQUIRE(expected.size() == co.kernels.size());
      for (const auto& e : expected) {
        const auto* k = co.find_kernel(e.at("name"));
        REQUIRE(k != nullptr);
        INFO(k->name);
        CHECK(k->symbol == e.at("symbol"));
        CHECK(k->has_metadata);
        CHECK(k->metadata.vgpr_count == as_u32(e, "vgpr_count"));
        CHECK(k->metadata.agpr_count == as_u32(e, "agpr_count"));
        CHECK(k->metadata.sgpr_count == as_u32(e, "sgpr_count"));
        CHECK(k->metadata.vgpr_spill_count == as_u32(e, "vgpr_spill_count"));
        CHECK(k->metadata.sgpr_spill_count == as_u32(e, "sgpr_spill_count"));
        CHECK(k->metadata.group_segment_fixed_size == as_u32(e, "group_segment_fixed_size"));
        CHECK(k->metadata.private_segment_fixed_size == as_u32(e, "private_segment_fixed_size"));
        CHECK(k->metadata.wavefront_size == as_u32(e, "wavefront_size"));
        CHECK(k->metadata.kernarg_segment_size == as_u32(e, "kernarg_segment_size"));
        CHECK(k->metadata.max_flat_workgroup_size == as_u32(e, "max_flat_workgroup_size"));
        // The kernel descriptor agrees with the note.
        REQUIRE(k->descriptor.has_value());
        CHECK(k->descriptor->group_segment_fixed_size == k->metadata.group_segment_fixed_size);
        CHECK(k->descriptor->private_segment_fixed_size == k->metadata.private_segment_fixed_size);
        CHECK(k->descriptor->kernarg_size == k->metadata.kernarg_segment_size);
        CHECK(k->descriptor->wave32() == (arch == "gfx1030"));
        REQUIRE(k->code_address.has_value());
        CHECK(*k->code_address ==
              *k->descriptor_address +
                  static_cast<std::uint64_t>(k->descriptor->kernel_code_entry_byte_offset));
      }
    }
  }
}

TEST_CASE("the spilling and LDS kernels carry what they were built to show") {
  const auto r = read_input(data_path("kernels-gfx90a.elf"));
  const auto& co = only_object(r);
  const auto* spill = co.find_kernel("spill_kernel");
  REQUIRE(spill != nullptr);
  CHECK(spill->metadata.vgpr_spill_count.value_or(0) > 0);
  CHECK(spill->metadata.private_segment_fixed_size.value_or(0) > 0);
  const auto* lds = co.find_kernel("lds_kernel");
  REQUIRE(lds != nullptr);
  CHECK(lds->metadata.group_segment_fixed_size == 16384u);
}

TEST_CASE("in-process disassembly matches llvm-objdump instruction by instruction") {
  for (const std::string arch : {"gfx90a", "gfx1030"}) {
    SECTION(arch) {
      const auto r = read_input(data_path("kernels-" + arch + ".elf"));
      const auto& co = only_object(r);
      const auto expected =
          objdump_functions(read_text(data_path("kernels-" + arch + ".objdump.txt")));
      REQUIRE(expected.size() == 5);
      for (const auto& [name, lines] : expected) {
        INFO(name);
        const auto* f = [&]() -> const Function* {
          for (const auto& fn : co.functions) {
            if (fn.name == name) {
              return &fn;
            }
          }
          return nullptr;
        }();
        REQUIRE(f != nullptr);
        const auto d = disassemble_function(co, *f);
        INFO((d.error ? d.error->message : std::string()));
        REQUIRE(!d.error);
        // objdump goes on through the padding up to the next symbol; the symbol's size ends
        // at the function's last instruction.
        REQUIRE(!d.instructions.empty());
        REQUIRE(d.instructions.size() <= lines.size());
        for (std::size_t i = d.instructions.size(); i < lines.size(); ++i) {
          CHECK(lines[i].address >= f->address + f->size);
        }
        CHECK(d.instructions.back().address + d.instructions.back().size == f->address + f->size);
        for (std::size_t i = 0; i < d.instructions.size(); ++i) {
          INFO("instruction " << i);
          CHECK(d.instructions[i].address == lines[i].address);
          CHECK(d.instructions[i].text == lines[i].text);
          CHECK(d.instructions[i].bytes == lines[i].bytes);
        }
      }
    }
  }
}

TEST_CASE("a window in the spin kernel finds its spin loop, the trap kernel's s_trap 2") {
  const auto r = read_input(data_path("kernels-gfx90a.elf"));
  const auto& co = only_object(r);
  const auto* spin = co.find_kernel("spin_kernel");
  REQUIRE(spin != nullptr);
  const auto whole = disassemble_function(co, *co.function_at(*spin->code_address));
  REQUIRE(!whole.error);
  std::uint64_t sleep_pc = 0;
  for (const auto& in : whole.instructions) {
    if (isa::mnemonic(in.text) == "s_sleep") {
      sleep_pc = in.address;
    }
  }
  REQUIRE(sleep_pc != 0);
  const auto w = pc_window(co, 0, sleep_pc + 4, 16, 16);
  REQUIRE(w.loop.has_value());
  CHECK(w.loop->spin);
  CHECK(w.loop->start == sleep_pc);
  CHECK(w.loop->mnemonics.front() == "s_sleep");
  CHECK(w.loop->mnemonics.back() == "s_cbranch_vccnz");
  CHECK(w.loop->describe().starts_with("spin loop of 7 instructions: s_sleep, "
                                       "global_load_dword, s_waitcnt"));
  CHECK(w.function == "spin_kernel");
  CHECK(!w.trap);

  const auto* trap = co.find_kernel("trap_kernel");
  REQUIRE(trap != nullptr);
  const auto tw = disassemble_function(co, *co.function_at(*trap->code_address));
  std::uint64_t trap_pc = 0;
  for (const auto& in : tw.instructions) {
    if (in.text == "s_trap 2") {
      trap_pc = in.address;
    }
  }
  REQUIRE(trap_pc != 0);
  // The debug agent reports the PC of the trap or of the instruction after it.
  for (std::uint64_t pc : {trap_pc, trap_pc + 4}) {
    const auto t = pc_window(co, 0, pc, 16, 4);
    CHECK(t.trap);
    CHECK(t.trap_address == trap_pc);
    CHECK(t.disassembly.instructions.size() <= 16 + 4);
  }
}

TEST_CASE("ISA fit: LDS-limited, spills, what-if architectures and absurd counts") {
  const auto r = read_input(data_path("kernels-gfx90a.elf"));
  const auto& co = only_object(r);
  const auto* lds = co.find_kernel("lds_kernel");
  REQUIRE(lds != nullptr);
  const auto* gfx90a = arch_limits("gfx90a");
  REQUIRE(gfx90a != nullptr);

  // 256 work-items = 4 waves; 64 KiB / 16 KiB = 4 workgroups per CU = 16 waves over 4 SIMDs.
  const auto f = fit_kernel(*lds, co.arch, *gfx90a, 256u);
  CHECK(f.waves == 4);
  CHECK(f.max_waves == 8);
  CHECK(f.limited_by == "LDS");
  CHECK(!f.workgroup_assumed);
  CHECK(f.left_on_the_table.find("LDS <= 13056 B per workgroup gives 5 waves/SIMD") !=
        std::string::npos);

  const auto* spill = co.find_kernel("spill_kernel");
  const auto s = fit_kernel(*spill, co.arch, *gfx90a);
  CHECK(s.workgroup_assumed);
  REQUIRE(s.spills.size() == 1);
  CHECK(s.spills[0].starts_with("44 VGPRs and 0 SGPRs spilled (100 B of scratch"));
  CHECK(s.left_on_the_table.find("holding the 44 spilled VGPRs (92 VGPRs) would still allow") !=
        std::string::npos);

  // Every named target fits; gfx950 has 160 KiB of LDS per CU.
  for (const char* arch : {"gfx942", "gfx950", "gfx1030", "gfx11", "gfx12"}) {
    INFO(arch);
    const auto* l = arch_limits(arch);
    REQUIRE(l != nullptr);
    const auto w = fit_kernel(*lds, co.arch, *l, 256u);
    CHECK(w.what_if);
    CHECK(w.waves >= 1);
    CHECK(w.waves <= w.max_waves);
  }
  CHECK(fit_kernel(*lds, co.arch, *arch_limits("gfx950"), 256u).waves == 8);
  CHECK(arch_limits("gfx908x") == nullptr);

  // Absurd counts from a hostile object: no division by zero, a clear "does not fit".
  Kernel absurd;
  absurd.name = "absurd";
  absurd.metadata.vgpr_count = 0xffffffffu;
  absurd.metadata.sgpr_count = 0xffffffffu;
  absurd.metadata.group_segment_fixed_size = 0xffffffffu;
  absurd.metadata.max_flat_workgroup_size = 0xffffffffu;
  absurd.metadata.wavefront_size = 7;
  const auto a = fit_kernel(absurd, "gfx90a", *gfx90a);
  CHECK(a.waves == 0);
  CHECK(a.left_on_the_table.starts_with("the kernel does not fit"));
  Kernel zero;
  zero.metadata.vgpr_count = 0;
  zero.metadata.max_flat_workgroup_size = 0;
  CHECK(fit_kernel(zero, "gfx90a", *gfx90a).waves == 8);
}

TEST_CASE("code-object URIs resolve against saved files and file offsets") {
  auto uri = parse_uri("memory://4242#offset=0x7f00c000&size=26656");
  REQUIRE(uri);
  CHECK(uri->protocol == "memory");
  CHECK(uri->pid == 4242);
  CHECK(uri->offset == 0x7f00c000u);
  CHECK(uri->size == 26656u);
  CHECK(uri->saved_name == "memory___4242_offset_0x7f00c000_size_26656");
  CHECK(!parse_uri("http://example.com/x"));
  CHECK(!parse_uri("memory://notapid#offset=1"));
  auto f = parse_uri("file:///opt/app/lib%20x.so#offset=4096&size=100");
  REQUIRE(f);
  CHECK(f->path == "/opt/app/lib x.so");

  // A saved memory:// object, under its name and under an `N_` prefix.
  const auto dir = temp_dir("saved");
  const auto elf = read_file(data_path("kernels-gfx90a.elf"));
  {
    std::ofstream(dir + "/7_" + uri->saved_name, std::ios::binary)
        .write(reinterpret_cast<const char*>(elf.data()), static_cast<std::streamsize>(elf.size()));
  }
  const auto saved = read_input(uri->text, dir);
  CHECK(only_object(saved).arch == "gfx90a");
  const auto missing = read_input("memory://99#offset=0x1&size=2", dir);
  REQUIRE(missing.problems.size() == 1);
  CHECK(missing.problems[0].hint.find("--save-code-objects") != std::string::npos);

  // A file:// URI into the bundle: the gfx90a entry by its offset and size.
  const auto bundle = read_file(data_path("kernels.hsaco"));
  const auto entries = read_bytes(bundle, "b");
  REQUIRE(entries.objects.size() == 2);
  std::uint64_t offset = 0;
  std::uint64_t size = 0;
  {
    // The entry table: magic, count, then offset/size/triple-length/triple per entry.
    std::size_t pos = 32;
    for (int i = 0; i < 3; ++i) {
      std::uint64_t o, s, t;
      std::memcpy(&o, bundle.data() + pos, 8);
      std::memcpy(&s, bundle.data() + pos + 8, 8);
      std::memcpy(&t, bundle.data() + pos + 16, 8);
      const std::string triple(reinterpret_cast<const char*>(bundle.data() + pos + 24), t);
      if (triple.ends_with("gfx90a")) {
        offset = o;
        size = s;
      }
      pos += 24 + t;
    }
  }
  REQUIRE(size > 0);
  const auto path = std::filesystem::absolute(data_path("kernels.hsaco")).string();
  const auto via_uri = read_input("file://" + path + "#offset=" + std::to_string(offset) +
                                  "&size=" + std::to_string(size));
  CHECK(only_object(via_uri).arch == "gfx90a");
  const auto past =
      read_input("file://" + path + "#offset=" + std::to_string(bundle.size()) + "&size=10");
  REQUIRE(past.problems.size() == 1);
  CHECK(past.problems[0].message.find("asks for 10 bytes") != std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST_CASE("malformed inputs are problems with hints, never crashes") {
  const auto elf = read_file(data_path("kernels-gfx90a.elf"));
  SECTION("truncated ELF") {
    for (std::size_t cut : {std::size_t{0}, std::size_t{3}, std::size_t{40}, std::size_t{64},
                            std::size_t{1000}, elf.size() / 2, elf.size() - 1}) {
      INFO(cut);
      const auto r = read_bytes(std::span(elf).first(cut), "cut");
      CHECK(!(r.problems.empty() && r.objects.empty()));
      for (const auto& p : r.problems) {
        CHECK(!p.hint.empty());
      }
    }
    const auto r = read_bytes(std::span(elf).first(elf.size() / 2), "cut");
    REQUIRE(r.problems.size() == 1);
    CHECK(r.problems[0].message.find("truncated ELF") != std::string::npos);
  }
  SECTION("wrong machine") {
    const auto self = read_file("/bin/true"); // an x86-64 ELF with no bundle
    const auto r = read_bytes(self, "self");
    REQUIRE(r.problems.size() == 1);
    CHECK(r.problems[0].message.find("not AMDGPU (224)") != std::string::npos);
  }
  SECTION("a bundle with no AMDGPU entry") {
    std::vector<std::uint8_t> b;
    const std::string magic = "__CLANG_OFFLOAD_BUNDLE__";
    b.insert(b.end(), magic.begin(), magic.end());
    auto put = [&](std::uint64_t v) {
      for (int i = 0; i < 8; ++i) {
        b.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
      }
    };
    const std::string triple = "host-x86_64-unknown-linux";
    put(1);
    put(0);
    put(0);
    put(triple.size());
    b.insert(b.end(), triple.begin(), triple.end());
    const auto r = read_bytes(b, "host-only");
    REQUIRE(r.problems.size() == 1);
    CHECK(r.problems[0].message.find("no AMDGPU entry (entries: host-x86_64-unknown-linux)") !=
          std::string::npos);
    // Absurd entry counts and sizes.
    std::memset(b.data() + 24, 0xff, 8);
    CHECK(read_bytes(b, "huge").problems.size() == 1);
  }
  SECTION("a compressed bundle is named, not misread") {
    const std::vector<std::uint8_t> b = {'C', 'C', 'O', 'B', 1, 0, 1, 0};
    const auto r = read_bytes(b, "ccob");
    REQUIRE(r.problems.size() == 1);
    CHECK(r.problems[0].message.find("compressed offload bundle") != std::string::npos);
  }
  SECTION("a corrupted metadata note is a warning, the rest is still read") {
    auto bad = elf;
    const std::string key = "amdhsa.kernels";
    auto it = std::search(bad.begin(), bad.end(), key.begin(), key.end());
    REQUIRE(it != bad.end());
    auto header = it + static_cast<std::ptrdiff_t>(key.size());
    CHECK(*header == 0x95); // fixarray of 5 maps
    *header = 0xdd;         // array32: its four length bytes are now the next map's bytes
    const auto r = read_bytes(bad, "bad-note");
    REQUIRE(r.objects.size() == 1);
    bool warned = false;
    for (const auto& w : r.objects[0].warnings) {
      warned = warned || w.find("not well-formed msgpack") != std::string::npos;
    }
    CHECK(warned);
    // The descriptors are still found through their `.kd` symbols.
    CHECK(r.objects[0].kernels.size() == 5);
  }
}

TEST_CASE("1,000 kernels in one object are all read") {
  const auto r = read_input(data_path("many_kernels-gfx90a.elf"));
  const auto& co = only_object(r);
  CHECK(co.kernels.size() == 1000);
  std::size_t with_lds = 0;
  for (const auto& k : co.kernels) {
    with_lds += k.metadata.group_segment_fixed_size.value_or(0) > 0 ? 1 : 0;
    CHECK(k.descriptor.has_value());
  }
  CHECK(with_lds == 1000);
}
