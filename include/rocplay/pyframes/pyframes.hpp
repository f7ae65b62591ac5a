// Python stacks without Python: the frames of every thread of a CPython process, read from the
// stopped process's memory (process_vm_readv, else /proc/PID/mem), the way py-spy and CPython's
// own remote debugging do it. Nothing is called in the target, no Python runs, nothing stops it:
// the caller reads while the debugger already holds the process stopped.
//
// The walk: `_PyRuntime` (an ELF symbol of the executable or of libpython, at the address its
// mapping in /proc/PID/maps gives) -> interpreters -> thread states -> frames -> code objects ->
// the line from the code object's location table. CPython 3.13 and later publish the offsets in
// `_Py_DebugOffsets` at the start of `_PyRuntime` (default and free-threaded builds alike);
// 3.10-3.12 use the tables in reader.cpp (docs/python-stacks.md names the sources and which
// versions were proven on real interpreters).
//
// Process memory is untrusted: every walk is bounded, cycles end it, sizes are checked, strings
// are cut and made valid UTF-8. A frame that cannot be read ends its thread's stack with a note;
// an unknown CPython version is a note; a process that is not Python gets nothing.
// Layer: src/pyframes/ (library rocplay_pyframes; knows nothing of GPUs or debuggers).
#pragma once

#include "rocplay/core/process_memory.hpp"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace rocplay::pyframes {

// Reads of another process's memory (or, in tests and the fuzzer, of a buffer).
class Memory {
public:
  virtual ~Memory() = default;
  // All `size` bytes at `address`, or false.
  virtual bool read(std::uint64_t address, void* out, std::size_t size) = 0;
};

// A live process's memory (rocplay/core/process_memory.hpp).
class ProcessMemory final : public Memory {
public:
  explicit ProcessMemory(int pid) : reader_(pid) {}
  bool read(std::uint64_t address, void* out, std::size_t size) override {
    return reader_.read(address, out, size);
  }

private:
  process::MemoryReader reader_;
};

// The 3.11+ location table (Objects/locations.md): the line of the code unit `index` (an index in
// 2-byte code units from the start of co_code); nullopt for "no location" or past the table.
// index < 0 (a frame that has not run its first instruction) is the first line.
std::optional<std::int64_t> line_311(std::span<const std::uint8_t> table, std::int64_t first_line,
                                     std::int64_t index);
// 3.10's co_linetable (Objects/lnotab_notes.txt of 3.10): pairs of (bytecode delta in bytes, line
// delta as a signed byte, -128 = no line); `offset` in bytes.
std::optional<std::int64_t> line_310(std::span<const std::uint8_t> table, std::int64_t first_line,
                                     std::int64_t offset);

// The 3.11+ exception table (Objects/exception_handling_notes.txt): the value-stack depth that
// the entry covering code unit `index` keeps live for its handler; nullopt where no entry covers
// it, or the table is malformed.
std::optional<std::uint32_t> handler_depth(std::span<const std::uint8_t> table, std::int64_t index);

// Where the interpreter's runtime state is.
struct Runtime {
  std::uint64_t address = 0;               // of _PyRuntime
  std::optional<std::uint64_t> py_version; // Py_Version's address (3.11+), when exported
  std::string object;                      // the file that holds it (the executable or libpython)
  int major = 0, minor = 0; // from the file's name (`python3.11`, `libpython3.12.so`)
};

// Finds _PyRuntime in /proc/PID/maps and the ELF symbols of the mapped python executable or
// libpython; nullopt when the process is not CPython (or the file cannot be read).
std::optional<Runtime> locate(int pid, std::string* why = nullptr);

struct Limits {
  std::size_t max_interpreters = 16;
  std::size_t max_threads = 1024;
  std::size_t max_frames = 512;  // per thread
  std::size_t max_string = 1024; // bytes of a name or a file
  std::size_t max_linetable = 1 << 20;
};

struct Frame {
  std::string function; // co_qualname (co_name before 3.11)
  std::string file;     // co_filename
  std::optional<std::int64_t> line;
  // The outermost Python frame that one call of the C eval loop runs (3.11: is_entry; 3.12+:
  // the next frame out is the C stack's shim): the native _PyEval_EvalFrameDefault frame of that
  // call stands for this frame and every frame inside it up to the previous entry.
  bool entry = false;
  // The threading.Lock objects (their addresses) this frame holds in `with` blocks (3.11+, builds
  // with the GIL): each lock's bound `__exit__` (3.14+: the lock itself, under its `__exit__`)
  // lies in the frame's value stack below the depth the exception table keeps live for the
  // frame's current instruction, which is how the interpreter will release it.
  std::vector<std::uint64_t> held_locks;
  bool operator==(const Frame&) const = default;
};

struct Thread {
  std::uint64_t native_id = 0; // the LWP (thread state's native_thread_id)
  std::uint64_t thread_id = 0; // pthread_t
  bool holds_gil = false;
  std::vector<Frame> frames; // innermost first
  std::string note;          // why the stack ends early, when it does
  // The lock (one of the held_locks of some frame) this thread sleeps on acquiring: its futex
  // word is the lock's semaphore (3.11, 3.12) or a parking-lot entry that names the lock (3.13+).
  std::optional<std::uint64_t> waits_for_lock;
  bool operator==(const Thread&) const = default;
};

struct Stacks {
  std::string version; // `3.11.2`
  std::vector<Thread> threads;
  std::vector<std::string> notes; // unknown version, unreadable runtime, cut lists
  bool gil_known = false;         // the GIL's state was read (holds_gil means something)
  bool free_threaded = false;     // a build without the GIL (Py_GIL_DISABLED, 3.13+)
  bool gil_disabled = false;      // ...whose GIL is off: no thread holds one, none waits for one
  bool operator==(const Stacks&) const = default;
};

// The futex word a thread (by LWP) sleeps on, when it does (the kernel's /proc/PID/task/TID/
// syscall); asked only when some frame holds a lock.
using FutexOf = std::function<std::optional<std::uint64_t>(std::uint64_t native_id)>;

// The stacks of every thread of every interpreter. Never throws for bad memory: what could not
// be read is a note. With `futex_of`, each thread asleep on a lock some frame holds gets
// waits_for_lock.
Stacks read(Memory& memory, const Runtime& runtime, const Limits& limits = {},
            const FutexOf& futex_of = {});

// locate + read on a live process; nullopt when it is not CPython.
std::optional<Stacks> read_process(int pid, const Limits& limits = {});

// Cut to at most `max` bytes on a character boundary, invalid bytes and control characters
// replaced: what reaches a report or a note is valid UTF-8 on one line.
std::string clean_text(std::string_view bytes, std::size_t max);

} // namespace rocplay::pyframes
