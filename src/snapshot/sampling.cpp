// Splitting one session's exchanges into samples, by the notes `rocplay run` writes.
#include "rocplay/snapshot/sampling.hpp"

#include "rocplay/core/clock.hpp"
#include "rocplay/core/notes.hpp"
#include "rocplay/core/target_stops.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <future>
#include <map>
#include <optional>
#include <set>
#include <utility>

namespace rocplay::snapshot {
namespace sampling_detail {
// Where one sample is: its index and the times of its stop (session seconds).
struct SampleWindow {
  std::uint32_t index = 1;
  double stop_began = 0;
  double stop_ended = 0; // 0 when unknown (a truncated recording)
  double unix_time = 0;
  double ran = 0; // seconds the target ran inside the stop (cuda-gdb's attach)
  std::vector<std::pair<double, double>> runs;
};

} // namespace sampling_detail
using sampling_detail::SampleWindow;

namespace {

constexpr std::string_view kPrefix = "sample ";
// More sample notes than any run writes are not boundaries (untrusted input stays bounded).
constexpr std::uint32_t kMaxSampleNotes = 100;

double parse_double(std::string_view text) {
  double v = 0;
  const auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  (void)p;
  return ec == std::errc() ? v : 0;
}

// `sample 2: stop began at 12.345678 s (unix 1763940000.123456)` -> index and times.
std::optional<SampleWindow> parse_note(std::string_view note) {
  if (note.substr(0, kPrefix.size()) != kPrefix) {
    return std::nullopt;
  }
  note.remove_prefix(kPrefix.size());
  unsigned index = 0;
  const auto [p, ec] = std::from_chars(note.data(), note.data() + note.size(), index);
  if (ec != std::errc() || index < 1 || p == note.data() + note.size() || *p != ':') {
    return std::nullopt;
  }
  SampleWindow w;
  w.index = index;
  constexpr std::string_view kAt = "stop began at ";
  if (const auto at = note.find(kAt); at != std::string_view::npos) {
    w.stop_began = parse_double(note.substr(at + kAt.size()));
  }
  constexpr std::string_view kUnix = "(unix ";
  if (const auto u = note.find(kUnix); u != std::string_view::npos) {
    w.unix_time = parse_double(note.substr(u + kUnix.size()));
  }
  return w;
}

bool starts_with(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

// `... from 0.198070 s to ...`: the number after `key`, or nullopt.
std::optional<double> number_after(std::string_view text, std::string_view key) {
  const auto at = text.find(key);
  if (at == std::string_view::npos) {
    return std::nullopt;
  }
  text.remove_prefix(at + key.size());
  double v = 0;
  const auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || !(v >= 0) || p == text.data()) {
    return std::nullopt;
  }
  return v;
}

// `the target ran during the attach: the debugger resumed every thread at 1.315420 s and stopped
// them at 16.134932 s` (docs/transcript-format.md, "Runs during the attach").
std::optional<std::pair<double, double>> parse_attach_run(std::string_view note) {
  constexpr std::string_view kHead =
      "the target ran during the attach: the debugger resumed every thread at ";
  constexpr std::string_view kMid = " s and stopped them at ";
  if (!starts_with(note, kHead)) {
    return std::nullopt;
  }
  note.remove_prefix(kHead.size());
  const auto mid = note.find(kMid);
  if (mid == std::string_view::npos) {
    return std::nullopt;
  }
  // `... at 16.134932 s`, maybe followed by `; its threads used 1.20 s of CPU meanwhile`.
  const auto rest = note.substr(mid + kMid.size());
  const auto end = rest.find(" s");
  if (end == std::string_view::npos) {
    return std::nullopt;
  }
  double from = 0;
  double to = 0;
  const auto a = note.substr(0, mid);
  const auto b = rest.substr(0, end);
  if (std::from_chars(a.data(), a.data() + a.size(), from).ec != std::errc() ||
      std::from_chars(b.data(), b.data() + b.size(), to).ec != std::errc() || !(to >= from)) {
    return std::nullopt;
  }
  return std::make_pair(from, to);
}

// `threads while running: 2.001 s, 100 ticks/s: 1234:S:0 1235:R:198` (docs/transcript-format.md,
// "Thread figures"): merged into `out` (at most kMaxThreadFigures threads). False when the note
// is not one.
constexpr std::size_t kMaxThreadFigures = 4096;
bool parse_thread_figures(std::string_view note, std::map<std::int64_t, ThreadFigures>& out) {
  constexpr std::string_view kHead = "threads while running: ";
  if (!starts_with(note, kHead)) {
    return false;
  }
  note.remove_prefix(kHead.size());
  auto number = [](std::string_view t, auto& v) {
    const auto r = std::from_chars(t.data(), t.data() + t.size(), v);
    return r.ec == std::errc() && r.ptr == t.data() + t.size();
  };
  const auto sp = note.find(" s, ");
  const auto tk = note.find(" ticks/s:");
  if (sp == std::string_view::npos || tk == std::string_view::npos || tk < sp) {
    return false;
  }
  double ran = 0;
  long ticks = 0;
  if (!number(note.substr(0, sp), ran) || !number(note.substr(sp + 4, tk - sp - 4), ticks) ||
      ticks <= 0 || !(ran >= 0)) {
    return false;
  }
  note.remove_prefix(tk + 9);
  while (!note.empty() && out.size() < kMaxThreadFigures) {
    while (!note.empty() && note.front() == ' ') {
      note.remove_prefix(1);
    }
    const auto end = std::min(note.find(' '), note.size());
    const std::string_view item = note.substr(0, end);
    note.remove_prefix(end);
    const auto c1 = item.find(':');
    const auto c2 = item.rfind(':');
    if (c1 == std::string_view::npos || c2 != c1 + 2) {
      continue;
    }
    std::int64_t tid = 0;
    std::uint64_t used = 0;
    if (!number(item.substr(0, c1), tid) || !number(item.substr(c2 + 1), used)) {
      continue;
    }
    ThreadFigures f;
    f.state = std::string(1, item[c1 + 1]);
    f.cpu_seconds = static_cast<double>(used) / static_cast<double>(ticks);
    f.run_seconds = ran;
    out[tid] = f;
  }
  return true;
}

} // namespace

std::string sample_note(std::uint32_t index, double stop_began_at, double unix_time) {
  return fmt::format("sample {}: stop began at {:.6f} s (unix {:.6f})", index, stop_began_at,
                     unix_time);
}

std::optional<CopyNote> parse_copy_note(std::string_view note) {
  constexpr std::string_view kHead = "copy: held ";
  if (!starts_with(note, kHead)) {
    return std::nullopt;
  }
  note.remove_prefix(kHead.size());
  CopyNote c;
  const auto [p, ec] = std::from_chars(note.data(), note.data() + note.size(), c.threads);
  const auto from = number_after(note, " from ");
  const auto to = number_after(note, " s to ");
  if (ec != std::errc() || p == note.data() || !from || !to || *to < *from) {
    return std::nullopt;
  }
  c.held_from = *from;
  c.held_to = *to;
  return c;
}

namespace {

constexpr std::string_view kUnchangedStacks = "stacks as in the sample before: ";

// The LWPs of an unchanged-stacks note; bounded like every note (4,096 bytes).
std::optional<std::vector<std::uint64_t>> parse_unchanged_stacks(std::string_view note) {
  if (!starts_with(note, kUnchangedStacks)) {
    return std::nullopt;
  }
  note.remove_prefix(kUnchangedStacks.size());
  std::vector<std::uint64_t> out;
  while (!note.empty()) {
    const auto space = note.find(' ');
    const auto word = note.substr(0, space);
    std::uint64_t v = 0;
    const auto [p, ec] = std::from_chars(word.data(), word.data() + word.size(), v);
    if (ec == std::errc() && p == word.data() + word.size()) {
      out.push_back(v);
    }
    note = space == std::string_view::npos ? std::string_view() : note.substr(space + 1);
  }
  return out;
}

} // namespace

std::vector<std::string> unchanged_stacks_notes(const std::vector<std::int64_t>& lwps) {
  std::vector<std::string> words;
  words.reserve(lwps.size());
  for (const auto lwp : lwps) {
    words.push_back(std::to_string(lwp));
  }
  return list_notes(kUnchangedStacks, words);
}

struct SampleBuilder::Impl {
  BuildOptions options;
  StopIntervals measured_stops; // the session's notes of the target's stops (core/target_stops)
  std::optional<Builder> builder;
  SampleWindow window; // of the sample being built
  // Samples whose exchanges are all in, finished by finish(): a live run adds a sample's first
  // exchange inside its stop, and finishing the one before it there would lengthen the stop.
  std::vector<std::pair<SampleWindow, Builder>> done;
  // Thread figures of the run before the next sample, and those of each sample (by index).
  std::map<std::int64_t, ThreadFigures> pending_figures;
  std::map<std::uint32_t, std::map<std::int64_t, ThreadFigures>> figures;
  // A copy's hold seen before the note of the sample it belongs to.
  std::optional<CopyNote> pending_copy;
  // `kernel waits:` notes read before a later sample's stop (the target ran since the current
  // sample's), held for that sample's builder; bounded like the figures.
  std::vector<std::string> pending_kernel;

  void close() {
    if (builder) {
      done.emplace_back(window, std::move(*builder));
      builder.reset();
    }
  }
};

SampleBuilder::SampleBuilder(BuildOptions options) : impl_(std::make_unique<Impl>()) {
  impl_->options = std::move(options);
}
SampleBuilder::~SampleBuilder() = default;
SampleBuilder::SampleBuilder(SampleBuilder&&) noexcept = default;
SampleBuilder& SampleBuilder::operator=(SampleBuilder&&) noexcept = default;

void SampleBuilder::add(const mi::Exchange& ex) {
  Impl& s = *impl_;
  // Kernel waits written before a later sample's stop reach the builder of that sample, not
  // the one whose exchanges they fall among (docs/transcript-format.md, "Kernel waits").
  const bool ran_since = s.window.stop_ended > 0 || s.window.index > 1;
  std::optional<mi::Exchange> kept; // `ex` without such notes
  if (ran_since) {
    for (const auto& n : ex.notes) {
      if (starts_with(n, "kernel waits: ")) {
        kept = ex;
        break;
      }
    }
  }
  if (kept) {
    std::vector<std::string> others;
    for (auto& n : kept->notes) {
      if (!starts_with(n, "kernel waits: ")) {
        others.push_back(std::move(n));
      } else if (s.pending_kernel.size() < 4096) {
        s.pending_kernel.push_back(std::move(n));
      }
    }
    kept->notes = std::move(others);
  }
  const mi::Exchange& in = kept ? *kept : ex;
  std::vector<std::uint64_t> unchanged; // taken once this exchange's thread list is in
  for (const auto& n : in.notes) {
    if (auto lwps = parse_unchanged_stacks(n)) {
      unchanged.insert(unchanged.end(), lwps->begin(), lwps->end());
      continue;
    }
    if (parse_thread_figures(n, s.pending_figures)) {
      continue;
    }
    if (const auto copy = parse_copy_note(n)) {
      if (s.window.index == 1 && s.done.empty() && s.window.stop_ended == 0) {
        s.window.stop_began = copy->held_from;
        s.window.stop_ended = copy->held_to;
      } else {
        s.pending_copy = copy; // the next sample's: its note follows
      }
      continue;
    }
    if (parse_target_stops_note(n, s.measured_stops)) {
      continue;
    }
    if (auto run = parse_attach_run(n); run && s.done.empty()) {
      s.window.ran += run->second - run->first;
      s.window.runs.push_back(*run);
      continue;
    }
    auto w = parse_note(n);
    if (!w) {
      continue;
    }
    if (w->index == 1 && s.done.empty() && s.window.index == 1) {
      s.window.unix_time = w->unix_time;
      if (w->stop_began > 0 && s.window.stop_ended == 0) {
        s.window.stop_began = w->stop_began;
      }
    } else if (w->index == s.window.index + 1 && w->index <= kMaxSampleNotes) {
      s.close();
      s.window = *w;
      if (s.pending_copy) {
        s.window.stop_began = s.pending_copy->held_from;
        s.window.stop_ended = s.pending_copy->held_to;
        s.pending_copy.reset();
      }
      if (!s.pending_figures.empty()) {
        s.figures[w->index] = std::move(s.pending_figures);
        s.pending_figures.clear();
      }
    }
  }
  if (!s.builder) {
    s.builder.emplace(s.options);
  }
  const bool new_sample = s.window.index > 1 && !s.pending_kernel.empty() &&
                          std::any_of(in.notes.begin(), in.notes.end(), [](const std::string& n) {
                            return starts_with(n, "sample ");
                          });
  if (new_sample) {
    mi::Exchange facts;
    facts.notes = std::move(s.pending_kernel);
    s.pending_kernel.clear();
    s.builder->add(facts);
  }
  if (s.window.index == 1 && s.window.stop_began == 0 &&
      starts_with(ex.command, "-target-attach")) {
    s.window.stop_began = ex.sent_at;
  }
  if (s.window.stop_ended == 0 && ex.done_at > 0 &&
      (starts_with(ex.command, "-exec-continue") || starts_with(ex.command, "-target-detach"))) {
    s.window.stop_ended = ex.done_at;
  }
  s.builder->add(in);
  if (!unchanged.empty() && !s.done.empty()) {
    s.builder->inherit_stacks(s.done.back().second, unchanged);
  }
}

// Windows decoded after the detach are recorded after the last sample, whichever sample asked
// for them; code does not change between samples, so every sample gets each of them.
static void share_code_windows(std::vector<Sample>& samples) {
  std::vector<CodeWindow> all;
  std::set<std::pair<std::uint64_t, std::string>> have;
  for (const auto& sample : samples) {
    for (const auto& w : sample.snapshot.code_windows) {
      if (!w.decoded_by.empty() && !w.instructions.empty() &&
          have.emplace(w.instructions.front().address, w.thread).second) {
        all.push_back(w);
      }
    }
  }
  for (auto& sample : samples) {
    auto& windows = sample.snapshot.code_windows;
    std::set<std::pair<std::uint64_t, std::string>> own;
    for (const auto& w : windows) {
      if (!w.instructions.empty()) {
        own.emplace(w.instructions.front().address, w.thread);
      }
    }
    for (const auto& w : all) {
      if (!own.contains({w.instructions.front().address, w.thread})) {
        windows.push_back(w);
      }
    }
  }
}

const Builder* SampleBuilder::current() const {
  return impl_->builder ? &*impl_->builder : nullptr;
}

std::uint32_t SampleBuilder::current_sample() const {
  return impl_->window.index;
}

std::optional<Snapshot> SampleBuilder::finish_single() {
  Impl& s = *impl_;
  if (!s.done.empty()) {
    return std::nullopt;
  }
  if (!s.builder) {
    s.builder.emplace(s.options);
  }

  Snapshot out = s.builder->finish();
  s.builder.reset();
  return out;
}

std::vector<Sample> SampleBuilder::finish(unsigned threads) {
  Impl& s = *impl_;
  s.close();
  // Each builder finishes on its own (the builders share nothing, as a post-mortem's workers'
  // do); what one sample carries into the next is added in order below.
  std::vector<Snapshot> snapshots(s.done.size());
  {
    const std::size_t lanes =
        std::clamp<std::size_t>(threads, 1, std::max<std::size_t>(1, s.done.size()));
    std::vector<std::future<void>> others;
    auto lane = [&s, &snapshots, lanes](std::size_t first) {
      for (std::size_t i = first; i < snapshots.size(); i += lanes) {
        snapshots[i] = s.done[i].second.finish();
      }
    };
    for (std::size_t l = 1; l < lanes; ++l) {
      others.push_back(std::async(std::launch::async, lane, l));
    }
    lane(0);
    for (auto& f : others) {
      f.get(); // rethrows a lane's exception
    }
  }
  std::vector<Sample> out;
  std::vector<SourceLine> known;
  const double origin = s.done.empty() ? 0 : s.done.front().first.stop_began;
  // The session's measured stops, each to the sample in whose span its middle lies: from the
  // sample's stop to the next one's (the debugger reports a stop after it began and lets the
  // target go after it said so; a stop between samples is the earlier sample's).
  std::vector<double> measured(s.done.size(), 0);
  const bool use_measured = !s.measured_stops.empty() &&
                            std::all_of(s.done.begin(), s.done.end(),
                                        [](const auto& d) { return d.first.stop_began > 0; });
  if (use_measured) {
    for (const auto& [from, to] : s.measured_stops) {
      const double middle = (from + to) / 2;
      std::size_t i = 0;
      while (i + 1 < s.done.size() && s.done[i + 1].first.stop_began <= middle) {
        ++i;
      }
      measured[i] += to - from;
    }
  }
  std::size_t next = 0;
  for (auto& [w, builder] : s.done) {
    Sample sample;
    sample.index = w.index;
    sample.snapshot = std::move(snapshots[next++]);
    std::set<std::uint64_t> have;
    for (const auto& sl : sample.snapshot.source_lines) {
      have.insert(sl.pc);
    }
    for (const auto& sl : known) {
      if (have.insert(sl.pc).second) {
        sample.snapshot.source_lines.push_back(sl);
      }
    }
    known = sample.snapshot.source_lines;
    sample.wall_time = w.unix_time;
    if (w.unix_time > 0) {
      // When this sample's stop began, as a live run stamps it (the meta's start is the session's).
      sample.snapshot.taken_at = iso_time(w.unix_time);
    }
    if (w.stop_began > 0 && w.stop_ended > w.stop_began) {
      sample.stop_seconds =
          use_measured ? measured[next - 1] : std::max(0.0, w.stop_ended - w.stop_began - w.ran);
      sample.ran_in_stop = w.runs;
      sample.snapshot.stop_seconds = sample.stop_seconds;
    }
    sample.at = std::max(0.0, w.stop_began - origin);
    if (auto it = s.figures.find(w.index); it != s.figures.end()) {
      for (auto& t : sample.snapshot.host_threads) {
        if (!t.lwp) {
          continue;
        }
        if (auto f = it->second.find(static_cast<std::int64_t>(*t.lwp)); f != it->second.end()) {
          t.figures = f->second;
        }
      }
    }
    out.push_back(std::move(sample));
  }
  s.done.clear();
  share_code_windows(out);
  return out;
}

std::vector<Sample> build_samples(const std::vector<mi::Exchange>& exchanges,
                                  const BuildOptions& options) {
  SampleBuilder b(options);
  for (const auto& ex : exchanges) {
    b.add(ex);
  }
  return b.finish();
}

std::vector<std::pair<std::uint32_t, double>>
sample_skew(const std::vector<const std::vector<Sample>*>& processes) {
  std::map<std::uint32_t, std::pair<double, double>> range;
  for (const auto* samples : processes) {
    for (const auto& s : *samples) {
      if (s.wall_time <= 0) {
        continue;
      }
      auto [it, fresh] = range.emplace(s.index, std::make_pair(s.wall_time, s.wall_time));
      if (!fresh) {
        it->second.first = std::min(it->second.first, s.wall_time);
        it->second.second = std::max(it->second.second, s.wall_time);
      }
    }
  }
  std::vector<std::pair<std::uint32_t, double>> out;
  for (const auto& [k, r] : range) {
    out.emplace_back(k, r.second - r.first);
  }
  return out;
}

} // namespace rocplay::snapshot
