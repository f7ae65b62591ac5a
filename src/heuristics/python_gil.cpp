// A CPython thread that holds the GIL while it blocks (docs/heuristics.md, python-gil-held).
//
// The Python frames read from the interpreter's memory (rocplay/snapshot/python_stacks.hpp) say
// which thread holds the GIL. When that thread's innermost native frames are a blocking wait (a
// lock, a sleep, a poll, a read) or a GPU runtime call, no other Python thread can run a line until
// it returns: a native call made without releasing the GIL (ctypes.PyDLL, an extension that forgot
// Py_BEGIN_ALLOW_THREADS, a CUDA/HIP call made under the GIL) stops the whole interpreter.
#include "heuristics/common.hpp"
#include "rocplay/snapshot/frames.hpp"

#include <fmt/format.h>

#include <array>

namespace rocplay::heuristics {
namespace {

// The innermost native frames' calls that wait (glibc's names, with and without __GI_ prefixes).
constexpr std::array<std::string_view, 24> kWaits = {"futex",
                                                     "lll_lock",
                                                     "pthread_mutex_lock",
                                                     "pthread_cond_wait",
                                                     "pthread_cond_timedwait",
                                                     "pthread_cond_clockwait",
                                                     "pthread_join",
                                                     "sem_wait",
                                                     "sem_timedwait",
                                                     "sem_clockwait",
                                                     "do_futex_wait",
                                                     "nanosleep",
                                                     "clock_nanosleep",
                                                     "sleep",
                                                     "usleep",
                                                     "poll",
                                                     "ppoll",
                                                     "select",
                                                     "pselect",
                                                     "epoll_wait",
                                                     "read",
                                                     "recv",
                                                     "ioctl",
                                                     "accept"};

std::string_view strip_prefixes(std::string_view fn) {
  for (std::string_view p : {"__GI___", "__GI_", "___", "__", "_"}) {
    if (fn.starts_with(p)) {
      return fn.substr(p.size());
    }
  }
  return fn;
}

// The wait or GPU call the thread is in, before its first Python frame; empty when none.
std::string blocking_frame(const HostThread& t) {
  for (const auto& f : t.frames) {
    if (f.python) {
      break;
    }
    const std::string_view fn = strip_prefixes(f.function);
    for (auto w : kWaits) {
      if (fn.starts_with(w)) {
        return frame_where(f);
      }
    }
    const std::string name = short_function_name(f.function);
    for (std::string_view gpu : {"cuda", "cu", "hip", "hsa", "nccl", "rccl"}) {
      if (name.starts_with(gpu) && name.size() > gpu.size() &&
          std::isupper(static_cast<unsigned char>(name[gpu.size()])) != 0) {
        return frame_where(f);
      }
    }
  }
  return {};
}

bool has_python(const HostThread& t) {
  for (const auto& f : t.frames) {
    if (f.python) {
      return true;
    }
  }
  return false;
}

const Frame* innermost_python(const HostThread& t) {
  for (const auto& f : t.frames) {
    if (f.python) {
      return &f;
    }
  }
  return nullptr;
}

} // namespace

std::vector<Finding> python_gil_held(const Snapshot& s) {
  std::vector<Finding> out;
  const HostThread* holder = nullptr;
  std::size_t others = 0;
  for (const auto& t : s.host_threads) {
    if (t.holds_gil) {
      holder = &t;
    } else if (has_python(t)) {
      ++others;
    }
  }
  if (holder == nullptr || others == 0) {
    return out;
  }
  const std::string wait = blocking_frame(*holder);
  if (wait.empty()) {
    return out;
  }
  const Frame* line = innermost_python(*holder);
  Finding f;
  f.id = std::string(kPythonGilHeld);
  f.severity = Severity::Warning;
  f.confidence = 0.6;
  const std::string where = line != nullptr ? frame_where(*line) : std::string("?");
  f.title = fmt::format("thread {} holds the GIL while it blocks in {}: every other Python thread "
                        "waits",
                        holder->id, wait);
  f.evidence.push_back(
      fmt::format("thread {}{} (LWP {}) holds the GIL, blocked in {} called from {}", holder->id,
                  holder->name.empty() ? "" : " \"" + holder->name + "\"", holder->lwp.value_or(0),
                  wait, where));
  f.evidence.push_back(
      fmt::format("{} other Python thread(s) cannot run a line until it returns", others));
  if (line != nullptr) {
    Location l;
    l.function = line->function;
    l.file = line->file;
    l.line = line->line;
    f.locations.push_back(std::move(l));
  }
  f.details = {{"thread", holder->id},
               {"lwp", holder->lwp.value_or(0)},
               {"blocked_in", wait},
               {"python", where},
               {"other_python_threads", others}};
  f.summary = fmt::format(
      "A native call made while holding the GIL blocks ({} at {}); the interpreter runs no other "
      "Python thread meanwhile. One sample can catch a short call: the same thread holding the "
      "GIL in the same wait across samples is the hang.",
      wait, where);
  f.next_step = "Release the GIL around the blocking call (Py_BEGIN_ALLOW_THREADS in a C "
                "extension, ctypes.CDLL rather than PyDLL, torch calls off the GIL), or move the "
                "wait off the thread the others need.";
  out.push_back(std::move(f));
  return out;
}

} // namespace rocplay::heuristics
