// Python frames in host stacks (rocplay/snapshot/python_stacks.hpp): the recording's notes
// round-trip, the merge replaces each eval-loop frame by the Python frames its call ran and keeps
// every other native frame, bad notes are ignored, and the JSON keeps the frames marked as Python.
#include "rocplay/snapshot/frames.hpp"
#include "rocplay/snapshot/python_stacks.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

using namespace rocplay;
using namespace rocplay::snapshot;

namespace {

Frame native(std::string function, std::string from = "") {
  Frame f;
  f.function = std::move(function);
  f.from = std::move(from);
  f.pc = 0x1000;
  return f;
}

PythonThread python_thread() {
  PythonThread t;
  t.lwp = 4242;
  t.holds_gil = true;
  t.frames = {{"synchronize", "/torch/cuda/__init__.py", 985, false, {}},
              {"decode_step", "/srv/model_runner.py", 412, true, {}},
              {"Thread.run", "/usr/lib/python3.12/threading.py", 1010, false, {}},
              {"Thread._bootstrap", "/usr/lib/python3.12/threading.py", 1030, true, {}}};
  return t;
}

HostThread host() {
  HostThread h;
  h.id = "7";
  h.lwp = 4242;
  h.frames = {native("device_synchronize", "libc10_cuda.so"),
              native("PyObject_Vectorcall"),
              native("_PyEval_EvalFrameDefault"),
              native("_PyFunction_Vectorcall"),
              native("_PyEval_EvalFrameDefault"),
              native("start_thread", "libc.so.6")};
  return h;
}

std::vector<std::string> where(const HostThread& h) {
  std::vector<std::string> out;
  for (const auto& f : h.frames) {
    out.push_back(frame_where(f));
  }
  return out;
}

} // namespace

TEST_CASE("each eval-loop frame gives way to the Python frames its call ran") {
  HostThread h = host();
  merge_python_frames(h, python_thread());
  CHECK(where(h) == std::vector<std::string>{
                        "device_synchronize from libc10_cuda.so", "PyObject_Vectorcall",
                        "synchronize (__init__.py:985)", "decode_step (model_runner.py:412)",
                        "_PyFunction_Vectorcall", "Thread.run (threading.py:1010)",
                        "Thread._bootstrap (threading.py:1030)", "start_thread from libc.so.6"});
  CHECK(h.holds_gil);
  for (std::size_t i = 0; i < h.frames.size(); ++i) {
    CHECK(h.frames[i].level == i);
  }
  // The user's innermost frame is the Python line, not the interpreter's C functions.
  const Frame* user = innermost_user_frame(h);
  REQUIRE(user != nullptr);
  CHECK(user->function == "device_synchronize");
}

TEST_CASE("Python frames left over follow the native ones (a cut native stack, no eval frame)") {
  HostThread h = host();
  h.frames.resize(3); // cut after the first eval-loop frame
  merge_python_frames(h, python_thread());
  REQUIRE(h.frames.size() == 6);
  CHECK(h.frames[2].function == "synchronize");
  CHECK(h.frames[4].function == "Thread.run");
  CHECK(h.frames[5].function == "Thread._bootstrap");

  HostThread bare;
  bare.lwp = 4242;
  merge_python_frames(bare, python_thread());
  CHECK(bare.frames.size() == 4);
}

TEST_CASE("the notes round-trip and the builder's reader puts the frames in by LWP") {
  PythonStacks s;
  s.version = "3.12.3";
  s.gil_known = true;
  s.threads = {python_thread()};
  s.threads[0].note = "";
  PythonThread other;
  other.lwp = 99; // no host thread has it
  s.threads.push_back(other);
  PythonNoteReader reader;
  for (const auto& n : python_notes(s)) {
    CHECK(n.find('\n') == std::string::npos);
    CHECK(reader.take(n));
  }
  CHECK_FALSE(reader.take("sample 2: stop began at 1.0 s (unix 2.0)"));
  CHECK(reader.stacks().threads == s.threads);
  Snapshot snap;
  snap.host_threads = {host()};
  reader.apply(snap);
  CHECK(snap.host_threads[0].frames[3].function == "decode_step");
  CHECK(snap.host_threads[0].frames[3].python);
  REQUIRE_FALSE(snap.notes.empty());
  CHECK(snap.notes[0] == "python: CPython 3.12.3, 1 thread with Python frames; thread 7 (LWP "
                         "4242) holds the GIL; 1 Python thread state with no host thread (LWP "
                         "99)");
  // The JSON keeps them, marked.
  const auto j = to_json(snap);
  CHECK(j["host_threads"][0]["frames"][3]["python"] == true);
  CHECK(j["host_threads"][0]["holds_gil"] == true);
  CHECK(snapshot_from_json(j) == snap);
}

TEST_CASE("a free-threaded build without its GIL: said so, with what its threads wait on") {
  PythonStacks s;
  s.version = "3.14.10";
  s.free_threaded = true;
  s.gil_disabled = true;
  PythonThread locked = python_thread();
  locked.holds_gil = false;
  PythonThread paused = locked;
  paused.lwp = 4243;
  PythonThread running = locked;
  running.lwp = 4244;
  s.threads = {locked, paused, running};
  PythonNoteReader reader;
  for (const auto& n : python_notes(s)) {
    CHECK(reader.take(n));
  }
  CHECK(reader.stacks().free_threaded);
  CHECK(reader.stacks().gil_disabled);
  Snapshot snap;
  // A threading.Lock waiter parks (3.14's Python/lock.c); a thread that would attach during a
  // stop-the-world pause waits in tstate_wait_attach (Python/pystate.c); a third runs.
  snap.host_threads = {host(), host(), host()};
  snap.host_threads[0].frames.insert(snap.host_threads[0].frames.begin(),
                                     {native("syscall", "libc.so.6"), native("_PySemaphore_Wait"),
                                      native("_PyParkingLot_Park"), native("_PyMutex_LockTimed")});
  snap.host_threads[1].lwp = 4243;
  snap.host_threads[1].frames.insert(
      snap.host_threads[1].frames.begin(),
      {native("_PySemaphore_Wait"), native("_PyParkingLot_Park"), native("tstate_wait_attach")});
  snap.host_threads[2].lwp = 4244;
  reader.apply(snap);
  REQUIRE_FALSE(snap.notes.empty());
  CHECK(snap.notes[0] ==
        "python: CPython 3.14.10 (free-threaded), 3 threads with Python frames; no GIL in this "
        "build: a waiting thread waits on the lock it needs (a PyMutex, in CPython's parking "
        "lot) or on a stop-the-world pause (1 in the parking lot, 1 in a stop-the-world pause)");
  for (const auto& h : snap.host_threads) {
    CHECK_FALSE(h.holds_gil);
  }
}

TEST_CASE("notes that do not parse, or go past the bounds, are ignored") {
  PythonNoteReader reader;
  CHECK(reader.take("python thread {\"lwp\":1}")); // before any header: ignored
  CHECK(reader.take("python stacks {not json"));
  CHECK_FALSE(reader.any());
  CHECK(reader.take("python stacks {\"version\":\"3.11.2\",\"gil_known\":\"yes\"}"));
  CHECK(reader.any());
  CHECK(reader.take("python thread {\"lwp\":-5,\"frames\":[1,[\"a\"],[\"f\",\"x.py\",-3,1],"
                    "[\"\\u0000\\n\",\"b.py\",7]]}"));
  REQUIRE(reader.stacks().threads.size() == 1);
  const auto& t = reader.stacks().threads[0];
  CHECK(t.lwp == 0);
  REQUIRE(t.frames.size() == 2);
  CHECK_FALSE(t.frames[0].line.has_value());
  CHECK(t.frames[0].entry);
  CHECK(t.frames[1].line == 7u);
  CHECK(t.frames[1].function == "??"); // one line, no control characters
}
