// The dialects' text helpers on the shapes rocgdb-formats.md quotes.
#include "snapshot/text.hpp"

#include "rocplay/core/debugger.hpp"
#include "rocplay/mi/parser.hpp"

#include <catch2/catch.hpp>

#include <tuple>

using namespace rocplay;
using namespace rocplay::snapshot;

TEST_CASE("cli_command unwraps -interpreter-exec console", "[snapshot][text]") {
  CHECK(text::cli_command("-interpreter-exec console \"info agents\"") == "info agents");
  CHECK(text::cli_command("-interpreter-exec console \"info line *$pc\"") == "info line *$pc");
  CHECK(text::cli_command("-interpreter-exec console \"echo \\\"x\\\"\"") == "echo \"x\"");
  CHECK(text::cli_command("-agent-info").empty());
  CHECK(text::cli_command("info threads") == "info threads");
  CHECK(text::mi_operation("-thread-info --thread 3") == "-thread-info");
  CHECK(text::option_value("-lane-info --thread 7 \"0-9\"", "--thread") == "7");
  CHECK_FALSE(text::option_value("-lane-info", "--thread").has_value());
}

TEST_CASE("address notes keep template brackets", "[snapshot][text]") {
  auto n =
      text::parse_address_note("0x7fa6e37a00c0 <allgather_vec(int volatile*, int, float*)+192>");
  REQUIRE(n);
  CHECK(n->address == 0x7fa6e37a00c0);
  CHECK(n->symbol == "allgather_vec(int volatile*, int, float*)");
  CHECK(n->offset == 192);
  auto t = text::parse_address_note("0x10 <f<int, std::array<int, 2>>+4>");
  REQUIRE(t);
  CHECK(t->symbol == "f<int, std::array<int, 2>>");
  CHECK(t->offset == 4);
  auto bare = text::parse_address_note("0x00007fff");
  REQUIRE(bare);
  CHECK_FALSE(bare->has_symbol);
  CHECK_FALSE(text::parse_address_note("kern()"));
}

TEST_CASE("info line: GDB's three sentences and cuda-gdb's inlined-from", "[snapshot][text]") {
  auto r = text::parse_info_line(
      "Line 15 of \"saxpy.cpp\" starts at address 0x7ffff608e3a8 <_Z12saxpy_kernelfPKfPfj+168> "
      "and ends at 0x7ffff608e3d4 <_Z12saxpy_kernelfPKfPfj+212>.\n");
  REQUIRE(r.size() == 1);
  CHECK(r[0].start == 0x7ffff608e3a8);
  CHECK(r[0].end == 0x7ffff608e3d4);
  CHECK(r[0].line.file == "saxpy.cpp");
  CHECK(r[0].line.line == 15u);
  CHECK(r[0].line.function == "_Z12saxpy_kernelfPKfPfj");
  CHECK(r[0].line.offset == 168u);
  CHECK(r[0].line.has_code);

  auto nocode = text::parse_info_line(
      "Line 3 of \"a.c\" is at address 0x401000 <main> but contains no code.\n");
  REQUIRE(nocode.size() == 1);
  CHECK_FALSE(nocode[0].line.has_code);
  CHECK(nocode[0].start == 0x401000);

  auto none =
      text::parse_info_line("No line number information available for address 0x7f2d9c602a40 "
                            "<_ZN5aiter39bf16gemm_fp32bf16_tn_96x64_splitk_cleanE+10816>\n");
  REQUIRE(none.size() == 1);
  CHECK(none[0].start == 0x7f2d9c602a40);
  CHECK(none[0].line.offset == 10816u);
  CHECK_FALSE(none[0].line.has_code);

  // Real cuda-gdb 13.0 text (fixtures/cuda-gdb/syncspin-h200.mi).
  auto cuda = text::parse_info_line(
      "Line 8 of \"/home/dev/repro/hang.cu\" starts at address 0x7fa6e37a00c0 "
      "<_Z13allgather_vecPViiPf+192> and ends at 0x7fa6e37a00e0 <_Z13allgather_vecPViiPf+224> "
      "inlined from start_sync at line 13 of hang.cu.\n");
  REQUIRE(cuda.size() == 1);
  CHECK(cuda[0].line.inlined_from == "start_sync at line 13 of hang.cu");
  CHECK(cuda[0].end == 0x7fa6e37a00e0);
}

TEST_CASE("info symbol", "[snapshot][text]") {
  auto a = text::parse_info_symbol(
      "void aiter::allgather_vec<__hip_bfloat16, 8>(void*, void*, aiter::Signal*, int) in "
      "section .text of memory://4303#offset=0x7fe8a5a00000&size=2457600\n");
  REQUIRE(a);
  CHECK(a->first ==
        "void aiter::allgather_vec<__hip_bfloat16, 8>(void*, void*, aiter::Signal*, int)");
  CHECK(a->second == 0u);
  auto b = text::parse_info_symbol("main + 4 in section .text\n");
  REQUIRE(b);
  CHECK(b->first == "main");
  CHECK(b->second == 4u);
  CHECK_FALSE(text::parse_info_symbol("No symbol matches 0x10.\n"));
}

TEST_CASE("CLI frames", "[snapshot][text]") {
  using R = std::tuple<const char*, const char*, std::optional<std::uint64_t>, const char*,
                       std::optional<std::uint32_t>, const char*>;
  auto row = GENERATE(table<const char*, R>({
      {"at file:line, no address", R{"kern () at /home/user/saxpy.cpp:7", "kern", std::nullopt,
                                     "/home/user/saxpy.cpp", 7u, ""}},
      {"address, from a library",
       R{"0x00007ffff207d586 in ?? () from /opt/rocm-7.1.0/lib/libhsa-runtime64.so.1", "",
         0x00007ffff207d586, "", std::nullopt, "/opt/rocm-7.1.0/lib/libhsa-runtime64.so.1"}},
      {"arguments with parentheses",
       R{"0x00007fc9a440106c in saxpy (n=256, f=(float) 2) at saxpy.cpp:58", "saxpy",
         0x00007fc9a440106c, "saxpy.cpp", 58u, ""}},
      {"C++ minimal symbol with its parameter list",
       R{"0x00007f3c1a5c1e6a in rocr::core::InterruptSignal::WaitRelaxed(long, unsigned long) () "
         "from /opt/rocm/lib/libhsa-runtime64.so.1",
         "rocr::core::InterruptSignal::WaitRelaxed(long, unsigned long)", 0x00007f3c1a5c1e6a, "",
         std::nullopt, "/opt/rocm/lib/libhsa-runtime64.so.1"}},
  }));
  DYNAMIC_SECTION(std::get<0>(row)) {
    const auto& [input, func, pc, file, line, from] = std::get<1>(row);
    Frame f = text::parse_frame_text(input);
    CHECK(f.function == func);
    CHECK(f.pc == pc);
    CHECK(f.file == file);
    CHECK(f.line == line);
    CHECK(f.from == from);
  }
}

TEST_CASE("backtraces of one thread and of thread apply all", "[snapshot][text]") {
  auto one = text::parse_backtraces("#0  0x00007f3c1e3a8c5b in ioctl () from /lib/libc.so.6\n"
                                    "#1  0x00007f3c18f3d9e8 in hipMemcpyWithStream () from "
                                    "/opt/rocm/lib/libamdhip64.so.7\n",
                                    "1");
  REQUIRE(one.size() == 1);
  CHECK(one[0].first == "1");
  REQUIRE(one[0].second.size() == 2);
  CHECK(one[0].second[1].function == "hipMemcpyWithStream");
  CHECK(one[0].second[1].level == 1u);

  auto all = text::parse_backtraces(
      "\nThread 2 (Thread 0x7ffff5dff640 (LWP 12346) \"python3\"):\n"
      "#0  0x00007ffff7a3c7e0 in __GI___clock_nanosleep () from /lib/libc.so.6\n"
      "\nThread 1 (Thread 0x7ffff7d8a740 (LWP 12345) \"python3\"):\n"
      "#0  0x00007f3c1e3a8c5b in ioctl () from /lib/libc.so.6\n"
      "#1  0x00007f3c18f3d9e8 in hipStreamSynchronize () from /opt/rocm/lib/libamdhip64.so.7\n",
      "");
  REQUIRE(all.size() == 2);
  CHECK(all[0].first == "2");
  CHECK(all[1].first == "1");
  CHECK(all[1].second.back().function == "hipStreamSynchronize");
}

TEST_CASE("kernel_symbol drops .kd from plain names and keeps mangled ones", "[snapshot][text]") {
  CHECK(text::kernel_symbol(" kern.kd ") == "kern");
  CHECK(text::kernel_symbol("_Z4kernv.kd") == "_Z4kernv.kd"); // demangle_names() does the rest
  CHECK(text::kernel_symbol("Cijk_Alik_Bljk_BBS_BH_MT128x128x64") ==
        "Cijk_Alik_Bljk_BBS_BH_MT128x128x64");
}

namespace {
std::vector<std::string_view> lines_of(const std::string& s) {
  return text::split_lines(s);
}
} // namespace

TEST_CASE("console tables: columns from the header, trailing blanks, blank cells",
          "[snapshot][text]") {
  // rocgdb-formats.md 9.1, with the trailing blanks cli-out really prints.
  std::string queues =
      "  Id   Target Id                Type         Read   Write  Size     Address            \n"
      "  1    AMDGPU Queue 1:1 (QID 0) HSA          2      2      4096     0x00007ffff626e000 \n"
      "* 2    AMDGPU Queue 1:2 (QID 1) HSA                        1048576  0x00007fffe5800000 \n"
      "\n";
  auto lines = lines_of(queues);
  std::size_t next = 0;
  auto t = text::parse_cli_table(
      lines, 0, {"Id", "Target Id", "Type", "Read", "Write", "Size", "Address"}, next);
  REQUIRE(t);
  REQUIRE(t->rows.size() == 2);
  CHECK(next == 3);
  CHECK_FALSE(t->rows[0].current);
  CHECK(t->rows[1].current);
  CHECK(t->cell(t->rows[0], "Target Id") == "AMDGPU Queue 1:1 (QID 0)");
  CHECK(t->cell(t->rows[0], "Read") == "2");
  CHECK(t->cell(t->rows[1], "Read").empty()); // field_skip: blanks
  CHECK(t->cell(t->rows[1], "Size") == "1048576");
  CHECK(t->cell(t->rows[1], "Address") == "0x00007fffe5800000");
}

TEST_CASE("console tables: a value wider than its column shifts the rest", "[snapshot][text]") {
  // Size has width 8; a 9-digit size is printed whole and pushes Address right.
  std::string queues =
      "  Id   Target Id                Type         Read   Write  Size     Address            \n"
      "  1    AMDGPU Queue 1:1 (QID 0) HSA          1234567 7      134217728 0x00007ffff626e000 \n";
  auto lines = lines_of(queues);
  std::size_t next = 0;
  auto t = text::parse_cli_table(
      lines, 0, {"Id", "Target Id", "Type", "Read", "Write", "Size", "Address"}, next);
  REQUIRE(t);
  REQUIRE(t->rows.size() == 1);
  CHECK(t->cell(t->rows[0], "Read") == "1234567");
  CHECK(t->cell(t->rows[0], "Write") == "7");
  CHECK(t->cell(t->rows[0], "Size") == "134217728");
  CHECK(t->cell(t->rows[0], "Address") == "0x00007ffff626e000");
}

TEST_CASE("console tables: exact header set only", "[snapshot][text]") {
  std::string lanes = "  Id   State Target Id                            Frame\n"
                      "* 0    A     AMDGPU Lane 1:2:1:1/0 (0,0,0)[0,0,0] kern () at saxpy.cpp:7\n";
  auto lines = lines_of(lanes);
  std::size_t next = 0;
  // `info threads` headers must not match the lanes table (it has a State column).
  CHECK_FALSE(text::parse_cli_table(lines, 0, {"Id", "Target Id", "Frame"}, next));
  auto t = text::parse_cli_table(lines, 0, {"Id", "State", "Target Id", "Frame"}, next);
  REQUIRE(t);
  CHECK(t->cell(t->rows[0], "Frame") == "kern () at saxpy.cpp:7");
  // A row that does not start with an id ends the table.
  std::string text_after = "  Id   Target Id                Type         Read   Write  Size     "
                           "Address\nNo queues are currently active.\n";
  auto l2 = lines_of(text_after);
  auto t2 = text::parse_cli_table(
      l2, 0, {"Id", "Target Id", "Type", "Read", "Write", "Size", "Address"}, next);
  REQUIRE(t2);
  CHECK(t2->rows.empty());
}

TEST_CASE("a library read through cuda-gdb's light sysroot is named by its system path",
          "[snapshot][text]") {
  const std::string lib = "/opt/venv/lib/python3.12/site-packages/torch/lib/libtorch_cuda.so";
  const std::string inside = "/tmp/run/rocplay-sysroot-4242-Ab3dE9" + lib;
  CHECK(without_light_sysroot(inside) == lib);
  CHECK(without_light_sysroot(lib) == lib);
  // Only a directory named as the session names them: prefix, pid, a dash, a suffix.
  for (const std::string other :
       {"/tmp/rocplay-sysroot-x-Ab3dE9/usr/lib/libc.so.6", "/tmp/rocplay-sysroot-12/usr/lib/a.so",
        "/tmp/rocplay-sysroot-12-/usr/lib/a.so", "/tmp/rocplay-sysroot-12-Ab3dE9",
        "/tmp/my-rocplay-sysroot-12-Ab/lib.so"}) {
    INFO(other);
    CHECK(without_light_sysroot(other) == other);
  }
  const std::string line =
      "^done,frame={level=\"1\",addr=\"0x7f00\",func=\"??\",from=\"" + inside + "\"}";
  mi::NodeTable nodes;
  mi::ParseError error;
  const mi::RecordView record = mi::parse_line(line, 1, nodes, error);
  REQUIRE_FALSE(record.is_error());
  CHECK(text::frame_from_mi(record["frame"]).from == lib);
  CHECK(text::parse_frame_text("#1  0x00007f00 in ?? () from " + inside).from == lib);
}
