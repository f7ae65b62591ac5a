// `rocplay run PLAYBOOK --pids A,B,...` / `--workers-of SERVER`: one debugger per target, in
// parallel, one combined report with the cross-rank findings.
#include "cli/fanout.hpp"

#include "cli/output.hpp"
#include "rocplay/heuristics.hpp"
#include "rocplay/playbook.hpp"
#include "rocplay/process.hpp"
#include "rocplay/report_run.hpp"
#include "rocplay/session.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>

namespace rocplay::cli {

namespace {

struct TargetRun {
  std::int64_t pid = 0;
  std::optional<int> rank;
  std::optional<playbook::RunResult> result;
  std::optional<Error> error; // what stopped it before the playbook ran
  double seconds = 0;

  ExitCode exit_code() const {
    if (error) {
      return error->code();
    }
    return result ? result->exit_code() : ExitCode::Internal;
  }
  bool examined() const { return !error && result && result->attached; }
};

// Keeps every target's samples at the same instants: each target waits here before it resumes
// its target for sample k, until every target still sampling has arrived (or a deadline passes),
// so all resume together and, after the same interval, are stopped together.
class Lockstep {
public:
  explicit Lockstep(std::size_t participants) : active_(participants) {}

  bool arrive(std::uint32_t sample) {
    std::unique_lock lock(mutex_);
    auto& n = arrived_[sample];
    ++n;
    cv_.notify_all();
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (arrived_[sample] < active_) {
      if (session::caught_signal() || std::chrono::steady_clock::now() >= deadline) {
        break; // late targets are waited for no longer; the skew says so
      }
      cv_.wait_for(lock, std::chrono::milliseconds(50));
    }
    return !session::caught_signal();
  }

  // This target takes no more samples.
  void leave() {
    std::lock_guard lock(mutex_);
    if (active_ > 0) {
      --active_;
    }
    cv_.notify_all();
  }

private:
  std::mutex mutex_;
  std::condition_variable cv_;
  std::size_t active_;
  std::map<std::uint32_t, std::size_t> arrived_;
};

// Per sample index: the spread of the instants at which the targets' stops began.
std::vector<std::pair<std::uint32_t, double>> sample_skew(const std::vector<TargetRun>& targets) {
  std::map<std::uint32_t, std::pair<double, double>> range;
  for (const auto& t : targets) {
    if (!t.result) {
      continue;
    }
    for (const auto& s : t.result->samples) {
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

// `%p` and `%r` in --record become the pid and rank; otherwise `.PID` goes before the extension.
std::string record_path_for(const std::string& pattern, std::int64_t pid, std::optional<int> rank) {
  if (pattern.empty()) {
    return {};
  }
  if (pattern.find("%p") != std::string::npos || pattern.find("%r") != std::string::npos) {
    return expand_path_pattern(pattern, pid, rank);
  }
  std::filesystem::path p(expand_path_pattern(pattern, pid, rank));
  return (p.parent_path() /
          (p.stem().string() + "." + std::to_string(pid) + p.extension().string()))
      .string();
}

// RANK (torchrun, vLLM), then LOCAL_RANK, from the target's environment.
std::optional<int> rank_of(std::int64_t pid) {
  const auto env = process::read_environ(pid);
  if (!env) {
    return std::nullopt;
  }
  for (const char* key : {"RANK", "LOCAL_RANK", "OMPI_COMM_WORLD_RANK", "SLURM_PROCID"}) {
    auto it = env->find(key);
    if (it != env->end()) {
      try {
        return std::stoi(it->second);
      } catch (const std::exception&) {
      }
    }
  }
  return std::nullopt;
}

// The report writers' view of the targets (borrowing their results).
report::MultiTargetReport multi_target_report(const std::string& playbook,
                                              const std::vector<TargetRun>& targets,
                                              std::size_t examined) {
  report::MultiTargetReport m;
  m.playbook = playbook;
  m.examined = examined;
  for (const auto& t : targets) {
    report::TargetReport r;
    r.pid = t.pid;
    r.rank = t.rank;
    r.exit_code = static_cast<int>(t.exit_code());
    r.seconds = t.seconds;
    if (t.error) {
      r.error = t.error->what();
      r.error_hint = t.error->hint();
    }
    if (t.result) {
      r.report = run_report_of(*t.result);
      r.attached = t.result->attached;
    }
    m.targets.push_back(std::move(r));
  }
  return m;
}

} // namespace

std::vector<std::int64_t> parse_pid_list(const std::string& text) {
  std::vector<std::int64_t> pids;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    item.erase(0, item.find_first_not_of(" \t"));
    item.erase(item.find_last_not_of(" \t") + 1);
    if (item.empty()) {
      continue;
    }
    std::size_t used = 0;
    long long pid = 0;
    try {
      pid = std::stoll(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != item.size() || pid <= 0) {
      throw Error(ExitCode::Usage, fmt::format("--pids: `{}` is not a process id", item),
                  "give a comma-separated list, e.g. --pids 4301,4302,4303");
    }
    if (std::find(pids.begin(), pids.end(), pid) == pids.end()) {
      pids.push_back(pid);
    }
  }
  if (pids.empty()) {
    throw Error(ExitCode::Usage, "--pids: no process ids given",
                "give a comma-separated list, e.g. --pids 4301,4302");
  }
  return pids;
}

std::vector<std::int64_t> resolve_workers(std::int64_t server_pid) {
  process::ScanOptions scan;
  scan.sample = std::chrono::milliseconds(0);
  std::vector<std::int64_t> pids;
  for (const auto& w : process::workers_of(server_pid, scan)) {
    pids.push_back(w.pid);
  }
  if (pids.empty()) {
    throw Error(ExitCode::NoSuchProcess,
                fmt::format("no GPU workers found under pid {}: neither it nor its descendants "
                            "have /dev/kfd or /dev/nvidia* open",
                            server_pid),
                "check the pid with `rocplay ps`; `--pid` attaches to one process directly");
  }
  return pids;
}

int run_fanout(const RunCommandOptions& o, const std::vector<std::int64_t>& pids, unsigned jobs,
               FanoutOutcome* outcome) {
  session::install_signal_guard();
  // Everything that can be checked is checked once, before any target stops.
  playbook::LoadOptions lo;
  lo.allow_unsafe_commands = o.allow_unsafe;
  const playbook::Playbook pb = playbook::find_playbook(o.playbook, lo);
  std::vector<std::pair<std::string, std::string>> vars;
  for (const auto& v : o.vars) {
    vars.push_back(playbook::parse_var_assignment(v));
  }
  const report::Format format = report::parse_format(o.format);
  playbook::RunOptions sampling;
  apply_sampling_options(o, sampling);
  const auto command_timeout = duration_option(o.timeout, "--timeout");
  const auto attach_timeout = duration_option(o.attach_timeout, "--attach-timeout");
  const session::Debugger debugger = session::find_debugger(o.debugger);
  OutputFile out(expand_path_pattern(o.output, std::nullopt, std::nullopt));

  std::vector<TargetRun> targets(pids.size());
  for (std::size_t i = 0; i < pids.size(); ++i) {
    targets[i].pid = pids[i];
    targets[i].rank = rank_of(pids[i]);
  }
  // Without RANK in the environment, the order given is the rank order.
  const bool all_ranked = std::all_of(targets.begin(), targets.end(),
                                      [](const TargetRun& t) { return t.rank.has_value(); });
  if (!all_ranked) {
    for (std::size_t i = 0; i < targets.size(); ++i) {
      targets[i].rank = static_cast<int>(i);
    }
  }

  const bool progress = !o.quiet && stderr_is_tty();
  const unsigned n_threads = static_cast<unsigned>(std::min<std::size_t>(
      targets.size(), jobs ? jobs : std::min<std::size_t>(targets.size(), 8)));
  // Samples in lockstep need every target under a debugger at once.
  const bool lockstep = n_threads == targets.size();
  Lockstep step(targets.size());
  std::vector<std::string> notes;
  if (!lockstep && sampling.samples.value_or(pb.samples.value_or(1)) > 1) {
    notes.push_back(fmt::format("samples not in lockstep: {} targets, {} at a time (--jobs {} "
                                "keeps them in step)",
                                targets.size(), n_threads, targets.size()));
  }
  std::mutex print_mutex;
  std::atomic<std::size_t> next{0};
  auto worker = [&] {
    for (;;) {
      const std::size_t i = next.fetch_add(1);
      if (i >= targets.size()) {
        return;
      }
      TargetRun& t = targets[i];
      const auto t0 = std::chrono::steady_clock::now();
      try {
        session::Options so;
        so.command_timeout = command_timeout;
        so.attach_timeout = attach_timeout;
        so.fast_attach = o.fast;
        so.light_symbols_above = o.full_symbols ? 0 : so.light_symbols_above;
        so.record_path = record_path_for(o.record, t.pid, t.rank);
        so.rank = t.rank;
        playbook::RunOptions ro;
        ro.pid = t.pid;
        ro.context.worker_pids = other_workers_of(t.pid); // as a single-target run names them
        so.worker_pids = ro.context.worker_pids;
        ro.vars = vars;
        ro.samples = sampling.samples;
        ro.interval = sampling.interval;
        ro.stop_timeout = sampling.stop_timeout;
        bool left = false;
        if (lockstep) {
          ro.before_resume = [&step](std::uint32_t k) { return step.arrive(k); };
          ro.sampling_done = [&step, &left] {
            if (!left) {
              left = true;
              step.leave();
            }
          };
        }
        struct Leave {
          Lockstep& step;
          bool& left;
          bool on;
          ~Leave() {
            if (on && !left) {
              left = true;
              step.leave();
            }
          }
        } leave_guard{step, left, lockstep};
        playbook::RunResult result = examine_target(debugger, so, pb, ro);
        if (result.fatal && !result.attached) {
          t.error = *result.fatal; // never examined: its report would be empty
        } else {
          t.result = std::move(result);
        }
      } catch (const Error& e) {
        t.error = e;
      } catch (const std::exception& e) {
        t.error = Error(ExitCode::Internal, e.what(), "this is a bug in rocplay; please report it");
      }
      t.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if (progress) {
        std::lock_guard lock(print_mutex);
        std::fprintf(stderr, "rocplay: pid %lld %s (%.2fs)\n", static_cast<long long>(t.pid),
                     t.examined() ? "done" : "failed", t.seconds);
      }
    }
  };
  std::vector<std::thread> threads;
  for (unsigned i = 0; i < n_threads; ++i) {
    threads.emplace_back(worker);
  }
  for (auto& th : threads) {
    th.join();
  }

  std::vector<Snapshot> ranked;
  for (const auto& t : targets) {
    if (t.examined()) {
      // The last sample: with several, those were taken in lockstep (one moment on every rank).
      ranked.push_back(t.result->samples.size() > 1 ? t.result->samples.back().snapshot
                                                    : t.result->snapshot);
      ranked.back().rank = t.rank;
    }
  }
  const std::vector<Finding> cross =
      ranked.size() >= 2 ? heuristics::run_ranks(ranked) : std::vector<Finding>{};
  std::size_t failed = 0;
  bool findings = !cross.empty();
  for (const auto& t : targets) {
    failed += t.examined() ? 0 : 1;
    findings = findings || (t.result && t.result->exit_code() == ExitCode::Findings);
  }

  report::MultiTargetReport m = multi_target_report(pb.name, targets, ranked.size());
  m.cross_rank = cross;
  m.sample_skew = sample_skew(targets);
  m.lockstep = lockstep;
  m.notes = notes;
  std::ostream& os = out.stream();
  switch (format) {
  case report::Format::Text:
    report::write_multi_target_text(os, m, report_text_options(o));
    break;
  case report::Format::Json:
    os << json_text(report::multi_target_to_json(m), 2) << "\n";
    break;
  case report::Format::Jsonl:
    for (const auto& line : report::multi_target_to_jsonl(m)) {
      os << json_text(line) << "\n";
    }
    break;
  case report::Format::Sarif:
    os << json_text(report::to_sarif(report::multi_target_findings(m), ROCPLAY_VERSION), 2) << "\n";
    break;
  }
  out.commit();
  if (outcome != nullptr) {
    outcome->cross_rank = cross;
    for (const auto& t : targets) {
      FanoutTarget ft{t.pid,
                      t.rank,
                      t.examined(),
                      static_cast<int>(t.exit_code()),
                      t.error ? t.error->what() : std::string(),
                      {},
                      {}};
      if (t.result) {
        ft.findings = t.result->findings;
        ft.progress = t.result->progress;
      }
      outcome->targets.push_back(std::move(ft));
    }
  }
  for (const auto& t : targets) {
    if (t.result && t.result->times.left_stopped) {
      print_error(
          fmt::format("pid {} was left stopped after detach; rocplay sent it SIGCONT", t.pid),
          "check that it runs (`ps -o stat -p PID`); something else may be tracing it");
    }
  }
  if (failed == targets.size()) {
    // Nothing was examined: the first target's reason is the reason.
    print_error(targets.front().error ? targets.front().error->what() : "no target was examined",
                targets.front().error ? targets.front().error->hint() : "");
    return static_cast<int>(targets.front().exit_code());
  }
  if (failed > 0) {
    print_error(fmt::format("{} of {} targets could not be examined", failed, targets.size()),
                "their reasons are in the report; the others were examined and detached");
    return static_cast<int>(ExitCode::PartialInput);
  }
  return static_cast<int>(findings ? ExitCode::Findings : ExitCode::Ok);
}

} // namespace rocplay::cli
