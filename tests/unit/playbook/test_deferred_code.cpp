// cuda-gdb's device code kept in the stop and decoded after the detach
// (playbook/deferred_code.hpp), with a stand-in nvdisasm that prints a listing recorded on an
// H100 for the same function; the live path is checked on the device (tests/hardware/run.sh,
// docs/code-objects.md).
#include "playbook/deferred_code.hpp"
#include "rocplay/codeobj/cuda_fatbin.hpp"
#include "rocplay/snapshot/deferred_code.hpp"
#include "rocplay/snapshot/snapshot.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

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
    // nvdisasm started in the stop, not after the detach.
    for (int i = 0; i < 500 && !fs::exists(args); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    CHECK(fs::exists(args));
    fs::remove(elf); // cuda-gdb removes its files at the detach
    std::vector<std::string> notes;
    const auto problems = code.decode([&](std::string_view n) { notes.emplace_back(n); });
    CHECK(problems.empty());
    // No .symtab index: the whole (small) module, by its kept name.
    const std::string used = slurp(args);
    REQUIRE(used.starts_with("-c -ndf "));
    kept = used.substr(8, used.size() - 9);
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

namespace {

// A running host program that holds syncspin's .nv_fatbin as nvcc links it (`sleep` with the
// section added), killed at the end.
struct Host {
  pid_t pid = -1;
  Host(Scratch& s, const std::string& fatbin) {
    const fs::path host = s.dir / "host";
    const std::string command =
        "objcopy --add-section .nv_fatbin=" + fatbin + " /bin/sleep " + host.string() + " 2>&1";
    REQUIRE(std::system(command.c_str()) == 0);
    pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      ::execl(host.c_str(), "host", "30", static_cast<char*>(nullptr));
      ::_exit(127);
    }
    // Until the new program runs: its /proc/PID/exe names the host.
    const fs::path exe = "/proc/" + std::to_string(pid) + "/exe";
    std::error_code ec;
    for (int i = 0; i < 500 && fs::read_symlink(exe, ec) != host; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  }
  Host(const Host&) = delete;
  Host& operator=(const Host&) = delete;
  ~Host() {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
  }
};

// Stands in for nvdisasm: says what it was asked to `log`, then prints the H200's listing of the
// file it was given (the cubin as linked, or cuda-gdb's loaded copy); `early_delay` seconds
// first for a linked one.
fs::path listing_nvdisasm(Scratch& s, const fs::path& log, int early_delay = 0) {
  const fs::path dir = fs::path(ROCPLAY_SOURCE_DIR) / "fixtures/cuda-fatbin";
  return s.write("nvdisasm",
                 "#!/bin/sh\necho \"$@\" >>" + log.string() +
                     "\nfor file; do :; done\ncase \"$file\" in\n*.cubin) sleep " +
                     std::to_string(early_delay) + "; cat " + (dir / "native.sass").string() +
                     "; echo finished >>" + log.string() + " ;;\n*) cat " +
                     (dir / "kept.sass").string() + " ;;\nesac\n",
                 true);
}

const std::uint64_t kLoadedAt = 0x7f94037a0000; // fixtures/cuda-fatbin/kept.elf's code

std::vector<std::string> decoded(DeferredCode& code, const fs::path& kept) {
  std::string why;
  REQUIRE(
      code.keep(kSubject, kLoadedAt + 0xc0, kLoadedAt, kLoadedAt + 0x140, answer_for(kept), why));
  std::vector<std::string> notes;
  CHECK(code.decode([&](std::string_view n) { notes.emplace_back(n); }).empty());
  return notes;
}

} // namespace

TEST_CASE("deferred code: the program's own cubin, decoded before the attach, gives the same "
          "window") {
  Scratch s;
  const fs::path fixtures = fs::path(ROCPLAY_SOURCE_DIR) / "fixtures/cuda-fatbin";
  const Host host(s, (fixtures / "native.nv_fatbin").string());
  const fs::path kept = s.dir / "elf.562f798744c0.562f7a67aed0.o.UUWXoP";
  fs::copy_file(fixtures / "kept.elf", kept);

  const fs::path early_log = s.dir / "early.log";
  std::vector<std::string> early_notes;
  {
    DeferredCode code(listing_nvdisasm(s, early_log).string());
    code.start_early(host.pid);
    early_notes = decoded(code, kept);
  }
  const fs::path late_log = s.dir / "late.log";
  std::vector<std::string> late_notes;
  {
    DeferredCode code(listing_nvdisasm(s, late_log).string());
    late_notes = decoded(code, kept);
  }
  // Early: the one module with code, whole; nothing after the detach. Late: the kept file.
  const std::string early_args = slurp(early_log);
  CHECK(early_args.starts_with("-c -ndf "));
  CHECK(early_args.find(".cubin\nfinished\n") != std::string::npos);
  CHECK(early_args.find(kept.filename().string()) == std::string::npos);
  CHECK(slurp(late_log).find("-c -ndf -fun ") == 0);
  REQUIRE(late_notes.size() == 1 + 20);
  CHECK(early_notes == late_notes);
  CHECK(early_notes[14] == "code 0x7f94037a00d0 _Z13allgather_vecPViiPKfPf+208: @!P0 BRA "
                           "0x7f94037a00a0");
}

TEST_CASE("deferred code: code the program's files do not hold is decoded from the kept file, "
          "and the early nvdisasm is stopped") {
  Scratch s;
  const fs::path fixtures = fs::path(ROCPLAY_SOURCE_DIR) / "fixtures/cuda-fatbin";
  const Host host(s, (fixtures / "native.nv_fatbin").string());
  // The kept module's code differs in one byte from the program's (another build, a JIT).
  auto bytes = slurp(fixtures / "kept.elf");
  const std::span<const std::uint8_t> image(reinterpret_cast<const std::uint8_t*>(bytes.data()),
                                            bytes.size());
  const auto text = codeobj::elf_section(image, ".text." + kFunction);
  REQUIRE(text);
  bytes[static_cast<std::size_t>(text->contents.data() - image.data()) + 0x40] ^= 1;
  const fs::path kept = s.write("elf.other.o", bytes);
  const fs::path log = s.dir / "log";
  DeferredCode code(listing_nvdisasm(s, log, 30).string());
  code.start_early(host.pid);
  const auto t0 = std::chrono::steady_clock::now();
  const auto notes = decoded(code, kept);
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(20)); // not its 30 s
  CHECK(notes.size() == 1 + 20);
  const std::string args = slurp(log);
  CHECK(args.find("finished") == std::string::npos);      // killed
  CHECK(args.find("-c -ndf -fun ") != std::string::npos); // the kept file's function
}

TEST_CASE("deferred code: the target's files are its executable, then its own libraries") {
  const auto files = DeferredCode::target_files(::getpid());
  REQUIRE_FALSE(files.empty());
  CHECK(files.front() == "/proc/" + std::to_string(::getpid()) + "/exe");
  for (const auto& f : files) {
    CHECK(f.find("/usr/lib/") == std::string::npos); // libc, libstdc++: no device code
    CHECK(f.find("/lib/x86_64") == std::string::npos);
  }
}

TEST_CASE("deferred code: a second look takes the listings of the first from the cache, with no "
          "nvdisasm") {
  Scratch s;
  const fs::path fixtures = fs::path(ROCPLAY_SOURCE_DIR) / "fixtures/cuda-fatbin";
  const fs::path kept = s.dir / "elf.562f798744c0.562f7a67aed0.o.UUWXoP";
  fs::copy_file(fixtures / "kept.elf", kept);
  const std::string cache = (s.dir / "cache").string();
  const fs::path first_log = s.dir / "first.log"; // what the stand-in nvdisasm was asked
  const fs::path nvdisasm = listing_nvdisasm(s, first_log);

  SECTION("the program's own cubin, decoded before the attach") {
    const Host host(s, (fixtures / "native.nv_fatbin").string());
    std::vector<std::string> first, second;
    {
      DeferredCode code(nvdisasm.string(), cache);
      code.start_early(host.pid);
      first = decoded(code, kept);
    }
    REQUIRE(slurp(first_log).find(".cubin\nfinished\n") != std::string::npos);
    fs::remove(first_log);
    {
      DeferredCode code(nvdisasm.string(), cache);
      code.start_early(host.pid);
      second = decoded(code, kept);
    }
    CHECK_FALSE(fs::exists(first_log)); // not run
    REQUIRE(first.size() == 1 + 20);
    // The same window, and a note of where its listing came from.
    REQUIRE(second.size() == first.size() + 1);
    CHECK(second[0] == "nvdisasm's listing of " + kFunction +
                           " (the program's own cubin) kept from an earlier look, in " + cache);
    CHECK(std::vector(second.begin() + 1, second.end()) == first);
  }
  SECTION("a kept file's function") {
    std::vector<std::string> first, second;
    {
      DeferredCode code(nvdisasm.string(), cache);
      first = decoded(code, kept);
    }
    REQUIRE(slurp(first_log).find("-c -ndf -fun ") == 0);
    fs::remove(first_log);
    // The next look keeps the same module under another name.
    const fs::path again = s.dir / "elf.562f798744c0.562f7a67aed0.o.Zq81Ab";
    fs::rename(kept, again);
    {
      DeferredCode code(nvdisasm.string(), cache);
      second = decoded(code, again);
    }
    CHECK_FALSE(fs::exists(first_log));
    REQUIRE(first.size() == 1 + 20);
    // The same window; the header names the file this look kept.
    REQUIRE(second.size() == first.size() + 1);
    CHECK(second[0].find("(cuda-gdb's copy of the module) kept from an earlier look") !=
          std::string::npos);
    CHECK(std::vector(second.begin() + 2, second.end()) ==
          std::vector(first.begin() + 1, first.end()));
    CHECK(second[1].find("Zq81Ab") != std::string::npos);
  }
  SECTION("not without a cache") {
    {
      DeferredCode code(nvdisasm.string());
      decoded(code, kept);
    }
    fs::remove(first_log);
    {
      DeferredCode code(nvdisasm.string());
      decoded(code, kept);
    }
    CHECK(slurp(first_log).find("-c -ndf -fun ") == 0);
    CHECK_FALSE(fs::exists(cache));
  }
}

TEST_CASE("deferred code: looks at two ranks at once decode their common module once") {
  Scratch s;
  const fs::path fixtures = fs::path(ROCPLAY_SOURCE_DIR) / "fixtures/cuda-fatbin";
  const std::string cache = (s.dir / "cache").string();
  const fs::path log = s.dir / "log";
  // A stand-in that takes a second over the kept file's function, as nvdisasm does about half.
  const fs::path nvdisasm = s.write("nvdisasm",
                                    "#!/bin/sh\necho \"$@\" >>" + log.string() + "\nsleep 1\ncat " +
                                        (fixtures / "kept.sass").string() + "\n",
                                    true);
  std::vector<std::string> notes[2];
  std::vector<std::thread> ranks;
  for (int r = 0; r < 2; ++r) {
    ranks.emplace_back([&, r] {
      const fs::path kept = s.dir / ("elf.rank" + std::to_string(r) + ".o");
      fs::copy_file(fixtures / "kept.elf", kept);
      DeferredCode code(nvdisasm.string(), cache);
      std::string why;
      if (code.keep(kSubject, kLoadedAt + 0xc0, kLoadedAt, kLoadedAt + 0x140, answer_for(kept),
                    why)) {
        code.decode([&](std::string_view n) { notes[r].emplace_back(n); });
      }
    });
  }
  for (auto& t : ranks) {
    t.join();
  }
  const std::string runs = slurp(log);
  CHECK(std::count(runs.begin(), runs.end(), '\n') == 1);   // one nvdisasm for both
  REQUIRE(notes[0].size() + notes[1].size() == 2 * 21 + 1); // one took the other's listing
  const auto& waited = notes[0].size() == 22 ? notes[0] : notes[1];
  const auto& decoded = notes[0].size() == 22 ? notes[1] : notes[0];
  CHECK(waited[0].find("kept from an earlier look") != std::string::npos);
  CHECK(std::vector(waited.begin() + 2, waited.end()) ==
        std::vector(decoded.begin() + 1, decoded.end()));
}
