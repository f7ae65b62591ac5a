// The live session: one debugger in MI mode over pipes, driven by a single-threaded Asio loop.
//
// Every wait in this file is `pump(predicate, deadline)`: it runs the loop until the predicate
// holds, the deadline passes, the debugger's stdout closes, or the signal guard's pipe becomes
// readable. Nothing blocks without a deadline, and every way out of a failed wait goes through
// shutdown(), which detaches (or, failing that, kills the debugger so the kernel detaches) and
// then checks that the target is not left stopped.
#include "rocplay/core/kernel_waits.hpp"
#include "session/dbgapi_diagnostics.hpp"
#include "session/session_impl.hpp"

#include <unistd.h>

#include <fmt/format.h>

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <future>
#include <map>
#include <system_error>

namespace rocplay::session {

namespace {

// The most threads whose /proc figures are read at once (stall checks, the interval's notes).
constexpr std::size_t kMaxTaskFigures = 4096;

// How long a thread may sit in an uninterruptible wait while gdb attaches before the attach is
// given up (a short wait for a disk read ends well within it).
constexpr std::chrono::seconds kUninterruptibleStall{3};

// `thread T (NAME) of pid P ... (state D, in the kernel's FUNCTION)`: a thread in an
// uninterruptible wait, which no debugger can stop until its call returns.
std::string uninterruptible_thread(std::int64_t pid, std::int64_t tid) {
  std::string out = "thread " + std::to_string(tid);
  if (const auto st = process::read_stat(tid)) {
    out += " (" + st->comm + ")";
  }
  out += " of pid " + std::to_string(pid);
  const std::string wchan = process::read_wchan(pid, tid);
  return out + " is in an uninterruptible wait (state D" +
         (wchan.empty() ? "" : ", in the kernel's " + wchan) + ")";
}

} // namespace

namespace {

constexpr std::size_t kMaxWarnings = 64;

// GDB prints exit codes in octal (`exit-code="01"`).
std::optional<int> octal_exit_code(std::string_view text) {
  if (text.empty() || text.size() > 4) {
    return std::nullopt;
  }
  int v = 0;
  for (const char c : text) {
    if (c < '0' || c > '7') {
      return std::nullopt;
    }
    v = v * 8 + (c - '0');
  }
  return v;
}

} // namespace

double Session::Impl::now() const {
  const double s = std::chrono::duration<double>(Clock::now() - t0).count();
  return std::round(s * 1e6) / 1e6; // the recording's resolution, so replays compare equal
}

void Session::Impl::warn(std::string text) {
  if (warnings.size() >= kMaxWarnings || !warning_set.insert(text).second) {
    return;
  }
  warnings.push_back(std::move(text));
}

void Session::Impl::update_noise_summary() {
  const std::string s = noise.summary();
  if (s.empty()) {
    return;
  }
  if (noise_line) {
    warnings[*noise_line] = s;
  } else {
    noise_line = warnings.size();
    warnings.push_back(s);
  }
}

void Session::Impl::record(char dir, double at, std::uint64_t token, std::string_view text) {
  recorder.record(dir, at, token, text);
}

std::string Session::Impl::meta_json() const {
  nlohmann::json meta;
  meta["tool"] = "rocplay";
  meta["debugger"] = {{"kind", std::string(to_string(debugger.kind))},
                      {"path", debugger.path},
                      {"version", debugger.version},
                      {"mi", mi}};
  if (pid) {
    meta["pid"] = *pid;
    meta["target"] = {{"comm", target.comm}};
  }
  if (options.rank) {
    meta["rank"] = *options.rank;
  }
  if (!options.worker_pids.empty()) {
    meta["worker_pids"] = options.worker_pids;
  }
  if (options.samples) {
    meta["samples"] = *options.samples;
  }
  meta["host"] = process::host_name();
  meta["started_at"] = start_iso;
  meta["env"] = target.env;
  return meta.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

void Session::Impl::open_recording() {
  if (auto warning = recorder.open([this] { return meta_json(); })) {
    warn(std::move(*warning));
  }
}

void Session::Impl::close_recording() {
  if (auto warning = recorder.close([this] { return meta_json(); })) {
    warn(std::move(*warning));
  }
}

void Session::Impl::on_sent(std::uint64_t token, const std::string& command, double at) {
  record('>', at, token, command);
  assembler.command(command, token, at);
}

void Session::Impl::on_note(std::string_view text) {
  const double at = now();
  const std::string flat = flatten(text);
  record('!', at, 0, flat);
  assembler.note(flat, at);
}

void Session::Impl::note_kernel_waits(std::int64_t target_pid) {
  note_kernel_waits(process::read_kernel_waits(target_pid));
}

void Session::Impl::note_kernel_waits(const KernelWaits& waits) {
  for (const auto& n : kernel_wait_notes(waits)) {
    on_note(n);
  }
}

void Session::Impl::classify_stream_text(const std::string& text, bool console) {
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string::npos) {
      end = text.size();
    }
    const std::string_view line(text.data() + pos, end - pos);
    pos = end + 1;
    if (line.empty()) {
      continue;
    }
    if (noise.benign(line)) {
      update_noise_summary();
      continue;
    }
    if (console) {
      continue; // the console stream is output, not diagnostics
    }
    const std::string_view bare = detail::without_emoji(line); // GDB 17+ under UTF-8
    if (auto d = detail::dbgapi_diagnostic(bare)) {
      // A known dbgapi message: what it means and what to do, once per kind.
      const std::string text = detail::explain(*d, bare);
      if (known_diagnostics.insert(std::string(d->what)).second) {
        warn(text);
      }
      continue;
    }
    if (bare.rfind("warning:", 0) == 0 || bare.find("amd-dbgapi") != std::string_view::npos ||
        bare.rfind("fatal error:", 0) == 0) {
      warn(std::string(bare));
    }
  }
}

namespace {

// docs/transcript-format.md, "Runs during the attach".
std::string attach_run_note(double from, double to, std::optional<double> cpu) {
  return fmt::format("the target ran during the attach: the debugger resumed every thread at "
                     "{:.6f} s and stopped them at {:.6f} s{}",
                     from, to,
                     cpu ? fmt::format("; its threads used {:.2f} s of CPU meanwhile", *cpu)
                         : std::string());
}

// The CPU time (user + system) all threads of `pid` have used, in seconds.
std::optional<double> process_cpu_seconds(std::int64_t pid) {
  if (const auto st = process::read_stat(pid)) {
    return static_cast<double>(st->utime + st->stime) /
           static_cast<double>(process::clock_ticks_per_second());
  }
  return std::nullopt;
}

} // namespace

void Session::Impl::on_line(const mi::RecordView& rec) {
  const double at = now();
  record('<', at, 0, rec.line());
  if (rec.is_error()) {
    return; // not MI (the reader skips it too)
  }
  if (rec.kind() == mi::RecordKind::Prompt) {
    assembler.prompt(at);
    return;
  }
  switch (rec.kind()) {
  case mi::RecordKind::Exec:
    if (rec.klass() == "running") {
      target_running = true;
      if (rec["thread-id"].str_or() == "all") {
        if (in_attach() && attach_run_began == 0) {
          attach_run_began = at;
          attach_run_cpu = pid ? process_cpu_seconds(*pid) : std::nullopt;
        } else if (attach_sent && !in_attach() && run_began == 0) {
          run_began = at;
        }
      }
    } else if (rec.klass() == "stopped") {
      target_running = false;
      if (run_began > 0) {
        times.run_windows.emplace_back(run_began, at);
        run_began = 0;
      }
      if (in_attach() && attach_run_began > 0) {
        times.attach_run_windows.emplace_back(attach_run_began, at);
        std::optional<double> cpu;
        if (const auto now_cpu = pid ? process_cpu_seconds(*pid) : std::nullopt;
            now_cpu && attach_run_cpu) {
          cpu = std::max(0.0, *now_cpu - *attach_run_cpu);
        }
        on_note(attach_run_note(attach_run_began, at, cpu));
        attach_run_began = 0;
      }
      ++stops_seen;
      const auto reason = rec["reason"].str_or();
      if (reason == "exited" || reason == "exited-normally" || reason == "exited-signalled") {
        target_gone = true;
        if (reason == "exited-normally") {
          exit_code = 0;
        } else if (const auto code = octal_exit_code(rec["exit-code"].str_or())) {
          exit_code = code;
        }
        if (reason == "exited-signalled") {
          exit_signal = std::string(rec["signal-name"].str_or());
        }
      }
    }
    break;
  case mi::RecordKind::Log:
    classify_stream_text(rec.stream_text(), false);
    break;
  case mi::RecordKind::Console:
    classify_stream_text(rec.stream_text(), true);
    break;
  case mi::RecordKind::Notify:
    // A process exit carries its exit code; a detach does not.
    if (rec.klass() == "thread-group-exited" && rec["exit-code"].valid()) {
      target_gone = true;
      if (const auto code = octal_exit_code(rec["exit-code"].str_or())) {
        exit_code = code;
      }
    }
    if (rec.klass() == "thread-group-started") {
      if (const auto p = rec["pid"].as_u64()) {
        started_pid = static_cast<std::int64_t>(*p);
      }
    }
    break;
  default:
    break;
  }
  if (assembler.add(rec, at)) {
    closed_by_result = exchanges.size() - 1;
    if (!queued.empty()) { // command_all: gdb now reads the next command written ahead
      const auto [token, cmd] = std::move(queued.front());
      queued.pop_front();
      on_sent(token, cmd, at);
      batch_exchanges.push_back(exchanges.size() - 1);
      pending = batch_exchanges.back();
    }
  }
}

void Session::Impl::ensure_open() {
  if (closed) {
    throw Error(closed->code(), std::string("the debugger session has ended: ") + closed->what(),
                closed->hint());
  }
}

Session::Impl::Wait Session::Impl::write_line(const std::string& line, Clock::time_point deadline,
                                              bool watch_signal) {
  SigpipeBlock block;
  bool done = false;
  boost::system::error_code result;
  asio::async_write(*in, asio::buffer(line), [&](boost::system::error_code ec, std::size_t) {
    done = true;
    result = ec;
  });
  const Wait w = pump([&] { return done; }, deadline, watch_signal);
  if (w != Wait::Done) {
    in->cancel();
    // The handler refers to locals: let it run before they go away.
    while (!done) {
      ioc.run_one_for(milliseconds(100));
      if (ioc.stopped()) {
        ioc.restart();
      }
    }
    return w;
  }
  return result ? Wait::Dead : Wait::Done;
}

std::pair<Session::Impl::Wait, std::size_t>
Session::Impl::send_and_wait(const std::string& cmd, milliseconds timeout, bool cleanup) {
  drain();
  if (!cleanup && signalled()) {
    return {Wait::Signal, 0};
  }
  if (!out_open) {
    return {Wait::Dead, 0};
  }
  const std::uint64_t token = next_token++;
  auto deadline = Clock::now() + timeout;
  // The detach and quit (cleanup) run after the bound too: they must not be cut short by it.
  if (!cleanup && options.end_by && *options.end_by < deadline) {
    deadline = *options.end_by;
  }
  const double sent_at = now();
  on_sent(token, cmd, sent_at);
  if (cmd.rfind("-target-attach", 0) == 0) {
    // From here on the target may be stopped: every way out detaches.
    attach_sent = true;
    times.attach_sent = true;
    attach_sent_at = sent_at;
    attach_stops_before = stops_seen;
    if (pid && !stop_meter && !process::is_stopped(target.state_before)) {
      stop_meter = std::make_unique<detail::StopMeter>(*pid, t0);
    }
  }
  const std::size_t index = exchanges.size() - 1;
  pending = index;
  waiting = true;
  Wait w = write_line(std::to_string(token) + cmd + "\n", deadline, !cleanup);
  if (w == Wait::Done) {
    w = pump([&] { return closed_by_result && *closed_by_result >= index; }, deadline, !cleanup);
  }
  if (w == Wait::Done) {
    inject_fault();
  }
  if (w == Wait::Done) {
    waiting = false;
    if (const auto* r = exchanges[index].result(); r != nullptr && r->klass() == "running") {
      target_running = true;
    }
  }
  return {w, index};
}

mi::Exchange Session::Impl::command(const std::string& cmd, milliseconds timeout) {
  ensure_open();
  const auto [w, index] = send_and_wait(cmd, timeout, false);
  if (w != Wait::Done) {
    no_answer(w, cmd, timeout, "the target was detached and keeps running");
  }
  return exchanges[index];
}

void Session::Impl::no_answer(Wait w, const std::string& cmd, milliseconds timeout,
                              std::string_view target_after) {
  if (w == Wait::Dead) {
    debugger_died("while running `" + cmd + "`");
  }
  if (w == Wait::Signal) {
    interrupted();
  }
  if (stall) {
    fail(stall_error(), true);
  }
  fail(past_end()
           ? Error(ExitCode::Timeout,
                   "the debugger had no result for `" + cmd +
                       "` when this look's bound came (the run's --timeout past the "
                       "sampling window)",
                   "a larger --timeout gives each node longer; " + std::string(target_after))
           : Error(ExitCode::Timeout,
                   "the debugger gave no result for `" + cmd + "` within " + seconds_text(timeout),
                   "a slow step needs a longer timeout (the step's `timeout:` or "
                   "--timeout); " +
                       std::string(target_after)),
       true);
}

std::vector<mi::Exchange> Session::Impl::command_all(const std::vector<std::string>& cmds,
                                                     milliseconds timeout) {
  // At most this many written ahead of the answers: gdb reads one command after another, so
  // the pipe holds the rest; the window keeps a failure's leftovers few.
  constexpr std::size_t kWindow = 64;
  std::vector<mi::Exchange> out;
  if (core_loaded.empty() || cmds.size() < 2) {
    for (const auto& cmd : cmds) {
      out.push_back(command(cmd, timeout));
    }
    return out;
  }
  ensure_open();
  drain();
  if (signalled()) {
    interrupted();
  }
  if (!out_open) {
    debugger_died("before `" + cmds.front() + "`");
  }
  batch_exchanges.clear();
  std::size_t written = 0;
  std::size_t answered = 0;
  const auto answered_now = [&] {
    std::size_t n = answered;
    while (n < batch_exchanges.size() && closed_by_result &&
           *closed_by_result >= batch_exchanges[n]) {
      ++n;
    }
    return n;
  };
  const auto deadline_from_now = [&] {
    const auto deadline = Clock::now() + timeout;
    return options.end_by && *options.end_by < deadline ? *options.end_by : deadline;
  };
  const auto fail_on = [&](Wait w) {
    queued.clear(); // what gdb still reads is never waited for: the session ends
    pending = exchanges.size() - 1;
    no_answer(w, cmds[std::min(answered, cmds.size() - 1)], timeout,
              "the target was let go after its copy and keeps running");
  };
  waiting = true;
  while (answered < cmds.size()) {
    if (written < cmds.size() && written - answered <= kWindow / 2) {
      const std::size_t upto = std::min(cmds.size(), answered + kWindow);
      std::string text;
      for (; written < upto; ++written) {
        const std::uint64_t token = next_token++;
        text += std::to_string(token) + cmds[written] + "\n";
        // An exchange begins when gdb begins on it: at once when nothing of ours is before it,
        // else when the answer before it comes (on_line).
        if (answered_now() == batch_exchanges.size()) {
          on_sent(token, cmds[written], now());
          batch_exchanges.push_back(exchanges.size() - 1);
          pending = batch_exchanges.back();
        } else {
          queued.emplace_back(token, cmds[written]);
        }
      }
      if (const Wait w = write_line(text, deadline_from_now(), true); w != Wait::Done) {
        fail_on(w);
      }
    }
    const Wait w = pump([&] { return answered_now() > answered; }, deadline_from_now(), true);
    if (w != Wait::Done) {
      fail_on(w);
    }
    for (const std::size_t now_answered = answered_now(); answered < now_answered;) {
      ++answered;
      inject_fault();
    }
  }
  waiting = false;
  for (const std::size_t index : batch_exchanges) {
    out.push_back(exchanges[index]);
  }
  batch_exchanges.clear();
  return out;
}

void Session::Impl::inject_fault() {
  const std::uint64_t k = results_seen++;
  if (!fault || fault->fired || k != fault->after) {
    return;
  }
  fault->fired = true;
  if (fault->action == SIGKILL || fault->action == SIGSTOP) {
    ::kill(static_cast<pid_t>(gdb_pid), fault->action);
  } else {
    ::kill(::getpid(), fault->action);
  }
}

Error Session::Impl::stall_error() const {
  return Error(
      stall ? stall->code : ExitCode::PtraceDenied,
      "gave up attaching to pid " + std::to_string(pid.value_or(0)) + " after " +
          seconds_text(milliseconds(static_cast<std::int64_t>((now() - attach_sent_at) * 1000))) +
          ": " + (stall ? stall->reason : std::string("the attach stalled")),
      (stall ? stall->hint : std::string("try again")) +
          "; the debugger was ended so the kernel released the target");
}

[[noreturn]] void Session::Impl::debugger_died(const std::string& when) {
  reap(milliseconds(2000));
  if (!reaped) {
    kill_debugger("its output closed but it did not exit");
  }
  std::string msg = "the debugger (" + debugger.path + ", pid " + std::to_string(gdb_pid) + ") " +
                    exit_description() + " " + when;
  std::string tail =
      stderr_all.size() > 400 ? stderr_all.substr(stderr_all.size() - 400) : stderr_all;
  while (!tail.empty() && tail.back() == '\n') {
    tail.pop_back();
  }
  if (!tail.empty()) {
    msg += "; its stderr ends with: " + flatten(tail);
  }
  fail(Error(ExitCode::DebuggerCrashed, msg,
             "the kernel detached the target when the debugger died; rerun with --record FILE "
             "and report the transcript if it happens again"),
       false);
  throw Error(ExitCode::Internal, "unreachable");
}

[[noreturn]] void Session::Impl::interrupted() {
  const int s = detail::pending_signal();
  fail(Error(exit_code_for_signal(s),
             "interrupted by " + signal_name(s) +
                 (!attach_sent                    ? ""
                  : target_end == TargetEnd::Kill ? "; the program was killed before exiting"
                                                  : "; the target was detached before exiting"),
             {}),
       true);
  throw Error(ExitCode::Internal, "unreachable");
}

[[noreturn]] void Session::Impl::fail(Error error, bool interrupt) {
  on_note(std::string("error: ") + error.what());
  closed = error;
  shutdown(interrupt);
  throw error;
}
Session::Session(const Debugger& debugger, const Options& options)
    : impl_(std::make_unique<Impl>(debugger, options)) {
  detail::session_started();
  impl_->registered = true;
  impl_->recorder.enable(options.record_path);
  try {
    impl_->startup();
  } catch (...) {
    impl_->quit();
    impl_->close_recording();
    detail::session_ended();
    impl_->registered = false;
    throw;
  }
}

Session::~Session() {
  impl_->shutdown(false);
  impl_->quit();
  impl_->light_sysroot.reset(); // the debugger that read them has quit
  impl_->light_files.clear();
  impl_->remove_copies();
  if (impl_->fault && !impl_->fault->fired) {
    // The sweep learns here that it has passed the last exchange.
    std::fprintf(stderr, "rocplay: fault injection: exchange %llu never came (%llu in all)\n",
                 static_cast<unsigned long long>(impl_->fault->after),
                 static_cast<unsigned long long>(impl_->results_seen));
  }
  if (impl_->times.total_seconds && !impl_->times.detached) {
    impl_->times.total_seconds = impl_->now();
  }
  impl_->close_recording();
  if (impl_->registered) {
    detail::session_ended();
  }
}

void Session::attach(std::int64_t pid) {
  Impl& s = *impl_;
  s.ensure_open();
  if (s.attach_sent) {
    throw Error(ExitCode::Usage,
                "this session is already attached to pid " + std::to_string(s.pid.value_or(0)),
                "use one Session per process");
  }
  std::vector<std::string> pre_warnings;
  if (s.options.check_preconditions) {
    s.target = check_attach(pid, s.debugger, s.options, &pre_warnings);
  } else {
    s.target.pid = pid;
    if (const auto st = process::read_stat(pid)) {
      s.target.comm = st->comm;
      s.target.state_before = st->state;
    }
    if (const auto env = process::read_environ(pid)) {
      s.target.env = process::relevant_env(*env);
      s.target.env_readable = true;
    }
  }
  for (auto& w : pre_warnings) {
    s.warn(std::move(w));
  }
  s.pid = pid;
  s.open_recording();
  auto deadline = Clock::now() + s.options.attach_timeout;
  if (s.options.end_by && *s.options.end_by < deadline) {
    deadline = *s.options.end_by;
  }
  // The /proc walk runs while the debugger reads the libraries' symbols: on 1,000 threads it
  // takes about as long (30 ms) as the preload of a process without debug files. A stop by copy
  // follows the walk on the same thread (a held thread's kernel wait reads as the ptrace stop),
  // still while the debugger, not attached, reads files.
  std::future<KernelWaits> kernel_waits;
  const bool copy = s.copy_stop;
  if (copy) {
    s.attach_sent = true;
    s.times.attach_sent = true;
    s.attach_sent_at = s.now();
    s.start_copy(
        pid, std::max(milliseconds(1), std::chrono::ceil<milliseconds>(deadline - Clock::now())),
        true);
  } else {
    const auto read_waits = [pid] { return process::read_kernel_waits(pid); };
    try {
      kernel_waits = std::async(std::launch::async, read_waits);
    } catch (const std::system_error&) {
      kernel_waits = std::async(std::launch::deferred, read_waits); // no thread to be had
    }
  }
  try {
    if (s.options.fast_attach) {
      s.start_command("-gdb-set auto-solib-add off", s.options.command_timeout);
    } else if (s.options.preload_symbols && s.debugger.kind == DebuggerKind::CudaGdb) {
      // Never a preload for cuda-gdb: its attach calls cudbgApiAttach() inside the target, and
      // with the libraries preloaded that call failed in the CUDA driver on a healthy two-rank
      // PyTorch/NCCL job in 7 of 11 runs (the driver's "internal error while attaching"), freezing
      // the job for good; without the preload 0 of 6, raw cuda-gdb 0 of 5 (docs/hardware-
      // validation.md, "Do no harm"). Its own library load reads the huge ones light instead.
      s.use_light_sysroot(pid, s.options.command_timeout);
    } else if (s.options.preload_symbols) {
      try {
        const std::size_t preloaded = s.preload_symbols(pid, deadline);
        // gdb shares the preloaded symbol tables but still makes an objfile of each library it
        // finds while attaching (under the dynamic linker's name, /lib/... for /usr/lib/...): 35 ms
        // of CPU in a 10-thread spin_target's stop, and never for a symbol-light copy. The
        // preloaded objfiles already cover every library mapped at its load address, so the attach
        // need not read them again; libraries the preload did not read are asked for after the
        // attach (load_unpreloaded_libraries). Not for rocgdb, whose GPU code objects arrive as
        // shared libraries.
        if (preloaded > 0 && (s.debugger.kind == DebuggerKind::Gdb || !s.light_files.empty())) {
          // Part of the attach: it has the attach's deadline, not a step's timeout.
          const auto left =
              std::max(milliseconds(1), std::chrono::ceil<milliseconds>(deadline - Clock::now()));
          s.solib_add_off = !s.start_command("-gdb-set auto-solib-add off", left).error_message();
        }
      } catch (const Error& e) {
        if (e.code() != ExitCode::Timeout || s.past_end()) {
          throw;
        }
        throw Error(ExitCode::Timeout,
                    "reading the symbols of pid " + std::to_string(pid) +
                        "'s libraries took longer than the attach timeout (" +
                        seconds_text(s.options.attach_timeout) + "); the target " +
                        (copy ? "was held only for its copy and runs" : "was never stopped"),
                    "raise the attach timeout, or attach fast (no shared-library symbols)");
      }
    }
  } catch (...) {
    s.settle_copy(); // the target's account stays exact: it was let go
    throw;
  }
  if (copy) {
    s.finish_copy(pid);
    if (s.solib_add_off) {
      s.load_unpreloaded_libraries(pid, s.options.command_timeout);
    }
    return;
  }
  s.note_kernel_waits(kernel_waits.get());

  const std::string cmd = "-target-attach " + std::to_string(pid);
  const std::uint64_t stops_before = s.stops_seen;
  // The pre-check looked at every thread, but a tracer may seize one after it: then the attach
  // would wait out its whole deadline with the other threads stopped. Likewise a thread in an
  // uninterruptible wait (state D: a driver call) stops only when its call returns, perhaps never.
  // Give up as soon as either is seen (D: for kUninterruptibleStall, with gdb). Every 200 ms, or
  // less often when one look is slow (thousands of threads): at most 5% of a core goes to looking.
  s.stall_check =
      [&s, pid, last = Clock::now(), every = milliseconds(200),
       in_d_since =
           std::map<std::int64_t, Clock::time_point>()]() mutable -> std::optional<Impl::Stall> {
    if (Clock::now() - last < every) {
      return std::nullopt;
    }
    const auto started = Clock::now();
    const auto traced = process::traced_threads(pid, s.gdb_pid);
    // With gdb only: a copy can take a thread in state D without stopping it. rocgdb and cuda-gdb
    // have no such way round, and a driver call that returns after all lets their attach finish.
    const auto stats = s.debugger.kind == DebuggerKind::Gdb
                           ? process::read_task_stats(pid, kMaxTaskFigures)
                           : std::vector<process::TaskStat>();
    last = Clock::now();
    every = std::max(milliseconds(200),
                     std::chrono::duration_cast<milliseconds>((last - started) * 20));
    if (!traced.empty()) {
      std::string tracer = std::to_string(traced.front().tracer_pid);
      if (const auto st = process::read_stat(traced.front().tracer_pid)) {
        tracer += " (" + st->comm + ")";
      }
      return Impl::Stall{"thread " + std::to_string(traced.front().tid) + " of pid " +
                             std::to_string(pid) + " is traced by pid " + tracer +
                             ", so the debugger can never stop it",
                         "detach or stop that tracer (strace, another debugger, a profiler) and "
                         "try again",
                         ExitCode::PtraceDenied};
    }
    std::map<std::int64_t, Clock::time_point> still_in_d;
    for (const auto& t : stats) {
      if (t.state != 'D') {
        continue;
      }
      const auto since = in_d_since.count(t.tid) ? in_d_since[t.tid] : started;
      still_in_d.emplace(t.tid, since);
      if (started - since >= kUninterruptibleStall) {
        return Impl::Stall{
            uninterruptible_thread(pid, t.tid) + " and has been for " +
                seconds_text(std::chrono::duration_cast<milliseconds>(started - since)) +
                ": no debugger can stop it until that call returns",
            "take a copy instead (`--stop copy`, hang-triage's default with gdb): it holds the "
            "other threads and copies that one without stopping it",
            ExitCode::Timeout};
      }
    }
    in_d_since = std::move(still_in_d);
    return std::nullopt;
  };
  const auto stall_check = s.stall_check;
  mi::Exchange ex;
  try {
    ex = s.command(cmd, s.options.attach_timeout);
    s.stall_check = nullptr;
  } catch (const Error& e) {
    s.stall_check = nullptr;
    if (s.stall) {
      // Found by the wait itself, or while the timed-out attach was given its grace to finish.
      throw s.stall_error();
    }
    if (e.code() == ExitCode::Timeout && !s.past_end()) {
      // A thread in an uninterruptible wait is what an attach most often waits for in vain.
      std::string stuck;
      for (const auto& t : process::read_task_stats(pid, kMaxTaskFigures)) {
        if (t.state == 'D') {
          stuck = "; " + uninterruptible_thread(pid, t.tid) +
                  ", which no debugger can stop until that call returns";
          break;
        }
      }
      throw Error(ExitCode::Timeout,
                  "attaching to pid " + std::to_string(pid) + " took longer than " +
                      seconds_text(s.options.attach_timeout) + stuck,
                  "a process in a GPU wait can take 30 s or more to attach; raise the attach "
                  "timeout. The target was detached and keeps running");
    }
    throw;
  }
  if (const auto msg = ex.error_message()) {
    // Refused (by the kernel, usually): nothing was stopped and there is nothing to detach.
    s.attach_sent = false;
    s.times.attach_sent = false;
    s.check_target_state();
    const auto diag = detail::diagnose_ptrace(pid);
    if (msg->find("Operation not permitted") != std::string::npos) {
      throw Error(ExitCode::PtraceDenied,
                  "the debugger could not attach to pid " + std::to_string(pid) + ": " + *msg +
                      (diag.reason.empty() ? "" : " (" + diag.reason + ")"),
                  diag.hint.empty()
                      ? std::string("run rocplay as the target's user, or as root / with "
                                    "CAP_SYS_PTRACE")
                      : diag.hint);
    }
    if (msg->find("No such process") != std::string::npos) {
      throw Error(ExitCode::NoSuchProcess,
                  "the debugger could not attach to pid " + std::to_string(pid) + ": " + *msg,
                  "it may have exited; `rocplay ps` lists the processes holding a GPU");
    }
    throw Error(ExitCode::StepFailed,
                "the debugger could not attach to pid " + std::to_string(pid) + ": " + *msg,
                "run `" + s.debugger.path + " -p " + std::to_string(pid) +
                    "` by hand to see the whole story");
  }
  s.gdb_attached = true;
  // GDB answers ^done first and reports the stop (`*stopped`) after it.
  s.stall_check = stall_check;
  const auto w = s.pump([&] { return s.stops_seen > stops_before; }, deadline, true);
  s.stall_check = nullptr;
  switch (w) {
  case Impl::Wait::Done:
    break;
  case Impl::Wait::Deadline:
    if (s.stall) {
      s.fail(s.stall_error(), true);
    }
    s.fail(Error(ExitCode::Timeout,
                 "the debugger attached to pid " + std::to_string(pid) +
                     " but did not report the target stopped within " +
                     seconds_text(s.options.attach_timeout),
                 "raise the attach timeout; the target was detached and keeps running"),
           true);
  case Impl::Wait::Dead:
    s.debugger_died("while attaching to pid " + std::to_string(pid));
  case Impl::Wait::Signal:
    s.interrupted();
  }
  s.times.attach_seconds = s.now() - s.attach_sent_at;
  if (s.solib_add_off) {
    s.load_unpreloaded_libraries(pid, s.options.command_timeout);
  }
}

namespace {

[[noreturn]] void refuse(const std::string& command, const CommandCheck& check) {
  throw Error(ExitCode::BadPlaybook, "refused `" + command + "`: " + check.reason,
              "the session attaches, detaches and ends the debugger itself; drop the step");
}

} // namespace

mi::Exchange Session::lifecycle_detach(const std::string& command) {
  if (!attached()) {
    return impl_->command(command, impl_->options.command_timeout);
  }
  detach();
  for (auto it = impl_->exchanges.rbegin(); it != impl_->exchanges.rend(); ++it) {
    if (it->command == "-target-detach") {
      return *it;
    }
  }
  return impl_->exchanges.empty() ? mi::Exchange{} : impl_->exchanges.back();
}

mi::Exchange Session::execute(const std::string& command,
                              std::optional<std::chrono::milliseconds> timeout) {
  validate_command_text(command, "MI command");
  if (command.size() < 2 || command[0] != '-' || command[1] < 'a' || command[1] > 'z') {
    throw Error(ExitCode::Usage, "`" + command + "` is not an MI command (they start with `-`)",
                "send CLI commands through console()");
  }
  const auto check = classify_mi_command(command);
  if (check.role == CommandRole::Refused) {
    refuse(command, check);
  }
  if (check.role == CommandRole::Detach) {
    return lifecycle_detach("-target-detach");
  }
  return impl_->command(command, timeout.value_or(impl_->options.command_timeout));
}

std::vector<mi::Exchange> Session::execute_all(const std::vector<std::string>& commands,
                                               std::optional<std::chrono::milliseconds> timeout) {
  for (const auto& command : commands) {
    validate_command_text(command, "MI command");
    const auto check = classify_mi_command(command);
    if (command.size() < 2 || command[0] != '-' || check.role != CommandRole::Ordinary) {
      throw Error(ExitCode::Usage,
                  "`" + command + "` cannot be sent with others: only plain MI commands can",
                  "send it on its own through execute()");
    }
  }
  return impl_->command_all(commands, timeout.value_or(impl_->options.command_timeout));
}

mi::Exchange Session::console(const std::string& command,
                              std::optional<std::chrono::milliseconds> timeout) {
  const std::string mi = console_command(command);
  const auto check = classify_console_command(command);
  if (check.role == CommandRole::Refused) {
    refuse(command, check);
  }
  if (check.role == CommandRole::Detach) {
    return lifecycle_detach("-target-detach");
  }
  return impl_->command(mi, timeout.value_or(impl_->options.command_timeout));
}

void Session::detach() {
  try {
    impl_->shutdown(false);
  } catch (...) {
  }
}

void Session::end() {
  detach();
  impl_->quit();
}

void Session::note(std::string_view text) {
  impl_->on_note(text);
  impl_->flush_recording();
}

namespace {

// `threads while running: 2.001 s, 100 ticks/s: TID:STATE:TICKS ...`, the CPU each thread used
// since the run began and its state just before the interrupt (docs/transcript-format.md,
// "Thread figures"), split over notes of at most ~3,600 bytes (a note holds 4096).
std::vector<std::string> task_notes(const std::vector<process::TaskStat>& now,
                                    const std::map<std::int64_t, std::uint64_t>& before,
                                    double ran) {
  std::vector<std::string> notes;
  const std::string head = fmt::format("threads while running: {:.3f} s, {} ticks/s:", ran,
                                       process::clock_ticks_per_second());
  std::string line = head;
  bool any = false;
  for (const auto& t : now) {
    auto it = before.find(t.tid);
    if (it == before.end() || t.cpu_ticks < it->second) {
      continue; // a thread born during the run: no figure for the whole run
    }
    const char state = std::isgraph(static_cast<unsigned char>(t.state)) != 0 ? t.state : '?';
    std::string item = fmt::format(" {}:{}:{}", t.tid, state, t.cpu_ticks - it->second);
    if (line.size() + item.size() > 3600) {
      notes.push_back(line);
      line = head;
    }
    line += item;
    any = true;
  }
  if (any) {
    notes.push_back(line);
  }
  return notes;
}

} // namespace

ResumeResult Session::run_for(std::chrono::milliseconds interval,
                              std::chrono::milliseconds stop_timeout,
                              const IntervalStart& interval_start) {
  Impl& s = *impl_;
  s.ensure_open();
  if (s.copy_stop && s.copies > 0) {
    return s.run_by_copy(interval, interval_start);
  }
  if (!attached() || !s.gdb_attached) {
    throw Error(ExitCode::Usage, "run_for: the session is not attached",
                "attach before taking another sample");
  }
  ResumeResult r;
  const auto ex = s.command("-exec-continue", s.options.command_timeout);
  if (const auto msg = ex.error_message()) {
    throw Error(ExitCode::StepFailed, "the debugger could not resume the target: " + *msg,
                "take one sample (--samples 1); the target is still attached and is detached "
                "next");
  }
  r.resumed_at = s.now();
  // Each thread's CPU time when the run began (the target was stopped until the answer above),
  // compared with its figures just before the interrupt: the CPU each thread used in the run.
  std::map<std::int64_t, std::uint64_t> ticks_before;
  if (s.pid) {
    for (const auto& t : process::read_task_stats(*s.pid, kMaxTaskFigures)) {
      ticks_before.emplace(t.tid, t.cpu_ticks);
    }
  }
  // What the recording holds so far reaches the disk before the target runs: a rocplay killed
  // during the interval leaves every sample taken.
  s.flush_recording();
  auto stopped = [&] { return !s.target_running || s.target_gone; };
  const std::uint64_t stops_before = s.stops_seen;
  // The interval: the target runs. A signal to rocplay, the debugger's death or the target's
  // own stop ends it early. Waiting for its start (the other targets of a lockstep) is part of
  // the run: the target is never held stopped for another one.
  auto w = Impl::Wait::Deadline;
  Clock::time_point interval_from = Clock::now();
  if (interval_start) {
    for (;;) {
      if (const auto start = interval_start()) {
        interval_from = *start;
        break;
      }
      w = s.pump(stopped, Clock::now() + std::chrono::milliseconds(20), true);
      if (w != Impl::Wait::Deadline) {
        break;
      }
    }
  }
  if (w == Impl::Wait::Deadline) {
    w = s.pump(stopped, interval_from + interval, true);
  }
  if (w == Impl::Wait::Dead) {
    s.debugger_died("while the target ran between samples");
  }
  if (w == Impl::Wait::Signal) {
    s.interrupted();
  }
  if (w == Impl::Wait::Deadline) {
    if (s.pid && !ticks_before.empty()) {
      for (const auto& n : task_notes(process::read_task_stats(*s.pid, kMaxTaskFigures),
                                      ticks_before, s.now() - r.resumed_at)) {
        s.on_note(n);
      }
    }
    if (s.pid) {
      s.note_kernel_waits(*s.pid);
    }
    // Synchronous MI reads no command while the target runs: SIGINT has the debugger stop it.
    s.on_note("sampling: SIGINT to the debugger (pid " + std::to_string(s.gdb_pid) +
              ") to stop the target");
    r.interrupted_at = s.now();
    ::kill(static_cast<pid_t>(s.gdb_pid), SIGINT);
    w = s.pump(stopped, Clock::now() + stop_timeout, true);
    if (w == Impl::Wait::Dead) {
      s.debugger_died("while stopping the target for a sample");
    }
    if (w == Impl::Wait::Signal) {
      s.interrupted();
    }
    if (w == Impl::Wait::Deadline) {
      s.fail(Error(ExitCode::Timeout,
                   "the target did not stop within " + seconds_text(stop_timeout) +
                       " of an interrupt for the next sample",
                   "the samples taken so far are reported; the target was detached and keeps "
                   "running. Raise --timeout if the debugger is slow to stop many threads"),
             true);
    }
  }
  r.stopped_at = s.now();
  s.drain();

  // The `*stopped` that ended the run: the last one seen.
  if (s.stops_seen > stops_before) {
    for (auto it = s.exchanges.rbegin(); it != s.exchanges.rend(); ++it) {
      const mi::Record* stop = nullptr;
      for (const auto& rec : it->records) {
        if (rec.kind() == mi::RecordKind::Exec && rec.klass() == "stopped") {
          stop = &rec;
        }
      }
      if (stop != nullptr) {
        r.stop_reason = std::string((*stop)["reason"].str_or());
        r.signal_name = std::string((*stop)["signal-name"].str_or());
        break;
      }
    }
  }
  r.exited = s.target_gone;
  if (s.solib_add_off && !s.target_gone && s.pid) {
    s.load_unpreloaded_libraries(*s.pid, s.options.command_timeout); // dlopen()ed in the run
  }
  return r;
}

// The target has run since the copy before: wait out the interval with it running, then copy it
// again. The same waits, notes and signals as run_for's.
ResumeResult Session::Impl::run_by_copy(milliseconds interval,
                                        const IntervalStart& interval_start) {
  ResumeResult r;
  r.resumed_at = now();
  Clock::time_point interval_from = Clock::now(); // the figures below are read in the interval
  std::map<std::int64_t, std::uint64_t> ticks_before;
  for (const auto& t : process::read_task_stats(*pid, kMaxTaskFigures)) {
    ticks_before.emplace(t.tid, t.cpu_ticks);
  }
  const auto figures_took = Clock::now() - interval_from; // read again before the copy
  close_core(); // in the interval, not before the next sample
  flush_recording();
  auto never = [] { return false; };
  auto w = Wait::Deadline;
  if (interval_start) {
    for (;;) {
      if (const auto start = interval_start()) {
        interval_from = *start;
        break;
      }
      w = pump(never, Clock::now() + milliseconds(20), true);
      if (w != Wait::Deadline) {
        break;
      }
    }
  }
  if (w == Wait::Deadline) {
    // The holds `interval` apart: ask for the copy early by what the last one's /proc reads took
    // and what reading the thread figures takes (both while the target runs; a quarter of the
    // interval at most).
    const auto lead = std::min<Clock::duration>(
        interval / 4, figures_took + std::chrono::duration_cast<Clock::duration>(
                                         std::chrono::duration<double>(copy_prep_seconds)));
    w = pump(never, interval_from + interval - lead, true);
  }
  if (w == Wait::Dead) {
    debugger_died("while the target ran between samples");
  }
  if (w == Wait::Signal) {
    interrupted();
  }
  const auto st = process::read_stat(*pid);
  if (!st || st->state == 'Z' || st->state == 'X') {
    r.exited = true;
    target_gone = true;
    times.state_after = 'X';
    return r;
  }
  if (!ticks_before.empty()) {
    for (const auto& n : task_notes(process::read_task_stats(*pid, kMaxTaskFigures), ticks_before,
                                    now() - r.resumed_at)) {
      on_note(n);
    }
  }
  note_kernel_waits(*pid);
  try {
    r.interrupted_at = take_copy(*pid, options.command_timeout);
  } catch (const Error& e) {
    if (e.code() == ExitCode::NoSuchProcess) {
      r.exited = true;
      target_gone = true;
      return r;
    }
    throw;
  }
  r.stopped_at = r.interrupted_at; // the copy's hold: its start is the sample's stop
  if (solib_add_off) {
    load_unpreloaded_libraries(*pid, options.command_timeout); // dlopen()ed in the run
  }
  return r;
}

mi::Exchange Session::lifecycle_command(const std::string& command,
                                        std::chrono::milliseconds timeout) {
  validate_command_text(command, "MI command");
  return impl_->command(command, timeout);
}

void Session::adopt_target(std::int64_t pid, TargetEnd end, const std::string& comm) {
  Impl& s = *impl_;
  s.pid = pid;
  s.target.pid = pid;
  if (!comm.empty()) {
    s.target.comm = comm;
  } else if (const auto st = process::read_stat(pid)) {
    s.target.comm = st->comm;
  }
  s.target.state_before = 'R';
  s.times.launched = true;
  s.attach_sent = true;
  s.times.attach_sent = true;
  s.attach_sent_at = s.now();
  // Not an attach in progress: an interrupt is safe from the start.
  s.attach_stops_before = std::numeric_limits<std::uint64_t>::max();
  s.gdb_attached = true;
  s.target_end = end;
  s.open_recording();
}

void Session::set_target_end(TargetEnd end) {
  impl_->target_end = end;
}

RunEnd Session::wait_while_running(std::chrono::steady_clock::time_point deadline) {
  Impl& s = *impl_;
  s.ensure_open();
  s.flush_recording();
  const auto w = s.pump([&] { return !s.target_running || s.target_gone; }, deadline, true);
  switch (w) {
  case Impl::Wait::Done:
    s.drain();
    return s.target_gone ? RunEnd::Exited : RunEnd::Stopped;
  case Impl::Wait::Deadline:
    return RunEnd::Deadline;
  case Impl::Wait::Signal:
    return RunEnd::Signal;
  case Impl::Wait::Dead:
    break;
  }
  s.debugger_died("while the program ran");
}

bool Session::interrupt_target(std::chrono::milliseconds timeout) {
  Impl& s = *impl_;
  s.ensure_open();
  if (!s.target_running || s.target_gone) {
    return true;
  }
  s.on_note("SIGINT to the debugger (pid " + std::to_string(s.gdb_pid) + ") to stop the program");
  ::kill(static_cast<pid_t>(s.gdb_pid), SIGINT);
  // A signal to rocplay while the program is being stopped (a second Ctrl-C) ends the session
  // now, not after the stop timeout.
  const auto w =
      s.pump([&] { return !s.target_running || s.target_gone; }, Clock::now() + timeout, true);
  if (w == Impl::Wait::Dead) {
    s.debugger_died("while stopping the program");
  }
  if (w == Impl::Wait::Signal) {
    s.interrupted();
  }
  if (w == Impl::Wait::Deadline) {
    s.fail(Error(ExitCode::Timeout,
                 "the program did not stop within " + seconds_text(timeout) + " of an interrupt",
                 "the debugger may be slow to stop many threads; raise --stop-timeout"),
           true);
  }
  s.drain();
  return true;
}

void Session::acknowledge_signal() {
  Impl& s = *impl_;
  detail::acknowledge_signal();
  if (s.signal_seen && s.sig) {
    s.signal_seen = false;
    s.watch_signal_pipe();
  }
}

std::optional<std::int64_t> Session::started_pid() const {
  return impl_->started_pid;
}
std::optional<int> Session::exit_code() const {
  return impl_->exit_code;
}
std::string Session::exit_signal() const {
  return impl_->exit_signal;
}
bool Session::target_exited() const {
  return impl_->target_gone;
}

bool Session::has_mi_command(const std::string& name) const {
  std::string n = name;
  if (!n.empty() && n[0] == '-') {
    n.erase(0, 1);
  }
  return impl_->mi_commands.count(n) != 0;
}
const Debugger& Session::debugger() const {
  return impl_->debugger;
}
const TargetTimes& Session::times() const {
  if (!impl_->times.detached) {
    impl_->times.total_seconds = impl_->now();
  }
  return impl_->times;
}
const std::vector<std::string>& Session::warnings() const {
  return impl_->warnings;
}
const std::vector<mi::Exchange>& Session::exchanges() const {
  return impl_->exchanges;
}
std::optional<std::int64_t> Session::pid() const {
  return impl_->pid;
}
const TargetInfo& Session::target() const {
  return impl_->target;
}
const std::vector<std::string>& Session::features() const {
  return impl_->features;
}
int Session::mi_version() const {
  return impl_->mi;
}
bool Session::output_buffered() const {
  return impl_->output_buffered;
}
bool Session::attached() const {
  return impl_->attach_sent && !impl_->times.detached;
}
std::int64_t Session::debugger_pid() const {
  return impl_->gdb_pid;
}
std::string Session::stderr_text() const {
  return impl_->stderr_all;
}
double Session::now() const {
  return impl_->now();
}

} // namespace rocplay::session
