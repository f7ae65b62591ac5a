// ask_ras against local TCP servers that speak as NCCL's RAS service does (NCCL src/ras/
// client_support.cc: `SERVER PROTOCOL 2`, `OK`, then the status and EOF), that accept and never
// answer, and against a port nobody listens on: the answer is read, and a silent port costs at
// most the handshake budget.
#include "rocplay/collectives/collectives.hpp"

#include <catch2/catch.hpp>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

using namespace rocplay::collectives;
namespace fs = std::filesystem;

namespace {

// A listening socket on 127.0.0.1 and an ephemeral port.
struct Listener {
  int fd = -1;
  int port = 0;
  Listener() {
    fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    REQUIRE(::listen(fd, 4) == 0);
    socklen_t len = sizeof a;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
    port = ntohs(a.sin_port);
  }
  ~Listener() { ::close(fd); }
  Listener(const Listener&) = delete;
  Listener& operator=(const Listener&) = delete;
};

std::string read_line(int fd) {
  std::string line;
  char c = 0;
  while (::read(fd, &c, 1) == 1 && c != '\n') {
    line.push_back(c);
  }
  return line;
}

void write_all(int fd, const std::string& s) {
  std::size_t done = 0;
  while (done < s.size()) {
    const ssize_t n = ::write(fd, s.data() + done, s.size() - done);
    if (n <= 0) {
      return;
    }
    done += static_cast<std::size_t>(n);
  }
}

} // namespace

TEST_CASE("ncclras over TCP: the status is read and parsed as a saved answer") {
  std::ifstream in(fs::path(ROCPLAY_SOURCE_DIR) / "fixtures/collectives/ras/mismatch.txt");
  std::stringstream status;
  status << in.rdbuf();
  Listener l;
  std::vector<std::string> asked;
  std::thread server([&] {
    const int c = ::accept(l.fd, nullptr, nullptr);
    asked.push_back(read_line(c));
    write_all(c, "SERVER PROTOCOL 2\n");
    asked.push_back(read_line(c));
    write_all(c, "OK\n");
    asked.push_back(read_line(c));
    write_all(c, status.str());
    ::close(c);
  });
  RasQueryOptions o;
  o.port = l.port;
  const RasAnswer a = ask_ras(o);
  server.join();
  INFO(a.error);
  REQUIRE(a.answered);
  CHECK(a.error.empty());
  CHECK(asked == std::vector<std::string>{"CLIENT PROTOCOL 2", "TIMEOUT 5", "VERBOSE STATUS"});
  CHECK(a.text == status.str());
  const auto m = match({read_ras(a.text, "ras:127.0.0.1")});
  REQUIRE(m.divergences.size() == 1);
  CHECK(m.divergences[0].kind == DivergenceKind::MissingRank);
  CHECK(m.divergences[0].absent == std::vector<int>{1});
}

TEST_CASE("ncclras over TCP: a port that accepts and never answers costs the handshake budget") {
  Listener l;
  int accepted = -1;
  std::thread server([&] { accepted = ::accept(l.fd, nullptr, nullptr); });
  RasQueryOptions o;
  o.port = l.port;
  const auto t0 = std::chrono::steady_clock::now();
  const RasAnswer a = ask_ras(o);
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  server.join();
  ::close(accepted);
  CHECK(!a.answered);
  CHECK(a.error.find("did not answer the RAS handshake within 1000 ms") != std::string::npos);
  CHECK(took >= 0.9);
  CHECK(took < 1.5);
}

TEST_CASE("ncclras over TCP: no service on the port says so at once") {
  int port = 0;
  {
    Listener l; // a port that was free a moment ago, now closed
    port = l.port;
  }
  RasQueryOptions o;
  o.port = port;
  const auto t0 = std::chrono::steady_clock::now();
  const RasAnswer a = ask_ras(o);
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  CHECK(!a.answered);
  CHECK(a.error.find("no NCCL RAS service at 127.0.0.1:") != std::string::npos);
  CHECK(took < 0.5);
}
