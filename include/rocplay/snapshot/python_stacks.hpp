// Python frames in host stacks. While the target is stopped for a sample, `rocplay run` reads
// every CPython thread's Python frames from its memory (src/pyframes/) and writes them into the
// recording as its own notes (docs/transcript-format.md, "Python frames"); the snapshot builder
// reads those notes, live and in `postmortem` alike, and puts each thread's Python frames into
// its host stack in place of the interpreter's eval-loop frames.
// Layer: src/snapshot/ (library rocplay_snapshot; docs/architecture.md).
#pragma once

#include "rocplay/snapshot/snapshot.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace rocplay::snapshot {

struct PythonFrame {
  std::string function; // qualified name
  std::string file;
  std::optional<std::uint32_t> line;
  // The outermost Python frame of one call of the C eval loop (see pyframes::Frame::entry).
  bool entry = false;
  std::vector<std::uint64_t> held_locks; // threading.Lock objects held in `with` blocks
  bool operator==(const PythonFrame&) const = default;
};

struct PythonThread {
  std::uint64_t lwp = 0;
  bool holds_gil = false;
  std::vector<PythonFrame> frames; // innermost first
  std::string note;
  std::optional<std::uint64_t> waits_for_lock; // a held lock it sleeps on acquiring
  bool operator==(const PythonThread&) const = default;
};

struct PythonStacks {
  std::string version;
  bool gil_known = false;
  bool free_threaded = false; // a build without the GIL (pyframes::Stacks)
  bool gil_disabled = false;  // ...whose GIL is off
  std::vector<std::string> notes;
  std::vector<PythonThread> threads;
  double seconds = 0; // how long the read took, inside the stop
  bool operator==(const PythonStacks&) const = default;
};

// The notes one sample's Python stacks are recorded as: `python stacks {JSON}` for the process,
// then `python thread {JSON}` per thread (at most kMaxNoteFrames frames each).
std::vector<std::string> python_notes(const PythonStacks& stacks);
constexpr std::size_t kMaxNoteFrames = 256;

// Reads those notes, in recording order (bounded: 4,096 threads, kMaxNoteFrames frames each,
// strings cut and made valid UTF-8; a note that does not parse is ignored).
class PythonNoteReader {
public:
  // False for any other note.
  bool take(std::string_view note);
  bool any() const { return seen_; }
  // Puts the Python frames into the snapshot's host threads (matched by LWP) and the process's
  // facts into its notes.
  void apply(Snapshot& snapshot) const;
  const PythonStacks& stacks() const { return stacks_; }

private:
  PythonStacks stacks_;
  bool seen_ = false;
};

// One thread's Python frames put into its native stack: each native `_PyEval_EvalFrameDefault`
// frame, innermost first, is replaced by the Python frames its call ran (up to and including the
// next entry frame); every other native frame stays where it was. Python frames left over (the
// native stack was cut, or no eval-loop frame was named) follow the native frames.
void merge_python_frames(HostThread& thread, const PythonThread& python);

// The eval loop's native frame.
bool is_eval_loop_frame(const Frame& frame);

} // namespace rocplay::snapshot
