// `rocplay run`, `rocplay playbooks` and `rocplay record` as a person runs them: the binary, its
// exit codes, its report, and the target running again afterwards.
#include "cli_util.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <thread>

using namespace rocplay;
using namespace rocplay::testing;

namespace {

std::vector<std::string> run_args(const std::string& playbook, std::int64_t pid,
                                  std::vector<std::string> more = {}) {
  std::vector<std::string> a = {
      "run", playbook,           "--pid", std::to_string(pid), "--debugger",
      "gdb", "--attach-timeout", "30",    "--timeout",         "20"};
  a.insert(a.end(), more.begin(), more.end());
  return a;
}

} // namespace

TEST_CASE("rocplay run hang-triage: text report, how long it was held, target running") {
  SpinTarget target;
  const auto r = run_rocplay(run_args("hang-triage", target.pid()));
  INFO("stderr: " << r.err);
  INFO("stdout: " << r.out);
  REQUIRE_FALSE(r.timed_out);
  CHECK((r.exit_code == 0 || r.exit_code == 1));
  CHECK(r.out.find("Playbook hang-triage on pid " + std::to_string(target.pid())) !=
        std::string::npos);
  CHECK(r.out.find("; detached; now running") != std::string::npos);
  // hang-triage's `stop: copy`: gdb reads a copy (tests/live/copy_stop_run.cpp).
  CHECK(r.out.find("held only while rocplay copied its threads") != std::string::npos);
  CHECK(r.out.find("stopped for") != std::string::npos);
  CHECK(r.out.find("skipped") != std::string::npos); // the GPU steps, under gdb
  CHECK(r.out.find("start_sync") != std::string::npos);
  require_running_again(target);
}

TEST_CASE("rocplay run --format json: the report schema with the run's steps") {
  SpinTarget target;
  TempDir dir;
  const std::string out = dir.path() + "/report.json";
  const auto r =
      run_rocplay(run_args("host-stacks", target.pid(), {"--format", "json", "-o", out}));
  INFO("stderr: " << r.err);
  REQUIRE_FALSE(r.timed_out);
  CHECK((r.exit_code == 0 || r.exit_code == 1));
  CHECK(r.out.empty());
  std::ifstream in(out);
  const auto j = nlohmann::json::parse(in);
  CHECK(j.at("schema") == "rocplay.report");
  const auto& run = j.at("run");
  CHECK(run.at("playbook") == "host-stacks");
  CHECK(run.at("pid") == target.pid());
  CHECK(run.at("target").at("detached") == true);
  CHECK(run.at("target").at("left_stopped") == false);
  CHECK(run.at("target").at("stop_seconds").is_number());
  CHECK(run.at("exit_code") == r.exit_code);
  bool saw_backtrace = false;
  for (const auto& s : run.at("steps")) {
    INFO(s.dump());
    if (s.at("kind") == "backtrace") {
      saw_backtrace = true;
      CHECK(s.at("status") == "ok");
      CHECK(s.at("command_count") == 4);
    }
  }
  CHECK(saw_backtrace);
  require_running_again(target);
}

TEST_CASE("rocplay run --record saves a transcript that names every command") {
  SpinTarget target;
  TempDir dir;
  const std::string rec = dir.path() + "/session.rec";
  const auto r = run_rocplay(run_args("host-stacks", target.pid(), {"--record", rec}));
  INFO("stderr: " << r.err);
  REQUIRE_FALSE(r.timed_out);
  CHECK((r.exit_code == 0 || r.exit_code == 1));
  std::ifstream in(rec);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK(text.rfind("# rocplay-transcript 1", 0) == 0);
  CHECK(text.find("-target-attach " + std::to_string(target.pid())) != std::string::npos);
  CHECK(text.find("-stack-list-frames --thread") != std::string::npos);
  CHECK(text.find("-target-detach") != std::string::npos);
  require_running_again(target);
}

TEST_CASE("rocplay record --pid P -o FILE runs hang-triage and records it") {
  SpinTarget target;
  TempDir dir;
  const std::string rec = dir.path() + "/triage.rec";
  const auto r = run_rocplay(
      {"record", "--pid", std::to_string(target.pid()), "-o", rec, "--debugger", "gdb"});
  INFO("stderr: " << r.err);
  REQUIRE_FALSE(r.timed_out);
  CHECK((r.exit_code == 0 || r.exit_code == 1));
  CHECK(r.out.find("Playbook hang-triage") != std::string::npos);
  std::ifstream in(rec);
  REQUIRE(in.good());
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // The samples hang-triage asks for, so that a post-mortem knows what one sample would mean.
  CHECK(text.find("\"samples\":2") != std::string::npos);
  require_running_again(target);
}

TEST_CASE("a malformed playbook never attaches: exit 78 with file:line:column") {
  SpinTarget target;
  target.reset_max_gap();
  TempDir dir;
  const std::string bad = dir.file("bad.yaml", "steps:\n  - threads\n  - mii: -thread-info\n");
  // --debugger names nothing: validation must come first, or this would be 69.
  auto args = run_args(bad, target.pid());
  args[5] = "/nonexistent/gdb";
  const auto r = run_rocplay(args);
  INFO("stderr: " << r.err);
  CHECK(r.exit_code == 78);
  CHECK(r.err.find(bad + ":3:5: unknown key `mii`") != std::string::npos);
  CHECK(r.err.find("did you mean `mi`?") != std::string::npos);
  CHECK(r.out.empty());
  CHECK(target.max_gap_seconds() < 0.5);
  require_running_again(target);
}

TEST_CASE("an unsafe command in a user playbook never attaches: exit 78") {
  SpinTarget target;
  target.reset_max_gap();
  TempDir dir;
  const std::string evil =
      dir.file("evil.yaml", "steps:\n  - threads\n  - cli: shell touch " + dir.path() + "/pwned\n");
  auto args = run_args(evil, target.pid());
  args[5] = "/nonexistent/gdb";
  const auto r = run_rocplay(args);
  INFO("stderr: " << r.err);
  CHECK(r.exit_code == 78);
  CHECK(r.err.find(evil + ":3:10: refused: `shell`") != std::string::npos);
  CHECK(r.err.find("--allow-unsafe-commands") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(dir.path() + "/pwned"));
  CHECK(target.max_gap_seconds() < 0.5);

  // With the flag, the person running it has decided: it runs, and rocplay still detaches.
  const auto ok = run_rocplay(run_args(evil, target.pid(), {"--allow-unsafe-commands"}));
  INFO("stderr: " << ok.err);
  CHECK((ok.exit_code == 0 || ok.exit_code == 1));
  CHECK(std::filesystem::exists(dir.path() + "/pwned"));
  require_running_again(target);
}

TEST_CASE("rocplay run: a nonexistent PID is exit 67 with a hint") {
  const pid_t child = ::fork();
  if (child == 0) {
    ::_exit(0);
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  const auto r = run_rocplay(run_args("host-stacks", child));
  INFO("stderr: " << r.err);
  CHECK(r.exit_code == 67);
  CHECK(r.err.find("rocplay: error:") != std::string::npos);
  CHECK(r.err.find("hint:") != std::string::npos);
}

TEST_CASE("rocplay run: ptrace refused is exit 77 with the reason, the target untouched") {
  if (::geteuid() != 0) {
    SUCCEED("needs root to drop to another user; skipped");
    return;
  }
  SpinTarget target; // runs as root
  std::vector<std::string> argv = {"/usr/bin/setpriv", "--reuid=65534", "--regid=65534",
                                   "--clear-groups", find_built("rocplay")};
  const auto args = run_args("host-stacks", target.pid());
  argv.insert(argv.end(), args.begin(), args.end());
  if (::access(argv[0].c_str(), X_OK) != 0) {
    SUCCEED("setpriv (util-linux) is not installed; skipped");
    return;
  }
  const auto r = run_program(argv);
  INFO("stderr: " << r.err);
  CHECK(r.exit_code == 77);
  CHECK(r.err.find("rocplay: error:") != std::string::npos);
  CHECK(r.err.find("hint:") != std::string::npos);
  CHECK(r.out.empty());
  require_running_again(target);
}

TEST_CASE("rocplay run: usage errors are 64 and come before attaching") {
  SpinTarget target;
  auto r = run_rocplay(run_args("host-stacks", target.pid(), {"--var", "nope=1"}));
  CHECK(r.exit_code == 64);
  CHECK(r.err.find("declares no variable `nope`") != std::string::npos);
  r = run_rocplay(run_args("host-stacks", target.pid(), {"--format", "xml"}));
  CHECK(r.exit_code == 64);
  r = run_rocplay({"run", "host-stacks"});
  CHECK(r.exit_code == 64);
  r = run_rocplay(run_args("no-such-playbook", target.pid()));
  CHECK(r.exit_code == 66);
  CHECK(r.err.find("no playbook named `no-such-playbook`") != std::string::npos);
  require_running_again(target);
}

TEST_CASE("rocplay playbooks lists, shows and checks") {
  auto r = run_rocplay({"playbooks"});
  CHECK(r.exit_code == 0);
  for (const char* name : {"hang-triage", "gpu-state", "host-stacks", "rocgdb-dump"}) {
    CHECK(r.out.find(name) != std::string::npos);
  }
  CHECK(r.out.find("Searched: built-ins, then playbooks") != std::string::npos);
  r = run_rocplay({"playbooks", "show", "rocgdb-dump"});
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("cli: info dispatches") != std::string::npos);
  r = run_rocplay({"playbooks", "check", "hang-triage"});
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("builtin:hang-triage: ok") != std::string::npos);
  TempDir dir;
  const std::string bad = dir.file("b.yaml", "steps:\n  - foreach: threads\n    where: x ==\n"
                                             "    steps: [snapshot]\n");
  r = run_rocplay({"playbooks", "check", bad});
  CHECK(r.exit_code == 78);
  CHECK(r.err.find(bad + ":3:") != std::string::npos);
}

TEST_CASE("SIGINT and SIGTERM to rocplay run during attach: it detaches and the target runs") {
  // A debugger whose attach takes seconds: the wrapper holds -target-attach back for 3 s, so
  // the signal arrives while rocplay waits for the attach.
  TempDir dir;
  const std::string gdb = test_gdb().path;
  const std::string wrapper = dir.file("slow-gdb", "#!/bin/bash\n"
                                                   "if [ \"$1\" = --version ]; then exec " +
                                                       gdb +
                                                       " \"$@\"; fi\n"
                                                       "while IFS= read -r line; do\n"
                                                       "  case \"$line\" in *-target-attach*) "
                                                       "sleep 3 ;; esac\n"
                                                       "  printf '%s\\n' \"$line\"\n"
                                                       "done | " +
                                                       gdb + " \"$@\"\n");
  std::filesystem::permissions(wrapper, std::filesystem::perms::owner_all);
  for (int sig : {SIGINT, SIGTERM}) {
    SpinTarget target;
    auto args = run_args("host-stacks", target.pid());
    args[5] = wrapper;
    bool sent = false;
    const auto start = std::chrono::steady_clock::now();
    const auto r =
        run_rocplay(args, std::chrono::seconds(60), {}, [&](pid_t pid, const std::string&) {
          if (!sent && std::chrono::steady_clock::now() - start > std::chrono::milliseconds(1500)) {
            ::kill(pid, sig);
            sent = true;
          }
        });
    INFO("signal " << sig << ", stderr: " << r.err);
    REQUIRE(sent);
    REQUIRE_FALSE(r.timed_out);
    CHECK(r.exit_code == 128 + sig);
    require_running_again(target);
  }
}
