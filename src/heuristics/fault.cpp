// gpu-fault / host-fault: the program was stopped on a fault (docs/heuristics.md).
//
// Not a guess: the debugger reported the stop. The finding names the faulting wave (or host
// thread), its kernel with the usual naming and classification, the PC, the source line and the
// address where the debugger gave one, and ranks first.
#include "heuristics/analysis.hpp"
#include "rocplay/snapshot/frames.hpp"

#include <fmt/format.h>

namespace rocplay::heuristics {
namespace {

std::string kind_words(FaultKind k) {
  switch (k) {
  case FaultKind::MemoryViolation:
    return "memory violation";
  case FaultKind::Assert:
    return "assert";
  case FaultKind::IllegalInstruction:
    return "illegal instruction";
  case FaultKind::Arithmetic:
    return "arithmetic error";
  case FaultKind::BusError:
    return "bus error";
  case FaultKind::Trap:
    return "trap";
  case FaultKind::Exception:
    return "exception";
  case FaultKind::Signal:
    return "signal";
  }
  return "fault";
}

std::string_view article(std::string_view word) {
  return !word.empty() && std::string_view("aeiou").find(word[0]) != std::string_view::npos ? "an"
                                                                                            : "a";
}

std::string what_of(const Fault& f) {
  std::string what = kind_words(f.kind);
  if (!f.signal.empty()) {
    what += fmt::format(" ({}{})", f.signal, f.meaning.empty() ? "" : ", " + f.meaning);
  } else if (!f.meaning.empty()) {
    what += fmt::format(" ({})", f.meaning);
  }
  return what;
}

// The call a process raised the signal with, by si_code (0 and below: not the kernel's).
std::string sender_call(std::int32_t code) {
  switch (code) {
  case 0:
    return "kill()";
  case -1:
    return "sigqueue()";
  case -6:
    return "tgkill() (raise(), abort(), pthread_kill())";
  default:
    return fmt::format("si_code {}", code);
  }
}

bool sent_by_itself(const Fault& f, const Snapshot& s) {
  return f.sent_by_process() && f.sender_pid && s.pid && *f.sender_pid == *s.pid;
}

// A host signal that a process sent, and that is not the program's own abort(): no instruction
// of the program faulted, whatever the signal's name says.
bool sent_not_faulted(const Fault& f, const Snapshot& s) {
  if (f.on_gpu || !f.sent_by_process()) {
    return false;
  }
  return !(sent_by_itself(f, s) && f.kind == FaultKind::Assert);
}

std::string sender_words(const Fault& f, const Snapshot& s) {
  if (sent_by_itself(f, s)) {
    return fmt::format("the program itself (pid {})", *f.sender_pid);
  }
  return f.sender_pid ? fmt::format("process {}", *f.sender_pid) : std::string("a process");
}

// `SIGSEGV (Segmentation fault)`: the signal alone, for one that no instruction raised.
std::string signal_words(const Fault& f) {
  return f.meaning.empty() ? f.signal : fmt::format("{} ({})", f.signal, f.meaning);
}

std::string file_line(const std::string& file, std::optional<std::uint32_t> line) {
  if (file.empty()) {
    return {};
  }
  return line ? fmt::format("{}:{}", file, *line) : file;
}

// The C library's and the C++ runtime's own frames on the way to a fault: abort(), raise(),
// pthread_kill, __assert_fail, __cxa_throw, the unwinder. With libc's debug information installed
// they have files (`./stdlib/abort.c`), so is_system_frame() alone takes them for user code.
bool runtime_frame(const Frame& f) {
  const std::string name = short_function_name(f.function);
  static constexpr std::string_view kNames[] = {"abort",       "raise",          "__assert_fail",
                                                "__cxa_throw", "__cxa_rethrow",  "terminate",
                                                "__terminate", "__verbose_abort"};
  for (auto n : kNames) {
    if (name == n) {
      return true;
    }
  }
  return is_system_frame(f) || name.rfind("__", 0) == 0 || name.rfind("_Unwind", 0) == 0 ||
         f.file.rfind("./", 0) == 0;
}

const Frame* fault_user_frame(const HostThread& t) {
  for (const auto& f : t.frames) {
    if (!runtime_frame(f)) {
      return &f;
    }
  }
  return nullptr;
}

const Wave* faulting_wave(const Snapshot& s, const Fault& f) {
  if (f.kernel) { // cuda-gdb: the range that holds the focus block and thread
    const Wave* first = nullptr;
    for (const auto& w : s.waves) {
      if (w.dispatch != f.kernel) {
        continue;
      }
      if (!first) {
        first = &w;
      }
      if (!f.block.empty() && f.pc && w.pc == f.pc) {
        return &w;
      }
    }
    return first;
  }
  for (const auto& w : s.waves) {
    if (w.thread_id == f.thread_id) {
      return &w;
    }
  }
  return nullptr;
}

const Dispatch* dispatch_for(const Snapshot& s, const Fault& f, const Wave* w) {
  if (w) {
    if (const auto* d = s.dispatch_of(*w)) {
      return d;
    }
  }
  if (f.kernel) {
    for (const auto& d : s.dispatches) {
      if (d.dispatch_no == f.kernel) {
        return &d;
      }
    }
  }
  return nullptr;
}

std::string next_step(const Fault& f, const std::string& at) {
  const std::string where = at.empty() ? std::string("the faulting PC") : at;
  switch (f.kind) {
  case FaultKind::MemoryViolation:
    return f.on_gpu ? fmt::format(
                          "Check the index and the buffer behind the access at {}: an index past "
                          "the allocation, a freed or host pointer, a wrong stride. On AMD, rerun "
                          "with `set amdgpu precise-memory on` (rocgdb) so the PC is exact; on "
                          "NVIDIA, compute-sanitizer names the buffer.",
                          where)
                    : fmt::format("Read the access at {}: a null, freed or out-of-range pointer. "
                                  "The backtrace below shows how it got there.",
                                  where);
  case FaultKind::Assert:
    return f.on_gpu ? fmt::format("A device assert failed at {}: read its condition there, and "
                                  "the values of the faulting work-item (block and thread above).",
                                  where)
                    : fmt::format("The program aborted: read the assert or abort() call in the "
                                  "innermost frame of your code, {}, and the message it printed "
                                  "on stderr.",
                                  where);
  case FaultKind::Arithmetic:
    return fmt::format("A division by zero or an enabled float exception at {}: check the "
                       "divisor's value there.",
                       where);
  case FaultKind::IllegalInstruction:
    return fmt::format("An illegal instruction at {}: a code object built for another "
                       "architecture, a jump through a corrupt pointer, or a compiled-in trap.",
                       where);
  case FaultKind::BusError:
    return fmt::format("A misaligned or unbacked access at {}: check the pointer's alignment "
                       "and that the mapping (a truncated file, an unmapped page) still exists.",
                       where);
  case FaultKind::Exception:
    return fmt::format("A C++ exception was thrown at {}: read the throw site and its "
                       "caller; rerun without --catch throw to see whether anything catches it.",
                       where);
  case FaultKind::Trap:
  case FaultKind::Signal:
    break;
  }
  return fmt::format("Read the code at {} and the backtrace below.", where);
}

std::string next_step_sent(const Fault& f, const Snapshot& s, const std::string& at) {
  if (sent_by_itself(f, s)) {
    return fmt::format("The program sent {} to itself, from {}: read that call. A crash handler "
                       "that re-raises a signal hides the first one: look for an earlier error "
                       "in its output.",
                       f.signal, at.empty() ? std::string("the thread below") : at);
  }
  return fmt::format("Find out why {} sent {}: `ps -o pid,ppid,user,args -p {}` while it runs (a "
                     "supervisor, a watchdog, a cluster agent, or a person's `kill -{}`).",
                     sender_words(f, s), f.signal,
                     f.sender_pid ? std::to_string(*f.sender_pid) : std::string("PID"),
                     f.signal.rfind("SIG", 0) == 0 ? f.signal.substr(3) : f.signal);
}

} // namespace

std::vector<Finding> program_fault(const Snapshot& s) {
  detail::Analysis analysis(s);
  return program_fault(analysis);
}

std::vector<Finding> program_fault(detail::Analysis& analysis) {
  const Snapshot& s = analysis.snapshot();
  if (!s.fault) {
    return {};
  }
  const Fault& f = *s.fault;
  Finding out;
  out.severity = Severity::Critical;
  out.confidence = 1.0;
  nlohmann::json details = nlohmann::json::object();
  details["fault"] = {{"kind", std::string(to_string(f.kind))},
                      {"signal", f.signal},
                      {"meaning", f.meaning},
                      {"thread_id", f.thread_id},
                      {"on_gpu", f.on_gpu}};
  if (f.address) {
    details["fault"]["address"] = detail::hex(f.address);
  }
  if (f.signal_code) {
    details["fault"]["signal_code"] = *f.signal_code;
    details["fault"]["sent_by"] = f.sent_by_process() ? "process" : "kernel";
  }
  if (f.sent_by_process() && f.sender_pid) {
    details["fault"]["sender_pid"] = *f.sender_pid;
  }
  Location loc;
  loc.function = f.function;
  loc.file = f.file;
  loc.line = f.line;
  loc.pc = f.pc;
  std::string at;

  if (f.on_gpu) {
    out.id = std::string(kGpuFault);
    const Wave* w = faulting_wave(s, f);
    const Dispatch* d = dispatch_for(s, f, w);
    std::string kernel = d ? detail::kernel_label(*d) : std::string();
    if (kernel.empty() && w && !w->function.empty()) {
      kernel = w->function.str();
    }
    if (kernel.empty()) {
      kernel = f.function;
    }
    if (loc.function.empty() && w) {
      loc.function = w->function.str();
    }
    if (loc.file.empty() && w && !w->file.empty()) {
      loc.file = w->file.str();
      loc.line = w->line;
    }
    if (loc.file.empty() && loc.pc) {
      if (const auto* sl = s.source_line(*loc.pc); sl && sl->has_code) {
        loc.file = sl->file;
        loc.line = sl->line;
      }
    }
    at = file_line(loc.file, loc.line);
    // A device assert stops in the runtime's `__assert_fail`, which has no line: the frame that
    // called it is the code to read, and leads the locations (as a host fault's own frame does).
    if (const Frame* src = detail::fault_source_frame(f); src && src->level > 0) {
      Location u;
      u.function = src->function;
      u.file = src->file;
      u.line = src->line;
      u.pc = src->pc;
      out.locations.push_back(u);
      at = file_line(u.file, u.line);
    }
    out.title = fmt::format("GPU fault: {} in {}", what_of(f),
                            kernel.empty() ? std::string("a kernel") : short_function_name(kernel));
    out.summary = fmt::format(
        "The debugger stopped the program on {} {} raised by a {} of {}{}. Every other wave and "
        "host thread below was stopped at the same moment.",
        article(kind_words(f.kind)), kind_words(f.kind), f.kernel ? "CUDA thread" : "wave",
        kernel.empty() ? std::string("a kernel") : kernel, at.empty() ? "" : " at " + at);
    if (w) {
      out.evidence.push_back(fmt::format(
          "faulting {}: thread {}{}{}", f.kernel ? "thread range" : "wave", w->thread_id,
          w->target_id.empty() ? "" : fmt::format(" ({})", w->target_id.str()),
          f.lane ? fmt::format(", lane {}", *f.lane) : ""));
    } else if (!f.thread_id.empty()) {
      out.evidence.push_back(fmt::format("faulting thread {}{}", f.thread_id,
                                         f.lane ? fmt::format(", lane {}", *f.lane) : ""));
    }
    if (f.kernel) {
      out.evidence.push_back(fmt::format("CUDA focus: kernel {}, block {}, thread {}", *f.kernel,
                                         f.block.empty() ? "?" : f.block,
                                         f.thread.empty() ? "?" : f.thread));
      details["fault"]["block"] = f.block;
      details["fault"]["thread"] = f.thread;
      details["fault"]["kernel"] = *f.kernel;
    }
    if (d) {
      details["dispatch"] = detail::dispatch_json(*d, analysis.kernels());
      out.dispatches = {{d->id, detail::kernel_label(*d)}};
      if (auto line = detail::kernel_line(*d, analysis.kernels()); !line.empty()) {
        out.evidence.push_back(line);
      }
      out.evidence.push_back(fmt::format("in {}", detail::dispatch_label(*d)));
    } else if (!kernel.empty()) {
      details["kernel"] = kernel;
      out.kernel = kernel;
    }
  } else {
    out.id = std::string(kHostFault);
    const HostThread* t = nullptr;
    for (const auto& h : s.host_threads) {
      if (h.id == f.thread_id) {
        t = &h;
      }
    }
    // An abort's PC is deep in the C library: the user's own frame is where to look.
    const Frame* user = t ? fault_user_frame(*t) : nullptr;
    if (user) {
      Location u;
      u.function = user->function;
      u.file = user->file;
      u.line = user->line;
      u.pc = user->pc;
      if (u.file.empty() && user->pc) {
        if (const auto* sl = s.source_line(*user->pc)) {
          u.file = sl->file;
          u.line = sl->line;
        }
      }
      if (u.function != loc.function || u.pc != loc.pc) {
        out.locations.push_back(u);
      }
      at = u.function + (u.file.empty() ? "" : " at " + file_line(u.file, u.line));
    } else {
      at = (loc.function.empty() ? std::string("??") : loc.function) +
           (loc.file.empty() ? "" : " at " + file_line(loc.file, loc.line));
    }
    const std::string name = t && !t->name.empty() ? fmt::format(" \"{}\"", t->name) : "";
    if (sent_not_faulted(f, s)) {
      out.title =
          fmt::format("Host signal: {} sent by {}, in {}", signal_words(f), sender_words(f, s), at);
      out.summary = fmt::format(
          "The debugger stopped the program on {}, which {} sent with {}: no instruction of the "
          "program faulted, so there is no faulting address. It arrived in host thread {}{}; the "
          "other threads below were stopped at the same moment.",
          f.signal, sender_words(f, s), sender_call(*f.signal_code), f.thread_id, name);
    } else {
      out.title = fmt::format("Host fault: {} in {}", what_of(f), at);
      out.summary = fmt::format("The debugger stopped the program on {} {} in host thread {}{}; "
                                "the other threads below were stopped at the same moment.",
                                article(kind_words(f.kind)), kind_words(f.kind), f.thread_id, name);
    }
    out.evidence.push_back(fmt::format("faulting thread {}{}{}", f.thread_id, name,
                                       t && t->lwp ? fmt::format(" (LWP {})", *t->lwp) : ""));
    if (t) {
      std::vector<std::string> frames;
      for (std::size_t i = 0; i < t->frames.size() && i < 6; ++i) {
        frames.push_back(frame_where(t->frames[i]));
      }
      if (!frames.empty()) {
        out.evidence.push_back(fmt::format("stack: {}", fmt::join(frames, " <- ")));
      }
    }
  }
  out.evidence.insert(out.evidence.begin(),
                      fmt::format("stopped on {}{}",
                                  sent_not_faulted(f, s) ? signal_words(f) : what_of(f),
                                  loc.pc ? fmt::format(" at pc {:#x}", *loc.pc) : ""));
  if (f.address) {
    out.evidence.push_back(fmt::format("faulting address {:#x}", *f.address));
  }
  if (f.sent_by_process()) {
    out.evidence.push_back(fmt::format("{} sent by {} with {}, not raised by a faulting "
                                       "instruction",
                                       f.signal, sender_words(f, s), sender_call(*f.signal_code)));
  }
  if (!loc.function.empty() || loc.pc) {
    out.evidence.push_back(
        fmt::format("where: {}{}", loc.function.empty() ? std::string("??") : loc.function,
                    loc.file.empty() ? "" : " at " + file_line(loc.file, loc.line)));
  }
  if (f.on_gpu && f.frames.size() > 1) { // the wave's or CUDA thread's own stack
    std::vector<std::string> frames;
    for (std::size_t i = 0; i < f.frames.size() && i < 6; ++i) {
      frames.push_back(frame_where(f.frames[i]));
    }
    out.evidence.push_back(fmt::format("stack: {}", fmt::join(frames, " <- ")));
  }
  if (!f.detail.empty()) {
    std::size_t pos = 0;
    while (pos < f.detail.size()) {
      auto nl = f.detail.find('\n', pos);
      out.evidence.push_back("debugger: " + f.detail.substr(pos, nl == std::string::npos
                                                                     ? std::string::npos
                                                                     : nl - pos));
      pos = nl == std::string::npos ? f.detail.size() : nl + 1;
    }
  }
  // The frame to read (a host fault's own code, a device assert's caller) leads, then the stop's
  // frame; a stop frame that is the code itself stands alone.
  if (out.locations.empty()) {
    out.locations.insert(out.locations.begin(), loc);
  } else {
    out.locations.push_back(loc);
  }
  out.next_step = sent_not_faulted(f, s) ? next_step_sent(f, s, at) : next_step(f, at);
  out.details = std::move(details);
  return {std::move(out)};
}

} // namespace rocplay::heuristics
