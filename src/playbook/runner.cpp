// Running a playbook: steps in order, per-step status, `always` last, detach on every path.
//
// Unlike `gdb -batch -x FILE`, which stops at the first error and exits with the status of the
// last command, every step gets its own status here, a failing step stops the playbook only when
// it says so (on_error: abort, the default), and the `always` section and the detach run whatever
// happened before them.
#include "playbook/deferred_code.hpp"
#include "playbook/internal.hpp"
#include "rocplay/case/analyse.hpp"
#include "rocplay/core/clock.hpp"
#include "rocplay/core/kernel_waits.hpp"
#include "rocplay/pyframes/pyframes.hpp"
#include "rocplay/snapshot/frames.hpp"
#include "rocplay/snapshot/grouping.hpp"
#include "rocplay/snapshot/python_stacks.hpp"
#include "rocplay/snapshot/sampling.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <ctime>
#include <set>
#include <thread>
#include <unordered_set>

namespace rocplay::playbook {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// MI results as values for `register:`, `expect:` and `${...}`; bounded.
class MiConverter {
public:
  explicit MiConverter(std::size_t budget) : budget_(budget) {}
  bool truncated() const { return truncated_; }

  Value convert(const mi::Value& v, std::size_t depth = 0) {
    if (budget_ == 0 || depth > 32) {
      truncated_ = true;
      return Value();
    }
    --budget_;
    if (v.is_string()) {
      return Value::string(v.bytes());
    }
    if (v.is_tuple()) {
      Value::Entries entries;
      for (auto child : v) {
        entries.emplace_back(std::string(child.name()), convert(child, depth + 1));
      }
      return Value::map(std::move(entries));
    }
    if (v.is_list()) {
      std::vector<Value> items;
      for (auto child : v) {
        items.push_back(convert(child, depth + 1));
      }
      return Value::list(std::move(items));
    }
    return Value();
  }

private:
  std::size_t budget_;
  bool truncated_ = false;
};

bool is_thread_id(std::string_view id) {
  return !id.empty() && id.size() < 32 && id.find_first_not_of("0123456789.") == std::string::npos;
}

class Runner final : public detail::Scope {
public:
  Runner(const Playbook& pb, Driver& driver, const RunOptions& options,
         std::unique_ptr<detail::DeferredCode> deferred)
      : pb_(pb), driver_(driver), options_(options), deferred_(std::move(deferred)) {}

  const Value* lookup(std::string_view root) const override {
    for (auto it = locals_.rbegin(); it != locals_.rend(); ++it) {
      if (it->first == root) {
        return &it->second;
      }
    }
    auto it = globals_.find(std::string(root));
    return it == globals_.end() ? nullptr : &it->second;
  }

  bool has_mi_command(const std::string& name) const override {
    return driver_.has_mi_command(name);
  }

  RunResult run() {
    const auto start = Clock::now();
    result_.playbook = pb_.name;
    result_.pid = options_.pid;
    result_.debugger = driver_.debugger();
    result_.unsafe_commands_allowed = pb_.allow_unsafe_commands && !pb_.builtin;
    detail::check_requirements(pb_, driver_.debugger());
    globals_ = detail::global_values(pb_, driver_.debugger(), options_);
    detail::check_rendered_commands(pb_, options_, driver_.debugger().kind, globals_, *this);

    try {
      setup();
      std::vector<const Step*> steps;
      Step implicit_attach;
      if (!pb_.has_attach_step) {
        implicit_attach.kind = StepKind::Attach;
        implicit_attach.name = "attach (implicit)";
        implicit_attach.position = Position{pb_.origin, 0, 0};
        steps.push_back(&implicit_attach);
      }
      for (const auto& s : pb_.steps) {
        steps.push_back(&s);
      }
      for (const Step* s : steps) {
        if (stopped_) {
          not_run(*s, false, stop_reason_);
          continue;
        }
        run_step(*s, 0, false, {});
      }
      take_later_samples(steps);
      for (const auto& s : pb_.always) {
        if (debugger_gone_) {
          not_run(s, true, stop_reason_);
          continue;
        }
        if (detail::needs_target(s.kind) && !attached_) {
          not_run(s, true, "the target is not attached");
          continue;
        }
        run_step(s, 0, true, {});
      }
    } catch (const std::exception& e) {
      // A bug, not a playbook problem: still detach and report what there is.
      result_.fatal = Error(ExitCode::Internal, fmt::format("internal error: {}", e.what()),
                            "this is a bug in rocplay; please report it with the playbook");
    }
    final_detach();
    driver_.end(); // its exit goes on beside nvdisasm's decoding
    decode_deferred_code();
    finish_snapshot();
    result_.times = driver_.times();
    if (result_.stopped_seconds) {
      result_.times.stop_seconds = result_.stopped_seconds;
    }
    for (auto& w : driver_.warnings()) {
      result_.warnings.push_back(std::move(w));
    }
    result_.total_seconds = seconds_since(start);
    return std::move(result_);
  }

private:
  // Before the first step: keep expressions from calling functions in the target.
  void setup() {
    // cuda-gdb 13.0 calls into the target to attach and to detach; with may-call-functions off
    // the attach never reports its stop (seen on H200, docs/hardware-validation.md).
    if (pb_.allow_unsafe_commands || driver_.debugger().kind == DebuggerKind::CudaGdb) {
      return;
    }
    try {
      auto ex = driver_.execute("-gdb-set may-call-functions off", std::nullopt);
      if (auto err = ex.error_message()) {
        result_.warnings.push_back(
            fmt::format("could not forbid calls into the target (`set may-call-functions off`: "
                        "{}); expressions in steps may call target functions",
                        *err));
      }
    } catch (const Error& e) {
      result_.warnings.push_back(fmt::format("setup: {}", e.what()));
      stop(e, "the debugger failed before the first step");
    }
  }

  void stop(const Error& e, std::string reason) {
    if (!result_.fatal) {
      result_.fatal = e;
    }
    stopped_ = true;
    if (e.code() != ExitCode::Internal) {
      debugger_gone_ = e.code() == ExitCode::DebuggerCrashed || e.code() == ExitCode::Timeout ||
                       static_cast<int>(e.code()) >= 128;
    }
    stop_reason_ = std::move(reason);
  }

  void not_run(const Step& s, bool in_always, const std::string& why) {
    StepRecord rec = record_for(s, 0, in_always, {});
    rec.status = StepStatus::NotRun;
    rec.message = why;
    result_.steps.push_back(rec);
    if (options_.progress) {
      options_.progress(rec, true);
    }
  }

  StepRecord record_for(const Step& s, std::uint32_t depth, bool in_always,
                        const std::string& item) const {
    StepRecord rec;
    rec.sample = sample_;
    rec.name = s.name;
    // An unnamed command step is named by its command: as it is sent (`--thread 3`), not as
    // written (`--thread ${thread.id}`), so the steps log says which thread each one read.
    if ((s.kind == StepKind::Mi || s.kind == StepKind::Cli) && s.name == s.command.text) {
      try {
        rec.name = detail::render(
            s.command, *this, s.kind == StepKind::Mi ? detail::Quoting::Mi : detail::Quoting::Cli);
      } catch (const std::exception&) {
        // a variable not set yet: the step's own run reports it; the name stays as written
      }
    }
    rec.kind = s.kind;
    rec.position = s.position;
    rec.in_always = in_always;
    rec.depth = depth;
    rec.item = item;
    return rec;
  }

  std::optional<std::chrono::milliseconds> timeout_of(const Step& s) const {
    return s.timeout ? s.timeout : pb_.timeout;
  }

  // Runs one step and records it. Returns false when the playbook must stop.
  bool run_step(const Step& s, std::uint32_t depth, bool in_always, const std::string& item) {
    StepRecord rec = record_for(s, depth, in_always, item);
    const std::size_t record_index = result_.steps.size();
    result_.steps.push_back(rec);

    if (!s.debuggers.empty() && std::find(s.debuggers.begin(), s.debuggers.end(),
                                          driver_.debugger().kind) == s.debuggers.end()) {
      std::string names;
      for (auto k : s.debuggers) {
        names += (names.empty() ? "" : " or ") + std::string(to_string(k));
      }
      return skip(record_index, fmt::format("requires {}", names));
    }
    if (s.when && !detail::evaluate(*s.when->root, *this).truthy()) {
      return skip(record_index, fmt::format("when: {}", s.when->text));
    }
    if (detail::needs_target(s.kind) && !attached_) {
      return skip(record_index, "the target is not attached");
    }
    if (options_.progress) {
      options_.progress(result_.steps[record_index], false);
    }

    const auto start = Clock::now();
    const std::size_t first_exchange = driver_.exchanges().size();
    StepStatus status = StepStatus::Ok;
    std::string message;
    Value value;
    bool fatal_stop = false;
    try {
      value = execute(s, depth, in_always, status, message);
      if (status == StepStatus::Ok) {
        check(s, value, status, message);
      }
    } catch (const detail::TextError& e) {
      status = StepStatus::Failed;
      message = e.what();
      if (!e.hint.empty()) {
        message += fmt::format(" ({})", e.hint);
      }
    } catch (const Error& e) {
      message = e.what();
      if (e.code() == ExitCode::Timeout) {
        status = StepStatus::TimedOut;
      } else {
        status = StepStatus::Failed;
      }
      // The session ends itself after a timeout, a debugger death or a signal; an attach that
      // failed leaves nothing to run steps against. Either way the playbook is over.
      const bool session_over = e.code() == ExitCode::Timeout ||
                                e.code() == ExitCode::DebuggerCrashed ||
                                static_cast<int>(e.code()) >= 128 || s.kind == StepKind::Attach;
      if (session_over) {
        fatal_stop = true;
        Error err = e;
        if (s.kind == StepKind::Attach && !e.hint().empty()) {
          err = Error(e.code(), e.what(), e.hint());
        }
        stop(err, s.kind == StepKind::Attach ? "attach failed" : message);
      }
    }

    StepRecord& done = result_.steps[record_index];
    done.seconds = seconds_since(start);
    const auto& exchanges = driver_.exchanges();
    for (std::size_t i = first_exchange; i < exchanges.size(); ++i) {
      if (exchanges[i].command.empty()) {
        continue;
      }
      if (done.commands.size() < 5) {
        done.commands.push_back(exchanges[i].command);
      }
      ++done.command_count;
      if (s.kind == StepKind::Mi || s.kind == StepKind::Cli) {
        done.output += exchanges[i].console();
        const mi::Record* r = exchanges[i].result();
        if (s.kind == StepKind::Mi && r != nullptr) {
          if (!done.output.empty() && done.output.back() != '\n') {
            done.output += '\n';
          }
          done.output += r->line();
          done.output += '\n';
        }
      }
    }
    bool go_on = true;
    if (status == StepStatus::Failed || status == StepStatus::TimedOut) {
      if (fatal_stop) {
        go_on = false;
      } else if (s.on_error == OnError::Continue) {
        status = status == StepStatus::TimedOut ? status : StepStatus::Ignored;
      } else {
        go_on = false;
        result_.aborted = true;
        stopped_ = true;
        stop_reason_ = fmt::format("step `{}` failed", s.name);
      }
    }
    done.status = status;
    done.message = message;
    if (!s.register_as.empty()) {
      globals_[s.register_as] = with_status(value, status, done.seconds);
    }
    if (options_.progress) {
      options_.progress(done, true);
    }
    return go_on;
  }

  bool skip(std::size_t index, std::string why) {
    StepRecord& rec = result_.steps[index];
    rec.status = StepStatus::Skipped;
    rec.message = std::move(why);
    if (options_.progress) {
      options_.progress(rec, true);
    }
    return true;
  }

  static Value with_status(const Value& v, StepStatus status, double seconds) {
    Value::Entries entries;
    entries.emplace_back("status", Value::string(std::string(to_string(status))));
    entries.emplace_back("ms", Value::integer(static_cast<std::int64_t>(seconds * 1000)));
    for (const auto& e : v.entries()) {
      if (e.first != "status" && e.first != "ms") {
        entries.push_back(e);
      }
    }
    return Value::map(std::move(entries));
  }

  // What the names of a condition were when it failed: ` (result.class = "done", ...)`.
  std::string actual_values(const detail::ExprNode& root) const {
    constexpr std::size_t kMaxValueChars = 200;
    std::vector<std::string> seen;
    std::string out;
    detail::for_each_name(root, [&](const std::vector<std::string>& path, std::uint32_t) {
      std::string name;
      for (const auto& part : path) {
        name += (name.empty() ? "" : ".") + part;
      }
      if (std::find(seen.begin(), seen.end(), name) != seen.end() || seen.size() >= 4) {
        return;
      }
      seen.push_back(name);
      const Value* v = detail::resolve(*this, path);
      std::string shown = v == nullptr ? std::string("undefined") : v->repr();
      if (shown.size() > kMaxValueChars) {
        shown = fmt::format("{}... ({} chars)", shown.substr(0, kMaxValueChars), shown.size());
      }
      out += fmt::format("{}{} = {}", out.empty() ? "" : ", ", name, shown);
    });
    return out.empty() ? out : " (actual: " + out + ")";
  }

  // expect / fail_when, with the step's own result as `result`.
  void check(const Step& s, const Value& value, StepStatus& status, std::string& message) {
    locals_.emplace_back("result", with_status(value, status, 0));
    struct Pop {
      std::vector<std::pair<std::string, Value>>& l;
      ~Pop() { l.pop_back(); }
    } pop{locals_};
    if (s.fail_when) {
      if (detail::evaluate(*s.fail_when->root, *this).truthy()) {
        status = StepStatus::Failed;
        message = fmt::format("fail_when holds: {}", s.fail_when->text);
        return;
      }
    } else if (const Value* cls = value.get("class"); cls != nullptr &&
                                                      cls->kind() == Value::Kind::String &&
                                                      cls->as_string() == "error") {
      status = StepStatus::Failed;
      const Value* err = value.get("error");
      message = err != nullptr ? err->as_string() : "the debugger answered ^error";
      return;
    } else if (const Value* failed = value.get("failed");
               failed != nullptr && failed->kind() == Value::Kind::Int && failed->as_int() > 0) {
      const Value* count = value.get("count");
      if (count != nullptr && count->kind() == Value::Kind::Int &&
          failed->as_int() >= count->as_int()) {
        status = StepStatus::Failed;
        message = fmt::format("all {} commands failed", count->as_int());
        return;
      }
      message = fmt::format("{} of {} commands failed", failed->as_int(),
                            count != nullptr ? count->as_int() : 0);
    }
    for (const auto& c : s.expect) {
      if (!detail::evaluate(*c.root, *this).truthy()) {
        status = StepStatus::Failed;
        message = fmt::format("expect does not hold: {}{}", c.text, actual_values(*c.root));
        return;
      }
    }
  }

  Value exchange_value(const mi::Exchange& ex, bool convert) {
    Value::Entries e;
    e.emplace_back("command", Value::string(ex.command));
    const mi::Record* r = ex.result();
    e.emplace_back("class", Value::string(r != nullptr ? std::string(r->klass()) : ""));
    auto err = ex.error_message();
    e.emplace_back("error", err ? Value::string(*err) : Value());
    e.emplace_back("output", Value::string(ex.console()));
    if (convert && r != nullptr) {
      MiConverter conv(200'000);
      e.emplace_back("results", conv.convert(r->results()));
      if (conv.truncated()) {
        result_.warnings.push_back(fmt::format(
            "the result of `{}` was too large to keep whole for register/expect", ex.command));
      }
    } else {
      e.emplace_back("results", Value());
    }
    return Value::map(std::move(e));
  }

  std::string checked(const std::string& command, StepKind kind) {
    const bool allow = pb_.builtin || pb_.allow_unsafe_commands;
    auto refusal =
        kind == StepKind::Mi ? detail::check_mi(command, allow) : detail::check_cli(command, allow);
    if (refusal) {
      throw detail::TextError(0, fmt::format("refused `{}`: {}", command, refusal->reason));
    }
    if (pb_.allow_unsafe_commands && !pb_.builtin) {
      // Allowed only by the flag: the report names it.
      const auto without_flag = kind == StepKind::Mi ? detail::check_mi(command, false)
                                                     : detail::check_cli(command, false);
      if (without_flag) {
        result_.unsafe_commands_run.push_back(command);
      }
    }
    return command;
  }

  Value execute(const Step& s, std::uint32_t depth, bool in_always, StepStatus& status,
                std::string& message) {
    const bool convert = !s.register_as.empty() || !s.expect.empty() || s.fail_when;
    switch (s.kind) {
    case StepKind::Mi: {
      const std::string cmd =
          checked(detail::render(s.command, *this, detail::Quoting::Mi), StepKind::Mi);
      return exchange_value(driver_.execute(cmd, timeout_of(s)), convert);
    }
    case StepKind::Cli: {
      const std::string cmd =
          checked(detail::render(s.command, *this, detail::Quoting::Cli), StepKind::Cli);
      return exchange_value(driver_.console(cmd, timeout_of(s)), convert);
    }
    case StepKind::Attach:
      if (options_.stop.value_or(pb_.stop.value_or(StopMode::Attach)) == StopMode::Copy) {
        // The copy's stop is short; finding CPython's runtime (ELF symbols) is not: before it.
        locate_python();
        copying_ = driver_.stop_by_copy([this] { held_python_ = read_python(); });
      }
      driver_.attach(options_.pid);
      attached_ = true;
      result_.attached = true;
      return Value::map({});
    case StepKind::Detach:
      driver_.detach();
      attached_ = false;
      return Value::map({});
    case StepKind::Snapshot: {
      if (!convert) {
        // Nothing reads it now: the report's snapshot is built after the detach, over every
        // exchange, so building it here would only lengthen the stop.
        message = "built after the detach";
        return Value::map({});
      }
      const Snapshot& snap = current_snapshot();
      auto n = [](std::size_t v) { return Value::integer(static_cast<std::int64_t>(v)); };
      return Value::map({{"agents", n(snap.agents.size())},
                         {"queues", n(snap.queues.size())},
                         {"dispatches", n(snap.dispatches.size())},
                         {"waves", n(snap.waves.size())},
                         {"threads", n(snap.host_threads.size())},
                         {"source_lines", n(snap.source_lines.size())},
                         {"warnings", n(snap.warnings.size())}});
    }
    case StepKind::Threads: {
      auto ex = driver_.execute("-thread-info", timeout_of(s));
      const mi::Record* r = ex.result();
      const std::size_t count = r != nullptr ? r->results()["threads"].size() : 0;
      const bool failed = r == nullptr || r->klass() != "done";
      if (failed) {
        status = StepStatus::Failed;
        message = ex.error_message().value_or("-thread-info failed");
      }
      return count_value(count, failed ? 1 : 0);
    }
    case StepKind::InfoLine:
      return info_line(s);
    case StepKind::Backtrace:
      return backtrace(s);
    case StepKind::Disassemble:
      return disassemble(s);
    case StepKind::Foreach:
      return foreach (s, depth, in_always, status, message);
    }
    return Value();
  }

  static Value count_value(std::size_t count, std::size_t failed) {
    return Value::map({{"count", Value::integer(static_cast<std::int64_t>(count))},
                       {"failed", Value::integer(static_cast<std::int64_t>(failed))}});
  }

  bool has_thread_list() const {
    const auto& exchanges = driver_.exchanges();
    for (std::size_t i = window_start_; i < exchanges.size(); ++i) {
      if (exchanges[i].command.rfind("-thread-info", 0) == 0 && exchanges[i].complete()) {
        return true;
      }
    }
    return false;
  }

  // Samples 2..N: the target runs `interval`, is stopped again, and the steps (less the attach)
  // run once more. Each sample's exchanges start at the one holding its note
  // (snapshot::sample_windows reads a recording the same way).
  void take_later_samples(const std::vector<const Step*>& steps) {
    const std::uint32_t wanted = std::clamp<std::uint32_t>(
        options_.samples.value_or(pb_.samples.value_or(1)), 1, kMaxSamples);
    const auto interval =
        options_.interval.value_or(pb_.interval.value_or(std::chrono::milliseconds(2000)));
    result_.samples_wanted = wanted;
    // cuda-gdb that failed to attach to the GPU side sees no more of it in a later sample, and
    // resuming such a target hung: no answer to -exec-continue for 30 s, four ranks on H200
    // (docs/hardware-validation.md). Worse, such a failure can leave the job frozen for good: the
    // other targets of a fan-out are told (gpu_attach_failed), and this one detaches now.
    std::string gpu_attach_error;
    for (const auto& ex : driver_.exchanges()) { // the attach's, and the output after it
      if (ex.command.empty() || ex.command.rfind("-target-attach", 0) == 0) {
        snapshot::take_gpu_attach_error(ex, gpu_attach_error);
      }
    }
    if (!gpu_attach_error.empty()) {
      if (options_.gpu_attach_failed) {
        options_.gpu_attach_failed();
      }
      result_.samples_wanted = 1;
      result_.sampling_stopped =
          "the debugger's attach to the GPU side failed inside the driver: no further sample, "
          "then the detach";
      return;
    }
    if (wanted < 2) {
      return;
    }
    if (!driver_.can_resume()) {
      result_.samples_wanted = 1;
      result_.sampling_stopped = "this debugger driver cannot let the target run: one sample";
      return;
    }
    struct Done {
      const RunOptions& o;
      ~Done() {
        if (o.sampling_done) {
          o.sampling_done();
        }
      }
    } done{options_};
    double began = -1; // when the last sample's stop began (driver_.now()); -1: not known
    if (!stopped_ && attached_) {
      const auto& ex = driver_.exchanges();
      double attach_at = 0;
      for (const auto& e : ex) {
        if (e.command.rfind("-target-attach", 0) == 0) {
          attach_at = e.sent_at;
          began = attach_at;
        }
        for (const auto& n : e.notes) {
          if (const auto copy = snapshot::parse_copy_note(n); copy && began < 0) {
            attach_at = copy->held_from;
            began = attach_at;
          }
        }
      }
      driver_.note(snapshot::sample_note(1, attach_at, unix_now() - (driver_.now() - attach_at)));
    }
    for (std::uint32_t k = 2; k <= wanted; ++k) {
      if (stopped_ || !attached_) {
        result_.sampling_stopped = stopped_ ? stop_reason_ : "the target was detached";
        return;
      }
      if (options_.halt && options_.halt()) {
        result_.sampling_stopped = "another target's GPU attach failed inside the driver: no "
                                   "further sample, so as to touch the job no more";
        return;
      }
      // Samples `interval` apart, stop to stop: the target runs the interval less the stop just
      // taken (at least half the interval), so a second sample costs the run about its interval
      // rather than the interval and a stop more. --pids keeps the whole interval: its targets
      // wait for each other running, and all are stopped the interval after the last resumed.
      auto run = interval;
      if (!options_.interval_start && began >= 0) {
        const auto stopped_for = std::chrono::milliseconds(
            static_cast<std::int64_t>(std::max(0.0, driver_.now() - began) * 1000));
        run = std::clamp(interval - stopped_for, interval / 2, interval);
      }
      StepRecord rec;
      rec.name = fmt::format("run {:.3g} s, stop for sample {}", run.count() / 1000.0, k);
      rec.kind = StepKind::Snapshot;
      rec.position = Position{pb_.origin, 0, 0};
      rec.sample = k;
      const std::size_t index = result_.steps.size();
      result_.steps.push_back(rec);
      if (options_.progress) {
        options_.progress(rec, false);
      }
      const auto start = Clock::now();
      // The snapshot as last built, not rebuilt inside the stop (1,000 threads: about 50 ms);
      // the PCs the info-line step asked are in looked_up_ whatever it holds. The backtrace step
      // reads thread ids without a peek: where it was the last to look, the snapshot is the one
      // of that point, a peek when no exchange came since, else built from the exchanges then.
      if (unpeeked_at_ && *unpeeked_at_ != snapshot_exchanges_) {
        try {
          const snapshot::Builder* b =
              *unpeeked_at_ == driver_.exchanges().size() ? fed_builder() : nullptr;
          snapshot_ = b != nullptr ? b->peek() : build_window(*unpeeked_at_);
          snapshot_exchanges_ = *unpeeked_at_;
        } catch (const std::exception& e) {
          snapshot_ = Snapshot{};
          snapshot_.warnings.push_back(fmt::format("snapshot: {}", e.what()));
        }
      }
      unpeeked_at_.reset();
      for (const auto& sl : snapshot_.source_lines) {
        earlier_pcs_.insert(sl.pc);
      }
      try {
        session::IntervalStart interval_start;
        if (options_.interval_start) {
          interval_start = [this, k] { return options_.interval_start(k); };
        }
        const session::ResumeResult r = driver_.run_for(run, options_.stop_timeout, interval_start);
        began = r.interrupted_at > 0 ? r.interrupted_at : r.stopped_at;
        if (r.exited) {
          result_.steps[index].status = StepStatus::Failed;
          result_.steps[index].message = "the target exited while it ran";
          stopped_ = true;
          attached_ = false;
          stop_reason_ = "the target exited between samples";
          result_.sampling_stopped = stop_reason_;
        } else {
          driver_.note(snapshot::sample_note(k, began, unix_now() - (driver_.now() - began)));
          window_start_ = driver_.exchanges().empty() ? 0 : driver_.exchanges().size() - 1;
          sample_ = k;
          result_.steps[index].status = StepStatus::Ok;
          if (r.interrupted_at == 0) {
            result_.steps[index].message =
                fmt::format("the target stopped by itself ({}{})", r.stop_reason,
                            r.signal_name.empty() ? "" : " " + r.signal_name);
          }
        }
      } catch (const Error& e) {
        result_.steps[index].status =
            e.code() == ExitCode::Timeout ? StepStatus::TimedOut : StepStatus::Failed;
        result_.steps[index].message = e.what();
        stop(e, e.what());
        result_.sampling_stopped = e.what();
      }
      result_.steps[index].seconds = seconds_since(start);
      if (options_.progress) {
        options_.progress(result_.steps[index], true);
      }
      if (stopped_) {
        return;
      }
      for (const Step* s : steps) {
        if (s->kind == StepKind::Attach) {
          continue;
        }
        if (stopped_) {
          not_run(*s, false, stop_reason_);
          continue;
        }
        run_step(*s, 0, false, {});
      }
    }
  }

  // The steps that work on threads need the thread list; take it when no step has.
  void ensure_threads(const Step& s) {
    if (!has_thread_list()) {
      driver_.execute("-thread-info", timeout_of(s));
    }
  }

  snapshot::BuildOptions build_options() const {
    snapshot::BuildOptions bo;
    bo.debugger = driver_.debugger().kind;
    bo.label = pb_.name;
    return bo;
  }

  // Hands the exchanges that arrived since the last call to the samples' builder, once each, as
  // they come (one builder per sample, finished after the detach: finish_snapshot). The last
  // exchange handed over may take more records or notes after it (an async record after a
  // result): then the builder starts over, so that it holds exactly what a build over the
  // exchanges after the fact would. Returns the builder of the current sample, or nullptr when
  // it cannot stand for the sample this runner is taking (its windows split otherwise, or it
  // failed): callers then build the sample from its exchanges, as before.
  const snapshot::Builder* fed_builder() {
    if (feed_failed_) {
      return nullptr;
    }
    const auto& exchanges = driver_.exchanges();
    try {
      if (fed_ > exchanges.size() ||
          (fed_ > 0 && (exchanges[fed_ - 1].records.size() != fed_records_ ||
                        exchanges[fed_ - 1].notes.size() != fed_notes_))) {
        samples_.reset();
        fed_ = 0;
      }
      if (!samples_) {
        samples_.emplace(build_options());
        samples_kind_ = driver_.debugger().kind;
      }
      for (; fed_ < exchanges.size(); ++fed_) {
        samples_->add(exchanges[fed_]);
      }
      if (fed_ > 0) {
        fed_records_ = exchanges[fed_ - 1].records.size();
        fed_notes_ = exchanges[fed_ - 1].notes.size();
      }
    } catch (const std::exception&) {
      feed_failed_ = true;
      samples_.reset();
      return nullptr;
    }
    if (samples_kind_ != driver_.debugger().kind || samples_->current_sample() != sample_) {
      return nullptr;
    }
    return samples_->current();
  }

  // The current sample so far, built from its exchanges (what fed_builder() stands for).
  Snapshot build_window(std::size_t end) const {
    snapshot::Builder builder(build_options());
    const auto& exchanges = driver_.exchanges();
    for (std::size_t i = window_start_; i < end && i < exchanges.size(); ++i) {
      builder.add(exchanges[i]);
    }
    return builder.finish();
  }

  // The snapshot of the current sample so far: a peek at its builder, which is finished only
  // after the detach.
  const Snapshot& current_snapshot() {
    const std::size_t n = driver_.exchanges().size();
    unpeeked_at_.reset(); // this look is the latest
    if (n != snapshot_exchanges_) {
      try {
        const snapshot::Builder* b = fed_builder();
        snapshot_ = b != nullptr ? b->peek() : build_window(n);
      } catch (const std::exception& e) {
        snapshot_ = Snapshot{};
        snapshot_.warnings.push_back(fmt::format("snapshot: {}", e.what()));
      }
      snapshot_exchanges_ = n;
    }
    return snapshot_;
  }

  // The host thread ids of the current sample so far, in the snapshot's order, without a peek.
  std::vector<std::string> current_thread_ids() {
    const std::size_t n = driver_.exchanges().size();
    std::vector<std::string> ids;
    if (n != snapshot_exchanges_) {
      try {
        if (const snapshot::Builder* b = fed_builder()) {
          ids = b->host_thread_ids();
          // The snapshot as last built stays, but a later sample's first look at it (its
          // earlier PCs) wants the one of this point.
          unpeeked_at_ = n;
          return ids;
        }
      } catch (const std::exception&) {
        // as below
      }
    }
    for (const auto& t : current_snapshot().host_threads) {
      ids.push_back(t.id);
    }
    return ids;
  }

  Value info_line(const Step& s) {
    ensure_threads(s);
    const Snapshot& snap = current_snapshot();
    std::vector<std::uint64_t> pcs;
    std::unordered_set<std::uint64_t> seen;
    for (const auto& sl : snap.source_lines) {
      seen.insert(sl.pc); // asked before
    }
    seen.insert(earlier_pcs_.begin(), earlier_pcs_.end()); // asked in an earlier sample
    seen.insert(looked_up_.begin(), looked_up_.end());     // asked before, even when it failed
    auto add = [&](const std::optional<std::uint64_t>& pc) {
      if (pc && *pc != 0 && seen.insert(*pc).second) {
        pcs.push_back(*pc);
      }
    };
    for (const auto& t : snap.host_threads) {
      for (std::size_t i = 0; i < t.frames.size() && i < s.frames; ++i) {
        add(t.lookup_pc(i)); // callers: the call, not the return address
      }
      // Where the thread waits in the user's own code, and the call into it, however deep the
      // C library and runtime frames above them go.
      if (const Frame* user = innermost_user_frame(t)) {
        const auto u = static_cast<std::size_t>(user - t.frames.data());
        add(t.lookup_pc(u));
        add(t.lookup_pc(u + 1));
      }
    }
    for (const auto& w : snap.waves) {
      add(w.pc);
    }
    constexpr std::size_t kMaxPcs = 10'000;
    if (pcs.size() > kMaxPcs) {
      result_.warnings.push_back(
          fmt::format("info-line: {} unique PCs; looked up the first {}", pcs.size(), kMaxPcs));
      pcs.resize(kMaxPcs);
    }
    std::size_t failed = 0;
    for (auto pc : pcs) {
      looked_up_.insert(pc);
      auto ex = driver_.console(fmt::format("info line *{:#x}", pc), timeout_of(s));
      if (ex.error_message()) {
        ++failed;
      }
    }
    return count_value(pcs.size(), failed);
  }

  // `-data-disassemble` around each wave class's PC and each host thread's top PC, while the
  // target is stopped: at most 16 GPU and 16 host PCs, each command under the step's deadline.
  // Host code is variable-length, so the whole function holding the PC is asked for (`-a`);
  // GPU code from the function's start when `info line` gave it, else 256 bytes before the PC.
  // cuda-gdb reads device code only with a CUDA focus, and its warps are no GDB threads: the
  // focus moves to the class's kernel and first block (thread 0 always exists) first. With
  // nvdisasm at hand, cuda-gdb is asked only `info symbol`, and the window is decoded after the
  // detach (detail::DeferredCode): its own first disassembly costs 0.5 s inside the stop.
  Value disassemble(const Step& s) {
    ensure_threads(s);
    constexpr std::size_t kMaxGpu = 16;
    constexpr std::size_t kMaxHost = 16;
    const bool cuda = driver_.debugger().kind == DebuggerKind::CudaGdb;
    struct Ask {
      std::string focus; // the CUDA focus first, or ""
      std::string command;
      std::uint64_t pc = 0, start = 0, end = 0;
    };
    std::vector<Ask> commands;
    {
      const Snapshot& snap = current_snapshot();
      std::unordered_set<std::uint64_t> seen;
      for (const auto& w : snap.code_windows) {
        for (const auto& in : w.instructions) {
          seen.insert(in.address); // disassembled before
        }
      }
      std::size_t gpu = 0;
      std::vector<std::pair<std::uint64_t, std::uint64_t>> asked; // GPU windows of this step
      for (const auto& c : snapshot::group_waves(snap)) {
        const bool addressable =
            cuda ? c.dispatch && c.workgroup[0].has_value() : is_thread_id(c.first_thread);
        if (!c.pc || !addressable || gpu >= kMaxGpu || !seen.insert(*c.pc).second) {
          continue;
        }
        const std::uint64_t pc = *c.pc;
        if (std::any_of(asked.begin(), asked.end(),
                        [pc](const auto& w) { return pc >= w.first && pc + 64 <= w.second; })) {
          continue; // another class's window holds this PC and its next instructions
        }
        std::uint64_t start = *c.pc >= 256 ? *c.pc - 256 : 0;
        if (const auto* l = snap.source_line(*c.pc); l && l->offset && *l->offset <= 256) {
          start = *c.pc - *l->offset;
        }
        asked.emplace_back(start, *c.pc + 128);
        if (cuda) {
          const auto block = [&](std::size_t i) {
            return c.workgroup[i] ? c.workgroup[i]->first : 0;
          };
          commands.push_back(
              {fmt::format("cuda kernel {} block {},{},{} thread 0,0,0", *c.dispatch, block(0),
                           block(1), block(2)),
               fmt::format("-data-disassemble -s {:#x} -e {:#x} -- 0", start, pc + 128), pc, start,
               pc + 128});
        } else {
          commands.push_back({std::string(),
                              fmt::format("-data-disassemble --thread {} -s {:#x} -e {:#x} -- 0",
                                          c.first_thread, start, pc + 128),
                              pc, start, pc + 128});
        }
        ++gpu;
      }
      std::size_t host = 0;
      for (const auto& t : snap.host_threads) {
        if (t.frames.empty() || !t.frames.front().pc || !is_thread_id(t.id) || host >= kMaxHost ||
            !seen.insert(*t.frames.front().pc).second) {
          continue;
        }
        const std::uint64_t pc = *t.frames.front().pc;
        commands.push_back({std::string(),
                            fmt::format("-data-disassemble --thread {} -a {:#x} -- 0", t.id, pc),
                            pc, 0, 0});
        ++host;
      }
    }
    if (cuda && !deferred_checked_) {
      deferred_checked_ = true;
      if (!deferred_) {
        deferred_ = detail::DeferredCode::for_debugger(driver_.debugger());
      }
    }
    std::size_t failed = 0;
    for (const auto& [focus, command, pc, start, end] : commands) {
      if (!focus.empty() && driver_.console(focus, timeout_of(s)).error_message()) {
        ++failed; // no focus, no device code: the window is not asked for
        continue;
      }
      if (!focus.empty() && cuda && deferred_) {
        auto ex = driver_.console(fmt::format("info symbol {:#x}", pc), timeout_of(s));
        std::string why;
        if (!ex.error_message() && deferred_->keep(focus, pc, start, end, ex.console(), why)) {
          continue;
        }
        if (!why.empty()) {
          result_.warnings.push_back(fmt::format("disassemble: {}; disassembled in the stop", why));
        }
      }
      if (driver_.execute(command, timeout_of(s)).error_message()) {
        ++failed;
      }
    }
    return count_value(commands.size(), failed);
  }

  // After the detach: the windows kept in the stops, decoded, into the recording (so a replay
  // builds the same snapshot).
  void decode_deferred_code() {
    if (!deferred_ || deferred_->empty()) {
      return;
    }
    for (auto& problem : deferred_->decode([this](std::string_view note) { driver_.note(note); })) {
      result_.warnings.push_back("disassemble: " + problem);
    }
    deferred_.reset();
  }

  Value backtrace(const Step& s) {
    ensure_threads(s);
    std::vector<std::string> ids;
    for (auto& id : current_thread_ids()) {
      if (is_thread_id(id)) {
        ids.push_back(std::move(id));
      } else {
        result_.warnings.push_back(fmt::format("backtrace: skipped thread id `{}`", id));
      }
    }
    // Stops by copy: a thread whose registers and stack are byte for byte those of the sample
    // before has the same frames; the sample takes them from that one (a note says which).
    std::unordered_set<std::string> same;
    std::vector<std::int64_t> same_lwps;
    if (copying_ && sample_ > 1) {
      const auto unchanged = driver_.unchanged_stacks();
      const std::unordered_set<std::int64_t> lwps(unchanged.begin(), unchanged.end());
      if (const snapshot::Builder* b = lwps.empty() ? nullptr : fed_builder()) {
        for (const auto& [id, lwp] : b->host_thread_lwps()) {
          if (lwps.count(static_cast<std::int64_t>(lwp)) != 0) {
            same.insert(id);
            same_lwps.push_back(static_cast<std::int64_t>(lwp));
          }
        }
      }
    }
    std::vector<std::string> commands;
    for (const auto& id : ids) {
      if (same.count(id) == 0) {
        commands.push_back(fmt::format("-stack-list-frames --thread {} 0 {}", id, s.frames - 1));
      }
    }
    std::size_t failed = 0;
    for (const auto& ex : driver_.execute_all(commands, timeout_of(s))) {
      if (ex.error_message()) {
        ++failed;
      }
    }
    for (const auto& n : snapshot::unchanged_stacks_notes(same_lwps)) {
      driver_.note(n);
    }
    python_frames();
    return count_value(ids.size(), failed);
  }

  // A CPython target's Python frames, read from its memory in this stop
  // (rocplay/pyframes/pyframes.hpp) and written as notes the snapshot builder puts into the host
  // stacks. Nothing is asked of the debugger or the target; a process that is not CPython gets
  // nothing (found once per run).
  // With stops by copy, the frames were read inside the copy's stop (read_python) and are only
  // written here.
  void python_frames() {
    if (options_.pid <= 0 || !attached_ || stopped_) {
      return;
    }
    std::optional<snapshot::PythonStacks> stacks;
    if (copying_) {
      stacks = std::move(held_python_);
      held_python_.reset();
    } else {
      locate_python();
      stacks = read_python();
    }
    if (stacks) {
      for (const auto& n : snapshot::python_notes(*stacks)) {
        driver_.note(n);
      }
    }
  }

  void locate_python() {
    if (!python_located_ && options_.pid > 0) {
      python_located_ = true;
      python_runtime_ = pyframes::locate(static_cast<int>(options_.pid));
    }
  }

  // Reads the Python frames of a stopped CPython target; nothing for any other process.
  std::optional<snapshot::PythonStacks> read_python() {
    if (!python_runtime_) {
      return std::nullopt;
    }
    const auto start = Clock::now();
    pyframes::ProcessMemory memory(static_cast<int>(options_.pid));
    const auto futex_of = [pid = options_.pid](std::uint64_t lwp) -> std::optional<std::uint64_t> {
      const auto wait = process::read_kernel_wait(pid, static_cast<std::int64_t>(lwp));
      return wait && wait->call == "futex" ? wait->futex : std::nullopt;
    };
    const pyframes::Stacks read = pyframes::read(memory, *python_runtime_, {}, futex_of);
    snapshot::PythonStacks stacks;
    stacks.version = read.version;
    stacks.gil_known = read.gil_known;
    stacks.free_threaded = read.free_threaded;
    stacks.gil_disabled = read.gil_disabled;
    stacks.notes = read.notes;
    for (const auto& t : read.threads) {
      snapshot::PythonThread pt;
      pt.lwp = t.native_id;
      pt.holds_gil = t.holds_gil;
      pt.note = t.note;
      for (const auto& f : t.frames) {
        snapshot::PythonFrame pf;
        pf.function = f.function;
        pf.file = f.file;
        if (f.line && *f.line >= 0 && *f.line <= UINT32_MAX) {
          pf.line = static_cast<std::uint32_t>(*f.line);
        }
        pf.entry = f.entry;
        pf.held_locks = f.held_locks;
        pt.frames.push_back(std::move(pf));
      }
      pt.waits_for_lock = t.waits_for_lock;
      stacks.threads.push_back(std::move(pt));
    }
    stacks.seconds = seconds_since(start);
    return stacks;
  }

  Value foreach (const Step& s, std::uint32_t depth, bool in_always, StepStatus & status,
                 std::string & message) {
    if (s.over != ForeachOver::Dispatches) { // threads and waves come from -thread-info
      ensure_threads(s);
    }
    std::vector<std::pair<Value, std::string>> items;
    {
      const Snapshot& snap = current_snapshot();
      switch (s.over) {
      case ForeachOver::Threads:
        for (const auto& t : snap.host_threads) {
          items.emplace_back(detail::thread_item(t), "thread " + t.id);
        }
        break;
      case ForeachOver::Waves:
        for (const auto& w : snap.waves) {
          items.emplace_back(detail::wave_item(w), "wave " + w.thread_id);
        }
        break;
      case ForeachOver::Dispatches:
        for (const auto& d : snap.dispatches) {
          items.emplace_back(detail::dispatch_item(d), "dispatch " + d.id);
        }
        break;
      }
    }
    std::size_t matched = 0;
    std::size_t visited = 0;
    for (auto& [item, label] : items) {
      locals_.emplace_back(s.loop_var, item);
      struct Pop {
        std::vector<std::pair<std::string, Value>>& l;
        ~Pop() { l.pop_back(); }
      } pop{locals_};
      ++visited;
      if (s.where && !detail::evaluate(*s.where->root, *this).truthy()) {
        continue;
      }
      if (matched == s.limit) {
        message = fmt::format("stopped at limit {}", s.limit);
        result_.warnings.push_back(
            fmt::format("foreach {} at {}: more items match than limit {}; the rest were not "
                        "visited",
                        to_string(s.over), s.position.str(), s.limit));
        break;
      }
      ++matched;
      for (const auto& body : s.body) {
        if (!run_step(body, depth + 1, in_always, label)) {
          status = StepStatus::Failed;
          message = fmt::format("a step for {} failed", label);
          return foreach_value(visited, matched);
        }
      }
    }
    if (matched == 0 && message.empty()) {
      message = fmt::format("no {} matched", to_string(s.over));
    }
    return foreach_value(visited, matched);
  }

  static Value foreach_value(std::size_t visited, std::size_t matched) {
    return Value::map({{"count", Value::integer(static_cast<std::int64_t>(visited))},
                       {"matched", Value::integer(static_cast<std::int64_t>(matched))}});
  }

  void final_detach() {
    StepRecord rec;
    rec.name = "detach (implicit)";
    rec.kind = StepKind::Detach;
    rec.position = Position{pb_.origin, 0, 0};
    rec.in_always = true;
    const auto start = Clock::now();
    // Always, even when no step thinks it is attached: the session knows better, and detach()
    // is idempotent and never throws.
    driver_.detach();
    rec.seconds = seconds_since(start);
    if (attached_) {
      rec.status = StepStatus::Ok;
    } else {
      rec.status = StepStatus::Skipped;
      rec.message = result_.attached ? "already detached" : "never attached";
    }
    attached_ = false;
    result_.steps.push_back(rec);
    if (options_.progress) {
      options_.progress(rec, true);
    }
  }

  // Decorates a built snapshot with what the session knows and the recording may not.
  void decorate(Snapshot& snap, const std::string& label) const {
    snap.pid = options_.pid;
    if (snap.debugger == DebuggerKind::Unknown) {
      snap.debugger = driver_.debugger().kind;
    }
    if (snap.debugger_version.empty()) {
      snap.debugger_version = driver_.debugger().version;
    }
    if (snap.label.empty()) {
      snap.label = label;
    }
    for (auto& [k, v] : driver_.target_env()) {
      snap.env.emplace(k, v);
    }
  }

  // The snapshot of each sample, built once here, after the detach (the target runs again), then
  // the one analysis step (incident::analyse) shared with the post-mortem.
  void finish_snapshot() {
    const snapshot::BuildOptions bo = build_options();
    const auto times = driver_.times();
    std::vector<Sample> samples;
    // The builder fed as the exchanges came, when it split them as this run took its samples;
    // else a build over the exchanges now.
    std::optional<snapshot::SampleBuilder> fed;
    if (fed_builder() != nullptr) {
      fed = std::move(samples_);
    }
    samples_.reset();
    if (sample_ > 1) {
      try {
        samples = fed ? fed->finish(std::max(1u, std::thread::hardware_concurrency()))
                      : snapshot::build_samples(driver_.exchanges(), bo);
      } catch (const std::exception& e) {
        result_.warnings.push_back(fmt::format("snapshot: {}", e.what()));
      }
      fed.reset();
    }
    incident::AnalyseOptions ao;
    ao.context = options_.context;
    if (samples.size() < 2) {
      samples.clear();
      Sample one;
      try {
        std::optional<Snapshot> single = fed ? fed->finish_single() : std::nullopt;
        one.snapshot = single ? std::move(*single) : snapshot::build(driver_.exchanges(), bo);
      } catch (const std::exception& e) {
        one.snapshot = Snapshot{};
        one.snapshot.warnings.push_back(fmt::format("snapshot: {}", e.what()));
      }
      Snapshot& snap = one.snapshot;
      decorate(snap, bo.label);
      if (snap.taken_at.empty()) {
        snap.taken_at = iso_now();
      }
      if (times.stop_seconds) {
        snap.stop_seconds = times.stop_seconds;
      }
      one.stop_seconds = snap.stop_seconds.value_or(0);
      samples.push_back(std::move(one));
      ao.keep_one_sample = result_.samples_wanted > 1;
      ao.one_live_sample = true;
    } else {
      for (auto& sample : samples) {
        decorate(sample.snapshot, fmt::format("{} sample {}", bo.label, sample.index));
        if (sample.snapshot.taken_at.empty()) {
          sample.snapshot.taken_at = sample.wall_time > 0 ? iso_time(sample.wall_time) : iso_now();
        }
      }
      // The target was stopped only during the samples; the intervals between them it ran.
      double stopped = 0;
      for (const auto& sample : samples) {
        stopped += sample.stop_seconds;
      }
      result_.stopped_seconds = stopped;
    }
    Case c = incident::analyse(std::move(samples), source::Source{}, ao);
    result_.snapshot = std::move(c.snapshot);
    result_.samples = std::move(c.samples);
    result_.findings = std::move(c.findings);
    result_.progress = std::move(c.progress);
    result_.graph = std::move(c.graph);
    for (auto& w : c.warnings) {
      result_.warnings.push_back(std::move(w));
    }
  }

  const Playbook& pb_;
  Driver& driver_;
  const RunOptions& options_;
  RunResult result_;
  std::map<std::string, Value> globals_;
  std::vector<std::pair<std::string, Value>> locals_;
  bool attached_ = false;
  bool stopped_ = false;
  bool debugger_gone_ = false;
  std::string stop_reason_;
  std::unique_ptr<detail::DeferredCode> deferred_; // cuda-gdb's windows, decoded after the detach
  bool deferred_checked_ = false;
  std::size_t snapshot_exchanges_ = static_cast<std::size_t>(-1);
  // Every exchange, once, into one builder per sample (fed_builder).
  std::optional<snapshot::SampleBuilder> samples_;
  DebuggerKind samples_kind_ = DebuggerKind::Unknown;
  std::size_t fed_ = 0;         // exchanges fed
  std::size_t fed_records_ = 0; // the last one's records and notes when it was fed
  std::size_t fed_notes_ = 0;
  bool feed_failed_ = false;
  std::optional<std::size_t> unpeeked_at_; // the backtrace step read ids here, peeking at nothing
  std::unordered_set<std::uint64_t> looked_up_; // PCs `info-line` asked about
  bool copying_ = false; // the stops are copies (Driver::stop_by_copy): the target runs meanwhile
  std::optional<snapshot::PythonStacks> held_python_; // read in the last copy's stop
  bool python_located_ = false;                       // _PyRuntime looked for (once per run)
  std::optional<pyframes::Runtime> python_runtime_;
  Snapshot snapshot_;
  std::uint32_t sample_ = 1;
  std::size_t window_start_ = 0; // the current sample's first exchange
  std::set<std::uint64_t> earlier_pcs_;
};

} // namespace

RunResult run(const Playbook& playbook, Driver& driver, const RunOptions& options) {
  return detail::run_with_code(playbook, driver, options, nullptr);
}

RunResult detail::run_with_code(const Playbook& playbook, Driver& driver, const RunOptions& options,
                                std::unique_ptr<DeferredCode> deferred) {
  Runner runner(playbook, driver, options, std::move(deferred));
  try {
    return runner.run();
  } catch (...) {
    driver.detach(); // never leave the target stopped, whatever escaped
    throw;
  }
}

std::pair<std::string, std::string> parse_var_assignment(const std::string& text) {
  const auto eq = text.find('=');
  if (eq == std::string::npos || eq == 0) {
    throw Error(ExitCode::Usage, fmt::format("--var `{}` is not NAME=VALUE", text),
                "e.g. --var frames=30");
  }
  return {text.substr(0, eq), text.substr(eq + 1)};
}

} // namespace rocplay::playbook
