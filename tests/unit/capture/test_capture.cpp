// The capture's pure parts and its core writer: /proc/PID/maps lines, the merge of copied memory,
// and write_core's ELF read back by hand (header, program headers, notes in order, NT_FILE).
#include "capture/internal.hpp"
#include "rocplay/capture/capture.hpp"
#include "rocplay/core/error.hpp"

#include <catch2/catch.hpp>

#include <elf.h>
#include <sys/procfs.h>
#include <sys/syscall.h>
#include <sys/user.h>
#include <unistd.h>

#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

using namespace rocplay;
using namespace rocplay::capture;
namespace fs = std::filesystem;

namespace {

class CoreDir {
public:
  CoreDir() {
    path_ = fs::temp_directory_path() /
            ("rocplay-capture-unit-" + std::to_string(::getpid()) + "-" + std::to_string(next_++));
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~CoreDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  CoreDir(const CoreDir&) = delete;
  CoreDir& operator=(const CoreDir&) = delete;
  std::string file(const std::string& name) const { return (path_ / name).string(); }

private:
  fs::path path_;
  static inline int next_ = 0;
};

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct Note {
  std::string name;
  std::uint32_t type = 0;
  std::string desc;
};

// A core file read back: the ELF header, the program headers, the notes.
struct ParsedCore {
  Elf64_Ehdr eh{};
  std::vector<Elf64_Phdr> ph;
  std::vector<Note> notes;
  std::string bytes;
};

ParsedCore parse_core(const std::string& path) {
  ParsedCore c;
  c.bytes = slurp(path);
  REQUIRE(c.bytes.size() >= sizeof(Elf64_Ehdr));
  std::memcpy(&c.eh, c.bytes.data(), sizeof c.eh);
  REQUIRE(std::memcmp(c.eh.e_ident, ELFMAG, SELFMAG) == 0);
  std::size_t phnum = c.eh.e_phnum;
  if (phnum == PN_XNUM) {
    REQUIRE(c.eh.e_shoff + sizeof(Elf64_Shdr) <= c.bytes.size());
    Elf64_Shdr sh;
    std::memcpy(&sh, c.bytes.data() + c.eh.e_shoff, sizeof sh);
    phnum = sh.sh_info;
  }
  REQUIRE(c.eh.e_phoff + phnum * sizeof(Elf64_Phdr) <= c.bytes.size());
  c.ph.resize(phnum);
  std::memcpy(c.ph.data(), c.bytes.data() + c.eh.e_phoff, phnum * sizeof(Elf64_Phdr));
  for (const auto& p : c.ph) {
    REQUIRE(p.p_offset + p.p_filesz <= c.bytes.size());
    if (p.p_type != PT_NOTE) {
      continue;
    }
    std::size_t at = p.p_offset;
    const std::size_t end = p.p_offset + p.p_filesz;
    auto align4 = [](std::size_t v) { return (v + 3) / 4 * 4; };
    while (at + sizeof(Elf64_Nhdr) <= end) {
      Elf64_Nhdr nh;
      std::memcpy(&nh, c.bytes.data() + at, sizeof nh);
      at += sizeof nh;
      REQUIRE(at + align4(nh.n_namesz) + nh.n_descsz <= end);
      Note n;
      n.name.assign(c.bytes.data() + at, nh.n_namesz);
      at += align4(nh.n_namesz);
      n.type = nh.n_type;
      n.desc.assign(c.bytes.data() + at, nh.n_descsz);
      at += align4(nh.n_descsz);
      c.notes.push_back(std::move(n));
    }
    REQUIRE(at == end);
  }
  return c;
}

Thread make_thread(std::int64_t tid, std::uint64_t rip, bool fp) {
  Thread t;
  t.tid = tid;
  t.name = "t" + std::to_string(tid);
  t.prstatus_regs.assign(27 * 8, '\0');
  for (std::size_t i = 0; i < 27; ++i) {
    const std::uint64_t v = (static_cast<std::uint64_t>(tid) << 16) + i;
    std::memcpy(t.prstatus_regs.data() + i * 8, &v, 8);
  }
  std::memcpy(t.prstatus_regs.data() + 16 * 8, &rip, 8); // user_regs_struct::rip
  if (fp) {
    t.fp_regs.assign(512, static_cast<char>(tid & 0x7f));
  }
  return t;
}

Capture sample() {
  Capture c;
  c.pid = 4242;
  c.command_name = "python3";
  c.command_line = "python3 -m vllm.entrypoints.openai.api_server --model x";
  c.threads.push_back(make_thread(4242, 0x401000, true));
  c.threads.push_back(make_thread(4250, 0x7f0000001000, false));
  c.threads.back().pending_signal = SIGUSR1;
  c.memory.push_back(Region{0x7ffc00000000, std::string(300, 'a')});
  c.memory.push_back(Region{0x7f0000100000, "futexword" + std::string(55, '\0')});
  std::string auxv;
  for (std::uint64_t v :
       {std::uint64_t{AT_PAGESZ}, std::uint64_t{4096}, std::uint64_t{AT_NULL}, std::uint64_t{0}}) {
    auxv.append(reinterpret_cast<const char*>(&v), 8);
  }
  c.auxv = auxv;
  c.files.push_back(FileMapping{0x400000, 0x401000, 0, "/usr/bin/python3.11"});
  c.files.push_back(
      FileMapping{0x7f0000000000, 0x7f0000020000, 0x3000, "/lib/x86_64 dir/libc.so.6"});
  return c;
}

std::uint64_t u64_at(const std::string& s, std::size_t at) {
  std::uint64_t v = 0;
  std::memcpy(&v, s.data() + at, 8);
  return v;
}

} // namespace

TEST_CASE("capture maps: every line parsed and the NT_FILE ones chosen", "[capture]") {
  const std::string text =
      "55d0a0000000-55d0a0001000 r--p 00000000 08:01 1234    /usr/bin/spin target\n"
      "55d0a0001000-55d0a0003000 r-xp 00001000 08:01 1234    /usr/bin/spin target\n"
      "55d0a1000000-55d0a1021000 rw-p 00000000 00:00 0       [heap]\n"
      "7f0000000000-7f0000001000 ---p 00000000 00:00 0 \n"
      "7f0000001000-7f0000801000 rw-p 00000000 00:00 0 \n"
      "7f1000000000-7f1000002000 rw-s 00000000 00:05 77      /dev/kfd\n"
      "7f1000002000-7f1000003000 rw-s 00000000 00:01 78      /memfd:weights (deleted)\n"
      "7f1000003000-7f1000004000 r--p 00002000 08:01 99      /tmp/gone.so (deleted)\n"
      "7f1000004000-7f1000008000 r--p 00004000 08:01 98      /lib/libc.so.6\n"
      "garbage line\n"
      "7ffc00000000-7ffc00021000 rw-p 00000000 00:00 0       [stack]\n"
      "7ffc00100000-7ffc00102000 r-xp 00000000 00:00 0       [vdso]";
  const auto maps = process::parse_map_entries(text);
  REQUIRE(maps.size() == 11);
  CHECK(maps[0].start == 0x55d0a0000000);
  CHECK(maps[0].end == 0x55d0a0001000);
  CHECK(maps[0].path == "/usr/bin/spin target");
  CHECK(maps[1].offset == 0x1000);
  CHECK(maps[3].path.empty());
  CHECK(!maps[3].readable);
  CHECK(maps[4].readable);
  CHECK(maps[10].path == "[vdso]");

  const auto files = detail::file_mappings(maps);
  REQUIRE(files.size() == 3);
  CHECK(files[0].path == "/usr/bin/spin target");
  CHECK(files[1].offset == 0x1000);
  CHECK(files[2].path == "/lib/libc.so.6");
  CHECK(files[2].start == 0x7f1000004000);
  CHECK(files[2].offset == 0x4000);

  // The C runtime's writable data: libc and the dynamic linker (by AT_BASE), not the rest.
  const auto runtime = process::parse_map_entries(
      "7f0000000000-7f0000001000 r--p 00000000 08:01 5 /usr/lib/x86_64-linux-gnu/libc.so.6\n"
      "7f0000001000-7f0000003000 rw-p 00001000 08:01 5 /usr/lib/x86_64-linux-gnu/libc.so.6\n"
      "7f0000003000-7f0000004000 rw-p 00000000 00:00 0\n"
      "7f0000004000-7f0000005000 rw-p 00001000 08:01 6 /usr/lib/libtorch_cuda.so\n"
      "7f0000005000-7f0000006000 rw-p 00001000 08:01 7 /lib/libpthread-2.31.so\n"
      "7f0000006000-7f0000007000 rw-p 00001000 08:01 7 /lib/libcrypt.so.1\n"
      "7f0000010000-7f0000011000 r--p 00000000 08:01 8 /lib64/ld-linux-x86-64.so.2\n"
      "7f0000011000-7f0000013000 rw-p 00001000 08:01 8 /lib64/ld-linux-x86-64.so.2\n"
      "7f0000020000-7f0000420000 rw-p 00001000 08:01 9 /lib/libc.so.6\n");
  const auto data = detail::runtime_data(runtime, 0x7f0000010000, 1 << 20);
  REQUIRE(data.size() == 3);
  CHECK(data[0].start == 0x7f0000001000);
  CHECK(data[0].end == 0x7f0000003000);
  CHECK(data[1].start == 0x7f0000005000);
  CHECK(data[2].start == 0x7f0000011000);
  CHECK(detail::runtime_data(runtime, 0, 1 << 20).size() == 2);

  CHECK(detail::find_mapping(maps, 0x7f0000001000) == 4);
  CHECK(detail::find_mapping(maps, 0x7f0000800fff) == 4);
  CHECK(detail::find_mapping(maps, 0x7f0000801000) == -1);
  CHECK(detail::find_mapping(maps, 0x1000) == -1);
  CHECK(detail::find_mapping(maps, 0x7ffc00101fff) == 10);
  CHECK(detail::find_mapping(maps, 0xffffffffffffffff) == -1);
  CHECK(detail::find_mapping({}, 0x1000) == -1);
}

TEST_CASE("capture regions: overlapping copies merge and the stop's bytes win", "[capture]") {
  SECTION("ranges") {
    const auto r = detail::merge_ranges({{300, 400}, {100, 200}, {150, 250}, {250, 260}, {5, 5}});
    REQUIRE(r.size() == 2);
    CHECK(r[0].start == 100);
    CHECK(r[0].end == 260);
    CHECK(r[1].start == 300);
    CHECK(r[1].end == 400);
    CHECK(detail::merge_ranges({}).empty());
  }
  SECTION("disjoint regions keep their bytes, sorted") {
    auto out = detail::merge_regions({Region{200, "bb"}, Region{0, "a"}}, {Region{100, "c"}});
    REQUIRE(out.size() == 3);
    CHECK(out[0].address == 0);
    CHECK(out[1].bytes == "c");
    CHECK(out[2].bytes == "bb");
  }
  SECTION("overlaps") {
    auto out = detail::merge_regions({Region{10, "llllllll"}, Region{30, "xy"}},
                                     {Region{14, "HHHHHH"}, Region{32, "z"}, Region{40, ""}});
    REQUIRE(out.size() == 2);
    CHECK(out[0].address == 10);
    CHECK(out[0].bytes == "llllHHHHHH");
    CHECK(out[1].address == 30);
    CHECK(out[1].bytes == "xyz");
  }
}

TEST_CASE(
    "capture core: the ELF header and one PT_LOAD per region and the notes in the kernel's layout",
    "[capture]") {
  CoreDir dir;
  const Capture cap = sample();
  const std::string path = dir.file("sample.core");
  write_core(cap, path);
  CHECK(!fs::exists(path + ".part"));
  CHECK((fs::status(path).permissions() & fs::perms::others_read) == fs::perms::none);
  const auto c = parse_core(path);

  CHECK(c.eh.e_ident[EI_CLASS] == ELFCLASS64);
  CHECK(c.eh.e_ident[EI_DATA] == ELFDATA2LSB);
  CHECK(c.eh.e_type == ET_CORE);
  CHECK(c.eh.e_machine == EM_X86_64);
  CHECK(c.eh.e_phentsize == sizeof(Elf64_Phdr));
  REQUIRE(c.ph.size() == 3);
  CHECK(c.ph[0].p_type == PT_NOTE);
  CHECK(c.ph[0].p_offset % 4 == 0);
  for (std::size_t i = 0; i < cap.memory.size(); ++i) {
    const auto& p = c.ph[i + 1];
    const auto& r = cap.memory[i];
    CHECK(p.p_type == PT_LOAD);
    CHECK(p.p_vaddr == r.address);
    CHECK(p.p_filesz == r.bytes.size());
    CHECK(p.p_memsz == r.bytes.size());
    CHECK(p.p_flags == (PF_R | PF_W));
    CHECK(p.p_offset % 8 == 0);
    CHECK(p.p_offset >= c.ph[0].p_offset + c.ph[0].p_filesz);
    CHECK(c.bytes.substr(p.p_offset, p.p_filesz) == r.bytes);
  }

  // PRPSINFO, then each thread's PRSTATUS and (when read) FPREGSET, then AUXV and FILE.
  REQUIRE(c.notes.size() == 6);
  const std::vector<std::uint32_t> types = {NT_PRPSINFO, NT_PRSTATUS, NT_FPREGSET,
                                            NT_PRSTATUS, NT_AUXV,     NT_FILE};
  for (std::size_t i = 0; i < types.size(); ++i) {
    INFO("note " << i);
    CHECK(c.notes[i].type == types[i]);
    CHECK(c.notes[i].name == std::string("CORE", 5));
  }

  REQUIRE(c.notes[0].desc.size() == sizeof(elf_prpsinfo));
  elf_prpsinfo ps;
  std::memcpy(&ps, c.notes[0].desc.data(), sizeof ps);
  CHECK(ps.pr_pid == 4242);
  CHECK(std::string(ps.pr_fname) == "python3");
  CHECK(std::string(ps.pr_psargs, strnlen(ps.pr_psargs, sizeof ps.pr_psargs)) ==
        cap.command_line.substr(0, sizeof ps.pr_psargs - 1));

  for (std::size_t t = 0; t < 2; ++t) {
    const auto& n = c.notes[t == 0 ? 1 : 3];
    REQUIRE(n.desc.size() == sizeof(elf_prstatus));
    elf_prstatus st;
    std::memcpy(&st, n.desc.data(), sizeof st);
    CHECK(st.pr_pid == cap.threads[t].tid);
    CHECK(std::memcmp(&st.pr_reg, cap.threads[t].prstatus_regs.data(), sizeof st.pr_reg) == 0);
    CHECK(st.pr_fpvalid == (t == 0 ? 1 : 0));
    CHECK(st.pr_info.si_signo == (t == 0 ? SIGSTOP : SIGUSR1));
    CHECK(st.pr_cursig == (t == 0 ? SIGSTOP : SIGUSR1));
  }
  CHECK(c.notes[2].desc == cap.threads[0].fp_regs);
  CHECK(c.notes[4].desc == cap.auxv);

  // NT_FILE: count, page size, (start, end, offset in pages) each, then the paths.
  const auto& f = c.notes[5].desc;
  REQUIRE(f.size() >= 16 + 2 * 24);
  CHECK(u64_at(f, 0) == 2);
  CHECK(u64_at(f, 8) == 4096);
  CHECK(u64_at(f, 16) == 0x400000);
  CHECK(u64_at(f, 24) == 0x401000);
  CHECK(u64_at(f, 32) == 0);
  CHECK(u64_at(f, 40) == 0x7f0000000000);
  CHECK(u64_at(f, 48) == 0x7f0000020000);
  CHECK(u64_at(f, 56) == 3);
  CHECK(f.substr(64) == std::string("/usr/bin/python3.11\0/lib/x86_64 dir/libc.so.6\0", 46));
}

TEST_CASE("capture core: bounded cases", "[capture]") {
  CoreDir dir;
  SECTION("no threads, no memory, no files: still a valid core") {
    Capture cap;
    cap.pid = 7;
    const std::string path = dir.file("empty.core");
    write_core(cap, path);
    const auto c = parse_core(path);
    CHECK(c.eh.e_type == ET_CORE);
    REQUIRE(c.ph.size() == 1);
    CHECK(c.ph[0].p_type == PT_NOTE);
    REQUIRE(c.notes.size() == 3);
    CHECK(c.notes[0].type == NT_PRPSINFO);
    CHECK(c.notes[1].type == NT_AUXV);
    CHECK(c.notes[1].desc.empty());
    CHECK(c.notes[2].type == NT_FILE);
    CHECK(c.notes[2].desc.size() == 16);
    CHECK(u64_at(c.notes[2].desc, 0) == 0);
  }
  SECTION("a thread with short registers is written zero-filled") {
    Capture cap;
    cap.pid = 7;
    Thread t;
    t.tid = 7;
    t.prstatus_regs = "abc";
    cap.threads.push_back(t);
    const std::string path = dir.file("short.core");
    write_core(cap, path);
    const auto c = parse_core(path);
    REQUIRE(c.notes.size() == 4);
    elf_prstatus st;
    std::memcpy(&st, c.notes[1].desc.data(), sizeof st);
    CHECK(std::memcmp(&st.pr_reg, "abc\0\0", 5) == 0);
  }
  SECTION("more than 65,534 regions: e_phnum is PN_XNUM, section 0 holds the count") {
    Capture cap;
    cap.pid = 7;
    for (std::uint64_t i = 0; i < 70'000; ++i) {
      cap.memory.push_back(Region{0x10000 + i * 16, "x"});
    }
    const std::string path = dir.file("many.core");
    write_core(cap, path);
    const auto c = parse_core(path);
    CHECK(c.eh.e_phnum == PN_XNUM);
    CHECK(c.eh.e_shnum == 1);
    REQUIRE(c.ph.size() == 70'001);
    CHECK(c.ph[70'000].p_vaddr == 0x10000 + 69'999 * 16);
    CHECK(c.bytes[c.ph[70'000].p_offset] == 'x');
  }
  SECTION("regions larger than the write buffer, between small ones, land at their offsets") {
    Capture cap;
    cap.pid = 7;
    cap.memory.push_back(Region{0x1000, std::string(5, 'a')});
    std::string big(3 << 20, '\0');
    for (std::size_t i = 0; i < big.size(); ++i) {
      big[i] = static_cast<char>(i * 7);
    }
    cap.memory.push_back(Region{0x100000, big});
    cap.memory.push_back(Region{0x900000, std::string(1 << 20, 'c')});
    cap.memory.push_back(Region{0xa00000, std::string(3, 'd')});
    const std::string path = dir.file("big.core");
    write_core(cap, path);
    const auto c = parse_core(path);
    REQUIRE(c.ph.size() == 5);
    for (std::size_t i = 0; i < cap.memory.size(); ++i) {
      const auto& p = c.ph[i + 1];
      CHECK(p.p_vaddr == cap.memory[i].address);
      CHECK(c.bytes.substr(p.p_offset, p.p_filesz) == cap.memory[i].bytes);
    }
  }
  SECTION("an unwritable path: Error naming it, nothing left behind") {
    const std::string path = dir.file("no/such/dir/x.core");
    try {
      write_core(sample(), path);
      FAIL("wrote into a missing directory");
    } catch (const Error& e) {
      CHECK(e.code() == ExitCode::NoInput);
      CHECK(std::string(e.what()).find(path) != std::string::npos);
      CHECK(std::string(e.what()).find("No such file or directory") != std::string::npos);
      CHECK(!e.hint().empty());
    }
  }
}

TEST_CASE("capture: supported on this build", "[capture]") {
#if defined(__linux__) && defined(__x86_64__)
  CHECK(supported());
#else
  CHECK(!supported());
#endif
}

#if defined(__linux__) && defined(__x86_64__)
TEST_CASE("capture fingerprint: a timed sleep's time left is not part of the stack", "[capture]") {
  // One thread in a stack region of 4 KB at 0x7000'0000, stopped in `syscall` with the time left
  // to be written at rsp + 88, as glibc's nanosleep(&ts, &ts) of a napping loop has it.
  constexpr std::uint64_t kBase = 0x7000'0000;
  constexpr std::uint64_t kRsp = kBase + 0x800;
  constexpr std::uint64_t kTimeLeft = kRsp + 88;
  auto make = [&](long syscall_nr, std::uint64_t time_left_arg) {
    Capture c;
    c.memory.push_back({kBase, std::string(4096, '\x5a')});
    user_regs_struct regs{};
    regs.rsp = kRsp;
    regs.orig_rax = static_cast<unsigned long long>(syscall_nr);
    regs.rsi = time_left_arg;
    regs.r10 = time_left_arg;
    Thread t;
    t.tid = 42;
    t.prstatus_regs.assign(reinterpret_cast<const char*>(&regs), sizeof regs);
    c.threads.push_back(t);
    return c;
  };
  auto poke = [](Capture& c, std::uint64_t address, char value) {
    c.memory.front().bytes[static_cast<std::size_t>(address - kBase)] = value;
  };
  auto fingerprint = [](const Capture& c) { return stack_fingerprint(c, c.threads.front()); };

  for (const long nr : {long{SYS_nanosleep}, long{SYS_clock_nanosleep}}) {
    INFO("syscall " << nr);
    const Capture before = make(nr, kTimeLeft);
    REQUIRE(fingerprint(before) != 0);
    // The kernel wrote another time left (both words of the timespec): the same stack.
    Capture later = make(nr, kTimeLeft);
    poke(later, kTimeLeft, 1);
    poke(later, kTimeLeft + 15, 2);
    CHECK(fingerprint(later) == fingerprint(before));
    // A byte beside it changed: a different stack.
    Capture beside = make(nr, kTimeLeft);
    poke(beside, kTimeLeft + 16, 1);
    CHECK(fingerprint(beside) != fingerprint(before));
    poke(beside, kTimeLeft + 16, '\x5a');
    poke(beside, kTimeLeft - 1, 1);
    CHECK(fingerprint(beside) != fingerprint(before));
  }
  // The same bytes changed in a thread outside a timed sleep (running user code, or in read()):
  // a different stack.
  for (const long nr : {-1L, long{SYS_read}}) {
    INFO("syscall " << nr);
    const Capture before = make(nr, kTimeLeft);
    Capture later = make(nr, kTimeLeft);
    poke(later, kTimeLeft, 1);
    CHECK(fingerprint(later) != fingerprint(before));
  }
  // Above the thread pointer (the thread's control block, its rseq area's CPU number rewritten
  // by the kernel) nothing counts; below it everything does.
  {
    Capture before = make(-1, 0);
    user_regs_struct regs;
    std::memcpy(&regs, before.threads.front().prstatus_regs.data(), sizeof regs);
    regs.fs_base = kBase + 0xc00;
    before.threads.front().prstatus_regs.assign(reinterpret_cast<const char*>(&regs), sizeof regs);
    Capture moved = before;
    poke(moved, regs.fs_base, 1);
    poke(moved, kBase + 4095, 1);
    CHECK(fingerprint(moved) == fingerprint(before));
    poke(moved, regs.fs_base - 1, 1);
    CHECK(fingerprint(moved) != fingerprint(before));
  }
  // A time left outside the copied stack changes nothing and is not looked for past its end.
  const Capture far = make(SYS_nanosleep, kBase + 4096 - 8);
  Capture far_later = make(SYS_nanosleep, kBase + 4096 - 8);
  poke(far_later, kBase + 4096 - 8, 1);
  CHECK(fingerprint(far_later) == fingerprint(far));
  poke(far_later, kBase + 4096 - 9, 1);
  CHECK(fingerprint(far_later) != fingerprint(far));
}
#endif

TEST_CASE("capture: /proc/PID/task/TID/syscall in its three forms", "[capture]") {
  using detail::parse_syscall_file;
  // In a system call: number, six arguments, stack pointer, PC (fs/proc/base.c, proc_pid_syscall).
  const auto in_call = parse_syscall_file("58 0x7f30b1969e52 0x0 0x0 0x0 0x0 0x0 0x7f30b1400e38 "
                                          "0x7f30b196a3b8\n");
  REQUIRE(in_call);
  CHECK(in_call->number == 58);
  CHECK(in_call->args[0] == 0x7f30b1969e52);
  CHECK(in_call->args[5] == 0);
  CHECK(in_call->sp == 0x7f30b1400e38);
  CHECK(in_call->pc == 0x7f30b196a3b8);
  // Blocked outside one (a page fault): -1, stack pointer, PC.
  const auto outside = parse_syscall_file("-1 0x7ffd5e4f1a40 0x401136\n");
  REQUIRE(outside);
  CHECK(outside->number == -1);
  CHECK(outside->sp == 0x7ffd5e4f1a40);
  CHECK(outside->pc == 0x401136);
  CHECK(outside->args[0] == 0);
  // On a CPU, and whatever else.
  for (const char* text :
       {"running\n", "", "\n", "58 0x1 0x2", "-1 0x1 0x2 0x3", "58 0x1 0x2 0x3 0x4 0x5 0x6 0x7",
        "58 0x1 0x2 0x3 0x4 0x5 0x6 0x7 0x8 0x9", "-2 0x1 0x2", "58 1 0x2 0x3 0x4 0x5 0x6 0x7 0x8",
        "x 0x1 0x2", "58 0x1 0x2 0x3 0x4 0x5 0x6 0x7 0xzz", "-1 0x 0x2"}) {
    INFO("text: " << text);
    CHECK_FALSE(parse_syscall_file(text));
  }
}
