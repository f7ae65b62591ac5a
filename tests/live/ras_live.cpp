// NCCL RAS asked live (issue 43): `rocplay run --pids` over two CPU ranks whose environment names
// a RAS address (NCCL_RAS_ADDR) asks it while the debuggers attach, with no ptrace. Here the
// service is a local TCP server that speaks NCCL's RAS client protocol (src/ras/client_support.cc)
// and answers with the saved status of fixtures/collectives/ras/mismatch.txt; a real one is the
// device's (tests/hardware/collectives). The answer's divergence joins the incident, the answer is
// kept beside the recordings, and `postmortem` of that directory says the same.
#include "cli_util.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <mutex>
#include <thread>

using namespace rocplay;
using namespace rocplay::testing;
using namespace std::chrono_literals;

namespace {

// Answers every connection as NCCL's RAS service does, with `status` as the status text, until
// destroyed; counts the connections.
class FakeRas {
public:
  explicit FakeRas(std::string status) : status_(std::move(status)) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    REQUIRE(::listen(fd_, 4) == 0);
    socklen_t len = sizeof a;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this] { serve(); });
  }
  ~FakeRas() {
    stop_ = true;
    thread_.join();
    ::close(fd_);
  }
  FakeRas(const FakeRas&) = delete;
  FakeRas& operator=(const FakeRas&) = delete;
  int port() const { return port_; }
  int connections() const { return connections_; }
  // The answer from now on (the targets' pids are known only once they run on this port).
  void set_status(std::string status) {
    std::lock_guard lock(mutex_);
    status_ = std::move(status);
  }

private:
  static std::string line(int fd) {
    std::string s;
    char c = 0;
    while (::read(fd, &c, 1) == 1 && c != '\n') {
      s.push_back(c);
    }
    return s;
  }
  static void write_all(int fd, std::string_view s) {
    while (!s.empty()) {
      const ssize_t n = ::write(fd, s.data(), s.size());
      if (n <= 0) {
        return;
      }
      s.remove_prefix(static_cast<std::size_t>(n));
    }
  }
  void serve() {
    while (!stop_) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 50) <= 0) {
        continue;
      }
      const int c = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (c < 0) {
        continue;
      }
      ++connections_;
      if (line(c).starts_with("CLIENT PROTOCOL")) {
        write_all(c, "SERVER PROTOCOL 2\n");
        for (std::string l = line(c); !l.empty(); l = line(c)) {
          if (l.starts_with("TIMEOUT")) {
            write_all(c, "OK\n");
          } else if (l.ends_with("STATUS")) {
            std::string status;
            {
              std::lock_guard lock(mutex_);
              status = status_;
            }
            write_all(c, status);
            break;
          }
        }
      }
      ::close(c);
    }
  }
  std::mutex mutex_;
  std::string status_;
  int fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<int> connections_{0};
  std::thread thread_;
};

} // namespace

TEST_CASE("run --pids asks the node's NCCL RAS: its divergence joins the incident and is kept") {
  const std::string status =
      read_file(std::string(ROCPLAY_SOURCE_DIR) + "/fixtures/collectives/ras/mismatch.txt");
  REQUIRE_FALSE(status.empty());
  FakeRas ras(status);
  SpinTarget::Config cfg;
  cfg.extra_env = {"NCCL_RAS_ADDR=127.0.0.1:" + std::to_string(ras.port())};
  SpinTarget a(cfg);
  SpinTarget b(cfg);
  TempDir dir;
  const std::string pids = std::to_string(a.pid()) + "," + std::to_string(b.pid());

  // The saved answer names processes 31336 and 31337: another job's, to a look at these two.
  const auto other = run_rocplay({"run", "host-stacks", "--pids", pids, "--debugger", "gdb",
                                  "--samples", "1", "--format", "json", "-q"},
                                 120s);
  const auto oj = nlohmann::json::parse(other.out, nullptr, false);
  REQUIRE_FALSE(oj.is_discarded());
  CHECK(oj.at("incident").at("notes").dump().find("31336, 31337, none of them examined") !=
        std::string::npos);
  CHECK(oj.at("incident").at("cross_rank_findings").dump().find("collective-") ==
        std::string::npos);

  // The same answer about these two processes: their counts differ, a divergence.
  std::string ours = status;
  for (const auto& [saved, pid] : {std::pair{std::string("process 31336"), a.pid()},
                                   {std::string("process 31337"), b.pid()}}) {
    const auto at = ours.find(saved);
    REQUIRE(at != std::string::npos);
    ours.replace(at, saved.size(), "process " + std::to_string(pid));
  }
  ras.set_status(ours);
  const auto r =
      run_rocplay({"run", "host-stacks", "--pids", pids, "--debugger", "gdb", "--samples", "1",
                   "--format", "json", "-q", "--record", dir.path() + "/rank%r.mi"},
                  120s);
  INFO("stderr: " << r.err);
  const auto j = nlohmann::json::parse(r.out, nullptr, false);
  REQUIRE_FALSE(j.is_discarded());
  CHECK(ras.connections() == 2);
  const auto& inc = j.at("incident");
  CHECK(inc.at("notes").dump().find("NCCL RAS at 127.0.0.1:" + std::to_string(ras.port()) +
                                    " answered") != std::string::npos);
  bool collective = false;
  for (const auto& f : inc.at("cross_rank_findings")) {
    collective = collective || f.at("id").get<std::string>().starts_with("collective-");
  }
  CHECK(collective);
  CHECK(read_file(dir.path() + "/ncclras.txt") == ours);
  // Both ranks still make progress after the look.
  CHECK(a.advances());
  CHECK(b.advances());

  // The directory alone, after the fact: the recordings and RAS's answer in one incident.
  const auto pm = run_rocplay({"postmortem", dir.path(), "--format", "json"}, 60s);
  const auto pj = nlohmann::json::parse(pm.out, nullptr, false);
  REQUIRE_FALSE(pj.is_discarded());
  CHECK(pj.at("incident").at("cases").get<int>() == 3); // two recordings and the RAS answer
  CHECK(pj.at("incident").at("cross_rank_findings").dump().find("collective-") !=
        std::string::npos);

  // --no-ras: the service is not asked.
  const auto quiet = run_rocplay({"run", "host-stacks", "--pids", pids, "--debugger", "gdb",
                                  "--samples", "1", "--format", "json", "-q", "--no-ras"},
                                 120s);
  CHECK(ras.connections() == 2);
  CHECK(quiet.out.find("NCCL RAS") == std::string::npos);
}
