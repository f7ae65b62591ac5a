// Python frames in host stacks (include/rocplay/snapshot/python_stacks.hpp).
#include "rocplay/snapshot/python_stacks.hpp"

#include "rocplay/mi/value.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>

namespace rocplay::snapshot {

namespace {

constexpr std::string_view kStacksPrefix = "python stacks ";
constexpr std::string_view kThreadPrefix = "python thread ";
constexpr std::size_t kMaxThreads = 4096;
constexpr std::size_t kMaxText = 1024;
constexpr std::size_t kMaxNotes = 16;
constexpr std::size_t kMaxHeldLocks = 16; // per frame

// A recording's text is untrusted: valid UTF-8, bounded, on one line.
std::string clean(const std::string& s) {
  std::string out = mi::lossy_utf8(mi::utf8_prefix(s, kMaxText));
  for (auto& c : out) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7F) {
      c = '?';
    }
  }
  return out;
}

std::string field(const nlohmann::json& j, const char* key) {
  if (auto it = j.find(key); it != j.end() && it->is_string()) {
    return clean(it->get_ref<const std::string&>());
  }
  return {};
}

// What a thread of a build without the GIL waits on, from the native frames gdb named: a
// stop-the-world pause (the interpreter's own, for the GC and the like) or CPython's parking lot,
// where a PyMutex (threading.Lock, Event, a per-object lock) parks its waiters
// (Python/parking_lot.c, Python/lock.c, Python/pystate.c of 3.13+).
enum class NoGilWait { None, StopTheWorld, ParkingLot };
NoGilWait no_gil_wait(const HostThread& t) {
  NoGilWait found = NoGilWait::None;
  for (const auto& f : t.frames) {
    if (f.python) {
      break; // the C call it blocks in lies inside its innermost Python frame
    }
    if (f.function == "tstate_wait_attach" || f.function == "_PyThreadState_Suspend" ||
        f.function.starts_with("_PyEval_StopTheWorld") || f.function == "stop_the_world") {
      return NoGilWait::StopTheWorld;
    }
    if (f.function == "_PyParkingLot_Park" || f.function == "_PySemaphore_Wait" ||
        f.function == "_PyMutex_LockTimed" || f.function == "PyMutex_Lock") {
      found = NoGilWait::ParkingLot;
    }
  }
  return found;
}

} // namespace

std::vector<std::string> python_notes(const PythonStacks& s) {
  std::vector<std::string> out;
  nlohmann::json head = {
      {"version", s.version}, {"gil_known", s.gil_known}, {"threads", s.threads.size()}};
  if (s.free_threaded) {
    head["free_threaded"] = true;
  }
  if (s.gil_disabled) {
    head["gil_disabled"] = true;
  }
  if (s.seconds > 0) {
    head["ms"] = std::round(s.seconds * 1e6) / 1e3;
  }
  if (!s.notes.empty()) {
    head["notes"] = s.notes;
  }
  // Replace, not throw: what the target's memory gave is made valid UTF-8 before it gets here,
  // but a note must never take the run down.
  out.push_back(std::string(kStacksPrefix) +
                head.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  for (const auto& t : s.threads) {
    nlohmann::json frames = nlohmann::json::array();
    for (std::size_t i = 0; i < t.frames.size() && i < kMaxNoteFrames; ++i) {
      const auto& f = t.frames[i];
      nlohmann::json frame = {f.function, f.file,
                              f.line ? nlohmann::json(*f.line) : nlohmann::json(), f.entry ? 1 : 0};
      if (!f.held_locks.empty()) {
        frame.push_back(f.held_locks);
      }
      frames.push_back(std::move(frame));
    }
    nlohmann::json j = {{"lwp", t.lwp}, {"frames", std::move(frames)}};
    if (t.holds_gil) {
      j["gil"] = true;
    }
    if (t.waits_for_lock) {
      j["lock_wait"] = *t.waits_for_lock;
    }
    if (!t.note.empty()) {
      j["note"] = t.note;
    } else if (t.frames.size() > kMaxNoteFrames) {
      j["note"] = fmt::format("stack cut at {} Python frames", kMaxNoteFrames);
    }
    out.push_back(std::string(kThreadPrefix) +
                  j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  }
  return out;
}

bool PythonNoteReader::take(std::string_view note) {
  const bool head = note.starts_with(kStacksPrefix);
  if (!head && !note.starts_with(kThreadPrefix)) {
    return false;
  }
  const auto j = nlohmann::json::parse(
      note.substr(head ? kStacksPrefix.size() : kThreadPrefix.size()), nullptr, false);
  if (!j.is_object()) {
    return true; // ours, but not readable
  }
  if (head) {
    // A sample holds one read; a second header starts it over.
    stacks_ = PythonStacks{};
    seen_ = true;
    stacks_.version = field(j, "version");
    if (auto it = j.find("ms"); it != j.end() && it->is_number() && it->get<double>() >= 0) {
      stacks_.seconds = std::min(it->get<double>(), 1e9) / 1e3;
    }
    if (auto it = j.find("gil_known"); it != j.end() && it->is_boolean()) {
      stacks_.gil_known = it->get<bool>();
    }
    if (auto it = j.find("free_threaded"); it != j.end() && it->is_boolean()) {
      stacks_.free_threaded = it->get<bool>();
    }
    if (auto it = j.find("gil_disabled"); it != j.end() && it->is_boolean()) {
      stacks_.gil_disabled = it->get<bool>();
    }
    if (auto it = j.find("notes"); it != j.end() && it->is_array()) {
      for (const auto& n : *it) {
        if (n.is_string() && stacks_.notes.size() < kMaxNotes) {
          stacks_.notes.push_back(clean(n.get_ref<const std::string&>()));
        }
      }
    }
    return true;
  }
  if (!seen_ || stacks_.threads.size() >= kMaxThreads) {
    return true;
  }
  PythonThread t;
  if (auto it = j.find("lwp"); it != j.end() && it->is_number_unsigned()) {
    t.lwp = it->get<std::uint64_t>();
  }
  if (auto it = j.find("gil"); it != j.end() && it->is_boolean()) {
    t.holds_gil = it->get<bool>();
  }
  t.note = field(j, "note");
  if (auto it = j.find("lock_wait"); it != j.end() && it->is_number_unsigned()) {
    t.waits_for_lock = it->get<std::uint64_t>();
  }
  if (auto it = j.find("frames"); it != j.end() && it->is_array()) {
    for (const auto& f : *it) {
      if (t.frames.size() >= kMaxNoteFrames) {
        break;
      }
      if (!f.is_array() || f.size() < 3 || !f[0].is_string() || !f[1].is_string()) {
        continue;
      }
      PythonFrame pf;
      pf.function = clean(f[0].get_ref<const std::string&>());
      pf.file = clean(f[1].get_ref<const std::string&>());
      if (f[2].is_number_unsigned() && f[2].get<std::uint64_t>() <= UINT32_MAX) {
        pf.line = static_cast<std::uint32_t>(f[2].get<std::uint64_t>());
      }
      pf.entry = f.size() > 3 && f[3].is_number_integer() && f[3].get<std::int64_t>() != 0;
      if (f.size() > 4 && f[4].is_array()) {
        for (const auto& lock : f[4]) {
          if (lock.is_number_unsigned() && pf.held_locks.size() < kMaxHeldLocks) {
            pf.held_locks.push_back(lock.get<std::uint64_t>());
          }
        }
      }
      t.frames.push_back(std::move(pf));
    }
  }
  stacks_.threads.push_back(std::move(t));
  return true;
}

bool is_eval_loop_frame(const Frame& f) {
  return !f.python && (f.function == "_PyEval_EvalFrameDefault" ||
                       f.function == "PyEval_EvalFrameEx" || f.function == "_PyEval_EvalFrame");
}

void merge_python_frames(HostThread& thread, const PythonThread& python) {
  thread.holds_gil = python.holds_gil;
  thread.python_note = python.note;
  thread.python_lock_wait = python.waits_for_lock;
  if (python.frames.empty()) {
    return;
  }
  // Groups: the Python frames of one eval-loop call each, innermost first.
  std::vector<std::vector<Frame>> groups(1);
  for (const auto& pf : python.frames) {
    Frame f;
    f.function = pf.function;
    f.file = pf.file;
    f.line = pf.line;
    f.python = true;
    f.held_locks = pf.held_locks;
    groups.back().push_back(std::move(f));
    if (pf.entry) {
      groups.emplace_back();
    }
  }
  if (groups.back().empty()) {
    groups.pop_back();
  }
  std::vector<Frame> out;
  out.reserve(thread.frames.size() + python.frames.size());
  std::size_t next = 0;
  for (auto& f : thread.frames) {
    if (is_eval_loop_frame(f) && next < groups.size()) {
      for (auto& g : groups[next]) {
        out.push_back(std::move(g));
      }
      ++next;
      continue;
    }
    out.push_back(std::move(f));
  }
  for (; next < groups.size(); ++next) {
    for (auto& g : groups[next]) {
      out.push_back(std::move(g));
    }
  }
  for (std::size_t i = 0; i < out.size(); ++i) {
    out[i].level = static_cast<std::uint32_t>(i);
  }
  thread.frames = std::move(out);
}

void PythonNoteReader::apply(Snapshot& s) const {
  if (!seen_) {
    return;
  }
  const PythonStacks& p = stacks_;
  std::size_t matched = 0, parked = 0, stopped = 0;
  std::vector<std::string> unmatched;
  const HostThread* gil = nullptr;
  for (const auto& pt : p.threads) {
    auto it = std::find_if(s.host_threads.begin(), s.host_threads.end(),
                           [&](const HostThread& h) { return h.lwp && *h.lwp == pt.lwp; });
    if (it == s.host_threads.end() || pt.lwp == 0) {
      if (unmatched.size() < 8) {
        unmatched.push_back(std::to_string(pt.lwp));
      }
      continue;
    }
    merge_python_frames(*it, pt);
    ++matched;
    if (p.gil_disabled) {
      const NoGilWait w = no_gil_wait(*it);
      parked += w == NoGilWait::ParkingLot ? 1 : 0;
      stopped += w == NoGilWait::StopTheWorld ? 1 : 0;
    }
    if (pt.holds_gil) {
      gil = &*it;
    }
  }
  std::string line = fmt::format(
      "python: CPython {}{}, {} thread{} with Python frames", p.version.empty() ? "?" : p.version,
      p.free_threaded ? " (free-threaded)" : "", matched, matched == 1 ? "" : "s");
  if (p.gil_disabled) {
    // No GIL to hold or wait for: say what the waiting threads wait on instead.
    line += "; no GIL in this build: a waiting thread waits on the lock it needs (a PyMutex, in "
            "CPython's parking lot) or on a stop-the-world pause";
    if (parked + stopped > 0) {
      std::vector<std::string> parts;
      if (parked > 0) {
        parts.push_back(fmt::format("{} in the parking lot", parked));
      }
      if (stopped > 0) {
        parts.push_back(fmt::format("{} in a stop-the-world pause", stopped));
      }
      line += fmt::format(" ({})", fmt::join(parts, ", "));
    }
  } else if (gil != nullptr) {
    line += fmt::format("; thread {} (LWP {}) holds the GIL", gil->id, *gil->lwp);
  } else if (p.gil_known) {
    line += "; no thread holds the GIL";
  }
  if (!unmatched.empty()) {
    line += fmt::format("; {} Python thread state{} with no host thread (LWP {})",
                        p.threads.size() - matched, p.threads.size() - matched == 1 ? "" : "s",
                        fmt::join(unmatched, ", "));
  }
  s.notes.push_back(std::move(line));
  for (const auto& n : p.notes) {
    s.notes.push_back("python: " + n);
  }
}

} // namespace rocplay::snapshot
