// SIGINT/SIGTERM/SIGHUP while a debugger holds the target: detach first, then exit.
//
// The handler does only async-signal-safe things: it records the signal and writes one byte to a
// self-pipe that every Session's Asio loop watches. The loop then interrupts the debugger,
// detaches and throws Error(exit_code_for_signal(sig)) out of the pending call.
#include "session/signal_guard.hpp"
#include "rocplay/session/session.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <mutex>

namespace rocplay::session {

namespace {

int g_pipe[2] = {-1, -1};
std::atomic<int> g_signal{0};
std::atomic<int> g_live{0};
std::once_flag g_once;

extern "C" void on_signal(int sig) {
  const int saved = errno;
  int expected = 0;
  g_signal.compare_exchange_strong(expected, sig);
  if (g_live.load() == 0) {
    // No debugger holds anything, so nothing needs detaching: say so and leave with 128 + sig
    // (write and _exit are async-signal-safe; a message from a signal handler must be fixed text).
    const char* text = sig == SIGINT    ? "rocplay: interrupted by SIGINT; no debugger was "
                                          "attached, nothing was stopped\n"
                       : sig == SIGTERM ? "rocplay: terminated by SIGTERM; no debugger was "
                                          "attached, nothing was stopped\n"
                                        : "rocplay: hung up (SIGHUP); no debugger was attached, "
                                          "nothing was stopped\n";
    std::size_t len = 0;
    while (text[len] != '\0') {
      ++len;
    }
    [[maybe_unused]] const ssize_t n = ::write(STDERR_FILENO, text, len);
    ::_exit(128 + sig);
  } else {
    const char byte = static_cast<char>(sig);
    [[maybe_unused]] const ssize_t n = ::write(g_pipe[1], &byte, 1);
  }
  errno = saved;
}

} // namespace

namespace detail {

int signal_fd() {
  return g_pipe[0];
}
int pending_signal() {
  return g_signal.load();
}
void session_started() {
  g_live.fetch_add(1);
}
void session_ended() {
  g_live.fetch_sub(1);
}
void acknowledge_signal() {
  char buf[64];
  while (g_pipe[0] >= 0 && ::read(g_pipe[0], buf, sizeof buf) > 0) {
  }
  g_signal.store(0);
}

} // namespace detail

void install_signal_guard() {
  std::call_once(g_once, [] {
    if (::pipe2(g_pipe, O_CLOEXEC | O_NONBLOCK) != 0) {
      g_pipe[0] = g_pipe[1] = -1;
      return;
    }
    struct sigaction sa {};
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    // Restart interrupted system calls: the loop learns of the signal from the pipe, not EINTR.
    sa.sa_flags = SA_RESTART;
    for (const int sig : {SIGINT, SIGTERM, SIGHUP}) {
      ::sigaction(sig, &sa, nullptr);
    }
  });
}

ExitCode exit_code_for_signal(int signo) {
  if (signo <= 0 || signo >= 64) {
    return ExitCode::Interrupted;
  }
  return static_cast<ExitCode>(128 + signo);
}

std::optional<int> caught_signal() {
  const int sig = g_signal.load();
  if (sig == 0) {
    return std::nullopt;
  }
  return sig;
}

} // namespace rocplay::session
