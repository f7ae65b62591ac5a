// The walk over a process image laid out as CPython 3.11 lays it (the offsets of layouts in
// src/pyframes/reader.cpp), built in a buffer: frames, names, lines and the GIL read; a frame
// list that loops, a frame that cannot be read and a thread state that is not one end the walk
// with a note, never a crash. Real interpreters: tests/live/pyframes_live.cpp.
#include "fake_memory.hpp"
#include "rocplay/pyframes/pyframes.hpp"

#include <catch2/catch.hpp>

#include <cstring>
#include <map>
#include <tuple>
#include <unistd.h>

using namespace rocplay::pyframes;
using rocplay::testing::FakeMemory;

namespace {

constexpr std::uint64_t kRuntime = 0x1000, kInterp = 0x2000, kThread = 0x3000, kCFrame = 0x4000,
                        kFrame1 = 0x5000, kFrame2 = 0x5100, kCode = 0x6000, kCodeType = 0x7000,
                        kBytesType = 0x7200, kName = 0x8000, kFile = 0x8100, kTable = 0x9000;

// main (a.py:12) <- outer (a.py:12), one thread (LWP 4242) holding the GIL.
FakeMemory image_311() {
  FakeMemory m;
  m.put<std::uint64_t>(kRuntime + 40, kInterp);  // interpreters.head
  m.put<std::int32_t>(kRuntime + 376, 1);        // ceval.gil.locked
  m.put<std::uint64_t>(kRuntime + 368, kThread); // ceval.gil.last_holder
  m.put<std::uint64_t>(kInterp + 0, 0);          // next
  m.put<std::uint64_t>(kInterp + 16, kThread);   // threads.head
  m.put<std::uint64_t>(kThread + 8, 0);          // next
  m.put<std::uint64_t>(kThread + 16, kInterp);   // interp
  m.put<std::uint64_t>(kThread + 152, 0x7f00);   // thread_id
  m.put<std::uint64_t>(kThread + 160, 4242);     // native_thread_id
  m.put<std::uint64_t>(kThread + 56, kCFrame);   // cframe
  m.put<std::uint64_t>(kCFrame + 8, kFrame1);    // current_frame
  for (auto [f, prev, entry] :
       {std::tuple{kFrame1, kFrame2, 0}, std::tuple{kFrame2, std::uint64_t{0}, 1}}) {
    m.put<std::uint64_t>(f + 32, kCode);                           // f_code
    m.put<std::uint64_t>(f + 48, prev);                            // previous
    m.put<std::uint64_t>(f + 56, kCode + 184);                     // prev_instr: code unit 0
    m.put<std::uint8_t>(f + 68, static_cast<std::uint8_t>(entry)); // is_entry
    m.put<std::uint8_t>(f + 69, 0);                                // owner
  }
  m.put<std::uint64_t>(kCode + 8, kCodeType);
  m.put<std::uint64_t>(kCodeType + 24, kCodeType + 0x100);
  m.put(kCodeType + 0x100, "code", 5);
  m.put<std::uint64_t>(kCode + 128, kName);  // co_qualname
  m.put<std::uint64_t>(kCode + 112, kFile);  // co_filename
  m.put<std::uint64_t>(kCode + 136, kTable); // co_linetable
  m.put<std::int32_t>(kCode + 72, 10);       // co_firstlineno
  m.put_str(kName, "main");
  m.put_str(kFile, "a.py");
  m.put<std::uint64_t>(kTable + 8, kBytesType);
  m.put<std::uint64_t>(kBytesType + 24, kBytesType + 0x100);
  m.put(kBytesType + 0x100, "bytes", 6);
  m.put<std::int64_t>(kTable + 16, 2);
  const std::uint8_t table[] = {0xE8, 0x04}; // no-columns form, 1 code unit, line +2
  m.put(kTable + 32, table, sizeof table);
  return m;
}

Runtime runtime_311() {
  Runtime r;
  r.address = kRuntime;
  r.major = 3;
  r.minor = 11;
  return r;
}

} // namespace

TEST_CASE("a 3.11 image: every frame with its name, file and line, the GIL's holder") {
  FakeMemory m = image_311();
  const Stacks s = read(m, runtime_311());
  CHECK(s.notes.empty());
  REQUIRE(s.threads.size() == 1);
  const Thread& t = s.threads[0];
  CHECK(t.native_id == 4242);
  CHECK(t.holds_gil);
  CHECK(s.gil_known);
  CHECK(t.note.empty());
  REQUIRE(t.frames.size() == 2);
  CHECK(t.frames[0] == Frame{"main", "a.py", 12, false, {}});
  CHECK(t.frames[1] == Frame{"main", "a.py", 12, true, {}});
}

TEST_CASE("a 3.11 image: the lock a `with` frame holds, and the thread asleep on it") {
  static constexpr std::uint64_t kExceptions = 0xA000, kNames = 0xA100, kExit = 0xA200,
                                 kMethodDef = 0xA300, kLock = 0xA400, kBuiltinType = 0xA500,
                                 kLockType = 0xA800, kSemaphore = 0xB000;
  FakeMemory m = image_311();
  // The code's exception table: one entry over code unit 0 that keeps 1 stack entry live
  // (start 0 | bit 7, length 4, target 10, depth 1 and lasti).
  m.put<std::uint64_t>(kCode + 40, kExceptions);
  m.put<std::uint64_t>(kExceptions + 8, kBytesType);
  m.put<std::int64_t>(kExceptions + 16, 4);
  const std::uint8_t entry[] = {0x80, 0x04, 0x0A, 0x03};
  m.put(kExceptions + 32, entry, sizeof entry);
  m.put<std::uint64_t>(kCode + 96, kNames); // co_localsplusnames: two locals
  m.put<std::int64_t>(kNames + 16, 2);
  // Frame 1's value stack, after its two locals: the lock's bound __exit__; above the live
  // depth, a stale copy that must not count.
  m.put<std::uint64_t>(kFrame1 + 72 + 16, kExit);
  m.put<std::uint64_t>(kFrame1 + 72 + 24, kExit);
  m.put<std::uint64_t>(kExit + 8, kBuiltinType);
  m.put<std::uint64_t>(kBuiltinType + 24, kBuiltinType + 0x100);
  m.put(kBuiltinType + 0x100, "builtin_function_or_method", 27);
  m.put<std::uint64_t>(kExit + 16, kMethodDef); // m_ml
  m.put<std::uint64_t>(kExit + 24, kLock);      // m_self
  m.put<std::uint64_t>(kMethodDef, kMethodDef + 0x40);
  m.put(kMethodDef + 0x40, "__exit__\0\0\0\0\0\0\0", 16);
  m.put<std::uint64_t>(kLock + 8, kLockType);
  m.put<std::uint64_t>(kLockType + 24, kLockType + 0x100);
  m.put(kLockType + 0x100, "_thread.lock\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0", 32);
  m.put<std::uint64_t>(kLock + 16, kSemaphore); // lock_lock: its semaphore
  m.put(kBuiltinType + 0x100 + 27, "\0\0\0\0\0", 5);

  SECTION("held by the frame at the `with`, and waited for by the thread asleep on its futex") {
    const Stacks s = read(m, runtime_311(), {}, [](std::uint64_t lwp) {
      return lwp == 4242 ? std::optional<std::uint64_t>(kSemaphore) : std::nullopt;
    });
    REQUIRE(s.threads.size() == 1);
    REQUIRE(s.threads[0].frames.size() == 2);
    CHECK(s.threads[0].frames[0].held_locks == std::vector<std::uint64_t>{kLock});
    CHECK(s.threads[0].frames[1].held_locks.empty()); // its stack cannot be read
    CHECK(s.threads[0].waits_for_lock == kLock);      // a thread re-acquiring its own lock
  }
  SECTION("a futex word that is no held lock's says nothing") {
    const Stacks s = read(m, runtime_311(), {},
                          [](std::uint64_t) { return std::optional<std::uint64_t>(0x1234); });
    REQUIRE(s.threads.size() == 1);
    CHECK(s.threads[0].frames[0].held_locks == std::vector<std::uint64_t>{kLock});
    CHECK_FALSE(s.threads[0].waits_for_lock);
  }
  SECTION("outside the entry that keeps it live, the same stack holds nothing") {
    m.put<std::uint64_t>(kFrame1 + 56, kCode + 184 + 2 * 8); // code unit 8: past the entry
    const Stacks s = read(m, runtime_311());
    REQUIRE(s.threads.size() == 1);
    CHECK(s.threads[0].frames[0].held_locks.empty());
  }
  SECTION("an __exit__ of something else, or on no lock, is not a lock") {
    m.put(kMethodDef + 0x40, "__enter__\0\0\0\0\0\0", 16);
    CHECK(read(m, runtime_311()).threads[0].frames[0].held_locks.empty());
    m.put(kMethodDef + 0x40, "__exit__\0\0\0\0\0\0\0", 16);
    m.put(kLockType + 0x100, "_thread.RLock\0", 14);
    CHECK(read(m, runtime_311()).threads[0].frames[0].held_locks.empty());
  }
}

TEST_CASE("bad memory ends a walk with a note: loops, unreadable frames, foreign thread states") {
  SECTION("a frame list that loops") {
    FakeMemory m = image_311();
    m.put<std::uint64_t>(kFrame2 + 48, kFrame1);
    const Stacks s = read(m, runtime_311());
    REQUIRE(s.threads.size() == 1);
    CHECK(s.threads[0].frames.size() == 2);
    CHECK(s.threads[0].note == "the frame list loops; the stack ends there");
  }
  SECTION("a frame that cannot be read") {
    FakeMemory m = image_311();
    m.erase(kFrame2 + 48);
    const Stacks s = read(m, runtime_311());
    REQUIRE(s.threads.size() == 1);
    CHECK(s.threads[0].frames.size() == 1);
    CHECK(s.threads[0].note == "frame 0x5100 cannot be read; the stack ends there");
  }
  SECTION("a code object that is not one") {
    FakeMemory m = image_311();
    m.put<std::uint64_t>(kFrame1 + 32, kName);
    const Stacks s = read(m, runtime_311());
    REQUIRE(s.threads.size() == 1);
    CHECK(s.threads[0].frames.empty());
    CHECK(s.threads[0].note == "0x8000 is not a code object; the stack ends there");
  }
  SECTION("a thread state that does not point back at its interpreter") {
    FakeMemory m = image_311();
    m.put<std::uint64_t>(kThread + 16, 0x9999);
    const Stacks s = read(m, runtime_311());
    CHECK(s.threads.empty());
    REQUIRE(s.notes.size() == 1);
    CHECK(s.notes[0].find("does not point back at its interpreter") != std::string::npos);
  }
  SECTION("an unknown version is a note") {
    FakeMemory m = image_311();
    Runtime r = runtime_311();
    r.minor = 9;
    const Stacks s = read(m, r);
    CHECK(s.threads.empty());
    REQUIRE(s.notes.size() == 1);
    CHECK(s.notes[0].find("no layout table for this version") != std::string::npos);
  }
  SECTION("a frame limit cuts the stack") {
    FakeMemory m = image_311();
    Limits lim;
    lim.max_frames = 1;
    const Stacks s = read(m, runtime_311(), lim);
    REQUIRE(s.threads.size() == 1);
    CHECK(s.threads[0].frames.size() == 1);
    CHECK(s.threads[0].note == "stack cut at 1 Python frames");
  }
}

TEST_CASE("a process that is not CPython gets nothing") {
  // This test's own process: C++, no libpython.
  CHECK_FALSE(read_process(static_cast<int>(::getpid())).has_value());
}
