// `rocplay run hang-triage --slurm-job JOBID` on a real Slurm cluster started here by
// scripts/slurm-cluster.sh (munge, slurmctld, two slurmd each in its own network namespace with
// its own host name): a job of CPU workers (spin_target, ranks from Slurm), one rank hung
// differently (a lock-order deadlock), examined through srun on every node; then one slurmd
// stopped and the run still bounded. Every worker steps afterwards (its progress counter, not its
// process state). Hidden from discovery ([.slurm]); its own ctest entry (label slurm and live)
// skips with the reason when this machine cannot start a cluster (not root, Slurm not installed).
#include "cli_util.hpp"

#include <catch2/catch.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <thread>

using namespace rocplay::testing;

namespace {

constexpr int kNodes = 2;
constexpr int kTasksPerNode = 2;
constexpr int kRanks = kNodes * kTasksPerNode;
constexpr int kOddRank = kRanks - 1; // the last rank, on the last node
// Beside a developer's cluster of the script's defaults: other names, subnet and port.
const std::vector<std::string> kClusterEnv = {
    "ROCPLAY_SLURM_NAME=rptest", "ROCPLAY_SLURM_NET=10.78.0", "ROCPLAY_SLURM_PORT=6827"};

std::string script() {
  return std::string(ROCPLAY_SOURCE_DIR) + "/scripts/slurm-cluster.sh";
}

// Why a cluster cannot be started here; empty when it can.
std::string why_no_cluster() {
  if (::geteuid() != 0) {
    return "not root (network namespaces, a bridge and Slurm's daemons need it)";
  }
  // Network namespaces (a container without CAP_NET_ADMIN or CAP_SYS_ADMIN has none).
  if (std::system("unshare --net --uts true >/dev/null 2>&1") != 0) {
    return "no network or UTS namespaces here (unshare --net --uts true failed)";
  }
  if (std::system("ip link add rptestprobe type bridge >/dev/null 2>&1 && "
                  "ip link del rptestprobe >/dev/null 2>&1") != 0) {
    return "no bridge can be made here (ip link add ... type bridge failed: no CAP_NET_ADMIN?)";
  }
  for (const char* p : {"/usr/sbin/slurmctld", "/usr/sbin/slurmd", "/usr/sbin/munged",
                        "/usr/bin/srun", "/usr/bin/sbatch", "/usr/bin/nsenter"}) {
    if (::access(p, X_OK) != 0) {
      return std::string(p) + " is missing (scripts/setup.sh installs Debian's Slurm packages)";
    }
  }
  return {};
}

// The cluster for one test: up in a temporary directory, down (every daemon, namespace and job
// process) on every path.
class Cluster {
public:
  explicit Cluster(const std::string& dir) {
    env_ = kClusterEnv;
    env_.push_back("ROCPLAY_SLURM_DIR=" + dir);
    env_.push_back("SLURM_CONF=" + dir + "/slurm.conf");
    const CliRun up = sh({script(), "up", std::to_string(kNodes)});
    if (up.exit_code != 0) {
      sh({script(), "down"}); // what came up before the failure; the destructor will not run
    }
    INFO(up.err);
    REQUIRE(up.exit_code == 0);
  }
  ~Cluster() { sh({script(), "down"}); }
  Cluster(const Cluster&) = delete;
  Cluster& operator=(const Cluster&) = delete;
  CliRun sh(std::vector<std::string> argv,
            std::chrono::milliseconds timeout = std::chrono::seconds(60)) const {
    argv.insert(argv.begin(), "/bin/bash");
    return rocplay::testing::run_program(argv, timeout, env_);
  }
  CliRun rocplay(const std::vector<std::string>& args,
                 const std::vector<std::string>& more_env = {}) const {
    std::vector<std::string> env = env_;
    env.insert(env.end(), more_env.begin(), more_env.end());
    return rocplay::testing::run_rocplay(args, std::chrono::seconds(120), env);
  }

private:
  std::vector<std::string> env_;
};

// A worker's progress file (spin_target's shared mapping).
class Progress {
public:
  explicit Progress(const std::string& path) : path_(path) {}
  ~Progress() {
    if (p_ != nullptr) {
      ::munmap(p_, sizeof(TargetProgress));
    }
  }
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;
  bool ready() {
    if (p_ == nullptr) {
      const int fd = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
      if (fd < 0) {
        return false;
      }
      void* m = ::mmap(nullptr, sizeof(TargetProgress), PROT_READ, MAP_SHARED, fd, 0);
      ::close(fd);
      if (m == MAP_FAILED) {
        return false;
      }
      p_ = static_cast<TargetProgress*>(m);
    }
    return __atomic_load_n(&p_->magic, __ATOMIC_ACQUIRE) == kTargetMagic;
  }
  std::uint64_t counter() const { return __atomic_load_n(&p_->counter, __ATOMIC_ACQUIRE); }
  std::int64_t pid() const { return static_cast<std::int64_t>(p_->pid); }

private:
  std::string path_;
  TargetProgress* p_ = nullptr;
};

// Every worker steps: its counter moves within a second, and it is not stopped.
void require_all_stepping(std::vector<std::unique_ptr<Progress>>& workers) {
  std::vector<std::uint64_t> before;
  for (auto& w : workers) {
    before.push_back(w->counter());
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  for (std::size_t i = 0; i < workers.size(); ++i) {
    INFO("rank " << i << " pid " << workers[i]->pid());
    CHECK(workers[i]->counter() > before[i] + 100); // about one tick a millisecond
    const std::string stat = read_file(fmt::format("/proc/{}/stat", workers[i]->pid()));
    const auto close = stat.rfind(')');
    REQUIRE(close != std::string::npos);
    CHECK(stat.substr(close + 2, 1) != "T");
    CHECK(stat.substr(close + 2, 1) != "t");
  }
}

} // namespace

TEST_CASE("slurm: one incident over every rank of every node, the odd rank first, a dead "
          "slurmd bounded",
          "[.slurm]") {
  if (const std::string why = why_no_cluster(); !why.empty()) {
    WARN("skipped, no Slurm cluster possible here: " << why);
    return;
  }
  TempDir dir;
  std::filesystem::create_directory(dir.path() + "/rec");
  Cluster cluster(dir.path() + "/cluster");
  const std::string spin = find_built("spin_target");
  const std::string job_script = dir.file(
      "job.sh", fmt::format("#!/bin/bash\n"
                            "srun bash -c 'odd=; [ \"$SLURM_PROCID\" = {} ] && odd=--deadlock; "
                            "exec {} {}/progress-$SLURM_PROCID 2 --sleepy $odd'\n",
                            kOddRank, spin, dir.path()));
  const CliRun sub = cluster.sh({"-c", fmt::format("sbatch --parsable -N{} --ntasks-per-node={} "
                                                   "-o {}/job-%j.out {}",
                                                   kNodes, kTasksPerNode, dir.path(), job_script)});
  INFO(sub.out << sub.err);
  REQUIRE(sub.exit_code == 0);
  const std::string job = sub.out.substr(0, sub.out.find_first_of(";\n"));
  std::vector<std::unique_ptr<Progress>> workers;
  for (int r = 0; r < kRanks; ++r) {
    workers.push_back(std::make_unique<Progress>(fmt::format("{}/progress-{}", dir.path(), r)));
  }
  const auto ready_by = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  for (auto& w : workers) {
    while (!w->ready() && std::chrono::steady_clock::now() < ready_by) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    REQUIRE(w->ready());
  }

  { // `ps`: every node's tasks of the job, with Slurm's ranks.
    const CliRun ps = cluster.rocplay({"ps", "--slurm-job", job, "--format", "json"});
    INFO(ps.err);
    REQUIRE(ps.exit_code == 0);
    const auto j = nlohmann::json::parse(ps.out);
    CHECK(j["schema"] == "rocplay.ps.slurm");
    REQUIRE(j["nodes"].size() == static_cast<std::size_t>(kNodes));
    std::set<int> seen;
    for (const auto& node : j["nodes"]) {
      for (const auto& t : node["tasks"]) {
        const int rank = t["rank"].get<int>();
        seen.insert(rank);
        CHECK(node["host"] == fmt::format("rptest{}", rank / kTasksPerNode + 1));
        CHECK(t["pid"] == workers[static_cast<std::size_t>(rank)]->pid());
        CHECK(t["comm"] == "spin_target");
      }
    }
    CHECK(seen.size() == static_cast<std::size_t>(kRanks));
  }

  { // Every rank of every node in one incident.
    // Text: the incident names the odd rank first, host and rank on every rank's line.
    const CliRun text = cluster.rocplay(
        {"run", "hang-triage", "--slurm-job", job, "--debugger", "gdb", "-q", "--wide"});
    INFO(text.out.substr(0, 3000) << "\n" << text.err);
    REQUIRE_FALSE(text.timed_out);
    CHECK(text.exit_code == 1); // findings: the odd rank's deadlock
    const std::string head = text.out.substr(0, text.out.find("\n=== "));
    // The first rank named after the INCIDENT line's counts ("no cross-rank pattern" is no rank).
    const auto first_rank = head.find("rank ", head.find('\n'));
    REQUIRE(first_rank != std::string::npos);
    const std::string odd = fmt::format("rank {} (rptest{}):", kOddRank, kNodes);
    CHECK(head.substr(first_rank, odd.size()) == odd);
    CHECK(head.find("Cause:   a cycle of waits") != std::string::npos);
    CHECK(head.find(fmt::format("rank {} (rptest{} pid {})", kOddRank, kNodes,
                                workers[kOddRank]->pid())) != std::string::npos);
    CHECK(head.find(fmt::format("ranks 0-{} (rptest1: 0-{} pids", kOddRank - 1,
                                kTasksPerNode - 1)) != std::string::npos);
    for (int r = 0; r < kRanks; ++r) {
      CHECK(text.out.find(fmt::format("=== rptest{} pid {} (rank {}):", r / kTasksPerNode + 1,
                                      workers[r]->pid(), r)) != std::string::npos);
    }
    CHECK(text.out.find(fmt::format("of each other across {} nodes", kNodes)) != std::string::npos);
    require_all_stepping(workers);

    // JSON: the same incident, every case with its host, pid and Slurm's rank.
    const CliRun js = cluster.rocplay(
        {"run", "hang-triage", "--slurm-job", job, "--debugger", "gdb", "-q", "--format", "json"});
    INFO(js.err);
    REQUIRE(js.exit_code == 1);
    const auto j = nlohmann::json::parse(js.out);
    CHECK(j["schema"] == "rocplay.run.multi");
    CHECK(j["incident"]["cases"] == kRanks);
    CHECK(j["incident"]["examined"] == kRanks);
    REQUIRE(j["targets"].size() == static_cast<std::size_t>(kRanks));
    std::set<int> ranks;
    for (const auto& t : j["targets"]) {
      const int rank = t["rank"].get<int>();
      ranks.insert(rank);
      CHECK(t["host"] == fmt::format("rptest{}", rank / kTasksPerNode + 1));
      CHECK(t["pid"] == workers[static_cast<std::size_t>(rank)]->pid());
      CHECK(t["report"]["snapshot"]["host_threads"].size() >= 3);
      CHECK(t["report"]["run"]["target"]["detached"] == true);
    }
    CHECK(ranks.size() == static_cast<std::size_t>(kRanks));
    CHECK(j["sample_skew"].size() == 2); // hang-triage's two samples, across both nodes
    require_all_stepping(workers);

    // `record`: every node's recordings come back on srun's output, one file per rank, and read
    // back as the same four ranks.
    const CliRun rec = cluster.rocplay({"record", "--slurm-job", job, "--debugger", "gdb", "-q",
                                        "-o", dir.path() + "/rec/%h-rank%r.rocplay"});
    INFO(rec.err);
    CHECK(rec.exit_code == 1);
    for (int r = 0; r < kRanks; ++r) {
      CHECK(std::filesystem::file_size(fmt::format("{}/rec/rptest{}-rank{}.rocplay", dir.path(),
                                                   r / kTasksPerNode + 1, r)) > 1000);
    }
    const CliRun pm = cluster.rocplay({"postmortem", dir.path() + "/rec", "--format", "json"});
    CHECK(pm.exit_code == 1);
    CHECK(nlohmann::json::parse(pm.out)["incident"]["examined"] == kRanks);
    require_all_stepping(workers);
  }

  { // `watch` on one node (started there by srun, as docs/multi-node.md says): that node's tasks
    // of the job from Slurm, with Slurm's ranks, captured once the log goes quiet.
    const std::string log = dir.file("server.log", "started\n");
    const CliRun w = cluster.sh(
        {"-c", fmt::format("srun --jobid={} --overlap -N1 -n1 -w rptest{} {} watch --slurm-job {} "
                           "--log {} --quiet-for 1s --check-every 250ms --out {}/watch "
                           "--watch-for 60s --debugger gdb -q",
                           job, kNodes, find_built("rocplay"), job, log, dir.path())},
        std::chrono::seconds(90));
    INFO(w.out << w.err);
    CHECK(w.exit_code == 1); // captured, with findings (the odd rank's deadlock)
    std::string report;
    for (const auto& e : std::filesystem::directory_iterator(dir.path() + "/watch")) {
      if (e.path().string().find(".report.txt") != std::string::npos) {
        report = read_file(e.path().string());
      }
    }
    CHECK(report.find(fmt::format("INCIDENT  {} targets, {} examined", kTasksPerNode,
                                  kTasksPerNode)) != std::string::npos);
    CHECK(report.find(fmt::format("rank {} (pid {})", kOddRank, workers[kOddRank]->pid())) !=
          std::string::npos);
    CHECK(report.find(fmt::format("rank {} (pid {})", kOddRank - 1,
                                  workers[kOddRank - 1]->pid())) != std::string::npos);
    require_all_stepping(workers);
  }

  { // Debuggers that stop answering on every node: each node gives them up at its bound and
    // still sends its report in time, every rank named with the reason (srun passes the fault
    // hook's variable on to the nodes' rocplay).
    const auto t0 = std::chrono::steady_clock::now();
    const CliRun r = cluster.rocplay({"run", "hang-triage", "--slurm-job", job, "--debugger", "gdb",
                                      "-q", "--format", "json", "--timeout", "4s"},
                                     {"ROCPLAY_FAULT_INJECT=25:stop-debugger"});
    const double took =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    INFO(r.err);
    REQUIRE_FALSE(r.timed_out);
    CHECK(took < 25);
    CHECK(r.err.find("did not answer in time") == std::string::npos);
    const auto j = nlohmann::json::parse(r.out);
    REQUIRE(j["targets"].size() == static_cast<std::size_t>(kRanks));
    for (const auto& t : j["targets"]) {
      INFO(t.dump().substr(0, 2000));
      CHECK(t["pid"].get<long>() > 0);
      // The command's own timeout or the node's bound, whichever came first.
      const std::string said = t.dump();
      CHECK((said.find("gave no result") != std::string::npos ||
             said.find("when this look's bound came") != std::string::npos));
    }
    require_all_stepping(workers);
  }

  { // A node whose slurmd does not answer is named; the run is bounded by --timeout.
    const CliRun stop = cluster.sh({script(), "stop-node", std::to_string(kNodes)});
    REQUIRE(stop.exit_code == 0);
    const auto t0 = std::chrono::steady_clock::now();
    const CliRun r = cluster.rocplay({"run", "hang-triage", "--slurm-job", job, "--debugger", "gdb",
                                      "-q", "--format", "json", "--timeout", "4s"});
    const double took =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    cluster.sh({script(), "cont-node", std::to_string(kNodes)});
    INFO(r.err);
    REQUIRE_FALSE(r.timed_out);
    // 1.1 s window lead + 2 s between samples + 4 s --timeout + 8 s for the node's report + 5 s
    // for srun to end; slack.
    CHECK(took < 25);
    CHECK(r.exit_code == 2);
    // Named by the bound, or by srun when its launch there timed out first (Slurm's
    // MessageTimeout): either way the node, and the reason.
    const std::string node = fmt::format("rptest{}", kNodes);
    CHECK((r.err.find(node + " did not answer in time") != std::string::npos ||
           r.err.find(node + ": Slurm could not start rocplay there") != std::string::npos));
    const auto j = nlohmann::json::parse(r.out);
    CHECK(j["incident"]["examined"] == kTasksPerNode);
    bool named = false;
    for (const auto& t : j["targets"]) {
      if (t["host"] == fmt::format("rptest{}", kNodes)) {
        const auto message = t["error"]["message"].get<std::string>();
        named = message.find("did not answer") != std::string::npos ||
                message.find("could not start rocplay there") != std::string::npos;
      } else {
        CHECK(t["report"]["run"]["target"]["detached"] == true);
      }
    }
    CHECK(named);
    require_all_stepping(workers);
  }
}
