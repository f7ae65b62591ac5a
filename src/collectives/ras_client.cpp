// Asking a node's NCCL RAS service (rocplay/collectives/collectives.hpp): a plain TCP exchange
// with deadlines, the same the `ncclras` client makes (NCCL src/ras/client.cc). No ptrace, no
// signal: the job is not touched.
#include "rocplay/collectives/collectives.hpp"

#include <fmt/format.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>

namespace rocplay::collectives {

namespace {

using Clock = std::chrono::steady_clock;

class Socket {
public:
  explicit Socket(int fd) : fd_(fd) {}
  ~Socket() {
    if (fd_ >= 0) {
      ::close(fd_);
    }
  }
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;
  int fd() const { return fd_; }

private:
  int fd_;
};

int ms_left(Clock::time_point deadline) {
  const auto left =
      std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return left > 0 ? static_cast<int>(left) : 0;
}

// Waits for `events` on fd until the deadline; false on timeout or error.
bool wait_for(int fd, short events, Clock::time_point deadline) {
  for (;;) {
    pollfd p{fd, events, 0};
    const int n = ::poll(&p, 1, ms_left(deadline));
    if (n < 0 && errno == EINTR) {
      continue;
    }
    return n > 0 && (p.revents & (events | POLLHUP | POLLERR)) != 0;
  }
}

bool send_all(int fd, std::string_view s, Clock::time_point deadline) {
  while (!s.empty()) {
    if (!wait_for(fd, POLLOUT, deadline)) {
      return false;
    }
    const ssize_t n = ::send(fd, s.data(), s.size(), MSG_NOSIGNAL);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) {
      continue;
    }
    if (n <= 0) {
      return false;
    }
    s.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

// Reads into `buf` until a newline (line) or EOF (!line), the deadline or the size bound.
// Returns false on timeout or error; `eof` says the peer closed.
bool receive(int fd, std::string& buf, bool line, Clock::time_point deadline, std::size_t max,
             bool& eof) {
  eof = false;
  char chunk[4096];
  while (buf.size() < max) {
    if (line && buf.find('\n') != std::string::npos) {
      return true;
    }
    if (!wait_for(fd, POLLIN, deadline)) {
      return false;
    }
    const ssize_t n = ::recv(fd, chunk, sizeof chunk, 0);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) {
      continue;
    }
    if (n < 0) {
      return false;
    }
    if (n == 0) {
      eof = true;
      return !line || buf.find('\n') != std::string::npos;
    }
    buf.append(chunk, static_cast<std::size_t>(n));
  }
  return true;
}

std::string take_line(std::string& buf) {
  const auto nl = buf.find('\n');
  std::string line = buf.substr(0, nl);
  buf.erase(0, nl == std::string::npos ? buf.size() : nl + 1);
  return line;
}

} // namespace

RasAnswer ask_ras(const RasQueryOptions& o) {
  RasAnswer out;
  const auto t0 = Clock::now();
  const auto handshake = t0 + o.handshake;
  auto finish = [&](std::string error) {
    out.error = std::move(error);
    out.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    return out;
  };
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const std::string port = std::to_string(o.port);
  if (const int rc = ::getaddrinfo(o.host.c_str(), port.c_str(), &hints, &found); rc != 0) {
    return finish(fmt::format("cannot resolve {}: {}", o.host, ::gai_strerror(rc)));
  }
  std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> addrs(found, ::freeaddrinfo);
  const addrinfo* ai = addrs.get();
  Socket sock(
      ::socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol));
  if (sock.fd() < 0) {
    return finish(std::string("socket: ") + std::strerror(errno));
  }
  if (::connect(sock.fd(), ai->ai_addr, ai->ai_addrlen) != 0 && errno != EINPROGRESS) {
    return finish(fmt::format("no NCCL RAS service at {}:{} ({}): the job runs NCCL older than "
                              "2.24, has NCCL_RAS_ENABLE=0, or listens elsewhere (NCCL_RAS_ADDR)",
                              o.host, o.port, std::strerror(errno)));
  }
  if (!wait_for(sock.fd(), POLLOUT, handshake)) {
    return finish(
        fmt::format("no answer from {}:{} within {} ms", o.host, o.port, o.handshake.count()));
  }
  int so_error = 0;
  socklen_t len = sizeof so_error;
  ::getsockopt(sock.fd(), SOL_SOCKET, SO_ERROR, &so_error, &len);
  if (so_error != 0) {
    return finish(fmt::format("no NCCL RAS service at {}:{} ({}): the job runs NCCL older than "
                              "2.24, has NCCL_RAS_ENABLE=0, or listens elsewhere (NCCL_RAS_ADDR)",
                              o.host, o.port, std::strerror(so_error)));
  }
  std::string buf;
  bool eof = false;
  if (!send_all(sock.fd(), "CLIENT PROTOCOL 2\n", handshake) ||
      !receive(sock.fd(), buf, true, handshake, 4096, eof)) {
    return finish(fmt::format("{}:{} accepted but did not answer the RAS handshake within {} ms "
                              "(not an NCCL RAS port?)",
                              o.host, o.port, o.handshake.count()));
  }
  if (const std::string hello = take_line(buf); !hello.starts_with("SERVER PROTOCOL ")) {
    return finish(fmt::format("{}:{} is not an NCCL RAS port: it answered `{}`", o.host, o.port,
                              hello.substr(0, 80)));
  }
  const auto answer = Clock::now() + o.answer;
  if (o.ras_timeout_s >= 0) {
    if (!send_all(sock.fd(), fmt::format("TIMEOUT {}\n", o.ras_timeout_s), answer) ||
        !receive(sock.fd(), buf, true, Clock::now() + o.handshake, 4096, eof)) {
      return finish("NCCL RAS did not acknowledge TIMEOUT");
    }
    take_line(buf); // `OK`
  }
  if (!send_all(sock.fd(), o.verbose ? "VERBOSE STATUS\n" : "STATUS\n", answer)) {
    return finish("NCCL RAS closed the connection before the status request");
  }
  const bool complete = receive(sock.fd(), buf, false, answer, o.max_bytes, eof);
  out.text = std::move(buf);
  out.answered = !out.text.empty();
  if (!complete || !eof) {
    return finish(fmt::format("NCCL RAS status cut off after {} bytes ({} ms or {} bytes reached)",
                              out.text.size(), o.answer.count(), o.max_bytes));
  }
  out.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  return out;
}

} // namespace rocplay::collectives
