// rocplay's own stop of a host process (rocplay/capture/capture.hpp): every thread seized,
// interrupted, copied and let go, with /proc read before the stop so the stop itself is syscalls
// only.
#include "capture/internal.hpp"
#include "rocplay/capture/capture.hpp"
#include "rocplay/core/error.hpp"
#include "rocplay/core/proc_file.hpp"
#include "rocplay/core/process_memory.hpp"
#include "rocplay/core/procfs.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <exception>
#include <thread>
#include <unordered_set>

#if defined(__linux__) && defined(__x86_64__)
#include <dirent.h>
#include <elf.h>
#include <fcntl.h>
#include <sched.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#endif

namespace rocplay::capture {

#if defined(__linux__) && defined(__x86_64__)

bool supported() {
  return true;
}

namespace {

using Clock = std::chrono::steady_clock;

constexpr std::size_t kMaxLinkMaps = 4096;
constexpr std::size_t kMaxNameBytes = 4096;
constexpr std::uint64_t kRedZone = 128;
constexpr std::size_t kFutexWindow = 64;
constexpr std::uint64_t kTcbWindow = 4096; // struct pthread: 2,368 bytes in glibc 2.36
constexpr std::uint64_t kMaxRuntimeDataBytes = 1 << 20;
constexpr std::size_t kIovMax = 1024; // IOV_MAX on Linux
constexpr std::size_t kMaxDynamicBytes = 64 * 1024;
constexpr std::size_t kMaxVdsoBytes = 64 * 1024;

std::string pid_str(std::int64_t pid) {
  return std::to_string(pid);
}

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

using Memory = process::MemoryReader;

// The thread ids in /proc/PID/task, into `out` (cleared first); false when the directory is gone.
bool list_tasks(pid_t pid, std::vector<pid_t>& out) {
  out.clear();
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%d/task", static_cast<int>(pid));
  DIR* d = ::opendir(path);
  if (d == nullptr) {
    return false;
  }
  while (const dirent* e = ::readdir(d)) {
    char* end = nullptr;
    const long tid = std::strtol(e->d_name, &end, 10);
    if (end != e->d_name && *end == '\0' && tid > 0) {
      out.push_back(static_cast<pid_t>(tid));
    }
  }
  ::closedir(d);
  return true;
}

std::string trim_newline(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\0')) {
    s.pop_back();
  }
  return s;
}

// A thread's state letter from /proc/TID/stat ('?' when unreadable).
char thread_state(pid_t tid) {
  const auto st = process::read_stat(tid);
  return st ? st->state : '?';
}

// --- the dynamic linker's list, copied while the target runs ------------------------------------

struct Auxv {
  std::uint64_t phdr = 0;
  std::uint64_t phnum = 0;
  std::uint64_t phent = 0;
  std::uint64_t sysinfo_ehdr = 0;
  std::uint64_t base = 0; // the dynamic linker's load address
};

Auxv parse_auxv(const std::string& text) {
  Auxv a;
  for (std::size_t i = 0; i + 16 <= text.size(); i += 16) {
    std::uint64_t type = 0;
    std::uint64_t value = 0;
    std::memcpy(&type, text.data() + i, 8);
    std::memcpy(&value, text.data() + i + 8, 8);
    if (type == AT_NULL) {
      break;
    }
    if (type == AT_PHDR) {
      a.phdr = value;
    } else if (type == AT_PHNUM) {
      a.phnum = value;
    } else if (type == AT_PHENT) {
      a.phent = value;
    } else if (type == AT_SYSINFO_EHDR) {
      a.sysinfo_ehdr = value;
    } else if (type == AT_BASE) {
      a.base = value;
    }
  }
  return a;
}

// Copies `size` bytes at `address` into `out` as one region; false when not all of it was read.
bool copy_exact(Memory& mem, std::uint64_t address, std::size_t size, std::vector<Region>& out) {
  Region r;
  r.address = address;
  r.bytes.resize(size);
  if (!mem.read(address, r.bytes.data(), size)) {
    return false;
  }
  out.push_back(std::move(r));
  return true;
}

// The NUL-terminated string at `address` (the NUL included), read a page at a time so that a
// string ending just before unmapped memory still reads; empty when unreadable or longer than
// kMaxNameBytes.
std::string read_c_string(Memory& mem, std::uint64_t address) {
  std::string out;
  char buf[4096];
  std::uint64_t at = address;
  while (out.size() < kMaxNameBytes) {
    const std::size_t to_page = 4096 - (at & 4095);
    const std::size_t want = std::min(to_page, kMaxNameBytes - out.size());
    const std::size_t got = mem.read_some(at, buf, want);
    if (got == 0) {
      return {};
    }
    const void* nul = std::memchr(buf, '\0', got);
    if (nul != nullptr) {
      out.append(buf, static_cast<const char*>(nul) - buf + 1);
      return out;
    }
    out.append(buf, got);
    at += got;
  }
  return {};
}

// r_debug (struct r_debug_extended from glibc 2.35: r_next at 40 when r_version >= 2), each
// link_map's first five fields and name, and the executable's dynamic section.
std::vector<Region> copy_linker_list(Memory& mem, const std::string& auxv_text,
                                     std::vector<std::string>& warnings) {
  std::vector<Region> out;
  const Auxv aux = parse_auxv(auxv_text);
  auto warn = [&](const std::string& why) {
    warnings.push_back("the core lacks the list of shared libraries: " + why);
  };
  if (aux.phdr == 0 || aux.phnum == 0 || aux.phnum > 4096 ||
      (aux.phent != 0 && aux.phent != sizeof(Elf64_Phdr))) {
    warn("the auxiliary vector names no usable program headers");
    return out;
  }
  std::vector<Elf64_Phdr> phdrs(aux.phnum);
  if (!mem.read(aux.phdr, phdrs.data(), phdrs.size() * sizeof(Elf64_Phdr))) {
    warn(fmt::format("the program headers at {:#x} are unreadable", aux.phdr));
    return out;
  }
  const Elf64_Phdr* pt_phdr = nullptr;
  const Elf64_Phdr* pt_dynamic = nullptr;
  for (const auto& p : phdrs) {
    if (p.p_type == PT_PHDR) {
      pt_phdr = &p;
    } else if (p.p_type == PT_DYNAMIC) {
      pt_dynamic = &p;
    }
  }
  if (pt_dynamic == nullptr) {
    return out; // statically linked: no list to copy
  }
  if (pt_phdr == nullptr) {
    warn("the executable has no PT_PHDR, so its load address is unknown");
    return out;
  }
  const std::uint64_t bias = aux.phdr - pt_phdr->p_vaddr;
  const std::uint64_t dyn_addr = bias + pt_dynamic->p_vaddr;
  const std::size_t dyn_size =
      static_cast<std::size_t>(std::min<std::uint64_t>(pt_dynamic->p_memsz, kMaxDynamicBytes)) /
      sizeof(Elf64_Dyn) * sizeof(Elf64_Dyn);
  Region dyn;
  dyn.address = dyn_addr;
  dyn.bytes.resize(dyn_size);
  dyn.bytes.resize(mem.read_some(dyn_addr, dyn.bytes.data(), dyn_size) / sizeof(Elf64_Dyn) *
                   sizeof(Elf64_Dyn));
  if (dyn.bytes.empty()) {
    warn(fmt::format("the dynamic section at {:#x} is unreadable", dyn_addr));
    return out;
  }
  std::uint64_t r_debug = 0;
  for (std::size_t i = 0; i + sizeof(Elf64_Dyn) <= dyn.bytes.size(); i += sizeof(Elf64_Dyn)) {
    Elf64_Dyn d;
    std::memcpy(&d, dyn.bytes.data() + i, sizeof d);
    if (d.d_tag == DT_NULL) {
      break;
    }
    if (d.d_tag == DT_DEBUG) {
      r_debug = d.d_un.d_ptr;
    }
  }
  out.push_back(std::move(dyn));
  if (r_debug == 0) {
    warn("the executable's DT_DEBUG is 0 (the dynamic linker has not filled it in)");
    return out;
  }
  std::unordered_set<std::uint64_t> seen;
  std::size_t maps = 0;
  // One r_debug per link-map namespace (dlmopen), chained by r_next.
  for (int ns = 0; ns < 16 && r_debug != 0; ++ns) {
    std::uint64_t rd[6] = {}; // r_version, r_map, r_brk, r_state, r_ldbase, r_next
    if (!mem.read(r_debug, rd, 40)) {
      warn(fmt::format("r_debug at {:#x} is unreadable", r_debug));
      return out;
    }
    const auto version = static_cast<std::int32_t>(rd[0] & 0xffffffffu);
    const bool extended = version >= 2 && mem.read(r_debug + 40, &rd[5], 8);
    copy_exact(mem, r_debug, extended ? 48 : 40, out);
    std::uint64_t lm = rd[1];
    while (lm != 0) {
      if (maps == kMaxLinkMaps) {
        warnings.push_back(
            fmt::format("the list of shared libraries stops after {} entries", maps));
        return out;
      }
      if (!seen.insert(lm).second) {
        warnings.push_back(
            fmt::format("the list of shared libraries loops back to {:#x}; cut there", lm));
        break;
      }
      std::uint64_t fields[5] = {}; // l_addr, l_name, l_ld, l_next, l_prev
      if (!mem.read(lm, fields, sizeof fields)) {
        warnings.push_back(
            fmt::format("the list of shared libraries holds an unreadable entry at {:#x}", lm));
        break;
      }
      ++maps;
      Region r;
      r.address = lm;
      r.bytes.assign(reinterpret_cast<const char*>(fields), sizeof fields);
      out.push_back(std::move(r));
      if (fields[1] != 0) {
        Region name;
        name.address = fields[1];
        name.bytes = read_c_string(mem, fields[1]);
        if (!name.bytes.empty()) {
          out.push_back(std::move(name));
        }
      }
      lm = fields[3];
    }
    r_debug = extended ? rd[5] : 0;
  }
  return out;
}

// --- the stop ------------------------------------------------------------------------------------

// Seized: traced, not yet seen stopped. Stopped: in a ptrace-stop, to be detached. Unstoppable:
// seized and interrupted, but in an uninterruptible wait (state D, a driver call) past
// kUninterruptibleGrace: the capture goes on without holding it, and the kernel lets it go when
// the capturing thread ends. Dying: killed while traced (its PTRACE_DETACH failed with ESRCH): its
// exit is this tracer's to collect, or its parent could never reap the process. Gone: let go, or
// exited and collected.
enum class HeldState { Seized, Stopped, Unstoppable, Dying, Gone };

// How long the other threads are held waiting for one in state D before the capture goes on
// without it. Short waits in D (a page read from disk) end well within it.
constexpr std::chrono::milliseconds kUninterruptibleGrace{100};

struct Held {
  pid_t tid = 0;
  HeldState state = HeldState::Seized;
  int pending_signal = 0;
  bool leader = false; // the thread-group leader
};

// Every thread seized so far. Whatever way the capture ends, release() (or the destructor) lets
// each one go: a stopped thread is detached at once, one not yet seen stopped is waited for (a
// PTRACE_DETACH needs the tracee in a ptrace-stop) for at most a grace period, and one killed
// meanwhile is waited for until its exit is collected.
class Holder {
public:
  // `parent_of_target`: this process is the target's parent (a launched program), so the leader's
  // exit status is left for it to reap.
  // `still_traced` receives, at each release, the threads it could not let go.
  Holder(std::size_t expected, bool parent_of_target, std::vector<pid_t>& still_traced)
      : parent_of_target_(parent_of_target), still_traced_(still_traced) {
    held_.reserve(expected + 16);
  }
  // A thread still not stopped after the grace is let go by the kernel when the capturing thread
  // ends (take() runs the stop in a thread of its own for that).
  ~Holder() { release(std::chrono::milliseconds(100)); }
  Holder(const Holder&) = delete;
  Holder& operator=(const Holder&) = delete;

  std::vector<Held>& threads() { return held_; }

  // Polls each seized thread not yet seen stopped (waitpid WNOHANG) until all are, or
  // `deadline`. From kUninterruptibleGrace on, a thread still not stopped and in state D is given
  // up as Unstoppable. Returns whether every one was seen stopped, gone or given up.
  bool wait_stopped(Clock::time_point deadline) {
    const auto give_up_from = Clock::now() + kUninterruptibleGrace;
    for (int pass = 0;; ++pass) {
      const bool give_up = Clock::now() >= give_up_from;
      bool pending = false;
      for (auto& h : held_) {
        if (h.state == HeldState::Seized && !poll(h)) {
          if (give_up && thread_state(h.tid) == 'D') {
            h.state = HeldState::Unstoppable;
          } else {
            pending = true;
          }
        }
      }
      if (!pending) {
        return true;
      }
      if (Clock::now() >= deadline) {
        return false;
      }
      if (pass < 20) {
        ::sched_yield();
      } else {
        timespec ts{0, 50'000};
        ::nanosleep(&ts, nullptr);
      }
    }
  }

  // Lets every thread go; returns how many are still traced after `grace`: never seen stopped
  // (they run on, and the kernel lets them go when this process exits) or killed and not yet
  // collected.
  std::size_t release(std::chrono::milliseconds grace) {
    // A thread seized and not yet interrupted (an exception between the two) would run on traced,
    // and stop at its next signal with no tracer waiting: interrupt it too (a second interrupt of
    // one already interrupted changes nothing).
    for (auto& h : held_) {
      if (h.state == HeldState::Seized) {
        ::ptrace(PTRACE_INTERRUPT, h.tid, nullptr, nullptr);
      }
    }
    const auto deadline = Clock::now() + grace;
    for (;;) {
      std::size_t left = 0;
      for (auto& h : held_) {
        // An unstoppable thread that stopped after all is detached like the others; one still in
        // its wait is not waited for.
        if (h.state == HeldState::Seized || h.state == HeldState::Dying ||
            h.state == HeldState::Unstoppable) {
          poll(h);
        }
        if (h.state == HeldState::Stopped) {
          const long sig = h.pending_signal;
          const bool ok =
              ::ptrace(PTRACE_DETACH, h.tid, nullptr, reinterpret_cast<void*>(sig)) == 0;
          // ESRCH: killed meanwhile (SIGKILL reaches a traced thread too).
          h.state = ok || errno != ESRCH ? HeldState::Gone : HeldState::Dying;
        }
        if (h.state == HeldState::Seized || h.state == HeldState::Dying) {
          ++left;
        }
      }
      if (left == 0 || Clock::now() >= deadline) {
        still_traced_.clear();
        for (const auto& h : held_) {
          if (h.state == HeldState::Seized || h.state == HeldState::Dying ||
              h.state == HeldState::Unstoppable) {
            still_traced_.push_back(h.tid);
          }
        }
        return left;
      }
      timespec ts{0, 200'000};
      ::nanosleep(&ts, nullptr);
    }
  }

private:
  // One waitpid WNOHANG of a seized or dying thread; true once it is stopped or gone.
  bool poll(Held& h) const {
    if (h.leader && parent_of_target_) {
      // The leader's exit is this process's to reap as the parent, elsewhere: look, don't take.
      siginfo_t info{};
      int r;
      do {
        r = ::waitid(P_PID, static_cast<id_t>(h.tid), &info,
                     WEXITED | WSTOPPED | WNOHANG | WNOWAIT | __WALL);
      } while (r < 0 && errno == EINTR);
      if (r == 0 && info.si_pid == 0) {
        return false;
      }
      if (r < 0 || info.si_code == CLD_EXITED || info.si_code == CLD_KILLED ||
          info.si_code == CLD_DUMPED) {
        h.state = HeldState::Gone;
        return true;
      }
    }
    int st = 0;
    pid_t r;
    do {
      r = ::waitpid(h.tid, &st, __WALL | WNOHANG);
    } while (r < 0 && errno == EINTR);
    if (r == 0) {
      return false;
    }
    // ECHILD: gone (collected with its thread group). An exit: collected now (a tracer's wait of
    // a leader it is not the parent of hands the exit on to the parent).
    if (r < 0 || WIFEXITED(st) || WIFSIGNALED(st)) {
      h.state = HeldState::Gone;
      return true;
    }
    if (WIFSTOPPED(st)) {
      if ((st >> 16) != PTRACE_EVENT_STOP) {
        // A signal-delivery-stop met before the interrupt's stop: the signal goes back on detach.
        h.pending_signal = WSTOPSIG(st);
      }
      h.state = HeldState::Stopped;
      return true;
    }
    return false;
  }

  std::vector<Held> held_;
  bool parent_of_target_;
  std::vector<pid_t>& still_traced_;
};

std::string ptrace_denied_why(pid_t pid, int err) {
  std::string why = std::strerror(err);
  const auto status = process::read_status(pid);
  if (status && status->tracer_pid.value_or(0) > 0) {
    const auto tracer = process::read_status(*status->tracer_pid);
    why += fmt::format("; another tracer holds it: pid {} ({})", *status->tracer_pid,
                       tracer ? tracer->name : std::string("?"));
  }
  return why;
}

// The stack to copy for a thread whose stack pointer is `sp`: from the red zone below it up to
// the end of its mapping, at most `cap` bytes. False when `sp` is in no mapping of `maps`.
bool stack_range(const std::vector<detail::MapEntry>& maps, std::uint64_t sp, std::uint64_t cap,
                 detail::Range& out) {
  const long i = detail::find_mapping(maps, sp);
  if (i < 0) {
    return false;
  }
  const auto& m = maps[static_cast<std::size_t>(i)];
  const std::uint64_t from = sp - m.start > kRedZone ? sp - kRedZone : m.start;
  out.start = from;
  out.end = std::min(m.end, from + cap);
  return true;
}

// Target memory copied in the stop, into one buffer prepared before it (so the stop neither
// allocates nor faults in fresh pages per thread: 1,000 small stacks cost 4 ms that way). The
// regions are made from it after the stop.
struct Copied {
  std::vector<detail::Range> ranges; // what was read: a range read in part is cut to that part
  std::vector<std::size_t> offsets;  // of each range's bytes in `buffer`
  std::string buffer;
};

// Reads `ranges` (disjoint) into `out`, many ranges per process_vm_readv. A range read in part
// keeps the part read (its low end: the stack pointer's side); one unreadable is tried once more
// through /proc/PID/mem and otherwise dropped with a warning. `out.buffer` keeps its size when the
// ranges fit (its pages already touched), and grows otherwise.
void read_ranges(Memory& mem, const std::vector<detail::Range>& ranges, Copied& out,
                 std::vector<std::string>& warnings) {
  std::size_t total = 0;
  for (const auto& r : ranges) {
    total += r.end - r.start;
  }
  if (total > out.buffer.size()) {
    out.buffer.resize(total);
  }
  std::vector<iovec> local(ranges.size());
  std::vector<iovec> remote(ranges.size());
  std::size_t at = 0;
  for (std::size_t i = 0; i < ranges.size(); ++i) {
    const std::size_t size = ranges[i].end - ranges[i].start;
    local[i] = {out.buffer.data() + at, size};
    remote[i] = {reinterpret_cast<void*>(ranges[i].start), size};
    at += size;
  }
  std::vector<std::size_t> have(ranges.size());
  bool vm_works = true;
  std::size_t i = 0;
  while (i < ranges.size()) {
    const std::size_t count = std::min(kIovMax, ranges.size() - i);
    ssize_t got = -1;
    if (vm_works) {
      got =
          ::process_vm_readv(static_cast<pid_t>(mem.pid()), &local[i], count, &remote[i], count, 0);
      if (got < 0 && errno != EFAULT) {
        vm_works = false; // ENOSYS, EPERM: /proc/PID/mem for the rest
      }
    }
    std::size_t left = got > 0 ? static_cast<std::size_t>(got) : 0;
    std::size_t j = i;
    if (vm_works) {
      while (j < i + count && left >= local[j].iov_len) {
        have[j] = local[j].iov_len;
        left -= local[j].iov_len;
        ++j;
      }
      if (j == i + count) {
        i = j;
        continue;
      }
    }
    // Range j read in part (`left` bytes) or not at all.
    have[j] = left;
    if (have[j] == 0) {
      have[j] = mem.pread_some(ranges[j].start, local[j].iov_base, local[j].iov_len);
    }
    if (have[j] == 0) {
      warnings.push_back(fmt::format("target memory at {:#x} ({} bytes) is unreadable",
                                     ranges[j].start, local[j].iov_len));
    } else if (have[j] < local[j].iov_len) {
      warnings.push_back(fmt::format("target memory at {:#x}: {} of {} bytes readable",
                                     ranges[j].start, have[j], local[j].iov_len));
    }
    i = j + 1;
  }
  out.ranges.clear();
  out.offsets.clear();
  out.ranges.reserve(ranges.size());
  out.offsets.reserve(ranges.size());
  for (std::size_t k = 0; k < ranges.size(); ++k) {
    if (have[k] > 0) {
      out.ranges.push_back({ranges[k].start, ranges[k].start + have[k]});
      out.offsets.push_back(
          static_cast<std::size_t>(static_cast<char*>(local[k].iov_base) - out.buffer.data()));
    }
  }
}

// The regions of a copy (after the stop).
std::vector<Region> to_regions(const Copied& c) {
  std::vector<Region> out;
  out.reserve(c.ranges.size());
  for (std::size_t k = 0; k < c.ranges.size(); ++k) {
    out.push_back(Region{c.ranges[k].start,
                         c.buffer.substr(c.offsets[k], c.ranges[k].end - c.ranges[k].start)});
  }
  return out;
}

std::string read_maps_text(pid_t pid) {
  return process::read_proc_file("/proc/" + pid_str(pid) + "/maps", 64 << 20).value_or("");
}

// A thread that could not be held (state D): what /proc/PID/task/TID/syscall gives of its
// registers, the rest zero: PC, stack pointer, the system call's number and its six argument
// registers. The debugger unwinds it from the PC and stack pointer through the unwind tables, so
// the frames of code that keeps no frame pointer come out; the values of other registers do not.
bool registers_from_syscall_file(pid_t pid, pid_t tid, Thread& t,
                                 std::vector<std::string>& warnings) {
  const auto text =
      process::read_proc_file("/proc/" + pid_str(pid) + "/task/" + pid_str(tid) + "/syscall", 512);
  const auto state = text ? detail::parse_syscall_file(*text) : std::nullopt;
  if (!state || state->pc == 0) {
    warnings.push_back(fmt::format(
        "thread {} was in an uninterruptible wait (state D) and could not be held, and /proc "
        "gave no stack pointer and PC for it: it is not in the copy",
        tid));
    return false;
  }
  user_regs_struct regs{};
  regs.rip = state->pc;
  regs.rsp = state->sp;
  regs.orig_rax = static_cast<unsigned long long>(state->number);
  regs.rdi = state->args[0];
  regs.rsi = state->args[1];
  regs.rdx = state->args[2];
  regs.r10 = state->args[3];
  regs.r8 = state->args[4];
  regs.r9 = state->args[5];
  regs.cs = 0x33; // the 64-bit user code and stack segments
  regs.ss = 0x2b;
  regs.eflags = 0x202;
  t.prstatus_regs.assign(reinterpret_cast<const char*>(&regs), sizeof regs);
  t.held = false;
  // The kernel function it waits in names the driver call (wchan: "0" when hidden).
  std::string where = process::read_wchan(pid, tid);
  where = where.empty() ? "" : ", in the kernel's " + where;
  if (state->number >= 0) {
    where += fmt::format(", system call {}", state->number);
  }
  warnings.push_back(fmt::format(
      "thread {} was in an uninterruptible wait (state D{}) and could not be held: it is copied "
      "with the PC, stack pointer and system-call arguments /proc gives, and no other register",
      tid, where));
  return true;
}

// The stop itself, run by take() in a thread of its own (the tracer): seizes and interrupts every
// thread of `pid` (and any started meanwhile), copies registers and memory, calls while_stopped,
// and lets every thread go.
void stop_and_copy(pid_t pid, const Options& options, bool parent_of_target,
                   std::vector<pid_t>& tasks, std::vector<detail::MapEntry>& maps,
                   const std::vector<detail::Range>& runtime_data, Memory& mem, Capture& cap,
                   Copied& during, std::vector<pid_t>& exited, std::vector<pid_t>& still_traced) {
  const auto t0 = Clock::now();
  const auto deadline = t0 + options.timeout;
  Holder holder(tasks.size(), parent_of_target, still_traced);
  auto& held = holder.threads();
  auto timed_out = [&](const char* where) {
    // The threads that never stopped, with their state (D: uninterruptible sleep).
    std::string stuck;
    std::size_t n = 0;
    for (const auto& h : held) {
      if (h.state == HeldState::Seized && n++ < 8) {
        stuck +=
            fmt::format("{}{} (state {})", stuck.empty() ? "" : ", ", h.tid, thread_state(h.tid));
      }
    }
    return Error(ExitCode::Timeout,
                 fmt::format("the capture of pid {} ran past its {} ms ({}){}; every thread was "
                             "let go",
                             pid, options.timeout.count(), where,
                             stuck.empty() ? "" : "; never stopped: thread " + stuck),
                 "a thread that keeps leaving and re-entering an uninterruptible wait (state D) "
                 "is neither held nor given up; try again, or attach the debugger itself "
                 "(--stop attach)");
  };
  std::unordered_set<pid_t> seen;
  seen.reserve(tasks.size() * 2 + 16);
  bool first = true;
  std::size_t interrupted = 0;
  for (;;) {
    bool any_new = false;
    for (pid_t tid : tasks) {
      if (!seen.insert(tid).second) {
        continue;
      }
      any_new = true;
      // Recorded before the seize: an allocation failure holds nothing.
      held.push_back(Held{tid, HeldState::Seized, 0, tid == pid});
      if (::ptrace(PTRACE_SEIZE, tid, nullptr, nullptr) != 0) {
        const int err = errno;
        held.pop_back();
        if (err == ESRCH) {
          exited.push_back(tid);
        } else if (first && held.empty() && err == EPERM && thread_state(tid) != 'Z') {
          throw Error(ExitCode::PtraceDenied,
                      "cannot stop pid " + pid_str(pid) + " (" + cap.command_name +
                          "): PTRACE_SEIZE of thread " + pid_str(tid) +
                          " failed: " + ptrace_denied_why(pid, err),
                      "another debugger or tracer may hold it (TracerPid in /proc/PID/status); "
                      "otherwise run as the process's user, with CAP_SYS_PTRACE, or with "
                      "kernel.yama.ptrace_scope at 0 or 1");
        } else if (err == EPERM && thread_state(tid) == 'Z') {
          exited.push_back(tid); // a zombie thread (an exited leader) cannot be seized
        } else {
          cap.warnings.push_back(
              fmt::format("thread {} could not be seized: {}", tid, std::strerror(err)));
        }
        first = false;
        continue;
      }
      first = false;
    }
    // The interrupts after the seizes: each wakes a thread that then competes for a CPU with this
    // loop (1,000 napping threads: 1.2 ms of seizes, then 5 ms of interrupts and stops).
    for (std::size_t i = interrupted; i < held.size(); ++i) {
      // ESRCH: gone already; the wait reports it.
      ::ptrace(PTRACE_INTERRUPT, held[i].tid, nullptr, nullptr);
    }
    interrupted = held.size();
    if (!any_new) {
      break;
    }
    if (!holder.wait_stopped(deadline)) {
      throw timed_out("waiting for the threads to stop");
    }
    // Threads started meanwhile: once every seized thread is stopped, none can start another.
    if (!list_tasks(pid, tasks)) {
      break;
    }
  }
  cap.seize_seconds = seconds_since(t0);
  if (std::none_of(held.begin(), held.end(), [](const Held& h) {
        return h.state == HeldState::Stopped || h.state == HeldState::Unstoppable;
      })) {
    throw Error(ExitCode::NoSuchProcess, "pid " + pid_str(pid) + " has no thread left to stop",
                "it has exited");
  }

  // Registers, in the order of /proc/PID/task with the leader first.
  std::stable_partition(held.begin(), held.end(), [&](const Held& h) { return h.tid == pid; });
  cap.threads.reserve(held.size());
  std::vector<detail::Range> ranges;
  ranges.reserve(held.size() * 2);
  bool maps_reread = false;
  for (auto& h : held) {
    Thread t;
    t.tid = h.tid;
    if (h.state == HeldState::Unstoppable) {
      if (!registers_from_syscall_file(pid, h.tid, t, cap.warnings)) {
        continue;
      }
    } else if (h.state != HeldState::Stopped) {
      continue;
    } else {
      t.pending_signal = h.pending_signal;
      t.prstatus_regs.resize(sizeof(user_regs_struct));
      iovec io{t.prstatus_regs.data(), t.prstatus_regs.size()};
      if (::ptrace(PTRACE_GETREGSET, h.tid, reinterpret_cast<void*>(NT_PRSTATUS), &io) != 0) {
        exited.push_back(h.tid); // killed while held
        continue;
      }
      t.prstatus_regs.resize(io.iov_len);
      t.fp_regs.resize(sizeof(user_fpregs_struct));
      io = {t.fp_regs.data(), t.fp_regs.size()};
      if (::ptrace(PTRACE_GETREGSET, h.tid, reinterpret_cast<void*>(NT_PRFPREG), &io) != 0) {
        t.fp_regs.clear();
      } else {
        t.fp_regs.resize(io.iov_len);
      }
    }
    if (t.prstatus_regs.size() < sizeof(user_regs_struct)) {
      cap.warnings.push_back(fmt::format("thread {}: short register set", h.tid));
      cap.threads.push_back(std::move(t));
      continue;
    }
    user_regs_struct regs;
    std::memcpy(&regs, t.prstatus_regs.data(), sizeof regs);
    detail::Range stack;
    bool found = stack_range(maps, regs.rsp, options.stack_bytes_per_thread, stack);
    if (!found && !maps_reread) {
      // A stack mapped since the maps were read (a thread started meanwhile).
      maps = process::parse_map_entries(read_maps_text(pid));
      maps_reread = true;
      found = stack_range(maps, regs.rsp, options.stack_bytes_per_thread, stack);
    }
    if (found) {
      ranges.push_back(stack);
    } else {
      cap.warnings.push_back(
          fmt::format("thread {}: its stack pointer {:#x} is in no mapping", h.tid, regs.rsp));
    }
    // The thread's control block (struct pthread at the thread pointer): libthread_db reads it.
    // Inside the stack copied above for every thread but the main one.
    if (regs.fs_base != 0) {
      const long at = detail::find_mapping(maps, regs.fs_base);
      if (at >= 0) {
        ranges.push_back(
            {regs.fs_base, std::min<std::uint64_t>(maps[static_cast<std::size_t>(at)].end,
                                                   regs.fs_base + kTcbWindow)});
      }
    }
    if (regs.orig_rax == SYS_futex && regs.rdi != 0 && regs.rdi < UINT64_MAX - kFutexWindow) {
      ranges.push_back({regs.rdi, regs.rdi + kFutexWindow});
    }
    cap.threads.push_back(std::move(t));
  }
  if (Clock::now() >= deadline) {
    throw timed_out("reading registers");
  }
  ranges.insert(ranges.end(), runtime_data.begin(), runtime_data.end());
  read_ranges(mem, detail::merge_ranges(std::move(ranges)), during, cap.warnings);
  if (options.while_stopped) {
    try {
      options.while_stopped();
    } catch (const std::exception& e) {
      cap.warnings.push_back(std::string("while the target was stopped: ") + e.what());
    } catch (...) {
      cap.warnings.push_back("while the target was stopped: an unknown exception");
    }
  }
  holder.release(std::chrono::milliseconds(2000));
  cap.stop_seconds = seconds_since(t0);
}

// Waits until none of `tids` is traced by this process any more, or `limit`.
void wait_untraced(const std::vector<pid_t>& tids, std::chrono::milliseconds limit) {
  const auto deadline = Clock::now() + limit;
  for (pid_t tid : tids) {
    for (;;) {
      const auto status = process::read_status(tid);
      if (!status || status->tracer_pid.value_or(0) != ::getpid() || Clock::now() >= deadline) {
        break;
      }
      timespec ts{0, 1'000'000};
      ::nanosleep(&ts, nullptr);
    }
  }
}

} // namespace

Capture take(std::int64_t pid_arg, const Options& options) {
  if (pid_arg <= 0 || pid_arg > INT32_MAX) {
    throw Error(ExitCode::NoSuchProcess, "no process with pid " + pid_str(pid_arg),
                "give the pid of a running process");
  }
  const auto pid = static_cast<pid_t>(pid_arg);
  const std::string proc = "/proc/" + pid_str(pid);
  Capture cap;
  cap.pid = pid;

  // Before the stop, while the target runs: everything /proc can tell.
  const auto comm = process::read_proc_file(proc + "/comm", 256);
  const auto stat = process::read_stat(pid);
  const char state = stat ? stat->state : '?';
  std::vector<pid_t> tasks;
  tasks.reserve(1024);
  // A leader that called pthread_exit is a zombie while its threads run on: only a zombie with no
  // thread left has exited.
  const bool listed = list_tasks(pid, tasks);
  if (!comm || !listed || ((state == 'Z' || state == 'X') && tasks.size() <= 1)) {
    throw Error(ExitCode::NoSuchProcess,
                comm ? "pid " + pid_str(pid) + " has exited (a zombie not yet reaped)"
                     : "no process with pid " + pid_str(pid),
                "it may have exited; `rocplay ps` lists the processes holding a GPU");
  }
  cap.command_name = trim_newline(*comm);
  if (auto cmdline = process::read_proc_file(proc + "/cmdline", 4096)) {
    std::string line = trim_newline(*cmdline);
    std::replace(line.begin(), line.end(), '\0', ' ');
    cap.command_line = std::move(line);
  }
  {
    char exe[4096];
    const ssize_t n = ::readlink((proc + "/exe").c_str(), exe, sizeof exe);
    if (n > 0 && static_cast<std::size_t>(n) < sizeof exe) {
      cap.executable.assign(exe, static_cast<std::size_t>(n));
    }
  }
  cap.auxv = process::read_proc_file(proc + "/auxv", 64 * 1024).value_or("");
  auto maps = process::parse_map_entries(read_maps_text(pid));
  cap.files = detail::file_mappings(maps);

  std::vector<std::pair<pid_t, std::string>> names; // read before the stop
  names.reserve(tasks.size());
  for (pid_t tid : tasks) {
    const auto name =
        process::read_proc_file(proc + "/task/" + pid_str(tid) + "/comm", 256).value_or("");
    names.emplace_back(tid, trim_newline(name));
  }

  Memory mem(pid);
  std::vector<Region> before = copy_linker_list(mem, cap.auxv, cap.warnings);
  // The vDSO: no file holds it, and the debugger unwinds a thread stopped in it (clock_gettime)
  // with its unwind tables.
  for (const auto& m : maps) {
    if (m.path == "[vdso]" && m.end - m.start <= kMaxVdsoBytes &&
        !copy_exact(mem, m.start, m.end - m.start, before)) {
      cap.warnings.push_back("the vDSO is unreadable: a thread stopped in it may not unwind");
    }
  }

  // The C runtime's writable data (libthread_db lists a core's threads from it), copied in the
  // stop with the stacks: 16 KB with glibc 2.36.
  const std::vector<detail::Range> runtime_data =
      detail::runtime_data(maps, parse_auxv(cap.auxv).base, kMaxRuntimeDataBytes);

  // The stop, in a thread of its own: ptrace makes that thread the tracer, and when it ends the
  // kernel lets go of whatever it still traces. A thread that never stops (uninterruptible sleep
  // in a driver call) cannot be detached by PTRACE_DETACH, which needs a ptrace-stop; the end of
  // the capturing thread lets it go, so no thread stays traced after take() returns or throws.
  std::vector<pid_t> exited;
  // The copy's buffer, its pages touched now, while the target runs: most threads' live stack,
  // control block and futex window fit 8 KB (4.7 KB each for spin_target's napping threads).
  Copied during;
  during.buffer.resize(std::min<std::size_t>(tasks.size() * 8192 + (256u << 10), 64u << 20));
  std::vector<pid_t> still_traced;
  std::exception_ptr failure;
  std::thread stopper([&] {
    try {
      stop_and_copy(pid, options, stat && stat->ppid == ::getpid(), tasks, maps, runtime_data, mem,
                    cap, during, exited, still_traced);
    } catch (...) {
      failure = std::current_exception();
    }
  });
  stopper.join();
  // The kernel lets the threads go as the stopper exits, shortly after the join can return.
  wait_untraced(still_traced, std::chrono::milliseconds(2000));
  if (failure) {
    std::rethrow_exception(failure);
  }
  // The threads given up in state D are in the copy and were warned about already.
  const auto unheld = std::count_if(cap.threads.begin(), cap.threads.end(),
                                    [](const Thread& t) { return !t.held; });
  if (still_traced.size() > static_cast<std::size_t>(unheld)) {
    cap.warnings.push_back(fmt::format("{} thread(s) never stopped or were killed while held: "
                                       "let go without a copy",
                                       still_traced.size() - static_cast<std::size_t>(unheld)));
  }

  // After the stop: names of threads seen only in it, exits, and the memory.
  std::sort(names.begin(), names.end());
  for (auto& t : cap.threads) {
    const auto it = std::lower_bound(
        names.begin(), names.end(), t.tid,
        [](const std::pair<pid_t, std::string>& n, std::int64_t tid) { return n.first < tid; });
    if (it != names.end() && it->first == t.tid) {
      t.name = it->second;
    } else {
      t.name = trim_newline(
          process::read_proc_file(proc + "/task/" + pid_str(t.tid) + "/comm", 256).value_or(""));
    }
  }
  if (!exited.empty()) {
    std::string list;
    for (std::size_t i = 0; i < exited.size() && i < 16; ++i) {
      list += (i ? ", " : "") + pid_str(exited[i]);
    }
    cap.warnings.push_back(fmt::format("{} thread(s) exited during the capture: {}{}",
                                       exited.size(), list, exited.size() > 16 ? ", ..." : ""));
  }
  cap.memory = detail::merge_regions(std::move(before), to_regions(during));
  return cap;
}

#else // not Linux x86-64

bool supported() {
  return false;
}

Capture take(std::int64_t, const Options&) {
  throw Error(ExitCode::Internal, "rocplay's own capture supports Linux x86-64 only",
              "the debugger attaches itself on this platform");
}

#endif

} // namespace rocplay::capture
