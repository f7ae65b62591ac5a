// The live session: one debugger in MI mode over pipes, driven by a single-threaded Asio loop.
//
// Every wait in this file is `pump(predicate, deadline)`: it runs the loop until the predicate
// holds, the deadline passes, the debugger's stdout closes, or the signal guard's pipe becomes
// readable. Nothing blocks without a deadline, and every way out of a failed wait goes through
// shutdown(), which detaches (or, failing that, kills the debugger so the kernel detaches) and
// then checks that the target is not left stopped.
// Boost.Process v2 on std::filesystem (no Boost.Filesystem library to link). Boost 1.81 forgets
// a few includes in that mode; they come first.
#define BOOST_PROCESS_USE_STD_FS 1
#include <boost/optional.hpp>
#include <boost/type_traits/decay.hpp>
#include <boost/type_traits/is_convertible.hpp>

#include "rocplay/clock.hpp"
#include "rocplay/process.hpp"
#include "rocplay/session.hpp"
#include "session/internal.hpp"
#include "session/signal_guard.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/readable_pipe.hpp>
#include <boost/asio/writable_pipe.hpp>
#include <boost/asio/write.hpp>
#include <boost/process/v2/process.hpp>
#include <boost/process/v2/stdio.hpp>

#include <nlohmann/json.hpp>

#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <limits>
#include <set>
#include <thread>

extern char** environ;

namespace rocplay::session {

namespace asio = boost::asio;
namespace bp2 = boost::process::v2;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

namespace {

constexpr std::size_t kMaxWarnings = 64;
constexpr std::size_t kMaxStderrBytes = 256 * 1024;
const std::array<const char*, 5> kProbedCommands = {"agent-info", "queue-info", "dispatch-info",
                                                    "lane-info", "wave-info"};

// Child-side set-up of the debugger: its own process group (a terminal's Ctrl-C must reach
// rocplay, never the debugger: the seed's "an accidental ^C SIGSTOPs the worker permanently"),
// SIGTERM if rocplay dies (GDB quits on SIGTERM and detaches what it attached), no signals
// blocked, and a C locale so messages are the ones this file recognises.
struct DebuggerLaunch {
  std::vector<std::string> env_storage;
  std::vector<const char*> env_ptrs;
  std::vector<int> inherit_fds; // kept open across the exec (Options::inherit_fds)

  explicit DebuggerLaunch(std::vector<int> keep) : inherit_fds(std::move(keep)) {
    for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
      const std::string_view kv(*e);
      if (kv.rfind("LC_ALL=", 0) == 0 || kv.rfind("LANGUAGE=", 0) == 0) {
        continue;
      }
      env_storage.emplace_back(kv);
    }
    env_storage.emplace_back("LC_ALL=C");
    for (const auto& s : env_storage) {
      env_ptrs.push_back(s.c_str());
    }
    env_ptrs.push_back(nullptr);
  }

  bp2::error_code on_setup(bp2::posix::default_launcher& launcher, const bp2::filesystem::path&,
                           const char* const*) {
    launcher.env = env_ptrs.data();
    for (const int fd : inherit_fds) {
      launcher.fd_whitelist.push_back(fd);
    }
    return {};
  }

  bp2::error_code on_exec_setup(bp2::posix::default_launcher&, const bp2::filesystem::path&,
                                const char* const*) {
    ::setpgid(0, 0);
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    for (const int sig : {SIGINT, SIGTERM, SIGHUP, SIGPIPE}) {
      ::signal(sig, SIG_DFL);
    }
    for (const int fd : inherit_fds) {
      ::fcntl(fd, F_SETFD, 0);
    }
    return {};
  }
};

// Writes to a pipe whose reader died raise SIGPIPE; keep it away from the process while this
// thread writes, and swallow it if it came: the write then fails with EPIPE, which we handle.
class SigpipeBlock {
public:
  SigpipeBlock() {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGPIPE);
    ::pthread_sigmask(SIG_BLOCK, &set, &old_);
  }
  ~SigpipeBlock() {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGPIPE);
    timespec zero{0, 0};
    while (::sigtimedwait(&set, nullptr, &zero) > 0) {
    }
    ::pthread_sigmask(SIG_SETMASK, &old_, nullptr);
  }
  SigpipeBlock(const SigpipeBlock&) = delete;
  SigpipeBlock& operator=(const SigpipeBlock&) = delete;

private:
  sigset_t old_{};
};

std::string seconds_text(milliseconds ms) {
  char buf[32];
  if (ms.count() < 1000) {
    std::snprintf(buf, sizeof buf, "%lld ms", static_cast<long long>(ms.count()));
  } else {
    std::snprintf(buf, sizeof buf, "%.3g s", static_cast<double>(ms.count()) / 1000.0);
  }
  return buf;
}

std::string hostname() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0) {
    return {};
  }
  return buf;
}

// Notes must stay one printable line in the recording and compare equal after a replay.
std::string flatten(std::string_view text) {
  std::string out(text.substr(0, 4096));
  for (char& c : out) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) {
      c = ' ';
    }
  }
  return out;
}

std::string signal_name(int sig) {
  switch (sig) {
  case SIGINT:
    return "SIGINT";
  case SIGTERM:
    return "SIGTERM";
  case SIGHUP:
    return "SIGHUP";
  case SIGKILL:
    return "SIGKILL";
  case SIGSEGV:
    return "SIGSEGV";
  case SIGABRT:
    return "SIGABRT";
  default:
    return "signal " + std::to_string(sig);
  }
}

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

bool mi_refused(std::string_view stderr_text) {
  return stderr_text.find("mi3") != std::string_view::npos &&
         (stderr_text.find("unrecognized") != std::string_view::npos ||
          stderr_text.find("Interpreter") != std::string_view::npos);
}

} // namespace

struct Session::Impl {
  enum class Wait { Done, Deadline, Dead, Signal };

  struct PendingEvent {
    char dir; // '>' '<' '!'
    double at;
    std::uint64_t token;
    std::string text;
  };

  Debugger debugger;
  Options options;
  Clock::time_point t0 = Clock::now();

  asio::io_context ioc;
  std::unique_ptr<asio::writable_pipe> in;
  std::unique_ptr<asio::readable_pipe> out;
  std::unique_ptr<asio::readable_pipe> err;
  std::unique_ptr<asio::posix::stream_descriptor> sig;
  std::unique_ptr<bp2::process> proc;
  std::int64_t gdb_pid = -1;
  int mi = 3;

  // Reading.
  std::unique_ptr<mi::Parser> parser;
  std::vector<char> out_buf = std::vector<char>(1 << 16);
  std::vector<char> err_buf = std::vector<char>(1 << 14);
  std::string err_carry;
  std::string stderr_all;
  bool out_open = false;
  bool err_open = false;
  bool signal_seen = false;
  bool reaped = false;
  int generation = 0; // bumped per spawn: handlers of an earlier debugger's pipes are ignored
  std::optional<int> wait_status;

  // Exchanges, grouped by the rule mi::TranscriptReader applies to a recording (mi/exchange.hpp).
  mi::ExchangeAssembler assembler;
  const std::vector<mi::Exchange>& exchanges = assembler.exchanges();
  std::optional<std::size_t> closed_by_result; // index of the last exchange a result closed
  std::uint64_t next_token = 1;
  // The fault sweep's hook (ROCPLAY_FAULT_INJECT=K:ACTION, docs/session.md): right after the
  // result of the K-th command (0-based, start-up commands included) arrives, SIGKILL the
  // debugger or send rocplay itself SIGINT or SIGTERM. Tests use it to hit every exchange.
  struct FaultPoint {
    std::uint64_t after = 0;
    int action = 0; // SIGKILL: to the debugger; SIGINT/SIGTERM: to rocplay
    bool fired = false;
  };
  std::optional<FaultPoint> fault;
  std::uint64_t results_seen = 0;
  std::size_t pending = 0; // index of the command being waited for (valid while waiting)
  bool waiting = false;

  // Target state.
  bool target_running = false;
  std::uint64_t stops_seen = 0;
  bool attach_sent = false;
  std::uint64_t attach_stops_before = 0; // stops_seen when -target-attach was sent
  bool gdb_attached = false;             // attach succeeded and no detach/exit since
  bool target_gone = false;              // the debugger reported the target exited
  TargetEnd target_end = TargetEnd::Detach;
  std::optional<std::int64_t> started_pid; // =thread-group-started
  std::optional<int> exit_code;            // =thread-group-exited / *stopped exited
  std::string exit_signal;                 // *stopped,reason="exited-signalled"
  double attach_sent_at = 0;
  std::optional<std::int64_t> pid;
  TargetInfo target;
  TargetTimes times;
  std::optional<Error> closed; // the session can run no more commands, and why
  // While the attach is in progress: looks every ~200 ms for a reason it can never finish (another
  // tracer on a thread); a reason ends the wait at once and is kept in `stall_reason`.
  std::function<std::optional<std::string>()> stall_check;
  std::optional<std::string> stall_reason;

  // Reporting.
  std::vector<std::string> warnings;
  std::set<std::string> warning_set;
  std::optional<std::size_t> noise_line; // index in warnings of the noise summary
  detail::NoiseFilter noise;
  std::vector<std::string> features;
  std::set<std::string> mi_commands;
  bool output_buffered = false; // buffer_output() succeeded

  // Recording: events are buffered until attach() knows the pid and environment for `# meta`.
  std::FILE* record_file = nullptr;
  std::unique_ptr<mi::TranscriptWriter> writer;
  std::vector<PendingEvent> record_buffer;
  bool record_enabled = false;
  bool registered = false;

  Impl(const Debugger& d, const Options& o) : debugger(d), options(o) {}

  void flush_recording() {
    if (record_file != nullptr) {
      std::fflush(record_file);
    }
  }

  double now() const {
    const double s = std::chrono::duration<double>(Clock::now() - t0).count();
    return std::round(s * 1e6) / 1e6; // the recording's resolution, so replays compare equal
  }

  void warn(std::string text) {
    if (warnings.size() >= kMaxWarnings || !warning_set.insert(text).second) {
      return;
    }
    warnings.push_back(std::move(text));
  }

  void update_noise_summary() {
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

  // ---- recording ----------------------------------------------------------------------------

  void record(char dir, double at, std::uint64_t token, std::string_view text) {
    if (!record_enabled) {
      return;
    }
    if (!writer) {
      record_buffer.push_back(PendingEvent{dir, at, token, std::string(text)});
      return;
    }
    write_event(dir, at, token, text);
  }

  void write_event(char dir, double at, std::uint64_t token, std::string_view text) {
    switch (dir) {
    case '>':
      writer->sent(at, token, text);
      break;
    case '<':
      writer->received(at, text);
      break;
    default:
      writer->note(at, text);
      break;
    }
  }

  std::string meta_json() const {
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
    meta["host"] = hostname();
    meta["started_at"] = start_iso;
    meta["env"] = target.env;
    return meta.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  }
  std::string start_iso = iso_now();

  void open_recording() {
    if (!record_enabled || writer) {
      return;
    }
    record_file = std::fopen(options.record_path.c_str(), "w");
    if (record_file == nullptr) {
      record_enabled = false;
      record_buffer.clear();
      warn("could not write the recording to " + options.record_path + ": " + std::strerror(errno));
      return;
    }
    writer = std::make_unique<mi::TranscriptWriter>(record_file, meta_json());
    for (const auto& e : record_buffer) {
      write_event(e.dir, e.at, e.token, e.text);
    }
    record_buffer.clear();
    writer->flush();
  }

  void close_recording() {
    if (record_enabled && !writer) {
      open_recording();
    }
    if (writer) {
      writer->flush();
      writer.reset();
    }
    if (record_file != nullptr) {
      std::fclose(record_file);
      record_file = nullptr;
    }
  }

  // ---- exchanges --------------------------------------------------------------------------------

  void on_sent(std::uint64_t token, const std::string& command, double at) {
    record('>', at, token, command);
    assembler.command(command, token, at);
  }

  void on_note(std::string_view text) {
    const double at = now();
    const std::string flat = flatten(text);
    record('!', at, 0, flat);
    assembler.note(flat, at);
  }

  void classify_stream_text(const std::string& text, bool console) {
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
      if (line.rfind("warning:", 0) == 0 || line.find("amd-dbgapi") != std::string_view::npos ||
          line.rfind("fatal error:", 0) == 0) {
        warn(std::string(line));
      }
    }
  }

  void on_line(const mi::RecordView& rec) {
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
      } else if (rec.klass() == "stopped") {
        target_running = false;
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
    }
  }

  // ---- I/O ------------------------------------------------------------------------------------

  void start_read_out() {
    out->async_read_some(asio::buffer(out_buf),
                         [this, gen = generation](boost::system::error_code ec, std::size_t n) {
                           if (gen != generation) {
                             return;
                           }
                           if (ec) {
                             parser->finish();
                             while (auto rec = parser->next()) {
                               on_line(*rec);
                             }
                             out_open = false;
                             return;
                           }
                           parser->feed(std::string_view(out_buf.data(), n));
                           while (auto rec = parser->next()) {
                             on_line(*rec);
                           }
                           start_read_out();
                         });
  }

  void on_stderr_line(std::string_view line) {
    if (line.empty()) {
      return;
    }
    if (stderr_all.size() < kMaxStderrBytes) {
      stderr_all.append(line.substr(0, kMaxStderrBytes - stderr_all.size()));
      stderr_all.push_back('\n');
    }
    on_note("stderr: " + std::string(line));
    classify_stream_text(std::string(line), false);
  }

  void start_read_err() {
    err->async_read_some(asio::buffer(err_buf),
                         [this, gen = generation](boost::system::error_code ec, std::size_t n) {
                           if (gen != generation) {
                             return;
                           }
                           if (ec) {
                             if (!err_carry.empty()) {
                               on_stderr_line(err_carry);
                               err_carry.clear();
                             }
                             err_open = false;
                             return;
                           }
                           err_carry.append(err_buf.data(), n);
                           std::size_t pos = 0;
                           for (;;) {
                             const std::size_t nl = err_carry.find('\n', pos);
                             if (nl == std::string::npos) {
                               break;
                             }
                             std::string_view line(err_carry.data() + pos, nl - pos);
                             if (!line.empty() && line.back() == '\r') {
                               line.remove_suffix(1);
                             }
                             on_stderr_line(line);
                             pos = nl + 1;
                           }
                           err_carry.erase(0, pos);
                           if (err_carry.size() > 65536) { // a line without an end: keep what fits
                             on_stderr_line(std::string_view(err_carry).substr(0, 4096));
                             err_carry.clear();
                           }
                           start_read_err();
                         });
  }

  void start_signal_watch() {
    const int fd = detail::signal_fd();
    if (fd < 0 || sig) {
      return;
    }
    const int dup = ::fcntl(fd, F_DUPFD_CLOEXEC, 0);
    if (dup < 0) {
      return;
    }
    sig = std::make_unique<asio::posix::stream_descriptor>(ioc, dup);
    watch_signal_pipe();
  }

  void watch_signal_pipe() {
    sig->async_wait(asio::posix::stream_descriptor::wait_read,
                    [this](boost::system::error_code ec) {
                      if (!ec) {
                        signal_seen = true;
                      }
                    });
  }

  bool signalled() const { return signal_seen || detail::pending_signal() != 0; }

  Wait pump(const std::function<bool()>& done, Clock::time_point deadline, bool watch_signal) {
    for (;;) {
      if (done()) {
        return Wait::Done;
      }
      if (watch_signal && signalled()) {
        return Wait::Signal;
      }
      if (!out_open) {
        return Wait::Dead;
      }
      if (Clock::now() >= deadline) {
        return Wait::Deadline;
      }
      if (stall_check) {
        if (auto reason = stall_check()) {
          stall_check = nullptr;
          stall_reason = std::move(reason);
          return Wait::Deadline;
        }
        ioc.run_one_until(std::min(deadline, Clock::now() + milliseconds(200)));
      } else {
        ioc.run_one_until(deadline);
      }
      if (ioc.stopped()) {
        ioc.restart();
      }
    }
  }

  // Handles what has already arrived, so it lands in the exchange it belongs to.
  void drain() {
    ioc.poll();
    if (ioc.stopped()) {
      ioc.restart();
    }
  }

  bool gdb_alive() {
    if (gdb_pid <= 0 || reaped) {
      return false;
    }
    return reap(milliseconds(0)) == false;
  }

  // Waits up to `grace` for the debugger to exit; true when it has (and was reaped).
  bool reap(milliseconds grace) {
    if (reaped) {
      return true;
    }
    if (gdb_pid <= 0) {
      return true;
    }
    const auto deadline = Clock::now() + grace;
    for (;;) {
      int status = 0;
      const pid_t r = ::waitpid(static_cast<pid_t>(gdb_pid), &status, WNOHANG);
      if (r == static_cast<pid_t>(gdb_pid)) {
        wait_status = status;
        forget_child();
        return true;
      }
      if (r < 0 && errno == ECHILD) {
        forget_child(); // reaped elsewhere: gone all the same
        return true;
      }
      if (Clock::now() >= deadline) {
        return false;
      }
      // Keep reading its output meanwhile so it never blocks on a full pipe.
      ioc.run_one_for(milliseconds(10));
      if (ioc.stopped()) {
        ioc.restart();
      }
    }
  }

  // Once reaped, the pid may be reused; Boost's destructor would waitpid() and SIGKILL it
  // (possibly another session's debugger). Take the handle away from it.
  void forget_child() {
    reaped = true;
    if (proc) {
      [[maybe_unused]] auto handle = proc->detach();
    }
  }

  std::string exit_description() const {
    if (!wait_status) {
      return "exited";
    }
    if (WIFSIGNALED(*wait_status)) {
      return "was killed by " + signal_name(WTERMSIG(*wait_status));
    }
    if (WIFEXITED(*wait_status)) {
      return "exited with status " + std::to_string(WEXITSTATUS(*wait_status));
    }
    return "exited";
  }

  void kill_debugger(const std::string& why) {
    if (gdb_pid > 0 && !reaped) {
      on_note("killing the debugger (pid " + std::to_string(gdb_pid) + "): " + why);
      ::kill(static_cast<pid_t>(gdb_pid), SIGKILL);
      reap(milliseconds(5000));
    }
  }

  // ---- spawning and start-up -------------------------------------------------------------------

  void spawn(int mi_version) {
    if (in) { // a respawn (MI2 fallback): retire the previous debugger's pipes first
      boost::system::error_code ec;
      in->close(ec);
      out->close(ec);
      err->close(ec);
      drain();
    }
    ++generation;
    mi = mi_version;
    in = std::make_unique<asio::writable_pipe>(ioc);
    out = std::make_unique<asio::readable_pipe>(ioc);
    err = std::make_unique<asio::readable_pipe>(ioc);
    parser = std::make_unique<mi::Parser>();
    reaped = false;
    wait_status.reset();
    stderr_all.clear();
    err_carry.clear();
    DebuggerLaunch launch(options.inherit_fds);
    const std::string interp = "--interpreter=mi" + std::to_string(mi_version);
    try {
      proc = std::make_unique<bp2::process>(ioc, debugger.path,
                                            std::vector<std::string>{"-nx", "-q", interp},
                                            bp2::process_stdio{*in, *out, *err}, launch);
    } catch (const std::exception& e) {
      throw Error(ExitCode::DebuggerNotFound,
                  "could not start the debugger " + debugger.path + ": " + e.what(),
                  "check that it runs: `" + debugger.path + " --version`");
    }
    gdb_pid = proc->id();
    out_open = true;
    err_open = true;
    start_read_out();
    start_read_err();
    start_signal_watch();
    on_note("spawned " + debugger.path + " -nx -q " + interp + " (pid " + std::to_string(gdb_pid) +
            ")");
  }

  void read_fault_point() {
    const char* spec = std::getenv("ROCPLAY_FAULT_INJECT");
    if (spec == nullptr || *spec == '\0') {
      return;
    }
    const std::string text(spec);
    const auto colon = text.find(':');
    const std::string action = colon == std::string::npos ? "" : text.substr(colon + 1);
    FaultPoint f;
    try {
      f.after = std::stoull(text.substr(0, colon));
    } catch (const std::exception&) {
      return;
    }
    f.action = action == "kill-debugger" ? SIGKILL
               : action == "sigint"      ? SIGINT
               : action == "sigterm"     ? SIGTERM
                                         : 0;
    if (f.action != 0) {
      fault = f;
    }
  }

  void startup() {
    read_fault_point();
    spawn(3);
    const auto deadline = Clock::now() + options.startup_timeout;
    auto remaining = [&] {
      return std::max(milliseconds(1),
                      std::chrono::duration_cast<milliseconds>(deadline - Clock::now()));
    };
    // The first command tells whether this debugger speaks MI3.
    try {
      start_command("-gdb-set pagination off", remaining());
    } catch (const Error& e) {
      if (e.code() == ExitCode::DebuggerCrashed && mi_refused(stderr_all)) {
        closed.reset();
        on_note("the debugger refused mi3; falling back to mi2");
        spawn(2);
        start_command("-gdb-set pagination off", remaining());
      } else {
        throw;
      }
    }
    if (options.buffered_output) {
      buffer_output(remaining());
    }
    // `print thread-events off`: no `[New LWP N]` console line per thread at attach (a thousand
    // flushed writes for a thousand threads); =thread-created still reports each one.
    for (const char* cmd : {"-gdb-set confirm off", "-gdb-set width 0", "-gdb-set height 0",
                            "-gdb-set auto-load off", "-gdb-set print thread-events off"}) {
      start_command(cmd, remaining());
    }
    // Argument values cost GDB a DWARF evaluation per frame it prints: -thread-info of 1,000
    // threads took 0.4-0.5 s of the stop with them, 0.07-0.08 s without (docs/benchmarks.md).
    // Frames keep the arguments' names; nothing rocplay reads uses the values.
    if (!options.frame_argument_values) {
      start_command("-gdb-set print frame-arguments none", remaining());
    }
    // Belt and braces for builds where `auto-load off` leaves Python scripts on; a GDB without
    // Python refuses the setting, which is fine.
    command("-interpreter-exec console \"set auto-load python-scripts off\"", remaining());
    // With DEBUGINFOD_URLS set, GDB 12+ asks whether to download debug info, and `confirm off`
    // answers yes: a stop could then wait on the network. Older GDBs lack the setting.
    command("-gdb-set debuginfod enabled off", remaining());
    if (debugger.version.empty()) {
      const auto ex = start_command("-gdb-version", remaining());
      const std::string text = ex.console();
      debugger.version = text.substr(0, text.find('\n'));
      if (debugger.kind == DebuggerKind::Unknown) {
        debugger.kind = debugger_kind_from_banner(debugger.version, debugger.path);
      }
    }
    // GDB 13 on Linux drives threads through a non-stop target even when the user sees all-stop:
    // an attach then stops and accounts for each thread on its own. With the all-stop target,
    // attaching to 1,000 threads and listing them stopped the target 0.30 s instead of 0.39
    // (docs/benchmarks.md). Plain gdb only: rocgdb's and cuda-gdb's GPU targets were not tried
    // without it. A maintenance setting: a GDB that lacks it refuses it and keeps its default.
    if (options.all_stop_target && debugger.kind == DebuggerKind::Gdb) {
      command("-interpreter-exec console \"maint set target-non-stop off\"", remaining());
    }
    {
      const auto ex = start_command("-list-features", remaining());
      if (const auto* r = ex.result(); r != nullptr && r->klass() == "done") {
        for (const auto v : r->results()["features"]) {
          features.push_back(v.text());
        }
      }
    }
    const bool can_probe =
        std::find(features.begin(), features.end(), "info-gdb-mi-command") != features.end();
    if (can_probe) {
      for (const char* name : kProbedCommands) {
        const auto ex = start_command(std::string("-info-gdb-mi-command ") + name, remaining());
        if (const auto* r = ex.result(); r != nullptr && r->klass() == "done" &&
                                         r->results()["command"]["exists"].str_or() == "true") {
          mi_commands.insert(name);
        }
      }
    }
  }

  // GDB writes MI to an unbuffered stdout, and a notification or console line goes out one byte
  // per write(): about 40 writes for one `=thread-created`, 83,000 for an attach to, a
  // -thread-info of and a detach from 1,000 threads, each one waking rocplay's reader. GDB's
  // logging stream is a buffered FILE flushed at the end of every record; redirected to GDB's own
  // stdout (the same pipe, reopened through /proc) it turns each record into one write, inside the
  // stop and out. Best effort: a GDB that cannot do it keeps writing to stdout as before. The
  // result of the command that turns it on already comes through the new stream.
  void buffer_output(milliseconds timeout) {
    for (const char* cmd : {"-gdb-set logging file /proc/self/fd/1",
                            "-gdb-set logging overwrite on", "-gdb-set logging redirect on"}) {
      if (command(cmd, timeout).error_message()) {
        on_note(std::string("MI output stays unbuffered: `") + cmd + "` failed");
        return;
      }
    }
    // `logging enabled` is GDB 12's name; older GDBs have `set logging on`.
    if (!command("-gdb-set logging enabled on", timeout).error_message() ||
        !command("-gdb-set logging on", timeout).error_message()) {
      output_buffered = true;
      return;
    }
    command("-gdb-set logging redirect off", timeout);
    on_note("MI output stays unbuffered: the debugger could not turn logging on");
  }

  // Reads the symbols of what the target has mapped while it still runs. GDB shares the symbol
  // tables of one file between the objfiles that load it, so the attach that follows finds
  // them read: the work moves out of the stop. Best effort: a file GDB cannot read is skipped.
  // Returns how many files were read.
  std::size_t preload_symbols(std::int64_t target_pid, Clock::time_point deadline) {
    constexpr std::size_t kMaxObjects = 4096;
    auto remaining = [&] {
      return std::max(milliseconds(1),
                      std::chrono::duration_cast<milliseconds>(deadline - Clock::now()));
    };
    // Paths go into CLI arguments: keep to ones that need no quoting there.
    auto plain = [](const std::string& p) {
      return !p.empty() && p[0] == '/' && std::none_of(p.begin(), p.end(), [](char c) {
        const auto u = static_cast<unsigned char>(c);
        return u <= 0x20 || u == 0x7f || c == '"' || c == '\'' || c == '\\';
      });
    };
    std::size_t loaded = 0;
    const std::string exe = process::read_exe(target_pid);
    if (plain(exe)) {
      const auto ex = command("-file-exec-and-symbols " + exe, remaining());
      loaded += ex.error_message() ? 0 : 1;
    }
    const auto objects = process::read_mapped_objects(target_pid);
    if (!objects) {
      return loaded;
    }
    for (const auto& obj : *objects) {
      const bool shared = obj.path.find(".so") != std::string::npos;
      if (!shared || obj.path == exe || obj.base == 0 || !plain(obj.path) ||
          loaded >= kMaxObjects) {
        continue;
      }
      char base[32];
      std::snprintf(base, sizeof base, "0x%llx", static_cast<unsigned long long>(obj.base));
      const auto ex =
          command(console_command("add-symbol-file " + obj.path + " -o " + base), remaining());
      loaded += ex.error_message() ? 0 : 1;
    }
    on_note("read the symbols of " + std::to_string(loaded) +
            " mapped files before attaching (the target kept running)");
    return loaded;
  }

  // A start-up command: an ^error is a warning, not a failure.
  mi::Exchange start_command(const std::string& cmd, milliseconds timeout) {
    auto ex = command(cmd, timeout);
    if (const auto msg = ex.error_message()) {
      warn("start-up command `" + cmd + "` failed: " + *msg);
    }
    return ex;
  }

  // ---- commands ---------------------------------------------------------------------------------

  void ensure_open() {
    if (closed) {
      throw Error(closed->code(), std::string("the debugger session has ended: ") + closed->what(),
                  closed->hint());
    }
  }

  // Writes `line` to the debugger's stdin; false when the deadline passed or the pipe broke.
  Wait write_line(const std::string& line, Clock::time_point deadline, bool watch_signal) {
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

  // Sends one command and waits for its result. `cleanup` commands (detach, exit) do not watch
  // the signal pipe and never recurse into shutdown().
  std::pair<Wait, std::size_t> send_and_wait(const std::string& cmd, milliseconds timeout,
                                             bool cleanup) {
    drain();
    if (!cleanup && signalled()) {
      return {Wait::Signal, 0};
    }
    if (!out_open) {
      return {Wait::Dead, 0};
    }
    const std::uint64_t token = next_token++;
    const auto deadline = Clock::now() + timeout;
    const double sent_at = now();
    on_sent(token, cmd, sent_at);
    if (cmd.rfind("-target-attach", 0) == 0) {
      // From here on the target may be stopped: every way out detaches.
      attach_sent = true;
      times.attach_sent = true;
      attach_sent_at = sent_at;
      attach_stops_before = stops_seen;
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

  mi::Exchange command(const std::string& cmd, milliseconds timeout) {
    ensure_open();
    const auto [w, index] = send_and_wait(cmd, timeout, false);
    switch (w) {
    case Wait::Done:
      return exchanges[index];
    case Wait::Deadline:
      if (stall_reason) {
        fail(stall_error(), true);
      }
      fail(Error(ExitCode::Timeout,
                 "the debugger gave no result for `" + cmd + "` within " + seconds_text(timeout),
                 "a slow step needs a longer timeout (the step's `timeout:` or --timeout); the "
                 "target was detached and keeps running"),
           true);
      break;
    case Wait::Dead:
      debugger_died("while running `" + cmd + "`");
      break;
    case Wait::Signal:
      interrupted();
      break;
    }
    throw Error(ExitCode::Internal, "unreachable");
  }

  void inject_fault() {
    const std::uint64_t k = results_seen++;
    if (!fault || fault->fired || k != fault->after) {
      return;
    }
    fault->fired = true;
    if (fault->action == SIGKILL) {
      ::kill(static_cast<pid_t>(gdb_pid), SIGKILL);
    } else {
      ::kill(::getpid(), fault->action);
    }
  }

  Error stall_error() const {
    return Error(
        ExitCode::PtraceDenied,
        "gave up attaching to pid " + std::to_string(pid.value_or(0)) + " after " +
            seconds_text(milliseconds(static_cast<std::int64_t>((now() - attach_sent_at) * 1000))) +
            ": " + stall_reason.value_or("the attach stalled"),
        "detach or stop that tracer (strace, another debugger, a profiler) and try "
        "again; the debugger was ended so the kernel released the target");
  }

  [[noreturn]] void debugger_died(const std::string& when) {
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

  [[noreturn]] void interrupted() {
    const int s = detail::pending_signal();
    fail(Error(exit_code_for_signal(s),
               "interrupted by " + signal_name(s) +
                   (attach_sent ? "; the target was detached before exiting" : ""),
               {}),
         true);
    throw Error(ExitCode::Internal, "unreachable");
  }

  // Ends the session for `error`: detaches (interrupting first when `interrupt`), notes why, and
  // throws the error. Later calls rethrow it.
  [[noreturn]] void fail(Error error, bool interrupt) {
    on_note(std::string("error: ") + error.what());
    closed = error;
    shutdown(interrupt);
    throw error;
  }

  // ---- detach
  // ------------------------------------------------------------------------------------

  bool pending_answered() const {
    return !waiting || (closed_by_result && *closed_by_result >= pending);
  }
  bool in_attach() const { return attach_sent && stops_seen == attach_stops_before; }

  // Brings the debugger to a state where it reads -target-detach: the pending command answered
  // and the target stopped. Kills the debugger when that does not happen in time.
  void settle(bool interrupt) {
    const auto grace = options.interrupt_grace;
    if (in_attach() && stall_reason) {
      // It can never finish (another tracer holds a thread): waiting would only keep the target
      // stopped longer. The kernel detaches the threads the debugger holds when it dies.
      waiting = false;
      kill_debugger("the attach cannot finish: " + *stall_reason);
      return;
    }
    if (in_attach()) {
      // Never SIGINT the debugger mid-attach: GDB passes the SIGINT on to a target it does not
      // fully trace yet, and the target dies of it at detach. Let the attach finish instead.
      if (waiting || interrupt) {
        on_note("waiting up to " + seconds_text(grace) + " for the attach to finish");
      }
      pump([&] { return pending_answered() && !in_attach(); }, Clock::now() + grace, false);
      if (!pending_answered() || (in_attach() && waiting)) {
        waiting = false;
        kill_debugger("the attach did not finish within " + seconds_text(grace));
        return;
      }
      if (in_attach()) {
        // ^done came but the stop did not: SIGINT is still unsafe, so give up on the debugger.
        waiting = false;
        kill_debugger("the attached target was not reported stopped within " + seconds_text(grace));
        return;
      }
    }
    if (waiting || target_running) {
      // The debugger is busy with a command, or the target runs and synchronous MI reads no
      // command until it stops. SIGINT makes GDB quit the command or stop the target (it
      // catches the SIGINT it forwards to the target and does not pass it on).
      on_note("interrupting: SIGINT to the debugger (pid " + std::to_string(gdb_pid) + ")");
      ::kill(static_cast<pid_t>(gdb_pid), SIGINT);
      pump([&] { return pending_answered() && !target_running; }, Clock::now() + grace, false);
      if (!pending_answered()) {
        // One more: the first may have been taken as the Quit of something inner.
        ::kill(static_cast<pid_t>(gdb_pid), SIGINT);
        pump([&] { return pending_answered() && !target_running; }, Clock::now() + grace, false);
      }
    }
    if (!pending_answered()) {
      waiting = false;
      kill_debugger("it did not answer an interrupt within " + seconds_text(grace));
      return;
    }
    waiting = false;
    if (target_running) {
      kill_debugger("the target did not stop for detach within " + seconds_text(grace));
    }
  }

  // Detach on every path. Never throws. Afterwards the debugger may still be alive (normal detach)
  // or dead (killed because it did not answer).
  void shutdown(bool interrupt) noexcept {
    try {
      if (!attach_sent || times.detached) {
        return;
      }
      const bool alive = out_open && gdb_alive();
      if (alive) {
        settle(interrupt);
        if (out_open && !reaped && !target_gone && target_end == TargetEnd::Kill) {
          // A program the launcher started: `kill` (confirm is off); end_program() below makes
          // sure of it.
          auto [w, idx] = send_and_wait(console_command("kill"), options.detach_timeout, true);
          if (w == Wait::Deadline) {
            waiting = false;
            kill_debugger("kill timed out");
          }
        } else if (out_open && !reaped && !target_gone) {
          auto [w, idx] = send_and_wait("-target-detach", options.detach_timeout, true);
          if (w == Wait::Done) {
            if (const auto msg = exchanges[idx].error_message()) {
              warn("detach reported: " + *msg);
            }
          } else if (w == Wait::Deadline) {
            waiting = false;
            warn("the debugger did not detach within " + seconds_text(options.detach_timeout) +
                 "; killed it so the kernel detaches the target");
            kill_debugger("detach timed out");
          }
        }
      }
      if (!out_open || reaped) {
        // The tracer is gone; the kernel detaches the target once it has exited.
        reap(milliseconds(5000));
        if (!reaped) {
          kill_debugger("it closed its output but did not exit");
        }
      }
      times.detached = true;
      gdb_attached = false;
      times.stop_seconds = now() - attach_sent_at;
      times.total_seconds = now();
      if (target_end == TargetEnd::Kill) {
        end_program();
      } else {
        on_note("detached from pid " + std::to_string(pid.value_or(0)));
        check_target_state();
      }
    } catch (...) {
      times.detached = true;
    }
  }

  // After `kill`, or when the debugger died: the program must be gone. A program still there
  // (the debugger was killed, and the kernel let go of it) gets SIGKILL.
  void end_program() {
    if (!pid) {
      return;
    }
    auto st = process::read_stat(*pid);
    for (int i = 0; i < 50 && st && st->state != 'Z' && st->state != 'X'; ++i) {
      if (i == 0 && !target_gone) {
        ::kill(static_cast<pid_t>(*pid), SIGKILL);
        on_note("sent SIGKILL to the program (pid " + std::to_string(*pid) + ")");
      }
      std::this_thread::sleep_for(milliseconds(20));
      st = process::read_stat(*pid);
    }
    times.state_after = st ? st->state : 'X';
    times.killed = true;
    if (st && st->state != 'Z' && st->state != 'X') {
      warn("the program (pid " + std::to_string(*pid) + ") is still there after SIGKILL (state " +
           std::string(1, st->state) + ")");
    } else {
      on_note("the program (pid " + std::to_string(*pid) + ") was ended");
    }
  }

  void check_target_state() {
    if (!pid) {
      return;
    }
    auto st = process::read_stat(*pid);
    // A tracer-stop can outlive a killed tracer by a moment; look a few times before acting.
    for (int i = 0; i < 10 && st && process::is_stopped(st->state); ++i) {
      std::this_thread::sleep_for(milliseconds(20));
      st = process::read_stat(*pid);
    }
    if (!st || st->state == 'Z' || st->state == 'X') {
      times.state_after = 'X';
      warn("the target (pid " + std::to_string(*pid) + ") exited during the session");
      return;
    }
    times.state_after = st->state;
    if (!process::is_stopped(st->state)) {
      return;
    }
    if (process::is_stopped(target.state_before)) {
      warn("the target (pid " + std::to_string(*pid) +
           ") was already stopped before rocplay attached (state " +
           std::string(1, target.state_before) + "); left as it was");
      return;
    }
    ::kill(static_cast<pid_t>(*pid), SIGCONT);
    times.left_stopped = true;
    auto after = process::read_stat(*pid);
    for (int i = 0; i < 10 && after && process::is_stopped(after->state); ++i) {
      std::this_thread::sleep_for(milliseconds(20));
      after = process::read_stat(*pid);
    }
    times.state_after = after ? after->state : 'X';
    std::string text = "TARGET LEFT STOPPED: pid " + std::to_string(*pid) + " was in state " +
                       std::string(1, st->state) + " after detach; rocplay sent it SIGCONT";
    if (after && process::is_stopped(after->state)) {
      text += ", but it is still stopped (state " + std::string(1, after->state) +
              "): check it with `grep State /proc/" + std::to_string(*pid) + "/status`";
    } else {
      text += " and it is running again";
    }
    on_note(text);
    warn(text);
  }

  void quit() noexcept {
    try {
      if (gdb_pid <= 0 || reaped) {
        return;
      }
      if (out_open && !closed) {
        send_and_wait("-gdb-exit", milliseconds(2000), true);
      } else if (out_open) {
        // After a failure the debugger may be mid-command; it still reads -gdb-exit next.
        send_and_wait("-gdb-exit", milliseconds(1000), true);
      }
      if (!reap(milliseconds(2000))) {
        kill_debugger("it did not exit after -gdb-exit");
      }
    } catch (...) {
    }
  }
};

Session::Session(const Debugger& debugger, const Options& options)
    : impl_(std::make_unique<Impl>(debugger, options)) {
  detail::session_started();
  impl_->registered = true;
  impl_->record_enabled = !options.record_path.empty();
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
  const auto deadline = Clock::now() + s.options.attach_timeout;
  if (s.options.fast_attach) {
    s.start_command("-gdb-set auto-solib-add off", s.options.command_timeout);
  } else if (s.options.preload_symbols) {
    try {
      const std::size_t preloaded = s.preload_symbols(pid, deadline);
      // cuda-gdb 13.0 does not reuse the preloaded symbols for the libraries it finds while
      // attaching: on a PyTorch process it read them again, 7-9 s of the stop, after a 9 s
      // preload (docs/hardware-validation.md, 2026-11-22). The preloaded objfiles already cover
      // every library mapped at their load addresses, so the attach need not read them again.
      // Not for rocgdb, whose GPU code objects arrive as shared libraries.
      if (preloaded > 0 && s.debugger.kind == DebuggerKind::CudaGdb) {
        s.start_command("-gdb-set auto-solib-add off", s.options.command_timeout);
      }
    } catch (const Error& e) {
      if (e.code() != ExitCode::Timeout) {
        throw;
      }
      throw Error(ExitCode::Timeout,
                  "reading the symbols of pid " + std::to_string(pid) +
                      "'s libraries took longer than the attach timeout (" +
                      seconds_text(s.options.attach_timeout) + "); the target was never stopped",
                  "raise the attach timeout, or attach fast (no shared-library symbols)");
    }
  }

  const std::string cmd = "-target-attach " + std::to_string(pid);
  const std::uint64_t stops_before = s.stops_seen;
  // The pre-check looked at every thread, but a tracer may seize one after it: then the attach
  // would wait out its whole deadline with the other threads stopped. Give up as soon as seen.
  // Every 200 ms, or less often when one look is slow (thousands of threads): at most 5% of a
  // core goes to looking.
  s.stall_check = [&s, pid, last = Clock::now(),
                   every = milliseconds(200)]() mutable -> std::optional<std::string> {
    if (Clock::now() - last < every) {
      return std::nullopt;
    }
    const auto started = Clock::now();
    const auto traced = process::traced_threads(pid, s.gdb_pid);
    last = Clock::now();
    every = std::max(milliseconds(200),
                     std::chrono::duration_cast<milliseconds>((last - started) * 20));
    if (traced.empty()) {
      return std::nullopt;
    }
    std::string tracer = std::to_string(traced.front().tracer_pid);
    if (const auto st = process::read_stat(traced.front().tracer_pid)) {
      tracer += " (" + st->comm + ")";
    }
    return "thread " + std::to_string(traced.front().tid) + " of pid " + std::to_string(pid) +
           " is traced by pid " + tracer + ", so the debugger can never stop it";
  };
  const auto stall_check = s.stall_check;
  mi::Exchange ex;
  try {
    ex = s.command(cmd, s.options.attach_timeout);
    s.stall_check = nullptr;
  } catch (const Error& e) {
    s.stall_check = nullptr;
    if (s.stall_reason) {
      throw; // already says why
    }
    if (e.code() == ExitCode::Timeout) {
      throw Error(ExitCode::Timeout,
                  "attaching to pid " + std::to_string(pid) + " took longer than " +
                      seconds_text(s.options.attach_timeout),
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
    if (s.stall_reason) {
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

void Session::note(std::string_view text) {
  impl_->on_note(text);
  impl_->flush_recording();
}

ResumeResult Session::run_for(std::chrono::milliseconds interval,
                              std::chrono::milliseconds stop_timeout) {
  Impl& s = *impl_;
  s.ensure_open();
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
  // What the recording holds so far reaches the disk before the target runs: a rocplay killed
  // during the interval leaves every sample taken.
  s.flush_recording();
  auto stopped = [&] { return !s.target_running || s.target_gone; };
  const std::uint64_t stops_before = s.stops_seen;
  // The interval: the target runs. A signal to rocplay, the debugger's death or the target's
  // own stop ends it early.
  auto w = s.pump(stopped, Clock::now() + interval, true);
  if (w == Impl::Wait::Dead) {
    s.debugger_died("while the target ran between samples");
  }
  if (w == Impl::Wait::Signal) {
    s.interrupted();
  }
  if (w == Impl::Wait::Deadline) {
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
  const auto w =
      s.pump([&] { return !s.target_running || s.target_gone; }, Clock::now() + timeout, false);
  if (w == Impl::Wait::Dead) {
    s.debugger_died("while stopping the program");
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
