// The walk over process images of CPython 3.14 and 3.15, default and free-threaded builds, laid
// out by their own _Py_DebugOffsets. The tables below are the words of _Py_DebugOffsets_INIT
// (version through the str object's group) as gcc compiles them over Debian unstable's
// libpython3.14-dev 3.14.10 and libpython3.15-dev 3.15.2 headers
// (Include/internal/pycore_debug_offsets.h, with Py_BUILD_CORE; the free-threaded ones with
// Py_GIL_DISABLED) on x86-64: debug_offsets_dump.c beside this file prints them. The default
// builds' tables are what the live interpreters publish (tests/live/pyframes_live.cpp runs
// them); no free-threaded interpreter could be had for the live tests (docs/python-stacks.md),
// so these images are where the free-threaded reads are proven: thread-local bytecode, the str
// state's bit fields, the object header's size, and the GIL that is off.
#include "debug_offsets_tables.hpp"
#include "fake_memory.hpp"
#include "rocplay/pyframes/pyframes.hpp"

#include <catch2/catch.hpp>

#include <cstring>
#include <span>

using namespace rocplay::pyframes;
using namespace rocplay::testing;

namespace {

// Where each field the walk needs sits among those words (as declared in each version's header).
struct Index {
  int interpreters_head, interp_next, threads_head, gil_runtime_state, gil_enabled, gil_locked,
      gil_holder, ts_next, ts_interp, ts_current_frame, ts_thread_id, ts_native_thread_id,
      f_previous, f_executable, f_instr_ptr, f_owner, f_tlbc_index, co_filename, co_name,
      co_qualname, co_linetable, co_firstlineno, co_code_adaptive, co_tlbc, ob_type, tp_name,
      bytes_ob_size, bytes_ob_sval, u_state, u_length, u_ascii_size, u_compact_size;
};
constexpr Index k314Index{5,  8,  9,  16, 17, 18, 19, 24, 25, 26, 27, 28, 32, 33, 34, 36,
                          38, 40, 41, 42, 43, 44, 48, 49, 51, 53, 75, 76, 78, 79, 80, -1};
constexpr Index k315Index{5,  8,  9,  16, 17, 18, 19, 24, 25, 26, 30, 31, 40, 41, 42, 44,
                          46, 48, 49, 50, 51, 52, 56, 57, 59, 61, 87, 88, 90, 91, 92, 93};

constexpr std::uint64_t kImageRuntime = 0x10000, kImageInterp = 0x20000, kImageThread = 0x40000,
                        kImageFrames = 0x50000, kImageCode = 0x60000, kImageCodeType = 0x70000,
                        kImageBytesType = 0x70800, kImageStrings = 0x80000, kImageTable = 0x90000,
                        kImageTlbc = 0xA0000, kImageThreadCopy = 0xB0000;
constexpr std::uint8_t kImageOwnedByThread = 0, kImageOwnedByInterpreter = 3;

struct Image {
  FakeMemory m;
  std::span<const std::uint64_t> words;
  Index ix;
  bool free_threaded;
  std::uint64_t at(int index) const { return words[static_cast<std::size_t>(index - 1)]; }

  // A str object: compact ASCII, or compact UCS-2 when `wide`.
  void str(std::uint64_t obj, std::u16string_view text, bool wide) {
    const unsigned shift = free_threaded ? 8 : 2; // cpython/unicodeobject.h, Py_GIL_DISABLED
    const std::uint32_t kind = wide ? 2 : 1;
    const std::uint32_t state =
        (kind << shift) | (1U << (shift + 3)) | (wide ? 0 : 1U << (shift + 4));
    m.put<std::uint32_t>(obj + at(ix.u_state), state);
    m.put<std::int64_t>(obj + at(ix.u_length), static_cast<std::int64_t>(text.size()));
    const std::uint64_t data =
        obj + (wide ? (ix.u_compact_size > 0 ? at(ix.u_compact_size) : at(ix.u_ascii_size) + 16)
                    : at(ix.u_ascii_size));
    for (std::size_t i = 0; i < text.size(); ++i) {
      if (wide) {
        m.put<std::uint16_t>(data + 2 * i, static_cast<std::uint16_t>(text[i]));
      } else {
        m.put<std::uint8_t>(data + i, static_cast<std::uint8_t>(text[i]));
      }
    }
  }

  void frame(std::uint64_t f, std::uint64_t code, std::uint64_t previous, std::uint8_t owner,
             std::uint64_t instr, std::int32_t tlbc_index = 0) {
    m.put<std::uint64_t>(f + at(ix.f_executable), code == 0 ? 0 : code | 1); // deferred tag
    m.put<std::uint64_t>(f + at(ix.f_previous), previous);
    m.put<std::uint64_t>(f + at(ix.f_instr_ptr), instr);
    m.put<std::uint8_t>(f + at(ix.f_owner), owner);
    if (free_threaded) {
      m.put<std::int32_t>(f + at(ix.f_tlbc_index), tlbc_index);
    }
  }
};

// One interpreter, one thread (LWP 4242):
//   inner  (job.py:15)  [thread-local bytecode copy 1 in the free-threaded build]
//   outer  (job.py:12)  entry of its eval-loop call (an interpreter-owned frame follows)
//   <base frame, interpreter-owned>
// `locked`/`enabled` set the GIL: holder = the thread when locked.
Image image(std::span<const std::uint64_t> words, const Index& ix, bool free_threaded,
            std::int32_t gil_enabled, std::int32_t locked) {
  Image im{FakeMemory{}, words, ix, free_threaded};
  auto& m = im.m;
  m.put(kImageRuntime, "xdebugpy", 8);
  m.put(kImageRuntime + 8, words.data(), words.size_bytes());
  m.put<std::uint64_t>(kImageRuntime + im.at(ix.interpreters_head), kImageInterp);
  m.put<std::uint64_t>(kImageInterp + im.at(ix.interp_next), 0);
  m.put<std::uint64_t>(kImageInterp + im.at(ix.threads_head), kImageThread);
  m.put<std::int32_t>(kImageInterp + im.at(ix.gil_runtime_state) + im.at(ix.gil_enabled),
                      gil_enabled);
  m.put<std::int32_t>(kImageInterp + im.at(ix.gil_locked), locked);
  m.put<std::uint64_t>(kImageInterp + im.at(ix.gil_holder), kImageThread);
  m.put<std::uint64_t>(kImageThread + im.at(ix.ts_next), 0);
  m.put<std::uint64_t>(kImageThread + im.at(ix.ts_interp), kImageInterp);
  m.put<std::uint64_t>(kImageThread + im.at(ix.ts_thread_id), 0x7f0000001000);
  m.put<std::uint64_t>(kImageThread + im.at(ix.ts_native_thread_id), 4242);
  m.put<std::uint64_t>(kImageThread + im.at(ix.ts_current_frame), kImageFrames);
  const std::uint64_t inner = kImageFrames, outer = kImageFrames + 0x100,
                      shim = kImageFrames + 0x200, base = kImageFrames + 0x300,
                      inner_code = kImageCode, outer_code = kImageCode + 0x1000;
  const std::uint64_t inner_start = inner_code + im.at(ix.co_code_adaptive);
  const std::uint64_t outer_start = outer_code + im.at(ix.co_code_adaptive);
  if (free_threaded) {
    // inner runs thread-local copy 1: its instr_ptr points there, at code unit 1.
    im.frame(inner, inner_code, outer, kImageOwnedByThread, kImageThreadCopy + 2, 1);
    m.put<std::uint64_t>(inner_code + im.at(ix.co_tlbc), kImageTlbc);
    m.put<std::int64_t>(kImageTlbc, 2); // _PyCodeArray: size, entries[]
    m.put<std::uint64_t>(kImageTlbc + 8, inner_start);
    m.put<std::uint64_t>(kImageTlbc + 16, kImageThreadCopy);
  } else {
    im.frame(inner, inner_code, outer, kImageOwnedByThread, inner_start + 2);
  }
  im.frame(outer, outer_code, shim, kImageOwnedByThread, outer_start);
  im.frame(shim, 0, base, kImageOwnedByInterpreter, 0);
  im.frame(base, 0, 0, kImageOwnedByInterpreter, 0);
  m.put(kImageCodeType + 0x100, "code", 5);
  m.put<std::uint64_t>(kImageCodeType + im.at(ix.tp_name), kImageCodeType + 0x100);
  m.put(kImageBytesType + 0x100, "bytes", 6);
  m.put<std::uint64_t>(kImageBytesType + im.at(ix.tp_name), kImageBytesType + 0x100);
  // Line table (Objects/locations.md), no-columns entries of one code unit each: code unit 0
  // at first line + 2, code unit 1 at + 5.
  const std::uint8_t table[] = {0xE8, 0x04, 0xE8, 0x06};
  m.put<std::uint64_t>(kImageTable + im.at(ix.ob_type), kImageBytesType);
  m.put<std::int64_t>(kImageTable + im.at(ix.bytes_ob_size), sizeof table);
  m.put(kImageTable + im.at(ix.bytes_ob_sval), table, sizeof table);
  const std::uint64_t file = kImageStrings, inner_name = kImageStrings + 0x100,
                      outer_name = kImageStrings + 0x200;
  im.str(file, u"job.py", false);
  im.str(inner_name, u"Worker.inn\u00e9r\u2192", true); // "Worker.innér→": compact UCS-2
  im.str(outer_name, u"outer", false);
  for (auto [code, name] : {std::pair{inner_code, inner_name}, std::pair{outer_code, outer_name}}) {
    m.put<std::uint64_t>(code + im.at(ix.ob_type), kImageCodeType);
    m.put<std::uint64_t>(code + im.at(ix.co_qualname), name);
    m.put<std::uint64_t>(code + im.at(ix.co_name), name);
    m.put<std::uint64_t>(code + im.at(ix.co_filename), file);
    m.put<std::uint64_t>(code + im.at(ix.co_linetable), kImageTable);
    m.put<std::int32_t>(code + im.at(ix.co_firstlineno), 10);
  }
  return im;
}

Runtime runtime() {
  Runtime r;
  r.address = kImageRuntime;
  return r;
}

void check_frames(const Stacks& s) {
  REQUIRE(s.threads.size() == 1);
  const Thread& t = s.threads[0];
  CHECK(t.native_id == 4242);
  CHECK(t.note.empty());
  REQUIRE(t.frames.size() == 2);
  CHECK(t.frames[0] == Frame{"Worker.inn\xC3\xA9r\xE2\x86\x92", "job.py", 15, false, {}});
  CHECK(t.frames[1] == Frame{"outer", "job.py", 12, true, {}});
}

} // namespace

TEST_CASE("3.14 and 3.15 default builds: frames, names, lines and the GIL from _Py_DebugOffsets") {
  for (auto [words, ix, version] :
       {std::tuple{std::span<const std::uint64_t>(k314), k314Index, "3.14.10"},
        std::tuple{std::span<const std::uint64_t>(k315), k315Index, "3.15.2"}}) {
    INFO(version);
    Image im = image(words, ix, false, 0, 1);
    const Stacks s = read(im.m, runtime());
    CHECK(s.version == version);
    CHECK(s.notes.empty());
    CHECK_FALSE(s.free_threaded);
    CHECK_FALSE(s.gil_disabled);
    CHECK(s.gil_known);
    check_frames(s);
    CHECK(s.threads[0].holds_gil);
  }
}

TEST_CASE("3.14t and 3.15t: thread-local bytecode, their str layout, and no GIL to hold") {
  for (auto [words, ix, version] :
       {std::tuple{std::span<const std::uint64_t>(k314t), k314Index, "3.14.10"},
        std::tuple{std::span<const std::uint64_t>(k315t), k315Index, "3.15.2"}}) {
    INFO(version);
    SECTION("the GIL off, as a free-threaded build runs") {
      Image im = image(words, ix, true, 0, 0);
      const Stacks s = read(im.m, runtime());
      CHECK(s.notes.empty());
      CHECK(s.free_threaded);
      CHECK(s.gil_disabled);
      CHECK_FALSE(s.gil_known);
      check_frames(s);
      CHECK_FALSE(s.threads[0].holds_gil);
    }
    SECTION("the GIL turned on (PYTHON_GIL=1): its holder is read as in a default build") {
      Image im = image(words, ix, true, 1, 1);
      const Stacks s = read(im.m, runtime());
      CHECK(s.free_threaded);
      CHECK_FALSE(s.gil_disabled);
      CHECK(s.gil_known);
      check_frames(s);
      CHECK(s.threads[0].holds_gil);
    }
    SECTION("a thread-local copy the code object does not have: no line, never a wrong one") {
      Image im = image(words, ix, true, 0, 0);
      im.m.put<std::int32_t>(kImageFrames + im.at(ix.f_tlbc_index), 7);
      const Stacks s = read(im.m, runtime());
      REQUIRE(s.threads.size() == 1);
      REQUIRE(s.threads[0].frames.size() == 2);
      CHECK_FALSE(s.threads[0].frames[0].line);
      CHECK(s.threads[0].frames[1].line == 12);
    }
  }
}

TEST_CASE("a _Py_DebugOffsets rocplay does not know, or one that does not hold, is a note") {
  SECTION("a later version: named, and what was not read") {
    Image im = image(k315, k315Index, false, 0, 1);
    const std::uint64_t v316 = 0x031000F0; // 3.16.0
    im.m.put<std::uint64_t>(kImageRuntime + 8, v316);
    const Stacks s = read(im.m, runtime());
    CHECK(s.threads.empty());
    CHECK(s.version == "3.16.0");
    REQUIRE(s.notes.size() == 1);
    CHECK(s.notes[0] == "CPython 3.16.0: its _Py_DebugOffsets layout is not one rocplay knows "
                        "(3.13-3.15); no Python frames, GIL or thread states read");
  }
  SECTION("an offset past its structure's size") {
    Image im = image(k314t, k314Index, true, 0, 0);
    // code_object.co_tlbc (word 49) past code_object.size (word 39)
    im.m.put<std::uint64_t>(kImageRuntime + 8 * 49, im.at(39));
    const Stacks s = read(im.m, runtime());
    CHECK(s.threads.empty());
    REQUIRE(s.notes.size() == 1);
    CHECK(s.notes[0] == "CPython 3.14.10: _Py_DebugOffsets holds offsets outside their structures");
  }
}
