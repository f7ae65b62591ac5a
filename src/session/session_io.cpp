// The session's pipes and event loop: reading MI and stderr, the signal pipe, pump() and its
// deadlines, reaping the debugger (see session/session_impl.hpp).
#include "session/session_impl.hpp"

namespace rocplay::session {

namespace {

constexpr std::size_t kMaxStderrBytes = 256 * 1024;

} // namespace

void Session::Impl::start_read_out() {
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

void Session::Impl::on_stderr_line(std::string_view line) {
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

void Session::Impl::start_read_err() {
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

void Session::Impl::start_signal_watch() {
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

void Session::Impl::watch_signal_pipe() {
  sig->async_wait(asio::posix::stream_descriptor::wait_read, [this](boost::system::error_code ec) {
    if (!ec) {
      signal_seen = true;
    }
  });
}

Session::Impl::Wait Session::Impl::pump(const std::function<bool()>& done,
                                        Clock::time_point deadline, bool watch_signal) {
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
      if (auto found = stall_check()) {
        stall_check = nullptr;
        stall = std::move(found);
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

void Session::Impl::drain() {
  ioc.poll();
  if (ioc.stopped()) {
    ioc.restart();
  }
}

bool Session::Impl::gdb_alive() {
  if (gdb_pid <= 0 || reaped) {
    return false;
  }
  return reap(milliseconds(0)) == false;
}

bool Session::Impl::reap(milliseconds grace) {
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
    // Keep reading its output meanwhile so it never blocks on a full pipe; look again soon, as
    // a look's report waits for this exit.
    ioc.run_one_for(milliseconds(1));
    if (ioc.stopped()) {
      ioc.restart();
    }
  }
}

void Session::Impl::forget_child() {
  reaped = true;
  if (proc) {
    [[maybe_unused]] auto handle = proc->detach();
  }
}

std::string Session::Impl::exit_description() const {
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

void Session::Impl::kill_debugger(const std::string& why) {
  if (gdb_pid > 0 && !reaped) {
    killed_in_attach = killed_in_attach || (in_attach() && !times.copied);
    on_note("killing the debugger (pid " + std::to_string(gdb_pid) + "): " + why);
    // Its whole process group when it attached: a wrapper script that runs the real debugger as
    // its child (rather than exec'ing it) would otherwise leave that child tracing the target.
    // Not for a launched program, which may share the debugger's group.
    // Its own pid when the group is not there (yet: setpgid runs in the child after the fork).
    const auto group = static_cast<pid_t>(times.launched ? gdb_pid : -gdb_pid);
    if (::kill(group, SIGKILL) != 0) {
      ::kill(static_cast<pid_t>(gdb_pid), SIGKILL);
    }
    reap(milliseconds(5000));
  }
}

} // namespace rocplay::session
