// Several samples of one live target in one debugger session: what one sample is, and how a
// session's exchanges (live or from a recording) split into samples (docs/transcript-format.md,
// "Samples").
// Layer: src/snapshot/ (library rocplay_snapshot; docs/architecture.md).
#pragma once

#include "rocplay/mi/transcript.hpp"
#include "rocplay/snapshot/snapshot.hpp"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace rocplay {

// One full snapshot of a live target, taken while it was stopped; the target ran between two.
struct Sample {
  std::uint32_t index = 1; // 1-based, in the order taken
  double at = 0;           // seconds since the first sample's stop began
  double stop_seconds = 0; // how long the target was stopped for this sample (0: unknown)
  // Windows (session seconds) inside this sample's stop in which the target ran after all:
  // cuda-gdb resumes every thread during its attach. stop_seconds leaves them out.
  std::vector<std::pair<double, double>> ran_in_stop;
  double wall_time = 0; // UNIX seconds when its stop began; 0 when unknown
  Snapshot snapshot;
};

namespace snapshot {

// Per sample index: the spread of the instants (wall clock) at which several processes' stops of
// that sample began; samples without a wall time are left out. The report's "stops began within".
std::vector<std::pair<std::uint32_t, double>>
sample_skew(const std::vector<const std::vector<Sample>*>& processes);

// The note that marks where sample `index` begins: `sample 2: stop began at 12.345678 s (unix
// 1763940000.123456)`. Written by `rocplay run` after each sample's stop was seen.
std::string sample_note(std::uint32_t index, double stop_began_at, double unix_time);

// The session's note for a stop by copy (session::Session::stop_by_copy): `copy: held 10 threads
// of pid 4242 from 0.198070 s to 0.199311 s, then let them go; ...`. The hold is that sample's
// whole stop: the debugger reads the copy while the target runs.
struct CopyNote {
  std::uint64_t threads = 0;
  double held_from = 0; // session seconds
  double held_to = 0;
};
std::optional<CopyNote> parse_copy_note(std::string_view note);

// The runner's notes for the threads whose stacks a later sample took from the sample before
// instead of asking the debugger (stops by copy, Session::unchanged_stacks): `stacks as in the
// sample before: 4243 4244 ...` (LWPs), split to stay under a note's size.
std::vector<std::string> unchanged_stacks_notes(const std::vector<std::int64_t>& lwps);

// Sample 1 starts at the first exchange (its stop at `-target-attach`); sample N (N >= 2) at
// the exchange carrying its note, when the notes count up 2, 3, ... (others are ignored). A
// sample's stop ends at the answer of the next `-exec-continue` or of `-target-detach`; with stops
// by copy it is the copy's hold (the copy note comes just before its sample's note). A session
// without notes is one sample. Streams: exchanges are not kept.
class SampleBuilder {
public:
  explicit SampleBuilder(BuildOptions options = {});
  ~SampleBuilder();
  SampleBuilder(SampleBuilder&&) noexcept;
  SampleBuilder& operator=(SampleBuilder&&) noexcept;
  void add(const mi::Exchange& exchange);
  // The builder of the sample being added to (nullptr before the first exchange), to peek at the
  // sample so far; and that sample's index.
  const Builder* current() const;
  std::uint32_t current_sample() const;
  // Every sample with its snapshot and times. Source lines looked up in an earlier sample are
  // carried into later ones for the PCs they did not ask again. Each sample is finished here, on
  // up to `threads` threads (a live run: its report waits for them; a post-mortem's workers
  // already run one input each).
  std::vector<Sample> finish(unsigned threads = 1);
  // When every exchange fell in one sample: its snapshot exactly as Builder::finish() makes it
  // over them, without what finish() stamps on a sample (times, carried lines); nullopt, and
  // nothing finished, when there were several.
  std::optional<Snapshot> finish_single();

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// SampleBuilder over a whole session.
std::vector<Sample> build_samples(const std::vector<mi::Exchange>& exchanges,
                                  const BuildOptions& options = {});

} // namespace snapshot
} // namespace rocplay
