// cuda-gdb's device code kept in the stop and decoded after the detach
// (playbook/deferred_code.hpp), with a stand-in nvdisasm that prints a listing recorded on an
// H100 for the same function; the live path is checked on the device (tests/hardware/run.sh,
// docs/code-objects.md).
#include "playbook/deferred_code.hpp"
#include "rocplay/snapshot/deferred_code.hpp"
#include "rocplay/snapshot/snapshot.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

using namespace rocplay;
using rocplay::playbook::detail::DeferredCode;

namespace {

namespace fs = std::filesystem;

struct Scratch {
  fs::path dir;
  Scratch() {
    std::string pattern = (fs::temp_directory_path() / "rocplay-test-XXXXXX").string();
    REQUIRE(::mkdtemp(pattern.data()) != nullptr);
    dir = pattern;
  }
  ~Scratch() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  fs::path write(const std::string& name, const std::string& text, bool executable = false) {
    const fs::path p = dir / name;
    std::ofstream(p, std::ios::binary) << text;
    if (executable) {
      ::chmod(p.c_str(), 0755);
    }
    return p;
  }
};

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

const std::string kFunction = "_Z13allgather_vecPViiPKfPf";
const std::string kSubject = "cuda kernel 0 block 0,0,0 thread 0,0,0";

std::string answer_for(const fs::path& elf) {
  return "allgather_vec(int volatile*, int, float const*, float*) + 192 in section .text." +
         kFunction + " of " + elf.string() + "\n";
}

} // namespace

TEST_CASE("deferred code: the ELF kept in the stop outlives cuda-gdb's, decoded into notes") {
  Scratch s;
  const fs::path listing =
      fs::path(ROCPLAY_SOURCE_DIR) / "fixtures/cuda-gdb/h100-nvdisasm/syncspin-allgather_vec.sass";
  const fs::path args = s.dir / "args";
  const fs::path nvdisasm = s.write(
      "nvdisasm", "#!/bin/sh\necho \"$@\" >" + args.string() + "\ncat " + listing.string() + "\n",
      true);
  const fs::path elf = s.write("elf.55f46b3a34c0.o", "not really an ELF: no .symtab to look in");
  fs::path kept;
  {
    DeferredCode code(nvdisasm.string());
    std::string why;
    REQUIRE(
        code.keep(kSubject, 0x7f51bb7ac2c0, 0x7f51bb7ac200, 0x7f51bb7ac340, answer_for(elf), why));
    CHECK(code.keep(kSubject, 0x7f51bb7ac2c0, 0x7f51bb7ac200, 0x7f51bb7ac340, answer_for(elf),
                    why)); // a later sample: kept once
    CHECK_FALSE(code.keep(kSubject, 0x10, 0, 0x90, "No symbol matches 0x10.\n", why));
    CHECK(why.find("named no device function") != std::string::npos);
    fs::remove(elf); // cuda-gdb removes its files at the detach
    std::vector<std::string> notes;
    const auto problems = code.decode([&](std::string_view n) { notes.emplace_back(n); });
    CHECK(problems.empty());
    // No .symtab index: the whole (small) module, by its kept name.
    const std::string used = slurp(args);
    REQUIRE(used.starts_with("-c "));
    kept = used.substr(3, used.size() - 4);
    CHECK(fs::exists(kept));
    REQUIRE(notes.size() == 1 + 20); // the header, then 0x...200 to 0x...330
    CHECK(notes[0] == "code window for " + kSubject +
                          " at 0x7f51bb7ac2c0, decoded after the detach by nvdisasm from "
                          "elf.55f46b3a34c0.o");
    CHECK(notes[14] == "code 0x7f51bb7ac2d0 " + kFunction + "+208: @!P0 BRA 0x7f51bb7ac2a0");

    // What a replay of the recording reads back.
    std::vector<CodeWindow> windows;
    snapshot::CodeNoteReader reader;
    for (const auto& n : notes) {
      CHECK(reader.take(n, windows));
    }
    REQUIRE(windows.size() == 1);
    CHECK(windows[0].thread == kSubject);
    CHECK(windows[0].decoded_by == "nvdisasm");
    auto code_window = windows[0].instructions;
    REQUIRE(code_window.size() == 20);
    isa::annotate_branches(code_window, isa::Arch::Sass);
    const auto loop = isa::find_loop(code_window, 0x7f51bb7ac2c0);
    REQUIRE(loop);
    CHECK(loop->describe() ==
          "spin loop of 4 instructions: LDG.E.STRONG.SYS, YIELD, ISETP.GE.AND, BRA");
  }
  CHECK_FALSE(fs::exists(kept)); // removed with the keeper
}

TEST_CASE("deferred code: nvdisasm failing is said once per function, and nothing is noted") {
  Scratch s;
  const fs::path nvdisasm =
      s.write("nvdisasm", "#!/bin/sh\necho \"nvdisasm fatal   : bad input\" >&2\nexit 1\n", true);
  const fs::path elf = s.write("elf.o", "x");
  DeferredCode code(nvdisasm.string());
  std::string why;
  REQUIRE(
      code.keep(kSubject, 0x7f51bb7ac2c0, 0x7f51bb7ac200, 0x7f51bb7ac340, answer_for(elf), why));
  REQUIRE(code.keep("cuda kernel 0 block 3,0,0 thread 0,0,0", 0x7f51bb7ac2e0, 0x7f51bb7ac200,
                    0x7f51bb7ac360, answer_for(elf), why));
  std::vector<std::string> notes;
  const auto problems = code.decode([&](std::string_view n) { notes.emplace_back(n); });
  CHECK(notes.empty());
  REQUIRE(problems.size() == 1);
  CHECK(problems[0].find("failed: nvdisasm fatal   : bad input") != std::string::npos);
}

TEST_CASE("code notes: foreign, malformed and orphan notes are not windows") {
  std::vector<CodeWindow> windows;
  snapshot::CodeNoteReader reader;
  CHECK_FALSE(reader.take("sample 2: stop began at 1.0 s", windows));
  CHECK(reader.take("code 0x10 f+0: NOP", windows)); // ours, but no window is open
  CHECK(windows.empty());
  CHECK(reader.take("code window for x", windows)); // no `at 0x`: opens nothing
  CHECK(windows.empty());
  CHECK(reader.take(snapshot::code_window_note("t", 0x10, "nvdisasm", "elf.o"), windows));
  CHECK(reader.take("code 0xzz f+0: NOP", windows));
  CHECK(reader.take("code 0x10 f: NOP", windows));
  CHECK(reader.take("code 0x10 f+0 NOP", windows));
  isa::Instruction in;
  in.address = 0x20;
  in.function = "f";
  in.offset = 16;
  in.text = "EXIT";
  CHECK(reader.take(snapshot::code_instruction_note(in), windows));
  REQUIRE(windows.size() == 1);
  REQUIRE(windows[0].instructions.size() == 1);
  CHECK(windows[0].instructions[0] == in);
  for (int i = 0; i < 300; ++i) {
    reader.take(snapshot::code_window_note("t", 0x10, "nvdisasm", "elf.o"), windows);
    reader.take(snapshot::code_instruction_note(in), windows);
  }
  CHECK(windows.size() == 256);
  CHECK(windows.back().instructions.size() == 1); // past the bound nothing joins the last one
}

TEST_CASE("code notes: a recording's bytes that are not UTF-8 reach the model as valid UTF-8") {
  // Found by fuzz_snapshot: a mutated note's function name broke the snapshot's JSON dump.
  std::vector<CodeWindow> windows;
  snapshot::CodeNoteReader reader;
  CHECK(reader.take("code window for t\x99 at 0x10, decoded after the detach by nv\xff from e",
                    windows));
  CHECK(reader.take("code 0x20 f\x99\xfe+16: EXIT \xc3", windows));
  REQUIRE(windows.size() == 1);
  REQUIRE(windows[0].instructions.size() == 1);
  Snapshot s;
  s.code_windows = windows;
  CHECK_NOTHROW(to_json(s).dump());
  CHECK(windows[0].instructions[0].function.find("f") == 0);
}

TEST_CASE("info symbol answers: device, host library, main executable, none") {
  auto a = snapshot::parse_info_symbol(
      "at::cuda::(anonymous namespace)::spin_kernel(long) + 112 in section "
      ".text._ZN2at4cuda40_GLOBAL__N__758183f4_8_Sleep_cu_088d913f11spin_kernelEl of "
      "/tmp/cuda-dbg/1076/session1/elf.2c998990.30b8ffa0.o.YP54tc\n");
  REQUIRE(a);
  CHECK(a->name == "at::cuda::(anonymous namespace)::spin_kernel(long)");
  CHECK(a->offset == 112);
  CHECK(a->section == ".text._ZN2at4cuda40_GLOBAL__N__758183f4_8_Sleep_cu_088d913f11spin_kernelEl");
  CHECK(a->object == "/tmp/cuda-dbg/1076/session1/elf.2c998990.30b8ffa0.o.YP54tc");
  a = snapshot::parse_info_symbol("main in section .text\n");
  REQUIRE(a);
  CHECK(a->name == "main");
  CHECK(a->offset == 0);
  CHECK(a->object.empty());
  CHECK_FALSE(snapshot::parse_info_symbol("No symbol matches 0x10.\n"));
  CHECK_FALSE(snapshot::parse_info_symbol(" in section .text"));
  CHECK_FALSE(snapshot::parse_info_symbol("f + x in section .text"));
}
