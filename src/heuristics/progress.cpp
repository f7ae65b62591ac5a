// Stuck or slow: the progress analysis over several samples of one process, and what it does to
// the findings of the first sample. Pure functions of snapshots.
#include "rocplay/heuristics/progress.hpp"

#include "heuristics/common.hpp"
#include "rocplay/core/names.hpp"
#include "rocplay/snapshot/code_loops.hpp"
#include "rocplay/snapshot/frames.hpp"
#include "rocplay/snapshot/grouping.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <map>
#include <set>
#include <unordered_map>

namespace rocplay {

constexpr NameTable<Motion, 4> kMotionNames{{
    {Motion::Unknown, "unknown"},
    {Motion::Stuck, "stuck"},
    {Motion::Blocked, "blocked"},
    {Motion::Moving, "moving"},
}};
static_assert(names_cover(kMotionNames, Motion::Moving));

std::string_view to_string(Motion motion) {
  return name_of(kMotionNames, motion, "unknown");
}

nlohmann::json to_json(const SampleProgress& p) {
  nlohmann::json entries = nlohmann::json::array();
  for (const auto& e : p.entries) {
    nlohmann::json j = {{"kind", e.kind},      {"id", e.id},
                        {"label", e.label},    {"motion", to_string(e.motion)},
                        {"why", e.why},        {"samples", e.samples},
                        {"seconds", e.seconds}};
    if (!e.details.is_null()) {
      j["details"] = e.details;
    }
    entries.push_back(std::move(j));
  }
  return {{"samples", p.samples},
          {"seconds", p.seconds},
          {"verdict", to_string(p.verdict)},
          {"verdict_text", p.verdict_text},
          {"entries", std::move(entries)}};
}

namespace heuristics {
namespace {

using detail::hex;

// A thread that used less than this share of a run's time on the CPU slept through it; one that
// used more than kBusyCpuShare burned it.
constexpr double kIdleCpuShare = 0.05;
constexpr double kBusyCpuShare = 0.5;
// A dispatch moves when more than this share of its threads (waves) left their loop regions.
constexpr double kMovingShare = 0.5;
// ... or when at least this share changed PC over more code than a polling loop holds (a load,
// a compare and a branch, 16-byte instructions on NVIDIA; PyTorch's one-thread `_sleep` spin
// changed PC over exactly 48). Real H100/H200 recordings replayed: healthy memory-bound loops had
// 96 of 1,792 and 12,000 of 30,464 threads change PC, over 112 and 96 bytes; a kernel whose every
// thread polls a flag 96 of 512, within 32 bytes; stuck NCCL kernels under 0.2%.
constexpr double kLoopBodyShare = 0.02;
constexpr std::uint64_t kPollLoopBytes = 48;
// A collective kernel (NCCL/RCCL, custom all-reduce) still in flight with the same work-groups
// after this long is waiting for a peer: one of serving size ends in milliseconds. Its waiting
// threads do not hold one PC: NCCL's LL128 protocol at TP=4 on 4 H200s kept over half of them
// changing PC within 832 bytes of its polling code between samples 5 s apart, with no rank to
// talk to, every move among PCs already seen.
constexpr double kCollectiveStuckSeconds = 1.0;

// Where a wave is in its dispatch: work-group and slot (AMD), or work-group and first work-item
// (a cuda-gdb range). Empty when the coordinates are unknown.
std::string wave_key(const Wave& w) {
  const auto& g = w.workgroup;
  if (!g[0]) {
    return {};
  }
  std::string key = detail::dispatch_key(w.agent, w.queue, w.dispatch) + "@" +
                    std::to_string(*g[0]) + "," + (g[1] ? std::to_string(*g[1]) : "?") + "," +
                    (g[2] ? std::to_string(*g[2]) : "?");
  if (w.wave_in_group) {
    key += "/" + std::to_string(*w.wave_in_group);
  } else if (w.first_work_item) {
    key += "#" + std::to_string(*w.first_work_item);
  }
  return key;
}

bool covers(const Wave& range, const Wave& w) {
  if (range.dispatch != w.dispatch || range.agent != w.agent) {
    return false;
  }
  for (int i = 0; i < 3; ++i) {
    const auto lo = range.workgroup[i];
    const auto hi = range.workgroup_last[i] ? range.workgroup_last[i] : range.workgroup[i];
    const auto v = w.workgroup[i];
    if (lo && v && (*v < *lo || (hi && *v > *hi))) {
      return false;
    }
  }
  if (range.first_work_item && w.first_work_item) {
    const auto last = range.last_work_item.value_or(*range.first_work_item);
    return *w.first_work_item >= *range.first_work_item && *w.first_work_item <= last;
  }
  return true;
}

// The wave of `later` that stands where `w` stood: same key, else (cuda-gdb ranges regroup
// between stops) the range that covers w's first thread.
const Wave* find_wave(const Snapshot& later,
                      const std::unordered_map<std::string, const Wave*>& by_key, const Wave& w) {
  const std::string key = wave_key(w);
  if (key.empty()) {
    for (const auto& x : later.waves) {
      if (!w.thread_id.empty() && x.thread_id == w.thread_id) {
        return &x;
      }
    }
    return nullptr;
  }
  if (auto it = by_key.find(key); it != by_key.end()) {
    return it->second;
  }
  if (w.count > 1 || w.first_work_item) {
    for (const auto& x : later.waves) {
      if (covers(x, w)) {
        return &x;
      }
    }
  }
  return nullptr;
}

std::uint64_t distance(std::uint64_t a, std::uint64_t b) {
  return a > b ? a - b : b - a;
}

std::string frame_text(const Frame& f) {
  std::string s = f.function.empty() ? hex(f.pc) : f.function;
  if (!f.file.empty() && f.line) {
    s += fmt::format(" ({}:{})", f.file, *f.line);
  }
  return s;
}

// The frame of a GPU runtime's synchronize call in the stack (`cudaDeviceSynchronize`,
// `cuCtxSynchronize_v2`, `hipStreamSynchronize` ...); nullptr when none is.
const Frame* gpu_wait_frame(const HostThread& t) {
  for (const auto& f : t.frames) {
    const std::string name = short_function_name(f.function);
    if ((name.rfind("cu", 0) == 0 || name.rfind("hip", 0) == 0) &&
        name.find("Synchronize") != std::string::npos) {
      return &f;
    }
  }
  return nullptr;
}

std::string thread_key(const HostThread& t) {
  return t.lwp ? "lwp " + std::to_string(*t.lwp) : "thread " + t.id;
}

std::string seconds_text(double s) {
  return fmt::format("{:.1f} s", s);
}

// `at 0x...` when the PC never moved, else `within N bytes of 0x...`.
std::string near_pc(std::uint64_t widest, const std::optional<std::uint64_t>& pc) {
  return widest == 0 ? "at " + hex(pc) : fmt::format("within {} bytes of {}", widest, hex(pc));
}

std::string where_text(const Wave& w, const Snapshot& s) {
  std::string func(w.inline_function.empty() ? w.function.view() : w.inline_function.view());
  std::string file(w.file.view());
  std::optional<std::uint32_t> line = w.line;
  if (w.pc) {
    if (const SourceLine* sl = s.source_line(*w.pc); sl != nullptr) {
      if (file.empty()) {
        file = sl->file;
        line = sl->line;
      }
      if (func.empty()) {
        func = sl->function;
      }
    }
  }
  std::string out = func.empty() ? hex(w.pc) : short_function_name(func);
  if (!file.empty() && line) {
    out += fmt::format(" at {}:{}", file, *line);
  }
  return out;
}

// `13,056`.
std::string grouped(std::uint64_t v) {
  std::string digits = std::to_string(v);
  std::string out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) {
      out += ',';
    }
    out += digits[i];
  }
  return out;
}

// The work-groups (blocks) of the dispatch its waves stand on; nullopt when they cannot be told
// (a `?` coordinate, a cuda-gdb range over several rows of a 2-D or 3-D grid, too many).
std::optional<std::set<std::array<std::int64_t, 3>>> resident_blocks(const Snapshot& s,
                                                                     const Dispatch& d) {
  constexpr std::size_t kMaxBlocks = 1 << 16;
  std::set<std::array<std::int64_t, 3>> out;
  for (const auto& w : s.waves) {
    if (w.dispatch != d.dispatch_no || w.agent != d.agent || w.queue != d.queue) {
      continue;
    }
    const auto& a = w.workgroup;
    if (!a[0]) {
      return std::nullopt;
    }
    const std::int64_t y = a[1].value_or(0);
    const std::int64_t z = a[2].value_or(0);
    const std::int64_t last = w.workgroup_last[0].value_or(*a[0]);
    if ((w.workgroup_last[1] && *w.workgroup_last[1] != y) ||
        (w.workgroup_last[2] && *w.workgroup_last[2] != z) || last < *a[0] ||
        static_cast<std::size_t>(last - *a[0]) > kMaxBlocks) {
      return std::nullopt;
    }
    for (std::int64_t x = *a[0]; x <= last; ++x) {
      out.insert({x, y, z});
      if (out.size() > kMaxBlocks) {
        return std::nullopt;
      }
    }
  }
  return out;
}

// The GPU loops that wait on time (isa::Loop::clock_wait) in any sample's code windows (the code
// is the same in every sample): a thread caught at two PCs of one of them did no work in between,
// however far apart the PCs are (PyTorch's `_sleep` spin covers 96 bytes of SASS on an H200).
std::vector<std::pair<std::uint64_t, std::uint64_t>>
clock_waits(const std::vector<Sample>& samples) {
  std::vector<std::pair<std::uint64_t, std::uint64_t>> out;
  for (const auto& s : samples) {
    // Only wave classes have GPU loops: a host process's windows (one per thread, 1,000 threads:
    // 10 ms a sample) need no loop finding here.
    if (s.snapshot.code_windows.empty() || s.snapshot.waves.empty()) {
      continue;
    }
    for (const auto& l : snapshot::code_loops(s.snapshot)) {
      if (l.gpu && l.loop && l.loop->clock_wait) {
        out.emplace_back(l.loop->start, l.loop->branch);
      }
    }
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

bool in_one_loop(const std::vector<std::pair<std::uint64_t, std::uint64_t>>& loops, std::uint64_t a,
                 std::uint64_t b) {
  return std::any_of(loops.begin(), loops.end(), [&](const auto& l) {
    return l.first <= std::min(a, b) && std::max(a, b) <= l.second;
  });
}

void add_dispatches(const std::vector<Sample>& samples, SampleProgress& p) {
  const Snapshot& first = samples.front().snapshot;
  const auto waits = clock_waits(samples);
  const double span = samples.back().at - samples.front().at;
  const auto n = static_cast<std::uint32_t>(samples.size());
  // Later samples' waves by key, built once each.
  std::vector<std::unordered_map<std::string, const Wave*>> keyed(samples.size());
  for (std::size_t k = 1; k < samples.size(); ++k) {
    for (const auto& w : samples[k].snapshot.waves) {
      if (auto key = wave_key(w); !key.empty()) {
        keyed[k].emplace(std::move(key), &w);
      }
    }
  }
  const auto classes = snapshot::group_waves(first);
  for (const auto& d : first.dispatches) {
    ProgressEntry e;
    e.kind = "dispatch";
    e.id = d.id;
    e.label = detail::kernel_label(d);
    e.samples = 1;
    // Completed: gone from a later sample.
    std::optional<std::size_t> gone_in;
    for (std::size_t k = 1; k < samples.size(); ++k) {
      const auto& ds = samples[k].snapshot.dispatches;
      const bool present = std::any_of(ds.begin(), ds.end(), [&](const Dispatch& x) {
        return detail::launch_key(x) == detail::launch_key(d);
      });
      if (!present) {
        gone_in = k;
        break;
      }
      ++e.samples;
    }
    e.seconds = samples[e.samples - 1].at - samples.front().at;
    if (gone_in) {
      e.motion = Motion::Moving;
      e.why = fmt::format("completed: in flight in sample 1, gone by sample {} ({} later)",
                          *gone_in + 1, seconds_text(samples[*gone_in].at - samples.front().at));
      e.details = {{"completed_by_sample", *gone_in + 1}};
      p.entries.push_back(std::move(e));
      continue;
    }
    // Its wave classes: each wave of sample 1 looked up in every later sample, weighed by the
    // threads it stands for (a cuda-gdb range holds many).
    const bool threads_unit = first.debugger == DebuggerKind::CudaGdb;
    const std::string_view unit = threads_unit ? "threads" : "waves";
    std::size_t waves = 0;
    std::size_t found = 0;
    std::size_t left = 0;
    std::uint64_t widest = 0;
    std::uint64_t total = 0;    // threads (waves) of sample 1 seen again
    std::uint64_t stayed = 0;   // ... that stayed in their loop region in every sample
    std::uint64_t cycled = 0;   // ... that moved, but only to PCs of the dispatch seen before
    std::uint64_t new_code = 0; // ... that moved to a PC no wave of the dispatch was at before
    std::uint64_t changed = 0;  // ... whose PC changed at all, inside its loop region or not
    std::uint64_t on_clock = 0; // ... that changed PC only within a loop waiting on the clock
    std::uint64_t changed_lo = UINT64_MAX; // the PCs the changed ones were caught at
    std::uint64_t changed_hi = 0;
    std::set<std::uint64_t> first_pcs;
    std::set<std::uint64_t> cycle_pcs;
    for (const auto& w : first.waves) {
      if (w.pc && w.dispatch == d.dispatch_no && w.agent == d.agent && w.queue == d.queue) {
        first_pcs.insert(*w.pc);
      }
    }
    auto seen_before = [&](std::uint64_t pc) {
      auto it = first_pcs.lower_bound(pc > kLoopRegionBytes ? pc - kLoopRegionBytes : 0);
      return it != first_pcs.end() && *it <= pc + kLoopRegionBytes;
    };
    std::string example;
    std::vector<ProgressEntry> class_entries;
    for (const auto& c : detail::classes_of(classes, d)) {
      std::size_t c_waves = 0;
      std::size_t c_left = 0;
      std::uint64_t c_widest = 0;
      std::string c_example;
      for (const auto& w : first.waves) {
        if (w.dispatch != c.dispatch || w.agent != c.agent || w.queue != c.queue || w.pc != c.pc ||
            !w.pc) {
          continue;
        }
        ++c_waves;
        const std::uint64_t weight = std::max<std::uint64_t>(w.count, 1);
        bool seen = false;
        bool moved = false;
        bool changed_pc = false;
        bool clock_only = false;
        bool only_known = true;
        std::vector<std::uint64_t> visited;
        for (std::size_t k = 1; k < samples.size(); ++k) {
          const Wave* x = find_wave(samples[k].snapshot, keyed[k], w);
          if (x == nullptr || !x->pc) {
            continue; // not seen again: the stop may not list it (cuda-gdb focus); no evidence
          }
          ++found;
          seen = true;
          const bool waits_on_clock = in_one_loop(waits, *x->pc, *w.pc);
          clock_only = clock_only || (waits_on_clock && *x->pc != *w.pc);
          if (*x->pc != *w.pc && !waits_on_clock) {
            changed_pc = true;
            changed_lo = std::min({changed_lo, *x->pc, *w.pc});
            changed_hi = std::max({changed_hi, *x->pc, *w.pc});
          }
          const std::uint64_t dist = distance(*x->pc, *w.pc);
          if (dist > kLoopRegionBytes && !waits_on_clock) {
            moved = true;
            visited.push_back(*x->pc);
            only_known = only_known && seen_before(*x->pc);
            if (c_example.empty()) {
              c_example = fmt::format("{} -> {} ({}) in sample {}", hex(w.pc), hex(x->pc),
                                      where_text(*x, samples[k].snapshot), k + 1);
            }
          } else {
            c_widest = std::max(c_widest, dist);
          }
        }
        if (!seen) {
          continue;
        }
        total += weight;
        if (changed_pc) {
          changed += weight;
        } else if (clock_only) {
          on_clock += weight;
        }
        if (!moved) {
          stayed += weight;
        } else {
          ++c_left;
          if (only_known) {
            cycled += weight;
            cycle_pcs.insert(*w.pc);
            cycle_pcs.insert(visited.begin(), visited.end());
          } else {
            new_code += weight;
          }
        }
      }
      waves += c_waves;
      left += c_left;
      widest = std::max(widest, c_widest);
      if (example.empty()) {
        example = c_example;
      }
      ProgressEntry ce;
      ce.kind = "waves";
      ce.id = fmt::format("{}@{}", d.id, hex(c.pc));
      ce.label = fmt::format("{} {} at {}", c.threads, c.threads == 1 ? "thread" : "threads",
                             detail::where(c, first));
      ce.samples = n;
      ce.seconds = span;
      if (c_left > 0) {
        ce.motion = Motion::Moving;
        ce.why = fmt::format("{} of {} left the loop region: {}", c_left, c_waves, c_example);
      } else {
        ce.motion = Motion::Stuck;
        ce.why = fmt::format("stayed {} in {} samples", near_pc(c_widest, c.pc), n);
      }
      class_entries.push_back(std::move(ce));
    }
    // Work-groups retiring or starting between the samples: forward progress whatever the PCs.
    std::string residency;
    if (const auto b1 = resident_blocks(first, d)) {
      for (std::size_t k = 1; k < samples.size() && residency.empty(); ++k) {
        const auto bk = resident_blocks(samples[k].snapshot, d);
        if (!bk || bk->empty() || b1->empty()) {
          continue;
        }
        std::size_t gone = 0;
        std::size_t started = 0;
        for (const auto& b : *b1) {
          gone += bk->count(b) == 0 ? 1 : 0;
        }
        for (const auto& b : *bk) {
          started += b1->count(b) == 0 ? 1 : 0;
        }
        if (gone > 0 && started > 0) {
          residency = fmt::format("work-groups retired and started: {} of sample 1's {} gone, {} "
                                  "new by sample {}",
                                  gone, b1->size(), started, k + 1);
        }
      }
    }
    // The same work-groups resident from the first sample to the last.
    std::optional<std::size_t> same_blocks;
    if (const auto b1 = resident_blocks(first, d); b1 && !b1->empty() && residency.empty()) {
      const auto bn = resident_blocks(samples[e.samples - 1].snapshot, d);
      if (bn && *bn == *b1) {
        same_blocks = b1->size();
      }
    }
    const std::uint64_t moved_total = cycled + new_code;
    e.details = {{"waves", waves},         {"waves_left", left},
                 {"widest_bytes", widest}, {"unit", unit},
                 {"total", total},         {"stayed", stayed},
                 {"cycling", cycled},      {"moved_to_new_code", new_code},
                 {"changed_pc", changed},  {"cycle_pcs", cycle_pcs.size()},
                 {"clock_wait", on_clock}};
    // `13,032 of 13,056 threads stayed on their PC over 3 samples; 24 cycle among 9 PCs of the
    // polling code`.
    std::string measure = fmt::format("{} of {} {} stayed on their PC over {} samples",
                                      grouped(stayed), grouped(total), unit, n);
    if (on_clock > 0) {
      measure += fmt::format("; {} of them changed PC only inside a loop that reads the clock "
                             "and touches no memory (a wait on time, no work)",
                             grouped(on_clock));
    }
    if (cycled > 0) {
      measure += fmt::format("; {} cycle among {} PCs already seen (the polling code)",
                             grouped(cycled), cycle_pcs.size());
    }
    if (new_code > 0) {
      measure += fmt::format("; {} moved to code not seen before ({})", grouped(new_code), example);
    }
    if (waves == 0 || found == 0) {
      e.motion = Motion::Unknown;
      e.why = waves == 0 ? "no waves listed for it: the samples cannot tell"
                         : "its waves were not listed again: the samples cannot tell";
      class_entries.clear();
    } else if (!residency.empty()) {
      e.motion = Motion::Moving;
      e.why = residency + "; " + measure;
    } else if (same_blocks && detail::is_collective(d) && new_code == 0 &&
               e.seconds >= kCollectiveStuckSeconds) {
      e.motion = Motion::Stuck;
      e.why = fmt::format("stuck for {}: a collective kernel with the same {} work-group(s) "
                          "resident in every sample, its threads moving only within its own "
                          "code while it waits for its peers; {}",
                          seconds_text(e.seconds), grouped(*same_blocks), measure);
    } else if (static_cast<double>(moved_total) > kMovingShare * static_cast<double>(total)) {
      e.motion = Motion::Moving;
      e.why = fmt::format("most {} moved: {} of {} left their loop region ({})", unit,
                          grouped(moved_total), grouped(total), example);
    } else if (static_cast<double>(changed) >= kLoopBodyShare * static_cast<double>(total) &&
               changed_hi - changed_lo > kPollLoopBytes) {
      // A memory-bound loop keeps most threads at its loads, as a poll does; but its threads
      // change PC over a loop body wider than a poll's few instructions.
      e.motion = Motion::Moving;
      e.why = fmt::format("{} of {} {} changed PC between samples, over {} bytes of code "
                          "({} to {}): a loop body at work, wider than a polling loop",
                          grouped(changed), grouped(total), unit, changed_hi - changed_lo,
                          hex(changed_lo), hex(changed_hi));
    } else {
      e.motion = Motion::Stuck;
      e.why = fmt::format("stuck for {}: {}", seconds_text(e.seconds), measure);
      if (moved_total == 0) {
        e.why += widest == 0 ? std::string(", every one at its PC")
                             : fmt::format(", every one within {} bytes of it", widest);
      }
    }
    p.entries.push_back(std::move(e));
    for (auto& ce : class_entries) {
      p.entries.push_back(std::move(ce));
    }
  }
  // New dispatches: in a later sample, not in the first.
  std::set<std::string> known;
  for (const auto& d : first.dispatches) {
    known.insert(detail::launch_key(d));
  }
  for (std::size_t k = 1; k < samples.size(); ++k) {
    for (const auto& d : samples[k].snapshot.dispatches) {
      if (!known.insert(detail::launch_key(d)).second) {
        continue;
      }
      ProgressEntry e;
      e.kind = "dispatch";
      e.id = d.id;
      e.label = detail::kernel_label(d);
      e.motion = Motion::Moving;
      e.samples = 1;
      e.why = fmt::format("new: first seen in sample {} ({} after the first)", k + 1,
                          seconds_text(samples[k].at - samples.front().at));
      e.details = {{"new_in_sample", k + 1}};
      p.entries.push_back(std::move(e));
    }
  }
}

void add_queues(const std::vector<Sample>& samples, SampleProgress& p) {
  const Snapshot& first = samples.front().snapshot;
  const Snapshot& last = samples.back().snapshot;
  for (const auto& q : first.queues) {
    if (!q.read || !q.write) {
      continue;
    }
    auto it = std::find_if(last.queues.begin(), last.queues.end(), [&](const Queue& x) {
      return (!q.target_id.empty() && x.target_id == q.target_id) || x.id == q.id;
    });
    if (it == last.queues.end() || !it->read || !it->write) {
      continue;
    }
    ProgressEntry e;
    e.kind = "queue";
    e.id = q.id;
    e.label = q.target_id;
    e.samples = static_cast<std::uint32_t>(samples.size());
    e.seconds = samples.back().at - samples.front().at;
    e.details = {{"read", {*q.read, *it->read}}, {"write", {*q.write, *it->write}}};
    if (*it->read != *q.read) {
      e.motion = Motion::Moving;
      e.why = fmt::format("moved: read index {} -> {}", *q.read, *it->read);
    } else if (*q.write > *q.read) {
      e.motion = Motion::Stuck;
      e.why = fmt::format("read index {} unchanged for {} with {} packet(s) pending", *q.read,
                          seconds_text(e.seconds), *q.write - *q.read);
    } else {
      e.motion = Motion::Unknown;
      e.why = "empty in both samples";
    }
    p.entries.push_back(std::move(e));
  }
}

// One sample's host threads by LWP and by id: a search per thread was a million compares for
// 1,000 threads in two samples.
class ThreadIndex {
public:
  explicit ThreadIndex(const Snapshot& s) {
    for (const auto& t : s.host_threads) {
      if (t.lwp) {
        by_lwp_.emplace(*t.lwp, &t);
      }
      by_id_.emplace(t.id, &t);
    }
  }
  // The thread `t` is in this sample: the same LWP, or the same id when `t` has no LWP.
  const HostThread* find(const HostThread& t) const {
    if (t.lwp) {
      const auto it = by_lwp_.find(*t.lwp);
      return it != by_lwp_.end() ? it->second : nullptr;
    }
    const auto it = by_id_.find(t.id);
    return it != by_id_.end() ? it->second : nullptr;
  }

private:
  std::unordered_map<std::uint64_t, const HostThread*> by_lwp_; // the first of each, as a search
  std::unordered_map<std::string, const HostThread*> by_id_;
};

void add_threads(const std::vector<Sample>& samples, SampleProgress& p) {
  const Snapshot& first = samples.front().snapshot;
  std::vector<ThreadIndex> later;
  later.reserve(samples.size());
  for (const auto& s : samples) {
    later.emplace_back(s.snapshot);
  }
  for (const auto& t : first.host_threads) {
    if (t.frames.empty()) {
      continue;
    }
    ProgressEntry e;
    e.kind = "thread";
    e.id = t.id;
    e.label = t.name.empty() ? thread_key(t) : fmt::format("{} ({})", t.name, thread_key(t));
    e.samples = 1;
    std::string moved;
    std::uint64_t widest = 0;
    for (std::size_t k = 1; k < samples.size() && moved.empty(); ++k) {
      const HostThread* it = later[k].find(t);
      if (it == nullptr) {
        moved = fmt::format("exited by sample {}", k + 1);
        break;
      }
      ++e.samples;
      if (it->frames.empty()) {
        continue;
      }
      const std::size_t depth = std::min(t.frames.size(), it->frames.size());
      for (std::size_t i = 0; i < depth && moved.empty(); ++i) {
        const Frame& a = t.frames[i];
        const Frame& b = it->frames[i];
        const bool same_function = a.function == b.function;
        const std::uint64_t dist = a.pc && b.pc ? distance(*a.pc, *b.pc) : 0;
        // Frame 0 may move inside its loop; outer frames must be at the same return address.
        const bool same_place = i == 0 ? dist <= kLoopRegionBytes : dist == 0;
        if (!same_function || !same_place) {
          moved = fmt::format("frame {} moved: {} -> {} in sample {}", i, frame_text(a),
                              frame_text(b), k + 1);
        } else if (i == 0) {
          widest = std::max(widest, dist);
        }
      }
      if (moved.empty() && t.frames.size() != it->frames.size() &&
          std::max(t.frames.size(), it->frames.size()) < 30) {
        moved = fmt::format("stack depth {} -> {} in sample {}", t.frames.size(), it->frames.size(),
                            k + 1);
      }
    }
    e.seconds =
        samples[std::min<std::size_t>(e.samples, samples.size()) - 1].at - samples.front().at;
    // What /proc said of the runs between the samples (live runs): the CPU it used in each.
    double cpu = 0;
    double ran = 0;
    std::string state;
    std::size_t measured = 0;
    for (std::size_t k = 1; k < samples.size(); ++k) {
      const HostThread* it = later[k].find(t);
      if (it != nullptr && it->figures && it->figures->run_seconds > 0) {
        cpu += it->figures->cpu_seconds;
        ran += it->figures->run_seconds;
        state = it->figures->state;
        ++measured;
      }
    }
    const double share = ran > 0 ? cpu / ran : 0;
    const std::string used = measured > 0
                                 ? fmt::format("used {:.2f} s of CPU in {:.1f} s of running{}", cpu,
                                               ran, state.empty() ? "" : " (state " + state + ")")
                                 : std::string();
    const Frame* wait = detail::blocking_frame(t);
    if (!moved.empty()) {
      e.motion = Motion::Moving;
      e.why = moved;
    } else if (e.samples < 2) {
      e.motion = Motion::Unknown;
      e.why = "seen in one sample only";
    } else if (measured > 0 && share < kIdleCpuShare) {
      // No CPU between the samples: asleep, whatever its frames say. Never a spin.
      e.motion = Motion::Blocked;
      e.why = fmt::format("blocked for {} over {} samples: {}{}", seconds_text(e.seconds),
                          e.samples, used, wait ? " in " + frame_text(*wait) : std::string());
    } else if (const Frame* gpu = gpu_wait_frame(t); gpu != nullptr) {
      // Inside a GPU runtime's synchronize: waiting for the GPU, by sleeping or by spinning (the
      // CUDA default spin-waits, burning the CPU). The GPU work says whether it is stuck.
      e.motion = Motion::Blocked;
      e.why = fmt::format("waits for the GPU in {} over {} samples{}", frame_text(*gpu), e.samples,
                          used.empty() ? std::string() : "; " + used);
    } else if (measured > 0 && share >= kBusyCpuShare) {
      // Burned the runs in the same frames: a spin, even inside a call that can wait.
      e.motion = Motion::Stuck;
      e.why = fmt::format("stuck for {} over {} samples: {} at {} {}", seconds_text(e.seconds),
                          e.samples, used, frame_text(t.frames.front()),
                          near_pc(widest, t.frames.front().pc));
    } else if (wait != nullptr) {
      e.motion = Motion::Blocked;
      e.why = fmt::format("blocked for {} over {} samples in {}{}", seconds_text(e.seconds),
                          e.samples, frame_text(*wait), used.empty() ? "" : "; " + used);
    } else {
      // Outside any wait in the same frames; with figures, it used the CPU for part of the runs
      // (a spin on a loaded machine gets only its share).
      e.motion = Motion::Stuck;
      e.why = fmt::format("stuck for {} over {} samples: {} {}{}", seconds_text(e.seconds),
                          e.samples, frame_text(t.frames.front()),
                          near_pc(widest, t.frames.front().pc), used.empty() ? "" : "; " + used);
    }
    e.frame0 = frame_text(t.frames.front());
    e.details = {{"frame0", e.frame0}, {"pc", hex(t.frames.front().pc)}};
    if (const Frame* user = innermost_user_frame(t)) {
      e.details["user_frame"] = frame_text(*user);
      if (user != &t.frames.front() && e.motion != Motion::Moving) {
        e.why += "; the user's frame: " + frame_where(*user);
      }
    }
    if (measured > 0) {
      e.details["cpu_seconds"] = cpu;
      e.details["run_seconds"] = ran;
      if (!state.empty()) {
        e.details["state"] = state;
      }
    }
    if (detail::is_runtime_helper_thread(t.name)) {
      e.details["runtime_thread"] = true;
    }
    p.entries.push_back(std::move(e));
  }
}

void decide(SampleProgress& p) {
  auto count = [&](std::string_view kind, Motion m) {
    return static_cast<std::size_t>(
        std::count_if(p.entries.begin(), p.entries.end(),
                      [&](const ProgressEntry& e) { return e.kind == kind && e.motion == m; }));
  };
  auto first_of = [&](std::string_view kind, Motion m) -> const ProgressEntry* {
    for (const auto& e : p.entries) {
      if (e.kind == kind && e.motion == m) {
        return &e;
      }
    }
    return nullptr;
  };
  const std::size_t stuck_d = count("dispatch", Motion::Stuck);
  const std::size_t moving_d = count("dispatch", Motion::Moving);
  const std::size_t stuck_q = count("queue", Motion::Stuck);
  const std::size_t moving_q = count("queue", Motion::Moving);
  const std::size_t stuck_t = count("thread", Motion::Stuck);
  const std::size_t moving_t = count("thread", Motion::Moving);
  const std::size_t blocked_t = count("thread", Motion::Blocked);
  const std::string over = fmt::format("over {} samples ({})", p.samples, seconds_text(p.seconds));
  if (stuck_d + stuck_q > 0) {
    p.verdict = Motion::Stuck;
    const ProgressEntry* e =
        stuck_d > 0 ? first_of("dispatch", Motion::Stuck) : first_of("queue", Motion::Stuck);
    p.verdict_text = fmt::format("STUCK: {} {} ({}) made no progress {}{}", e->kind, e->id,
                                 e->label.empty() ? "?" : e->label, over,
                                 moving_d + moving_q > 0
                                     ? fmt::format("; {} other(s) moved", moving_d + moving_q)
                                     : std::string());
  } else if (moving_d + moving_q > 0) {
    p.verdict = Motion::Moving;
    const ProgressEntry* e =
        moving_d > 0 ? first_of("dispatch", Motion::Moving) : first_of("queue", Motion::Moving);
    p.verdict_text =
        fmt::format("MOVING (slow, not stuck): {} {} {} {}", e->kind, e->id, e->why, over);
  } else if (count("dispatch", Motion::Unknown) > 0) {
    p.verdict = Motion::Unknown;
    p.verdict_text =
        fmt::format("UNKNOWN: the GPU work in flight showed no waves to compare {}", over);
  } else if (stuck_t > 0) {
    p.verdict = Motion::Stuck;
    const ProgressEntry* e = first_of("thread", Motion::Stuck);
    p.verdict_text = fmt::format("STUCK: host thread {} ({}) {}", e->id, e->label, e->why);
  } else if (moving_t > 0) {
    p.verdict = Motion::Moving;
    p.verdict_text = fmt::format("MOVING: {} host thread(s) moved, {} blocked, no GPU work in "
                                 "flight, {}",
                                 moving_t, blocked_t, over);
  } else if (blocked_t > 0) {
    p.verdict = Motion::Blocked;
    p.verdict_text = fmt::format("BLOCKED: every host thread waited in the same frames {}", over);
  } else {
    p.verdict = Motion::Unknown;
    p.verdict_text = fmt::format("UNKNOWN: nothing to compare {}", over);
  }
}

// Dispatch ids a finding names (details.dispatch.id, details.dispatches[].id).
std::vector<std::string> named_dispatches(const Finding& f) {
  std::vector<std::string> ids;
  if (!f.details.is_object()) {
    return ids;
  }
  if (auto it = f.details.find("dispatch"); it != f.details.end() && it->is_object()) {
    if (auto id = it->find("id"); id != it->end() && id->is_string()) {
      ids.push_back(id->get<std::string>());
    }
  }
  if (auto it = f.details.find("dispatches"); it != f.details.end() && it->is_array()) {
    for (const auto& d : *it) {
      if (d.is_object()) {
        if (auto id = d.find("id"); id != d.end() && id->is_string()) {
          ids.push_back(id->get<std::string>());
        }
      }
    }
  }
  return ids;
}

Severity lower_severity(Severity s) {
  switch (s) {
  case Severity::Critical:
  case Severity::Error:
    return Severity::Warning;
  default:
    return Severity::Info;
  }
}

void confirm(Finding& f, const SampleProgress& p) {
  const auto ids = named_dispatches(f);
  if (ids.empty() || f.id == kQueueStall) {
    return;
  }
  std::vector<const ProgressEntry*> entries;
  for (const auto& id : ids) {
    for (const auto& e : p.entries) {
      if (e.kind == "dispatch" && e.id == id) {
        entries.push_back(&e);
        break;
      }
    }
  }
  const ProgressEntry* moved = nullptr;
  bool all_stuck = !entries.empty();
  for (const auto* e : entries) {
    if (e->motion == Motion::Moving && moved == nullptr) {
      moved = e;
    }
    all_stuck = all_stuck && e->motion == Motion::Stuck;
  }
  nlohmann::json pj = {{"samples", p.samples}, {"seconds", p.seconds}};
  if (moved != nullptr) {
    f.severity = lower_severity(f.severity);
    f.confidence = std::max(0.05, f.confidence * 0.5);
    f.title = "slow, not stuck: " + f.title;
    f.evidence.push_back(fmt::format("NOT CONFIRMED by {} samples over {}: dispatch {} moved ({})",
                                     p.samples, seconds_text(p.seconds), moved->id, moved->why));
    f.summary += fmt::format(" Later samples show dispatch {} making progress, so this reads as a "
                             "slow kernel, not a stuck one.",
                             moved->id);
    pj["confirmed"] = false;
    pj["motion"] = "moving";
    pj["why"] = moved->why;
  } else if (all_stuck) {
    f.confidence = std::min(0.99, f.confidence + 0.05 * static_cast<double>(p.samples - 1));
    f.evidence.push_back(fmt::format("CONFIRMED by {} samples over {}: {}", p.samples,
                                     seconds_text(p.seconds), entries.front()->why));
    pj["confirmed"] = true;
    pj["motion"] = "stuck";
    pj["why"] = entries.front()->why;
  } else {
    f.evidence.push_back(fmt::format("not confirmed: {} samples over {} cannot tell whether it "
                                     "moved",
                                     p.samples, seconds_text(p.seconds)));
    pj["confirmed"] = false;
    pj["motion"] = "unknown";
  }
  if (f.details.is_object() || f.details.is_null()) {
    f.details["progress"] = std::move(pj);
  }
}

// The place a stuck dispatch stands on: the PC most of its threads stayed on, as a Location with
// its source line, or symbol+offset when there is no line.
std::optional<Location> anchor_of(const Snapshot& first, const std::string& dispatch_id) {
  const Dispatch* d = nullptr;
  for (const auto& x : first.dispatches) {
    if (x.id == dispatch_id) {
      d = &x;
    }
  }
  if (d == nullptr) {
    return std::nullopt;
  }
  const auto classes = detail::classes_of(snapshot::group_waves(first), *d);
  // Lanes in one polling loop while the rest of the dispatch waits behind them (at a barrier): the
  // loop is where it is stuck, not the barrier most threads stand at.
  std::vector<const snapshot::WaveClass*> candidates;
  if (const auto spin = detail::leader_spin(classes, first)) {
    candidates = spin->spin;
  } else {
    for (const auto& c : classes) {
      candidates.push_back(&c);
    }
  }
  const snapshot::WaveClass* best = nullptr;
  for (const auto* c : candidates) {
    if (c->pc && (best == nullptr || c->threads > best->threads)) {
      best = c;
    }
  }
  if (best == nullptr) {
    return std::nullopt;
  }
  Location l = detail::location_of(*best, first);
  if (l.file.empty() || !l.line) {
    if (const SourceLine* sl = first.source_line(*best->pc); sl != nullptr && sl->offset) {
      l.function =
          fmt::format("{}+{}", sl->function.empty() ? l.function : sl->function, *sl->offset);
    }
  }
  return l;
}

std::optional<Finding> no_progress(const std::vector<Sample>& samples, const SampleProgress& p,
                                   const std::vector<Finding>& findings, std::optional<int> rank) {
  // Findings about the host's wait name the dispatches they wait for, but they are the symptom:
  // a stuck dispatch still gets its own finding, which leads, with their threads as evidence.
  std::set<std::string> named;
  std::vector<const Finding*> host_waits;
  for (const auto& f : findings) {
    if (f.id == kHostBlockedOnGpu || f.id == kHostWaits) {
      host_waits.push_back(&f);
      continue;
    }
    for (auto& id : named_dispatches(f)) {
      named.insert(std::move(id));
    }
  }
  std::vector<const ProgressEntry*> dispatches;
  std::vector<const ProgressEntry*> threads;
  for (const auto& e : p.entries) {
    if (e.motion != Motion::Stuck) {
      continue;
    }
    if (e.kind == "dispatch" && named.count(e.id) == 0) {
      dispatches.push_back(&e);
    } else if (e.kind == "thread" && !e.details.value("runtime_thread", false)) {
      threads.push_back(&e);
    }
  }
  if (dispatches.empty() && threads.empty()) {
    return std::nullopt;
  }
  Finding f;
  f.id = std::string(kNoProgress);
  f.rank = rank;
  const double extra = 0.1 * static_cast<double>(std::min<std::uint32_t>(p.samples, 4) - 2);
  std::optional<Location> anchor;
  if (!dispatches.empty()) {
    anchor = anchor_of(samples.front().snapshot, dispatches.front()->id);
  }
  auto where_text = [](const Location& l) {
    std::string w = l.function.empty() ? hex(l.pc) : short_function_name(l.function);
    if (w.empty()) {
      w = l.function;
    }
    if (!l.file.empty() && l.line) {
      w += fmt::format(" at {}:{}", l.file, *l.line);
    }
    return w;
  };
  if (!dispatches.empty()) {
    f.severity = Severity::Error;
    f.confidence = 0.6 + extra;
    const std::string kernel = short_function_name(dispatches.front()->label);
    f.title = fmt::format(
        "{} is stuck{} across {} samples ({}){}",
        kernel.empty() ? dispatches.front()->label : kernel,
        anchor ? " at " + where_text(*anchor) : std::string(), p.samples, seconds_text(p.seconds),
        dispatches.size() > 1 ? fmt::format("; {} more dispatch(es) stuck", dispatches.size() - 1)
                              : std::string());
  } else {
    f.severity = Severity::Warning;
    f.confidence = 0.5 + extra;
    f.title = fmt::format("{} host thread(s) spin in one place across {} samples ({})",
                          threads.size(), p.samples, seconds_text(p.seconds));
  }
  f.summary = fmt::format(
      "Across {} samples {} apart in total, {} stayed where it was: the same loop region and, for "
      "host threads, the same callers, outside any wait. Something it polls never changes.",
      p.samples, seconds_text(p.seconds), dispatches.empty() ? "a host thread" : "GPU work");
  nlohmann::json dj = nlohmann::json::array();
  for (const auto* e : dispatches) {
    f.evidence.push_back(fmt::format("dispatch {} ({}): {}", e->id, e->label, e->why));
    dj.push_back({{"id", e->id}, {"kernel", e->label}, {"why", e->why}});
  }
  nlohmann::json tj = nlohmann::json::array();
  for (const auto* e : threads) {
    f.evidence.push_back(fmt::format("thread {} {}: {}", e->id, e->label, e->why));
    tj.push_back({{"id", e->id}, {"label", e->label}, {"why", e->why}});
  }
  if (!dispatches.empty()) {
    // The host side of it: who waits for the stuck work, as evidence.
    for (const auto* h : host_waits) {
      for (const auto& ev : h->evidence) {
        if (ev.rfind("thread ", 0) == 0) {
          f.evidence.push_back("the host waits for it: " + ev);
        }
      }
    }
    f.kernel = dispatches.front()->label;
    if (anchor) {
      f.locations.push_back(*anchor);
    }
  }
  f.details = {{"dispatches", std::move(dj)},
               {"threads", std::move(tj)},
               {"progress", {{"samples", p.samples}, {"seconds", p.seconds}, {"confirmed", true}}}};
  if (!dispatches.empty()) {
    f.details["dispatch"] = {{"id", dispatches.front()->id}, {"kernel", dispatches.front()->label}};
    f.dispatches = {{dispatches.front()->id, dispatches.front()->label}};
  }
  f.next_step = "Anchor on the PC where it spins and read that loop: find the flag, counter or "
                "lock it polls and who should have changed it.";
  // More samples only where this run took fewer than it would suggest.
  f.next_step += p.samples < 4 ? std::string(" Take more samples (--samples 4) if a slow but "
                                             "healthy loop is possible.")
                               : fmt::format(" A slow but healthy loop would have moved in {} "
                                             "samples; if unsure, sample longer (--interval).",
                                             p.samples);
  return f;
}

} // namespace

SampleProgress analyze_progress(const std::vector<Sample>& samples) {
  SampleProgress p;
  p.samples = static_cast<std::uint32_t>(samples.size());
  if (samples.size() < 2) {
    p.verdict_text = "one sample: stuck or slow cannot be told (take --samples 2 or more)";
    return p;
  }
  p.seconds = samples.back().at - samples.front().at;
  add_dispatches(samples, p);
  add_queues(samples, p);
  add_threads(samples, p);
  decide(p);
  return p;
}

SampledFindings run_samples(const std::vector<Sample>& samples, const Context& context) {
  SampledFindings out;
  if (samples.empty()) {
    return out;
  }
  out.findings = run(samples.front().snapshot, context);
  if (samples.size() < 2) {
    out.progress = analyze_progress(samples);
    return out;
  }
  for (auto& f : run_pair(samples.front().snapshot, samples.back().snapshot)) {
    f.evidence.push_back(fmt::format("from samples 1 and {}, {} apart", samples.size(),
                                     seconds_text(samples.back().at - samples.front().at)));
    out.findings.push_back(std::move(f));
  }
  out.progress = analyze_progress(samples);
  for (auto& f : out.findings) {
    confirm(f, out.progress);
  }
  if (auto f = no_progress(samples, out.progress, out.findings, samples.front().snapshot.rank)) {
    out.findings.push_back(std::move(*f));
  }
  std::stable_sort(out.findings.begin(), out.findings.end(),
                   [](const Finding& a, const Finding& b) {
                     if (a.severity != b.severity) {
                       return a.severity > b.severity;
                     }
                     return a.confidence > b.confidence;
                   });
  return out;
}

} // namespace heuristics
} // namespace rocplay
