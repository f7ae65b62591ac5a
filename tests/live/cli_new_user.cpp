// What a new user hit in an afternoon (issue 42), as that user ran it: the real binary, real gdb,
// the hung programs of tests/targets, an 80-column terminal (COLUMNS=80), and a pseudo-terminal
// where rocplay's behaviour depends on one (progress on stderr).
#include "cli_util.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <pty.h>
#include <sys/wait.h>

#include <regex>
#include <set>

using namespace rocplay;
using namespace rocplay::testing;

namespace new_user_test {

const std::vector<std::string> k80 = {"COLUMNS=80"};

std::vector<std::string> lines_of(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string l; std::getline(in, l);) {
    out.push_back(l);
  }
  return out;
}

// Columns a line takes on a terminal: escape codes none, a UTF-8 character one.
std::size_t terminal_columns(const std::string& line) {
  std::size_t n = 0;
  for (std::size_t i = 0; i < line.size(); ++i) {
    if (line[i] == '\x1b' && i + 1 < line.size() && line[i + 1] == '[') {
      for (i += 2; i < line.size() && !(line[i] >= '@' && line[i] <= '~'); ++i) {
      }
      continue;
    }
    n += (static_cast<unsigned char>(line[i]) & 0xc0) != 0x80 ? 1 : 0;
  }
  return n;
}

void require_fits(const std::string& text, std::size_t width) {
  for (const auto& line : lines_of(text)) {
    INFO(line);
    CHECK(terminal_columns(line) <= width);
  }
}

std::vector<std::string> hang_triage(std::int64_t pid, std::vector<std::string> more = {}) {
  std::vector<std::string> a = {
      "run", "hang-triage",      "--pid", std::to_string(pid), "--debugger",
      "gdb", "--attach-timeout", "60",    "--timeout",         "30"};
  a.insert(a.end(), more.begin(), more.end());
  return a;
}

// The text between `heading` and the next blank line.
std::string text_section(const std::string& text, const std::string& heading) {
  const auto at = text.find(heading);
  if (at == std::string::npos) {
    return {};
  }
  const auto end = text.find("\n\n", at);
  return text.substr(at, end == std::string::npos ? std::string::npos : end - at);
}

// rocplay ARGS under a pseudo-terminal (its stdin, stdout and stderr), as a person at a terminal
// runs it: all it wrote there, with `\r` and escape codes as they came.
CliRun run_in_pty(const std::vector<std::string>& args, std::chrono::seconds timeout) {
  std::vector<std::string> argv_s = {find_built("rocplay")};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_s) {
    argv.push_back(a.data());
  }
  argv.push_back(nullptr);
  winsize ws{};
  ws.ws_col = 80;
  ws.ws_row = 24;
  int master = -1;
  const pid_t pid = ::forkpty(&master, nullptr, nullptr, &ws);
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::unsetenv("COLUMNS");
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  CliRun r;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    if (std::chrono::steady_clock::now() > deadline) {
      r.timed_out = true;
      ::kill(pid, SIGKILL);
      break;
    }
    pollfd p{master, POLLIN, 0};
    if (::poll(&p, 1, 50) <= 0) {
      continue;
    }
    char buf[4096];
    const ssize_t n = ::read(master, buf, sizeof buf);
    if (n <= 0) {
      break; // EIO: the child closed the terminal
    }
    r.err.append(buf, static_cast<std::size_t>(n));
  }
  ::close(master);
  int status = 0;
  ::waitpid(pid, &status, 0);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

} // namespace new_user_test

using namespace new_user_test;

TEST_CASE("issue 42: a run's report at 80 columns: steps wrapped and expanded, no wider line, "
          "threads in futex_wait not a spin loop") {
  DeadlockTarget target;
  const auto r =
      run_rocplay(hang_triage(target.pid(), {"--samples", "1"}), std::chrono::seconds(120), k80);
  INFO("stderr: " << r.err);
  INFO("stdout: " << r.out);
  REQUIRE_FALSE(r.timed_out);
  REQUIRE(r.exit_code == 1);
  require_fits(r.out, 80);
  // The steps log names the commands as sent: each blocked thread's own id, never the template.
  CHECK(r.out.find("${") == std::string::npos);
  CHECK(std::regex_search(r.out, std::regex("-data-evaluate-expression\\s+--thread\\s+[0-9]+")));
  // The lockers and the waiter sleep in the kernel (futex_wait): not a spin.
  const std::string code = text_section(r.out, "Code at the PCs");
  REQUIRE_FALSE(code.empty());
  CHECK(code.find("in a system call") != std::string::npos);
  for (const auto& line : lines_of(code)) {
    if (line.find("thread ") != std::string::npos && line.find("futex") != std::string::npos) {
      INFO(line);
      CHECK(line.find("spin loop") == std::string::npos);
    }
  }
}

TEST_CASE("issue 42: one exit code in every format: run.exit_code, incident.exit_code and the "
          "status agree") {
  DeadlockTarget target;
  const auto r = run_rocplay(hang_triage(target.pid(), {"--samples", "1", "--format", "json"}),
                             std::chrono::seconds(120));
  INFO("stderr: " << r.err);
  REQUIRE_FALSE(r.timed_out);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(r.exit_code == 1); // a host deadlock: a finding
  CHECK(j.at("incident").at("exit_code") == r.exit_code);
  CHECK(j.at("run").at("exit_code") == r.exit_code);
}

TEST_CASE("issue 42: progress on a terminal is one line rewritten in place, gone before the "
          "report") {
  SpinTarget target;
  TempDir dir;
  const std::string report = dir.path() + "/report.txt";
  const auto r = run_in_pty(hang_triage(target.pid(), {"-o", report}), std::chrono::seconds(120));
  INFO("terminal: " << r.err);
  REQUIRE_FALSE(r.timed_out);
  REQUIRE(r.exit_code <= 1);
  // Every progress update starts with `\r` + erase-line; none ends in a newline of its own.
  CHECK(r.err.find("\r\x1b[Krocplay: step ") != std::string::npos);
  std::size_t newlines = 0;
  for (const char c : r.err) {
    newlines += c == '\n' ? 1 : 0;
  }
  CHECK(newlines == 0);
  for (const auto& piece : lines_of(r.err)) {
    // What a terminal shows of each update: the text after its last `\r`.
    std::size_t from = 0;
    while (from != std::string::npos) {
      const auto next = piece.find('\r', from + 1);
      INFO(piece.substr(from, next - from));
      CHECK(terminal_columns(piece.substr(from, next == std::string::npos ? next : next - from)) <
            80);
      from = next;
    }
  }
  require_running_again(target);
}

TEST_CASE("issue 42: after --samples 4, Next does not say to take --samples 4") {
  SpinTarget target;
  const auto r = run_rocplay(
      hang_triage(target.pid(), {"--samples", "4", "--interval", "300ms", "--format", "json"}),
      std::chrono::seconds(180));
  INFO("stderr: " << r.err);
  REQUIRE_FALSE(r.timed_out);
  const auto j = nlohmann::json::parse(r.out);
  std::size_t checked = 0;
  for (const auto& f : j.at("findings")) {
    INFO(f.at("id") << ": " << f.value("next_step", ""));
    CHECK(f.value("next_step", "").find("--samples 4") == std::string::npos);
    ++checked;
  }
  CHECK(checked > 0);
  bool no_progress = false;
  for (const auto& f : j.at("findings")) {
    no_progress = no_progress || f.at("id") == "no-progress";
  }
  CHECK(no_progress); // the finding whose advice this is
}

TEST_CASE("issue 42: rocplay ps without GPU workers lists the busy and blocked user processes, "
          "never kernel threads or itself, in 80 columns") {
  DeadlockTarget blocked;
  SpinTarget busy;
  const auto r = run_rocplay({"ps"}, std::chrono::seconds(60), k80);
  INFO("stdout: " << r.out << "\nstderr: " << r.err);
  REQUIRE(r.exit_code == 0);
  require_fits(r.out, 80);
  CHECK(r.out.find("No process has /dev/kfd") != std::string::npos);
  auto row_of = [&](std::int64_t pid) {
    for (const auto& line : lines_of(r.out)) {
      if (line.rfind(std::to_string(pid) + " ", 0) == 0) {
        return line;
      }
    }
    return std::string();
  };
  CHECK(std::regex_search(row_of(blocked.pid()), std::regex("^[0-9]+ +[0-9]+ +[0-9.]+ blocked ")));
  CHECK(std::regex_search(row_of(busy.pid()), std::regex("^[0-9]+ +[0-9]+ +[0-9.]+ busy ")));
  // Why, in the JSON: the kernel wait of a blocked one.
  const auto js = run_rocplay({"ps", "--format", "json"}, std::chrono::seconds(60));
  // Bound first: a range-for over a member of a temporary reads a destroyed object.
  const auto listed = nlohmann::json::parse(js.out);
  bool said = false;
  std::string entry = "(not listed)";
  for (const auto& p : listed.at("processes")) {
    if (p.at("pid") == blocked.pid()) {
      entry = p.dump();
      // The kernel wait's name varies by kernel (futex_wait_queue, futex_do_wait, ...).
      said = p.at("worth_a_look").is_string() &&
             p.at("worth_a_look").get<std::string>().rfind("blocked: ", 0) == 0;
    }
  }
  INFO("the blocked one in the JSON: " << entry);
  CHECK(said);
  CHECK(row_of(2).empty()); // kthreadd
  CHECK(r.out.find("kworker") == std::string::npos);

  const auto all = run_rocplay({"ps", "--all"}, std::chrono::seconds(60), k80);
  REQUIRE(all.exit_code == 0);
  require_fits(all.out, 80);
  CHECK(all.out.find("[kthreadd]") == std::string::npos);
  CHECK(all.out.find("[kworker") == std::string::npos);
  CHECK(all.out.find("ps --all") == std::string::npos); // rocplay itself
  CHECK(all.out.find(std::to_string(busy.pid()) + " ") != std::string::npos);
}

TEST_CASE("issue 42: the small ones: --color in --help, a bare pid, playbooks at 80 columns") {
  const auto help = run_rocplay({"run", "--help"}, std::chrono::seconds(30), k80);
  REQUIRE(help.exit_code == 0);
  CHECK(help.out.find("{always}") == std::string::npos);
  CHECK(help.out.find(":{auto,always,never}") == std::string::npos);
  CHECK(help.out.find("--color[=WHEN]") != std::string::npos);
  CHECK(help.out.find("WHEN: auto|always|never") != std::string::npos);

  const auto bare = run_rocplay({"run", "hang-triage", "3124"}, std::chrono::seconds(30));
  CHECK(bare.exit_code == 64);
  CHECK(bare.err.find("`--pid 3124`") != std::string::npos);

  const auto list = run_rocplay({"playbooks"}, std::chrono::seconds(30), k80);
  REQUIRE(list.exit_code == 0);
  INFO(list.out);
  CHECK(list.out.find("playbooks (a folder under the current directory") != std::string::npos);
  std::size_t checked = 0;
  for (const auto& line : lines_of(list.out)) {
    // A path is one word: the only thing that may not break (the build tree's, here).
    if (line.find(ROCPLAY_SOURCE_DIR) == std::string::npos &&
        line.find(ROCPLAY_BINARY_DIR) == std::string::npos) {
      INFO(line);
      CHECK(terminal_columns(line) <= 80);
      // Descriptions sit 4 columns in, not under the longest name.
      if (line.rfind(" ", 0) == 0 && !line.empty()) {
        CHECK(line.find_first_not_of(' ') <= 4);
      }
      ++checked;
    }
  }
  CHECK(checked > 10);
}

TEST_CASE("issue 42: a Python run: no core-file warning, the user's line survives 80 columns") {
  const std::string script = std::string(ROCPLAY_SOURCE_DIR) + "/tests/targets/py_threads.py";
  std::string printed;
  pid_t pid = start_until_ready({"/usr/bin/python3", script, "locks"}, {}, &printed);
  struct Reap {
    pid_t& pid;
    ~Reap() { kill_and_reap(pid); }
  } reap{pid};
  const auto r = run_rocplay(hang_triage(pid, {"--samples", "1"}), std::chrono::seconds(120), k80);
  INFO("stderr: " << r.err);
  INFO("stdout: " << r.out);
  REQUIRE_FALSE(r.timed_out);
  CHECK(r.exit_code == 1);
  CHECK(r.out.find("core file may not match") == std::string::npos);
  CHECK(r.err.find("core file may not match") == std::string::npos);
  require_fits(r.out, 80);
  // Each row of the stack table shows the user's own Python line, cut or not: the main thread's
  // is its join at module level, under threading.py's frames, which count with the system's.
  const std::string table = text_section(r.out, "Host threads (");
  REQUIRE_FALSE(table.empty());
  CHECK(table.find("<module> (py_threads.py:" +
                   std::to_string(marker_line("py_threads.py", "rocplay-test: join line")) + ")") !=
        std::string::npos);
  for (const char* marker :
       {"rocplay-test: forward lock line", "rocplay-test: backward lock line"}) {
    const std::string at = "py_threads.py:" + std::to_string(marker_line("py_threads.py", marker));
    INFO(at);
    CHECK(table.find(at) != std::string::npos);
  }
}
