// What a person sees of their own playbook, live against real gdb: each step's output in the
// reports, the actual value of a failed expect, --var values checked before the attach, the
// unsafe commands that --allow-unsafe-commands let through, partial stack queries merged into
// the full stack, and `playbooks check` asking gdb whether the commands exist.
#include "cli_util.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

using namespace rocplay;
using namespace rocplay::testing;

namespace {

std::vector<std::string> user_run_args(const std::string& playbook, std::int64_t pid,
                                       std::vector<std::string> more = {}) {
  std::vector<std::string> a = {
      "run", playbook,           "--pid", std::to_string(pid), "--debugger",
      "gdb", "--attach-timeout", "30",    "--timeout",         "20"};
  a.insert(a.end(), more.begin(), more.end());
  return a;
}

const nlohmann::json* json_step_named(const nlohmann::json& run, const std::string& name) {
  for (const auto& s : run.at("steps")) {
    if (s.at("name") == name) {
      return &s;
    }
  }
  return nullptr;
}

} // namespace

TEST_CASE("step output: cli and mi output in the text report (bounded) and whole in JSON") {
  SpinTarget target;
  TempDir dir;
  const std::string pb = dir.file("out.yaml", "steps:\n"
                                              "  - name: show threads\n"
                                              "    cli: info threads\n"
                                              "  - name: version\n"
                                              "    mi: -gdb-version\n"
                                              "  - name: features\n"
                                              "    mi: -list-features\n"
                                              "  - name: long echo\n"
                                              "    cli: help all\n"
                                              "  - name: frame check\n"
                                              "    cli: info threads\n"
                                              "    expect: result.output contains 'no-such-fn'\n"
                                              "    on_error: continue\n");
  const auto r = run_rocplay(user_run_args(pb, target.pid()));
  INFO("stderr: " << r.err);
  INFO("stdout: " << r.out);
  REQUIRE_FALSE(r.timed_out);
  CHECK(r.exit_code <= 1);
  // `info threads` printed its table under the step, indented and marked.
  CHECK(r.out.find("|   Id   Target Id") != std::string::npos);
  CHECK(r.out.find("start_sync") != std::string::npos);
  // The MI step: gdb's banner (console) and the result record.
  CHECK(r.out.find("| GNU gdb") != std::string::npos);
  CHECK(r.out.find("^done,features=[") != std::string::npos); // `| 7^done,...` as received
  // `help all` is hundreds of lines: cut, with a note saying where the rest is.
  CHECK(r.out.find("more line(s)") != std::string::npos);
  CHECK(r.out.find("--format json has the whole output") != std::string::npos);
  // The failed expect says what the value was.
  CHECK(unwrapped(r.out).find("expect does not hold: result.output contains 'no-such-fn' (actual: "
                              "result.output = \"") != std::string::npos);
  require_running_again(target);

  const auto j = run_rocplay(user_run_args(pb, target.pid(), {"--format", "json"}));
  INFO("stderr: " << j.err);
  const auto report = nlohmann::json::parse(j.out);
  const auto* help = json_step_named(report.at("run"), "long echo");
  REQUIRE(help != nullptr);
  const std::string whole = help->at("output").get<std::string>();
  CHECK(std::count(whole.begin(), whole.end(), '\n') > 100); // whole, not cut
  const auto* threads = json_step_named(report.at("run"), "show threads");
  REQUIRE(threads != nullptr);
  CHECK(threads->at("output").get<std::string>().find("start_sync") != std::string::npos);
  require_running_again(target);
}

TEST_CASE("var values are checked before the attach, allowed unsafe commands are reported") {
  SpinTarget target;
  target.reset_max_gap();
  TempDir dir;
  const std::string pb = dir.file("var.yaml", "vars:\n"
                                              "  depth: 2\n"
                                              "  what: threads\n"
                                              "steps:\n"
                                              "  - cli: info ${what}\n");
  const std::string marker = dir.path() + "/pwned";
  const auto r = run_rocplay(
      user_run_args(pb, target.pid(), {"--var", "what=threads; shell touch " + marker}));
  INFO("stderr: " << r.err);
  CHECK(r.exit_code == 64);
  CHECK(r.err.find(pb + ":5:") != std::string::npos);
  CHECK(r.err.find("cannot go into a console command safely") != std::string::npos);
  CHECK(r.err.find("nothing was attached") != std::string::npos);
  CHECK(r.out.find("attach took") == std::string::npos);
  // The target was never stopped: no attach happened.
  CHECK(target.max_gap_seconds() < 0.5);
  CHECK_FALSE(std::filesystem::exists(marker));
  require_running_again(target);

  // A command that the flag lets through is named in both reports.
  const std::string unsafe = dir.file("unsafe.yaml", "steps:\n"
                                                     "  - threads\n"
                                                     "  - cli: shell true\n"
                                                     "  - cli: info threads\n");
  const auto ok = run_rocplay(user_run_args(unsafe, target.pid(), {"--allow-unsafe-commands"}));
  INFO("stderr: " << ok.err);
  CHECK(ok.exit_code <= 1);
  CHECK(ok.out.find("Unsafe commands: allowed by --allow-unsafe-commands; 1 ran:") !=
        std::string::npos);
  CHECK(ok.out.find("  shell true\n") != std::string::npos);
  const auto j = run_rocplay(
      user_run_args(unsafe, target.pid(), {"--allow-unsafe-commands", "--format", "json"}));
  const auto report = nlohmann::json::parse(j.out);
  CHECK(report.at("run").at("unsafe_commands") ==
        nlohmann::json({{"allowed", true}, {"ran", {"shell true"}}}));
  require_running_again(target);
}

TEST_CASE("a partial stack query merges into the thread's full stack by level") {
  SpinTarget target;
  TempDir dir;
  // The full listing of thread 1 (the backtrace step), then frame 1 alone, asked again.
  const std::string pb = dir.file("partial.yaml", "steps:\n"
                                                  "  - threads\n"
                                                  "  - backtrace\n"
                                                  "  - mi: -stack-list-frames --thread 1 1 1\n");
  const auto r = run_rocplay(user_run_args(pb, target.pid(), {"--format", "json"}));
  INFO("stderr: " << r.err);
  REQUIRE(r.exit_code <= 1);
  const auto report = nlohmann::json::parse(r.out);
  const nlohmann::json* main_thread = nullptr;
  for (const auto& t : report.at("snapshot").at("host_threads")) {
    if (t.at("id") == "1") {
      main_thread = &t;
    }
  }
  REQUIRE(main_thread != nullptr);
  const auto& frames = main_thread->at("frames");
  INFO(frames.dump());
  REQUIRE(frames.size() >= 3); // main, nap, nanosleep ... not the one frame of the last query
  for (std::size_t i = 0; i < frames.size(); ++i) {
    CHECK(frames[i].at("level") == i);
  }
  require_running_again(target);
}

TEST_CASE("playbooks check asks gdb whether the command names exist, with a did-you-mean") {
  TempDir dir;
  const std::string pb = dir.file("typos.yaml", "steps:\n"
                                                "  - cli: info thredas\n"
                                                "  - mi: -thread-infoo\n"
                                                "  - cli: bactrace 3\n"
                                                "  - mi: -stack-list-frames\n"
                                                "  - cli: info threads\n"
                                                "  - cli: cuda kernel 0\n"
                                                "  - cli: info agents\n");
  const auto r = run_rocplay({"playbooks", "check", pb, "--debugger", "gdb"});
  INFO("stdout: " << r.out << "\nstderr: " << r.err);
  CHECK(r.exit_code == 78);
  CHECK(r.err.find(pb + ":2:") != std::string::npos);
  CHECK(r.err.find("`info thredas` is not a command of gdb") != std::string::npos);
  CHECK(r.err.find("did you mean `info threads`?") != std::string::npos);
  CHECK(r.err.find(pb + ":3:") != std::string::npos);
  CHECK(r.err.find("`-thread-infoo` is not an MI command of gdb") != std::string::npos);
  CHECK(r.err.find("did you mean `-thread-info`?") != std::string::npos);
  CHECK(r.err.find("did you mean `backtrace 3`?") != std::string::npos);
  CHECK(r.err.find("-stack-list-frames` is not") == std::string::npos);
  // A GPU debugger's own command is named as such, not "corrected" to a gdb one (`cd`).
  CHECK(r.err.find("`cuda` is a cuda-gdb command; check the playbook with `--debugger cuda-gdb`") !=
        std::string::npos);
  CHECK(r.err.find("`info agents` is a rocgdb command") != std::string::npos);
  CHECK(r.err.find("did you mean `cd") == std::string::npos);
  CHECK(r.out.find("FAILED") != std::string::npos);

  // The built-ins pass with gdb: steps for other debuggers are skipped, `when:` ones are notes.
  for (const char* name : {"hang-triage", "host-stacks", "gpu-state", "rocgdb-dump"}) {
    const auto b = run_rocplay({"playbooks", "check", name, "--debugger", "gdb"});
    INFO(name << " stdout: " << b.out << "\nstderr: " << b.err);
    CHECK(b.exit_code == 0);
  }
  // --offline starts no debugger.
  const auto off = run_rocplay({"playbooks", "check", pb, "--offline"});
  CHECK(off.exit_code == 0);
}

TEST_CASE("error hints are wrapped: the valid keys of a step are not one long line") {
  TempDir dir;
  const std::string pb = dir.file("keys.yaml", "steps:\n  - zzzz: 1\n");
  const auto r = run_rocplay({"playbooks", "check", pb, "--offline"});
  INFO("stderr: " << r.err);
  CHECK(r.exit_code == 78);
  CHECK(r.err.find("valid keys: mi, cli") != std::string::npos);
  std::istringstream lines(r.err);
  std::size_t hint_lines = 0;
  bool in_hint = false;
  for (std::string line; std::getline(lines, line);) {
    in_hint = in_hint || line.rfind("  hint: ", 0) == 0;
    if (in_hint) {
      ++hint_lines;
      CHECK(line.size() <= 100);
    }
  }
  CHECK(hint_lines >= 2); // the list goes on under the first line
}
