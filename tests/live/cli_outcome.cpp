// What a person sees when a run does not go to plan: the report leads with what failed and the
// target's real state; an interruption at any moment ends in a message (and a partial report once
// a debugger was attached); skipped steps fold into one line; colour follows the terminal.
#include "cli_util.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <unistd.h>

#include <thread>

using namespace rocplay;
using namespace rocplay::testing;
using namespace std::chrono_literals;

namespace {

std::vector<std::string> outcome_args(const std::string& playbook, std::int64_t pid,
                                      std::vector<std::string> more = {}) {
  std::vector<std::string> a = {
      "run", playbook, "--pid", std::to_string(pid), "--debugger", "gdb", "--attach-timeout", "30"};
  a.insert(a.end(), more.begin(), more.end());
  return a;
}

std::size_t outcome_count_of(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto pos = text.find(what); pos != std::string::npos; pos = text.find(what, pos + 1)) {
    ++n;
  }
  return n;
}

// A playbook that keeps the debugger busy for a while after attaching, so a signal lands mid-run.
std::string outcome_long_playbook(const TempDir& dir) {
  std::string yaml = "name: long\nsteps:\n  - attach\n";
  for (int i = 0; i < 3000; ++i) {
    yaml += "  - mi: -thread-info\n";
  }
  yaml += "  - snapshot\n";
  return dir.file("long.yaml", yaml);
}

bool outcome_traced(std::int64_t pid) {
  const auto st = process::read_status(pid);
  return st && st->tracer_pid && *st->tracer_pid > 0;
}

} // namespace

TEST_CASE("a failed run leads with what failed and the target's real state (text and JSON)") {
  SpinTarget target;
  // 1 ms per command: the first step after the attach runs out of time.
  const auto r = run_rocplay(outcome_args("hang-triage", target.pid(), {"--timeout", "1ms"}), 90s);
  INFO("stderr: " << r.err);
  INFO("stdout: " << r.out);
  REQUIRE_FALSE(r.timed_out);
  CHECK(r.exit_code == 75);
  // The first lines say what failed and how the target is, before any verdict.
  CHECK(r.out.rfind("RUN FAILED", 0) == 0);
  const auto target_line = r.out.find("  Target:  ");
  REQUIRE(target_line != std::string::npos);
  CHECK(target_line < r.out.find("VERDICT"));
  CHECK(r.out.find("detached; now running") != std::string::npos);
  CHECK(r.out.find("PARTIAL") != std::string::npos);
  CHECK(r.out.find("none: the run ended early") != std::string::npos);
  // No contradictions: it was attached, and the deadline is not rounded to nothing.
  CHECK(r.out.find("not attached") == std::string::npos);
  CHECK(r.out.find("within 0 s") == std::string::npos);
  CHECK(r.err.find("within 1 ms") != std::string::npos);
  CHECK(r.out.find("no known stuck-kernel pattern") == std::string::npos);
  require_running_again(target);

  const auto j = run_rocplay(
      outcome_args("hang-triage", target.pid(), {"--timeout", "1ms", "--format", "json"}), 90s);
  REQUIRE_FALSE(j.timed_out);
  CHECK(j.exit_code == 75);
  const auto doc = nlohmann::json::parse(j.out);
  CHECK(doc.at("partial") == true);
  const auto& t = doc.at("run").at("target");
  CHECK(t.at("attach_sent") == true);
  CHECK(t.at("detached") == true);
  CHECK(t.at("left_stopped") == false);
  CHECK((t.at("state_after") == "R" || t.at("state_after") == "S"));
  CHECK(doc.at("run").at("error").at("code") == 75);
  require_running_again(target);
}

TEST_CASE("a refused run names the target's state without claiming a stop") {
  SpinTarget target;
  const auto r = run_rocplay(outcome_args("hang-triage", target.pid(), {"--timeout", "0.0001"}));
  INFO("stderr: " << r.err);
  // Less than a millisecond is refused on the command line, before anything starts.
  CHECK(r.exit_code == 64);
  CHECK(r.err.find("less than a millisecond") != std::string::npos);
  CHECK(r.out.empty());
}

TEST_CASE("SIGINT in rocplay's first moments: a message and 130, not death by the signal") {
  TempDir dir;
  const std::string rocplay = find_built("rocplay");
  bool sent = false;
  CliRun r;
  // A postmortem of an empty directory can end before the watch first sees it (a few ms): try
  // again until the signal reached a live rocplay.
  for (int attempt = 0; attempt < 50 && !sent; ++attempt) {
    r = run_rocplay({"postmortem", dir.path()}, 30s, {}, [&](pid_t pid, const std::string&) {
      if (sent) {
        return;
      }
      // As soon as the program is rocplay (exec done), before main() has got far.
      char exe[4096] = {};
      const auto link = "/proc/" + std::to_string(pid) + "/exe";
      const ssize_t n = ::readlink(link.c_str(), exe, sizeof exe - 1);
      if (n > 0 && std::string(exe, static_cast<std::size_t>(n)) == rocplay) {
        ::kill(pid, SIGINT);
        sent = true;
      }
    });
  }
  INFO("stderr: " << r.err);
  REQUIRE(sent);
  // Either it got the signal before it finished (130 with a message) or it had already finished
  // cleanly; never killed by the signal itself.
  CHECK(r.term_signal == 0);
  if (r.exit_code == 130) {
    CHECK(r.err.find("interrupted by SIGINT") != std::string::npos);
  }
}

TEST_CASE("SIGINT mid-run: the target is detached and a partial report is printed (text, JSON)") {
  SpinTarget target;
  TempDir dir;
  const std::string playbook = outcome_long_playbook(dir);
  for (const std::string format : {"text", "json"}) {
    bool sent = false;
    const auto r = run_rocplay(outcome_args(playbook, target.pid(), {"--format", format}), 90s, {},
                               [&](pid_t pid, const std::string&) {
                                 if (!sent && outcome_traced(target.pid())) {
                                   std::this_thread::sleep_for(100ms);
                                   ::kill(pid, SIGINT);
                                   sent = true;
                                 }
                               });
    INFO("format " << format << " stderr: " << r.err);
    INFO("stdout: " << r.out);
    REQUIRE(sent);
    CHECK(r.term_signal == 0);
    CHECK(r.exit_code == 130);
    CHECK(r.err.find("interrupted by SIGINT") != std::string::npos);
    if (format == "text") {
      CHECK(r.out.rfind("RUN INTERRUPTED", 0) == 0);
      CHECK(r.out.find("PARTIAL") != std::string::npos);
      CHECK(r.out.find("detached; now running") != std::string::npos);
    } else {
      const auto doc = nlohmann::json::parse(r.out);
      CHECK(doc.at("partial") == true);
      CHECK(doc.at("run").at("error").at("code") == 130);
      CHECK(doc.at("run").at("target").at("detached") == true);
    }
    require_running_again(target);
  }
}

TEST_CASE("skipped GPU steps under plain gdb fold into one line") {
  SpinTarget target;
  const auto r = run_rocplay(outcome_args("hang-triage", target.pid()), 90s);
  INFO("stdout: " << r.out);
  REQUIRE((r.exit_code == 0 || r.exit_code == 1));
  // hang-triage has a dozen rocgdb/cuda-gdb steps; they used to take a line each.
  CHECK(outcome_count_of(r.out, "\n  skipped ") == 1);
  CHECK(r.out.find("12 steps (") != std::string::npos);
  require_running_again(target);
}

TEST_CASE("colour: never by default into a pipe, always on request, NO_COLOR respected") {
  TempDir dir;
  const std::string rec = dir.file("x.mi", "^done\n(gdb)\n");
  const auto plain = run_rocplay({"postmortem", rec});
  CHECK(plain.out.find("\x1b[") == std::string::npos);
  const auto forced = run_rocplay({"postmortem", rec, "--color=always"});
  CHECK(forced.out.find("\x1b[") != std::string::npos);
  const auto never = run_rocplay({"postmortem", rec, "--color=never"});
  CHECK(never.out.find("\x1b[") == std::string::npos);
  // On a terminal: colour unless NO_COLOR (script(1) gives rocplay a pseudo-terminal).
  if (::access("/usr/bin/script", X_OK) == 0) {
    const std::string cmd = find_built("rocplay") + " postmortem " + rec;
    const auto tty = run_program({"/usr/bin/script", "-qec", cmd, "/dev/null"});
    CHECK(tty.out.find("\x1b[") != std::string::npos);
    const auto no_color =
        run_program({"/usr/bin/script", "-qec", cmd, "/dev/null"}, 60s, {"NO_COLOR=1"});
    CHECK(no_color.out.find("\x1b[") == std::string::npos);
  }
}

TEST_CASE("the command line: no arguments, did you mean, units, --var, help width") {
  const auto none = run_rocplay({});
  CHECK(none.exit_code == 64);
  CHECK(none.out.find("postmortem") != std::string::npos);
  CHECK(none.out.find("run") != std::string::npos);

  const auto typo = run_rocplay({"postmortem", "--fromat", "json", "x"});
  INFO("typo stderr: " << typo.err);
  CHECK(typo.exit_code == 64);
  CHECK(typo.err.find("did you mean `--format`") != std::string::npos);

  // Every other parse error reads like the rest of rocplay's: what, then where to look.
  const auto command_typo = run_rocplay({"rnu"});
  CHECK(command_typo.exit_code == 64);
  CHECK(command_typo.err.find("rocplay: error: unknown command `rnu`") != std::string::npos);
  CHECK(command_typo.err.find("did you mean `rocplay run`?") != std::string::npos);
  const auto missing = run_rocplay({"run"});
  CHECK(missing.exit_code == 64);
  CHECK(missing.err.find("rocplay: error: playbook is required") != std::string::npos);
  CHECK(missing.err.find("`rocplay run --help` says what it takes") != std::string::npos);

  const auto help = run_rocplay({"run", "--help"}, 30s, {"COLUMNS=80"});
  CHECK(help.exit_code == 0);
  std::istringstream lines(help.out);
  std::string line;
  std::size_t widest = 0;
  while (std::getline(lines, line)) {
    widest = std::max(widest, line.size());
  }
  CHECK(widest <= 80);
  CHECK(help.out.find("68") != std::string::npos); // run's own exit codes, HSA_TOOLS_LIB included
  CHECK(help.out.find("2 some inputs") == std::string::npos); // not postmortem's

  // `--var NAME=VALUE PLAYBOOK`: the playbook is not swallowed as a second value.
  TempDir dir;
  const std::string team =
      dir.file("team.yaml", "name: team\nvars:\n  depth: 8\nsteps:\n  - attach\n  - threads\n"
                            "  - mi: -stack-list-frames --thread 1 0 ${depth}\n  - snapshot\n");
  SpinTarget target;
  const auto var =
      run_rocplay({"run", "--var", "depth=4", team, "--pid", std::to_string(target.pid()),
                   "--debugger", "gdb", "--timeout", "20s", "--attach-timeout", "1m"},
                  90s);
  INFO("var stderr: " << var.err);
  CHECK((var.exit_code == 0 || var.exit_code == 1));
  require_running_again(target);
}

TEST_CASE("postmortem reads standard input (`-`) and a process substitution") {
  const std::string rocplay = find_built("rocplay");
  const std::string rec = std::string(ROCPLAY_SOURCE_DIR) + "/fixtures/cuda-gdb/syncspin-h200.mi";
  const auto from_stdin = run_program({"/bin/sh", "-c", rocplay + " postmortem - < " + rec});
  INFO("stdin: " << from_stdin.err << from_stdin.out);
  CHECK(from_stdin.exit_code == 1);
  // One input: the full report, as the live run prints it (issue 20).
  CHECK(from_stdin.out.find("VERDICT") != std::string::npos);
  CHECK(from_stdin.out.find("sync-lane-barrier-spin") != std::string::npos);
  // `<(cat rec)` is a pipe: its size is what was read, not file_size()'s error value.
  const auto piped =
      run_program({"/bin/bash", "-c", rocplay + " postmortem --format json <(cat " + rec + ")"});
  INFO("pipe: " << piped.err);
  CHECK(piped.exit_code == 1);
  const auto doc = nlohmann::json::parse(piped.out);
  std::ifstream in(rec, std::ios::binary | std::ios::ate);
  CHECK(doc.at("inputs").at(0).at("bytes") == static_cast<std::uint64_t>(in.tellg()));
  CHECK(doc.at("inputs").at(0).at("status") == "ok");
}

TEST_CASE("`rocplay playbooks` fits the terminal") {
  const auto r = run_rocplay({"playbooks"}, 30s, {"COLUMNS=80"});
  CHECK(r.exit_code == 0);
  std::istringstream lines(r.out);
  std::string line;
  std::size_t widest = 0;
  while (std::getline(lines, line)) {
    // A path longer than the terminal cannot be wrapped; only descriptions must fit.
    if (line.find('/') == std::string::npos) {
      widest = std::max(widest, line.size());
    }
  }
  CHECK(widest <= 80);
  CHECK(r.out.find("hang-triage") != std::string::npos);
}
