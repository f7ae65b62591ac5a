// Culprit or victim (rocplay/heuristics/launch_verify.hpp). The runs compare by where they
// faulted; the order of the questions matters: a fault somewhere else under an experiment names
// a second place (moved), an experiment with no fault at all says the first place depended on
// timing (race), and only a fault in one place in every run is static.
#include "rocplay/heuristics/launch_verify.hpp"

#include "common.hpp"
#include "rocplay/heuristics/heuristics.hpp"
#include "rocplay/snapshot/frames.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>

namespace rocplay::heuristics {

namespace {

std::string line_text(const Location& at) {
  if (at.file.empty()) {
    return at.pc ? fmt::format("pc {:#x}", *at.pc) : std::string();
  }
  const auto slash = at.file.rfind('/');
  const std::string base = slash == std::string::npos ? at.file : at.file.substr(slash + 1);
  return at.line ? fmt::format("{}:{}", base, *at.line) : base;
}

const HostThread* thread_by_id(const Snapshot& s, const std::string& id) {
  for (const auto& t : s.host_threads) {
    if (t.id == id) {
      return &t;
    }
  }
  return nullptr;
}

// The thread's innermost Python line of the user's own code (torch's `synchronize` is where every
// wait surfaces, not the user's line), else its innermost Python line.
std::string python_line(const HostThread& t) {
  const auto user = user_python_frames(t);
  const auto any =
      std::find_if(t.frames.begin(), t.frames.end(), [](const Frame& f) { return f.python; });
  const Frame* f = !user.empty() ? user.front() : (any != t.frames.end() ? &*any : nullptr);
  return f == nullptr ? std::string()
                      : fmt::format("{} ({})", f->function, line_text({f->file, f->line, {}, {}}));
}

// `faulted: SIGSEGV in reader at race.cpp:41 after 0.41 s`, `exited 0 after 0.52 s`.
std::string run_words(const VerifyRun& r) {
  std::string what;
  if (r.fault) {
    what = fmt::format("faulted: {}{}", r.fault->signal.empty() ? "" : r.fault->signal + " in ",
                       r.fault->text());
  } else if (r.run.outcome == "exited") {
    what = fmt::format("exited {}", r.run.exit_code.value_or(0));
  } else if (!r.run.exit_signal.empty()) {
    what = fmt::format("{}: {}", r.run.outcome, r.run.exit_signal);
  } else {
    what = r.run.outcome.empty() ? std::string("no fault") : r.run.outcome;
  }
  return fmt::format("run {} ({}): {} after {:.2f} s{}{}", r.run.index, r.run.experiment, what,
                     r.run.seconds,
                     r.launch_line.empty() ? "" : fmt::format("; launched from {}", r.launch_line),
                     r.run.traced_launches.value_or(0) > 0
                         ? fmt::format("; {} kernel launch{} traced", *r.run.traced_launches,
                                       *r.run.traced_launches == 1 ? "" : "es")
                         : std::string());
}

struct Tally {
  std::size_t runs = 0;
  std::size_t at_first = 0;  // faulted where the first faulting run as given did
  std::size_t elsewhere = 0; // faulted somewhere else
  const VerifyRun* first_elsewhere = nullptr;
};

std::string times(std::size_t n, std::size_t of) {
  return fmt::format("{} of {} run{}", n, of, of == 1 ? "" : "s");
}

} // namespace

std::string FaultSite::text() const {
  const std::string line = line_text(at);
  const std::string name = short_function_name(function.empty() ? at.function : function);
  if (name.empty()) {
    return line.empty() ? std::string("an unknown place") : line;
  }
  return line.empty() ? name : name + " at " + line;
}

bool FaultSite::same_place(const FaultSite& other) const {
  if (function != other.function || on_gpu != other.on_gpu) {
    return false;
  }
  if (!at.file.empty() || !other.at.file.empty()) {
    return at.file == other.at.file && at.line == other.at.line;
  }
  return at.pc == other.at.pc;
}

namespace {

// What to read at a fault that does not depend on timing, by what kind of fault it is.
std::string static_fault_step(FaultKind kind, const std::string& where) {
  switch (kind) {
  case FaultKind::Assert:
    return fmt::format("Read the check that fails at {} (an assert, abort() or a device "
                       "assert): its condition is false for every input, not only for an "
                       "unlucky timing.",
                       where);
  case FaultKind::Arithmetic:
    return fmt::format("Read the arithmetic at {}: a division by zero or an enabled floating-point "
                       "exception that every run reaches.",
                       where);
  case FaultKind::IllegalInstruction:
  case FaultKind::Trap:
    return fmt::format("Read the code at {}: a compiled-in trap, or code built for another "
                       "target, that every run executes.",
                       where);
  case FaultKind::Exception:
  case FaultKind::Signal:
    return fmt::format("Read the code at {}: what it does fails the same way in every run.", where);
  case FaultKind::MemoryViolation:
  case FaultKind::BusError:
    break;
  }
  return fmt::format("Read the access at {}: an index or pointer that is out of range for every "
                     "input, not only for an unlucky timing.",
                     where);
}

} // namespace

std::optional<FaultSite> fault_site(const Snapshot& snapshot) {
  if (!snapshot.fault) {
    return std::nullopt;
  }
  FaultSite site;
  site.on_gpu = snapshot.fault->on_gpu;
  site.signal = snapshot.fault->signal;
  site.kind = snapshot.fault->kind;
  for (const auto& f : program_fault(snapshot)) {
    if (f.id == kGpuFault || f.id == kHostFault) {
      if (!f.locations.empty()) {
        site.at = f.locations.front();
      }
      site.function = !f.kernel.empty()           ? f.kernel
                      : !f.dispatches.empty()     ? f.dispatches.front().kernel
                      : !site.at.function.empty() ? site.at.function
                                                  : snapshot.fault->function;
      return site;
    }
  }
  site.function = snapshot.fault->function;
  site.at = {snapshot.fault->file, snapshot.fault->line, snapshot.fault->function,
             snapshot.fault->pc};
  return site;
}

std::string launch_line(const Snapshot& snapshot) {
  if (snapshot.fault) {
    if (const HostThread* t = thread_by_id(snapshot, snapshot.fault->thread_id)) {
      if (auto line = python_line(*t); !line.empty()) {
        return line;
      }
    }
  }
  for (const auto& t : snapshot.host_threads) {
    if (auto line = python_line(t); !line.empty()) {
      return line;
    }
  }
  return {};
}

namespace {

// `kernel produce (in flight)`, with its launching line when known: a concurrent_work entry, and
// the kernel it names read back (kernel_in_flight).
constexpr std::string_view kKernelWord = "kernel ";
constexpr std::string_view kInFlight = " (in flight)";

std::string in_flight_words(const std::string& kernel, const std::string& launched_from) {
  return launched_from.empty() ? fmt::format("{}{}{}", kKernelWord, kernel, kInFlight)
                               : fmt::format("{}{} (in flight; launched from {})", kKernelWord,
                                             kernel, launched_from);
}

std::optional<std::string> kernel_in_flight(std::string_view words) {
  if (!words.starts_with(kKernelWord) || !words.ends_with(kInFlight)) {
    return std::nullopt;
  }
  words.remove_prefix(kKernelWord.size());
  words.remove_suffix(kInFlight.size());
  return std::string(words);
}

} // namespace

std::vector<std::string> concurrent_work(const Snapshot& snapshot) {
  constexpr std::size_t kMost = 6;
  std::vector<std::string> out;
  const auto site = fault_site(snapshot);
  auto add = [&](std::string what) {
    if (out.size() < kMost && std::find(out.begin(), out.end(), what) == out.end()) {
      out.push_back(std::move(what));
    }
  };
  if (site && site->on_gpu) {
    for (const auto& d : snapshot.dispatches) {
      const std::string kernel = detail::kernel_label(d);
      if (!kernel.empty() && kernel != site->function) {
        add(in_flight_words(short_function_name(kernel), {}));
      }
    }
    return out;
  }
  const std::string faulting = snapshot.fault ? snapshot.fault->thread_id : std::string();
  for (const auto& t : snapshot.host_threads) {
    if (t.id == faulting) {
      continue;
    }
    if (const Frame* f = innermost_user_frame(t)) {
      add(fmt::format("thread {}{} in {}", t.id, t.name.empty() ? "" : " \"" + t.name + "\"",
                      frame_where(*f)));
    }
  }
  return out;
}

std::vector<LaunchSite> launch_sites(const std::vector<VerifyRun>& runs) {
  std::vector<LaunchSite> sites;
  for (const auto& r : runs) {
    for (const auto& site : r.launch_sites) {
      add_launch_site(sites, site);
    }
  }
  return sites;
}

void add_launch_sites(std::vector<VerifyRun>& runs) {
  const auto sites = launch_sites(runs);
  if (sites.empty()) {
    return;
  }
  const auto launched_from = [&](const std::string& kernel) -> const std::string* {
    for (const auto& name : {short_function_name(kernel), kernel}) {
      const auto it = std::find_if(sites.begin(), sites.end(),
                                   [&](const LaunchSite& s) { return s.kernel == name; });
      if (it != sites.end()) {
        return &it->where;
      }
    }
    return nullptr;
  };
  for (auto& r : runs) {
    if (r.fault && r.fault->on_gpu && r.launch_line.empty()) {
      if (const auto* line = launched_from(r.fault->function)) {
        r.launch_line = *line;
      }
    }
    for (auto& c : r.concurrent) {
      if (const auto kernel = kernel_in_flight(c)) {
        if (const auto* line = launched_from(*kernel)) {
          c = in_flight_words(*kernel, *line);
        }
      }
    }
  }
}

Finding compare_verify_runs(const std::vector<VerifyRun>& runs) {
  Finding out;
  for (const auto& r : runs) {
    out.evidence.push_back(run_words(r));
  }
  const VerifyRun* first = nullptr;
  std::size_t given = 0;
  for (const auto& r : runs) {
    if (r.run.experiment == kAsGiven) {
      ++given;
      if (first == nullptr && r.fault) {
        first = &r;
      }
    }
  }
  if (first == nullptr) {
    out.id = std::string(kVerifyNoFault);
    out.severity = Severity::Info;
    out.confidence = 1.0;
    out.title = fmt::format("no fault to verify: the program did not fault in {} run{} as given",
                            given, given == 1 ? "" : "s");
    out.summary = "Without a fault there is nothing to compare; the experiments were not run.";
    out.next_step = "Run it as it failed before (the same input, the same GPUs); if the fault "
                    "comes only now and then, raise --repeats.";
    return out;
  }
  const FaultSite& site = *first->fault;
  out.kernel = site.on_gpu ? site.function : std::string();
  out.locations.push_back(site.at);
  // Per experiment, in the order first run.
  std::vector<std::string> order;
  std::map<std::string, Tally> tally;
  for (const auto& r : runs) {
    auto [it, fresh] = tally.try_emplace(r.run.experiment);
    if (fresh) {
      order.push_back(r.run.experiment);
    }
    Tally& t = it->second;
    ++t.runs;
    if (r.fault && r.fault->same_place(site)) {
      ++t.at_first;
    } else if (r.fault) {
      ++t.elsewhere;
      if (t.first_elsewhere == nullptr) {
        t.first_elsewhere = &r;
      }
    }
  }
  const Tally& base = tally.at(std::string(kAsGiven));
  const std::string where = site.text();
  const std::string what = site.on_gpu ? "the kernel at the PC" : "the code at the fault";
  const std::string launched =
      first->launch_line.empty() ? "" : fmt::format(" (launched from {})", first->launch_line);

  for (const auto& name : order) {
    const Tally& t = tally.at(name);
    if (name != kAsGiven && t.first_elsewhere != nullptr) {
      const FaultSite& moved = *t.first_elsewhere->fault;
      out.id = std::string(kVerifyMoved);
      out.severity = Severity::Error;
      out.confidence = 0.75;
      out.title =
          fmt::format("the fault moves: {} as given, {} with {}", where, moved.text(), name);
      out.summary = fmt::format(
          "As given the program faulted in {}{}; with {} it faulted in {} instead ({}). An "
          "error raised asynchronously surfaces late, at whatever ran next: the place under {} is "
          "the likelier culprit, and {} a victim.",
          where, launched, name, moved.text(), times(t.elsewhere, t.runs), name, where);
      out.next_step =
          fmt::format("Read {} first{}; then check whether {} reads what {} writes.", moved.text(),
                      t.first_elsewhere->launch_line.empty()
                          ? std::string()
                          : fmt::format(" (launched from {})", t.first_elsewhere->launch_line),
                      where, short_function_name(moved.function));
      out.locations.insert(out.locations.begin(), moved.at);
      return out;
    }
  }
  for (const auto& name : order) {
    const Tally& t = tally.at(name);
    if (name != kAsGiven && t.at_first == 0 && t.elsewhere == 0) {
      out.id = std::string(kVerifyRace);
      out.severity = Severity::Error;
      out.confidence = base.at_first == base.runs ? 0.8 : 0.7;
      out.title = fmt::format("asynchronous race: {} ({}) is likely a victim", what, where);
      out.summary = fmt::format(
          "It faulted in {}{} in {} as given, and in none of {} with {}: the fault depends on what "
          "ran at the same time, so the code at the PC likely read storage another kernel or "
          "thread was still writing, or had freed.",
          where, launched, times(base.at_first, base.runs), t.runs, name);
      out.next_step = fmt::format(
          "Find the racer{}: the work launched on other streams (or threads) between the last "
          "synchronisation and the fault. Serialise or comment it out one launch at a time, "
          "starting with the one nearest the fault, and rerun with --verify; "
          "compute-sanitizer --tool racecheck (CUDA) can name the pair.",
          first->concurrent.empty()
              ? std::string()
              : fmt::format(" (running at the fault: {})", fmt::join(first->concurrent, "; ")));
      return out;
    }
  }
  bool everywhere = true;
  std::size_t total = 0;
  for (const auto& name : order) {
    const Tally& t = tally.at(name);
    everywhere = everywhere && t.at_first == t.runs;
    total += t.runs;
  }
  if (everywhere) {
    out.id = std::string(kVerifyStatic);
    out.severity = Severity::Error;
    out.confidence = order.size() > 1 ? 0.9 : 0.6;
    out.title = fmt::format("static fault in {}", where);
    out.summary = fmt::format(
        "It faulted in the same place in every run ({}){}{}: the fault does not depend on "
        "timing, so {} is the culprit, not a victim.",
        times(total, total),
        order.size() > 1
            ? fmt::format(", with {} too", fmt::join(order.begin() + 1, order.end(), " and "))
            : std::string(" (no experiment ran)"),
        launched, what);
    out.next_step = static_fault_step(site.kind, where);
    return out;
  }
  out.id = std::string(kVerifyIntermittent);
  out.severity = Severity::Warning;
  out.confidence = 0.5;
  std::vector<std::string> parts;
  for (const auto& name : order) {
    const Tally& t = tally.at(name);
    parts.push_back(fmt::format("{} {}", name, times(t.at_first, t.runs)));
  }
  out.title = fmt::format("intermittent fault in {}: {}", where, fmt::join(parts, ", "));
  out.summary = fmt::format(
      "The fault in {}{} comes in some runs and not in others, under every experiment: timing "
      "matters, but no experiment settled it.",
      where, launched);
  out.next_step = "Rerun with a higher --repeats to tell the experiments apart, or add your own "
                  "(--experiment NAME=VALUE), e.g. one stream or one worker thread.";
  return out;
}

} // namespace rocplay::heuristics
