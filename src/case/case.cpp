// The incident model (rocplay/case/case.hpp): the one exit-code rule, and where each case stands.
#include "rocplay/case/case.hpp"

#include "rocplay/core/names.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>

namespace rocplay {

constexpr NameTable<CaseStatus, 4> kCaseStatusNames{{
    {CaseStatus::Examined, "examined"},
    {CaseStatus::Partial, "partial"},
    {CaseStatus::NotExamined, "not-examined"},
    {CaseStatus::Unreadable, "unreadable"},
}};
static_assert(names_cover(kCaseStatusNames, CaseStatus::Unreadable));

std::string_view to_string(CaseStatus status) {
  return name_of(kCaseStatusNames, status, "?");
}

ExitCode Incident::exit_code() const {
  if (cases.empty()) {
    return ExitCode::Ok;
  }
  if (cases.size() == 1 && cross_rank.empty() && crash_verdict.empty() && series.empty()) {
    return cases.front().exit_code;
  }
  std::size_t examined = 0;
  for (const auto& c : cases) {
    examined += c.examined() ? 1 : 0;
  }
  if (examined == 0) {
    return cases.front().exit_code; // nothing was examined: the first one's reason
  }
  if (examined < cases.size()) {
    return ExitCode::PartialInput;
  }
  bool findings = !cross_rank.empty() || !crash_verdict.empty() ||
                  (verification && verification->severity >= Severity::Warning);
  for (const auto& f : series) {
    findings = findings || f.severity >= Severity::Warning;
  }
  for (const auto& c : cases) {
    // A step that failed or a target left stopped says more than the findings do.
    if (c.exit_code == ExitCode::StepFailed || c.exit_code == ExitCode::TargetLeftStopped) {
      return c.exit_code;
    }
    findings = findings || c.exit_code == ExitCode::Findings;
    for (const auto& f : c.findings) {
      findings = findings || f.severity >= Severity::Warning;
    }
  }
  return findings ? ExitCode::Findings : ExitCode::Ok;
}

const Finding* Incident::verdict() const {
  if (verification) {
    return &*verification;
  }
  if (!cross_rank.empty()) {
    return &cross_rank.front();
  }
  if (!crash_verdict.empty()) {
    return &crash_verdict.front();
  }
  return nullptr;
}

namespace incident {

namespace {

bool contains(std::string_view s, std::string_view part) {
  return s.find(part) != std::string_view::npos;
}

// Shared objects and sources that are never the user's own code.
bool system_frame(const Frame& f) {
  static constexpr std::string_view kLibraries[] = {
      "libc.so",    "libc-",      "libpthread", "ld-linux",   "libstdc++", "libgcc_s",
      "libcuda.so", "libcudart",  "libamdhip",  "libhsa-",    "libhsakmt", "libnccl",
      "librccl",    "libpython",  "libtorch",   "libc10",     "libgomp",   "libdl.so",
      "librt.so",   "libnvidia-", "libucs",     "libibverbs", "libm.so",   "vdso"};
  for (std::string_view lib : kLibraries) {
    if (contains(f.from, lib)) {
      return true;
    }
  }
  static constexpr std::string_view kSources[] = {
      "sysdeps/", "nptl/", "glibc", "libstdc++-v3/", "/Python/", "/Objects/", "/Modules/"};
  for (std::string_view src : kSources) {
    if (contains(f.file, src)) {
      return true;
    }
  }
  return f.function.starts_with("__") || f.function.starts_with("_Py") ||
         f.function.starts_with("Py") || f.function.starts_with("pthread_");
}

std::string line_of(const std::string& file, std::optional<std::uint32_t> line) {
  if (file.empty()) {
    return {};
  }
  const auto slash = file.find_last_of('/');
  const std::string base = slash == std::string::npos ? file : file.substr(slash + 1);
  return line ? fmt::format("{}:{}", base, *line) : base;
}

std::string place(const Location& l) {
  std::string out = l.function;
  if (auto at = line_of(l.file, l.line); !at.empty()) {
    out += (out.empty() ? "" : " at ") + at;
  } else if (l.pc) {
    out += fmt::format("{}pc {:#x}", out.empty() ? "" : " ", *l.pc);
  }
  return out;
}

} // namespace

const Frame* user_frame(const HostThread& thread) {
  for (const Frame& f : thread.frames) {
    if (!f.file.empty() && !f.function.empty() && !system_frame(f)) {
      return &f;
    }
  }
  return nullptr;
}

Whereabouts whereabouts(const Case& c) {
  if (!c.examined()) {
    Whereabouts w;
    w.verdict =
        fmt::format("{}: {}", c.status == CaseStatus::Unreadable ? "unreadable" : "not examined",
                    c.error.empty() ? std::string("no reason given") : c.error);
    w.key = "error|" + c.error;
    return w;
  }
  if (c.at) {
    return *c.at;
  }
  return whereabouts(c.snapshot, c.findings);
}

Whereabouts whereabouts(const Snapshot& s, const std::vector<Finding>& findings) {
  Whereabouts w;
  w.gpu_attach_error = s.gpu_attach_error;
  // Only a GPU debugger can tell a GPU is idle; plain gdb sees no GPU at all.
  const bool gpu_debugger =
      s.debugger == DebuggerKind::RocGdb || s.debugger == DebuggerKind::CudaGdb;
  const bool gpu_idle = gpu_debugger && s.dispatches.empty() && s.waves.empty();
  if (!findings.empty()) {
    const Finding* v = &findings.front();
    w.verdict = v->title;
    const std::string loc = v->locations.empty() ? std::string() : place(v->locations.front());
    if (!v->kernel.empty()) {
      w.where = v->kernel;
      if (!v->locations.empty()) {
        const Location& l = v->locations.front();
        if (auto at = line_of(l.file, l.line); !at.empty()) {
          w.where += " at " + at;
        } else if (l.pc) {
          w.where += fmt::format(" pc {:#x}", *l.pc);
        }
      }
    } else {
      w.where = loc;
    }
    w.key = v->id + "|" + v->kernel + "|" + w.where;
    if (!w.where.empty()) {
      return w;
    }
  } else {
    w.verdict = "no known stuck-kernel pattern";
    w.key = "none|";
  }
  // No place from a finding: the main thread's innermost frame of the user's own code (the other
  // threads are mostly the runtimes': NCCL's RAS and watchdog threads, the CUDA event threads),
  // else where the main thread is, after the GPU's state.
  std::string host;
  const HostThread* main = s.host_threads.empty() ? nullptr : &s.host_threads.front();
  for (const auto& t : s.host_threads) {
    if (t.id == "1") {
      main = &t;
    }
  }
  if (main != nullptr) {
    if (const Frame* f = user_frame(*main)) {
      host = f->function + " at " + line_of(f->file, f->line);
    } else if (!main->frames.empty() && !main->frames.front().function.empty()) {
      host = "main thread in " + main->frames.front().function;
    }
  }
  if (!s.gpu_attach_error.empty()) {
    w.where = host.empty() ? "GPU unseen (cuda-gdb's attach failed)"
                           : "GPU unseen (cuda-gdb's attach failed), " + host;
  } else if (gpu_idle) {
    w.where = host.empty() ? "GPU idle" : "GPU idle, " + host;
  } else {
    w.where = host;
  }
  w.key += "|" + w.where;
  return w;
}

std::vector<RankGroup> rank_groups(const Incident& incident) {
  std::vector<RankGroup> out;
  std::map<std::string, std::size_t> by_key;
  for (std::size_t i = 0; i < incident.cases.size(); ++i) {
    Whereabouts w = whereabouts(incident.cases[i]);
    auto [it, fresh] = by_key.emplace(w.key, out.size());
    if (fresh) {
      out.push_back({{}, std::move(w)});
    }
    out[it->second].cases.push_back(i);
  }
  return out;
}

std::vector<std::string> harm(const Incident& incident) {
  std::vector<std::string> out;
  for (const auto& c : incident.cases) {
    std::string error = c.at ? c.at->gpu_attach_error : c.snapshot.gpu_attach_error;
    for (const auto& s : c.samples) {
      if (error.empty()) {
        error = s.snapshot.gpu_attach_error;
      }
    }
    if (error.empty()) {
      continue;
    }
    std::string who;
    if (c.source.rank) {
      who = fmt::format("rank {} ", *c.source.rank);
    }
    if (c.source.pid) {
      who += who.empty() ? fmt::format("pid {}", *c.source.pid)
                         : fmt::format("(pid {})", *c.source.pid);
    }
    if (who.empty()) {
      who = c.source.path.empty() ? "the target" : c.source.path;
    }
    while (!who.empty() && who.back() == ' ') {
      who.pop_back();
    }
    out.push_back(fmt::format("{}: the debugger's attach to its GPU failed inside the driver: {}",
                              who, error));
  }
  return out;
}

std::string format_numbers(std::vector<std::int64_t> numbers) {
  std::sort(numbers.begin(), numbers.end());
  numbers.erase(std::unique(numbers.begin(), numbers.end()), numbers.end());
  std::string out;
  for (std::size_t i = 0; i < numbers.size();) {
    std::size_t j = i;
    while (j + 1 < numbers.size() && numbers[j + 1] == numbers[j] + 1) {
      ++j;
    }
    if (!out.empty()) {
      out += ',';
    }
    out += j == i ? fmt::format("{}", numbers[i]) : fmt::format("{}-{}", numbers[i], numbers[j]);
    i = j + 1;
  }
  return out;
}

std::string who(const Incident& incident, const RankGroup& group) {
  std::vector<std::int64_t> ranks;
  std::vector<std::int64_t> pids;
  std::vector<std::string> named;
  for (std::size_t i : group.cases) {
    const auto& src = incident.cases[i].source;
    if (src.rank) {
      ranks.push_back(*src.rank);
    }
    if (src.pid) {
      pids.push_back(*src.pid);
    }
    if (!src.rank && !src.pid) {
      named.push_back(src.path + src.member);
    }
  }
  const auto plural = [](const char* word, std::size_t n) {
    return std::string(word) + (n == 1 ? "" : "s");
  };
  std::string out;
  if (!ranks.empty()) {
    out = plural("rank", ranks.size()) + " " + format_numbers(ranks);
    if (!pids.empty()) {
      out += " (" + plural("pid", pids.size()) + " " + format_numbers(pids) + ")";
    }
  } else if (!pids.empty()) {
    out = plural("pid", pids.size()) + " " + format_numbers(pids);
  }
  if (!named.empty()) {
    const std::size_t shown = std::min<std::size_t>(named.size(), 3);
    std::string list;
    for (std::size_t i = 0; i < shown; ++i) {
      list += (i ? ", " : "") + named[i];
    }
    if (named.size() > shown) {
      list += fmt::format(" and {} more", named.size() - shown);
    }
    out += (out.empty() ? "" : "; ") + list;
  }
  return out;
}

void group(Incident& incident) {
  for (auto& c : incident.cases) {
    if (c.classes.empty() && !c.snapshot.waves.empty()) {
      c.classes = snapshot::group_waves(c.snapshot);
    }
  }
}

} // namespace incident
} // namespace rocplay
