// The launch drivers (rocplay/drivers/drivers.hpp): `rocplay launch` (a program started under the
// debugger) and `rocplay run --wait-for-fault` (a process attached to and let run), each ending in
// a program stopped at its fault (or by the timeout or a signal), the playbook run at the stop,
// and the program killed or let go. The launcher itself is src/session/launch.cpp.
#include "rocplay/drivers/drivers.hpp"

#include "rocplay/heuristics/launch_verify.hpp"
#include "rocplay/snapshot/frames.hpp"
#include "rocplay/snapshot/snapshot.hpp"
#include "snapshot/text.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <csignal>
#include <memory>

namespace rocplay::drivers {

namespace {

// A driver for a session whose target is already stopped (at its fault): the playbook's attach
// is a no-op, everything else goes to the session.
class LaunchStoppedDriver final : public playbook::Driver {
public:
  explicit LaunchStoppedDriver(session::Session& s) : inner_(playbook::make_driver(s)) {}
  void attach(std::int64_t /*pid*/) override {}
  mi::Exchange execute(const std::string& command,
                       std::optional<std::chrono::milliseconds> timeout) override {
    return inner_->execute(command, timeout);
  }
  mi::Exchange console(const std::string& command,
                       std::optional<std::chrono::milliseconds> timeout) override {
    return inner_->console(command, timeout);
  }
  void detach() override { inner_->detach(); }
  bool has_mi_command(const std::string& name) const override {
    return inner_->has_mi_command(name);
  }
  const session::Debugger& debugger() const override { return inner_->debugger(); }
  const std::vector<mi::Exchange>& exchanges() const override { return inner_->exchanges(); }
  session::TargetTimes times() const override { return inner_->times(); }
  std::vector<std::string> warnings() const override { return inner_->warnings(); }
  void note(std::string_view text) override { inner_->note(text); }
  double now() const override { return inner_->now(); }

private:
  std::unique_ptr<playbook::Driver> inner_;
};

std::string launch_signal_word(std::optional<int> sig) {
  if (!sig) {
    return {};
  }
  return *sig == SIGINT    ? "SIGINT"
         : *sig == SIGTERM ? "SIGTERM"
         : *sig == SIGHUP  ? "SIGHUP"
                           : "a signal";
}

// The program stopped (or ended): the playbook at the stop, the session's end (kill or detach),
// and the one case that says all of it.
Incident stopped_program(session::Session& session, const session::LaunchResult& lr,
                         const StopRequest& request, const std::vector<std::string>& argv) {
  Case c;
  c.source.pid = lr.pid;
  LaunchInfo& info = c.launch.emplace();
  info.argv = argv;
  info.pid = lr.pid;
  info.outcome = std::string(session::to_string(lr.outcome));
  info.exit_code = lr.exit_code;
  info.exit_signal = lr.exit_signal;
  info.stop_signal = lr.stop_signal;
  info.stop_reason = lr.stop_reason;
  info.user_signal = launch_signal_word(lr.user_signal);
  info.ran_seconds = lr.ran_seconds;
  info.timeout_seconds = request.timeout_seconds;
  info.passed_signals = lr.passed_signals;
  info.api_errors = snapshot::cuda_api_errors(session.exchanges());

  std::optional<playbook::RunResult> result;
  if (lr.stopped()) {
    LaunchStoppedDriver driver(session);
    playbook::RunOptions ro;
    ro.pid = lr.pid;
    ro.vars = request.vars;
    ro.samples = 1;
    if (request.progress) {
      ro.progress = request.progress;
    }
    result = playbook::run(request.playbook, driver, ro);
  }
  session.detach(); // kills or detaches: the session's TargetEnd
  const auto& times = session.times();
  if (lr.stopped()) {
    info.after = times.killed    ? "killed after the report"
                 : !argv.empty() ? "detached after the report (it goes on with the signal)"
                                 : "detached after the report";
  } else if (lr.outcome == session::LaunchOutcome::TimedOut) {
    info.after = "detached; it keeps running";
  } else if (lr.outcome == session::LaunchOutcome::Lost) {
    info.after = times.killed ? "killed what was left of it" : "detached from what was left";
  }
  c.exit_code = exit_code_for_launch(lr);
  if (result) {
    result->times = times;
    for (const auto& w : session.warnings()) {
      if (std::find(result->warnings.begin(), result->warnings.end(), w) ==
          result->warnings.end()) {
        result->warnings.push_back(w);
      }
    }
    if (result->fatal) {
      c.status = CaseStatus::Partial;
      if (static_cast<int>(result->fatal->code()) >= 128) {
        c.exit_code = result->fatal->code(); // interrupted at the stop
      }
    }
    c.snapshot = std::move(result->snapshot);
    c.findings = std::move(result->findings);
    c.progress = std::move(result->progress);
    c.graph = std::move(result->graph);
    c.warnings = result->warnings;
    c.run = std::make_shared<const playbook::RunResult>(std::move(*result));
  }
  Incident inc;
  inc.title = request.playbook.name;
  inc.cases.push_back(std::move(c));
  return inc;
}

} // namespace

ExitCode exit_code_for_launch(const session::LaunchResult& r) {
  switch (r.outcome) {
  case session::LaunchOutcome::Faulted:
    return ExitCode::ProgramFaulted;
  case session::LaunchOutcome::Exited:
    return r.exit_code.value_or(0) == 0 ? ExitCode::Ok : ExitCode::ProgramFailed;
  case session::LaunchOutcome::Lost: // it ended, and not well: no status, no fault stop
    return ExitCode::ProgramFailed;
  case session::LaunchOutcome::Signalled:
    return ExitCode::ProgramKilled;
  case session::LaunchOutcome::TimedOut:
    return ExitCode::ProgramTimedOut;
  case session::LaunchOutcome::Interrupted:
    return session::exit_code_for_signal(r.user_signal.value_or(SIGINT));
  case session::LaunchOutcome::NotStarted:
    break;
  }
  return ExitCode::Internal;
}

Incident launch(const StopRequest& request, const session::LaunchSpec& spec) {
  session::Session session(request.debugger, request.session);
  const session::LaunchResult lr = session::launch(session, spec);
  if (lr.outcome != session::LaunchOutcome::Faulted) {
    // The program is ours: a timeout or an interrupt ends it whatever --detach-on-fault says.
    session.set_target_end(session::TargetEnd::Kill);
  }
  return stopped_program(session, lr, request, spec.argv);
}

std::vector<Experiment> verify_experiments(DebuggerKind debugger,
                                           const std::vector<std::string>& user) {
  // Both runtimes' switches: harmless where the other runtime is absent, and a HIP program on
  // NVIDIA (or under plain gdb) reads HIP's.
  std::vector<Experiment> out = {
      {"blocking launches", {{"CUDA_LAUNCH_BLOCKING", "1"}, {"HIP_LAUNCH_BLOCKING", "1"}}}};
  if (debugger == DebuggerKind::RocGdb) {
    out.push_back(
        {"serialised kernels", {{"AMD_SERIALIZE_KERNEL", "3"}, {"AMD_SERIALIZE_COPY", "3"}}});
  }
  for (const auto& assignment : user) {
    const auto eq = assignment.find('=');
    const std::string name = assignment.substr(0, eq);
    if (eq == std::string::npos || !session::valid_env_name(name)) {
      throw Error(
          ExitCode::Usage, fmt::format("--experiment {}: not NAME=VALUE", assignment),
          "give an environment variable and its value, e.g. --experiment OMP_NUM_THREADS=1");
    }
    out.push_back({assignment, {{name, assignment.substr(eq + 1)}}});
  }
  return out;
}

namespace {

// What tracing launches may add to a run's time limit: a stop under cuda-gdb takes tens of
// milliseconds, and session::LaunchSpec::max_traced_launches of them are traced at most.
constexpr double kTracedLaunchesSeconds = 60;

// Each launched kernel's last launching line, in the order first launched, from the stacks kept
// at the traced launches.
std::vector<LaunchSite> launch_sites_of(const std::vector<mi::Exchange>& stacks) {
  std::vector<LaunchSite> sites;
  for (const auto& ex : stacks) {
    const auto* result = ex.result();
    if (result == nullptr) {
      continue;
    }
    std::vector<Frame> frames;
    for (const auto f : result->results()["stack"]) {
      frames.push_back(snapshot::text::frame_from_mi(f));
    }
    if (auto site = launch_site(frames)) {
      add_launch_site(sites, std::move(*site));
    }
  }
  return sites;
}

// `as given` -> `as-given`, `NAME=VALUE` -> `name-value`: a recording's file name.
std::string file_word(std::string_view name) {
  std::string out;
  for (const char c : name) {
    const bool keep = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
    if (keep || (c >= 'A' && c <= 'Z')) {
      out += keep ? c : static_cast<char>(c - 'A' + 'a');
    } else if (!out.empty() && out.back() != '-') {
      out += '-';
    }
    if (out.size() >= 40) {
      break;
    }
  }
  while (!out.empty() && out.back() == '-') {
    out.pop_back();
  }
  return out;
}

} // namespace

Incident launch_verify(const StopRequest& request, const session::LaunchSpec& spec,
                       const VerifyPlan& plan) {
  std::vector<Experiment> conditions = {{std::string(heuristics::kAsGiven), {}}};
  conditions.insert(conditions.end(), plan.experiments.begin(), plan.experiments.end());
  const unsigned repeats = std::max(1U, plan.repeats);
  const auto total = static_cast<std::uint32_t>(conditions.size() * repeats);
  Incident result;
  std::vector<heuristics::VerifyRun> runs;
  std::uint32_t index = 0;
  bool stop = false;
  for (const auto& condition : conditions) {
    for (unsigned rep = 0; rep < repeats && !stop; ++rep) {
      ++index;
      StopRequest rq = request;
      session::LaunchSpec one = spec;
      one.environment.insert(one.environment.end(), condition.env.begin(), condition.env.end());
      // The experiments say where each kernel was launched when the first fault has no Python
      // line: a stop at every launch. Never as given, whose timing is the evidence; with blocking
      // launches each launch waits for its kernel anyway.
      one.trace_launches = condition.name != heuristics::kAsGiven && !runs.empty() &&
                           runs.front().fault && runs.front().launch_line.empty();
      if (index > 1 && !spec.timeout) {
        const double first = runs.front().run.seconds;
        const double tracing = one.trace_launches ? kTracedLaunchesSeconds : 0;
        one.timeout = std::chrono::milliseconds(
            static_cast<std::int64_t>((std::max(10.0, 3 * first) + tracing) * 1000.0));
        rq.timeout_seconds = static_cast<double>(one.timeout->count()) / 1000.0;
      }
      heuristics::VerifyRun vr;
      if (!plan.record_dir.empty()) {
        vr.recording =
            fmt::format("{}/run{}-{}.mi", plan.record_dir, index, file_word(condition.name));
        rq.session.record_path = vr.recording;
      }
      session::Session session(rq.debugger, rq.session);
      const session::LaunchResult lr = session::launch(session, one);
      if (lr.outcome != session::LaunchOutcome::Faulted) {
        session.set_target_end(session::TargetEnd::Kill);
      }
      LaunchRun& run = vr.run;
      run.index = index;
      run.of = total;
      run.experiment = condition.name;
      run.env = {condition.env.begin(), condition.env.end()};
      run.argv = spec.argv;
      run.outcome = std::string(session::to_string(lr.outcome));
      run.exit_code = lr.exit_code;
      run.exit_signal = lr.exit_signal;
      run.seconds = lr.ran_seconds;
      if (one.trace_launches) {
        run.traced_launches = static_cast<std::uint32_t>(lr.traced_launches);
        run.launch_sites = launch_sites_of(lr.launch_stacks);
      }
      session.note(snapshot::launch_run_note(run));
      Incident inc = stopped_program(session, lr, rq, spec.argv);
      const Case& c = inc.cases.front();
      if (lr.outcome == session::LaunchOutcome::Faulted) {
        vr.fault = heuristics::fault_site(c.snapshot);
        vr.launch_line = heuristics::launch_line(c.snapshot);
        vr.concurrent = heuristics::concurrent_work(c.snapshot);
      }
      vr.launch_sites = run.launch_sites;
      if (plan.progress) {
        plan.progress(heuristics::compare_verify_runs({vr}).evidence.front());
      }
      // Nothing to compare without a first fault; an interrupt (or a run the playbook could not
      // finish because of one) ends the experiments.
      stop = (index == 1 && !vr.fault) || lr.outcome == session::LaunchOutcome::Interrupted ||
             static_cast<int>(c.exit_code) >= 128;
      runs.push_back(std::move(vr));
      if (index == 1) {
        result = std::move(inc);
      }
    }
  }
  heuristics::add_launch_sites(runs);
  result.verification = heuristics::compare_verify_runs(runs);
  result.verify_runs = std::move(runs);
  if (stop && index < total) {
    result.notes.push_back(fmt::format("verification stopped after {} of {} runs", index, total));
  }
  return result;
}

Incident wait_for_fault(const StopRequest& request, std::int64_t pid,
                        std::chrono::milliseconds wait, const std::function<void()>& attached) {
  session::Session session(request.debugger, request.session);
  session.attach(pid);
  if (attached) {
    attached();
  }
  const session::LaunchResult lr = session::wait_for_fault(session, wait);
  if (lr.outcome == session::LaunchOutcome::Interrupted) {
    session.detach(); // stops it, detaches, then the pending signal ends rocplay
    throw Error(session::exit_code_for_signal(lr.user_signal.value_or(SIGINT)),
                fmt::format("interrupted while waiting for a fault; pid {} was detached and keeps "
                            "running",
                            pid));
  }
  return stopped_program(session, lr, request, {});
}

} // namespace rocplay::drivers
