// `rocplay ps`'s report over a process tree built here (a server, its GPU workers, a helper of a
// worker, another user's process): the JSON holds exactly the keys docs/json-schema.md documents,
// and the text is the tree `ps --forest` users expect.
#include "rocplay/report/ps.hpp"
#include "schema_doc.hpp"

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <sstream>

using namespace rocplay;
using rocplay::testing::documented_keys;
using rocplay::testing::emitted_keys;

namespace {

process::ProcessInfo make_process(std::int64_t pid, std::int64_t ppid, std::string cmdline,
                                  bool kfd = false) {
  process::ProcessInfo p;
  p.pid = pid;
  p.ppid = ppid;
  p.comm = cmdline.substr(0, cmdline.find(' '));
  p.cmdline = std::move(cmdline);
  p.state = 'S';
  p.threads = 4;
  p.gpu.known = true;
  p.gpu.kfd = kfd;
  if (kfd) {
    p.gpu.devices = {"/dev/kfd", "/dev/dri/renderD128"};
    p.gpu.dri = true;
  }
  return p;
}

// init -> the server (no GPU) -> two GPU workers, one with a compile helper; and a shell, and
// a process of another user whose open files cannot be read.
process::ProcessTree machine() {
  std::vector<process::ProcessInfo> all;
  all.push_back(make_process(1, 0, "/sbin/init"));
  all.push_back(make_process(4300, 1, "python3 -m sglang.launch_server"));
  all.back().cpu_percent = 2.5;
  all.push_back(make_process(4301, 4300, "python3 worker rank0", true));
  all.back().cpu_percent = 100.0;
  all.push_back(make_process(4302, 4300, "python3 worker rank1", true));
  all.push_back(make_process(4310, 4301, "cc1plus kernel.cpp"));
  all.push_back(make_process(900, 1, "bash"));
  all.push_back(make_process(950, 1, ""));
  all.back().comm = "kworker";
  all.back().gpu = {};
  return process::ProcessTree(std::move(all));
}

} // namespace

TEST_CASE("rocplay.ps/1 and rocplay.workers/1 hold exactly the keys docs/json-schema.md "
          "documents",
          "[report][ps][schema]") {
  const auto tree = machine();
  const auto ps = report::process_list_to_json(tree, tree.candidates());
  CHECK(ps["schema"] == "rocplay.ps/1");
  CHECK(ps["schema_version"] == 1);
  CHECK(ps["scanned"] == 7);
  CHECK(ps["uninspectable"] == 1);
  // The GPU holders with their ancestors and descendants: not the shell, not the kworker.
  std::vector<std::int64_t> pids;
  for (const auto& p : ps["processes"]) {
    pids.push_back(p["pid"].get<std::int64_t>());
  }
  CHECK(pids == std::vector<std::int64_t>{1, 4300, 4301, 4302, 4310});

  const auto workers = report::workers_to_json(*tree.find(4300), process::workers_of(tree, 4300));
  CHECK(workers["schema"] == "rocplay.workers/1");
  CHECK(workers["holds_gpu"] == false);
  REQUIRE(workers["workers"].size() == 2); // the helper belongs to its worker
  CHECK(workers["workers"][1]["cpu_percent"].is_null());
  CHECK(workers["workers"][0]["cpu_percent"] == 100.0);
  CHECK(workers["workers"][0]["gpu"]["devices"].size() == 2);

  const auto keys = documented_keys("(`rocplay.ps/1`, `rocplay.workers/1`)");
  CHECK(emitted_keys({ps, workers}, keys) == keys);
  std::vector<nlohmann::json> processes(ps["processes"].begin(), ps["processes"].end());
  const auto process_keys = documented_keys("A process");
  CHECK(emitted_keys(processes, process_keys) == process_keys);
}

TEST_CASE("rocplay ps as text: a tree with the GPU holders marked", "[report][ps]") {
  const auto tree = machine();
  std::ostringstream out;
  report::write_process_tree_text(out, tree, tree.candidates());
  CHECK(out.str() == "PID       PPID        CPU% GPU     COMMAND\n"
                     "1         0                -       /sbin/init\n"
                     "4300      1            2.5 -       \\_ python3 -m sglang.launch_server\n"
                     "4301      4300       100.0 kfd       \\_ python3 worker rank0   <- GPU\n"
                     "4310      4301             -           \\_ cc1plus kernel.cpp\n"
                     "4302      4300             kfd       \\_ python3 worker rank1   <- GPU\n"
                     "(1 processes could not be inspected: GPU `?`; run as root to see them)\n");

  std::ostringstream none;
  const process::ProcessTree idle({make_process(1, 0, "/sbin/init")});
  report::write_process_tree_text(none, idle, idle.candidates());
  CHECK(none.str() == "no process has /dev/kfd or /dev/nvidia* open, and no user process is "
                      "busy or blocked (1 processes scanned)\n"
                      "`rocplay ps --all` lists every process\n");
}

TEST_CASE("rocplay ps --workers-of as text: the workers, and the command to attach",
          "[report][ps]") {
  const auto tree = machine();
  std::ostringstream out;
  report::write_workers_text(out, *tree.find(4300), process::workers_of(tree, 4300));
  CHECK(out.str() ==
        "GPU workers of pid 4300 (python3), which holds no GPU itself (the dispatcher):\n"
        "PID       PPID        CPU% GPU     COMMAND\n"
        "4301      4300       100.0 kfd     python3 worker rank0\n"
        "4302      4300             kfd     python3 worker rank1\n"
        "attach to one with: rocplay run hang-triage --pid 4301\n");

  std::ostringstream worker;
  report::write_workers_text(worker, *tree.find(4301), process::workers_of(tree, 4301));
  CHECK(worker.str() == "pid 4301 holds the GPU itself (kfd) and has no GPU workers below it: "
                        "attach to it\n");
  std::ostringstream shell;
  report::write_workers_text(shell, *tree.find(900), {});
  CHECK(shell.str() == "pid 900 (bash) has no descendant with /dev/kfd or /dev/nvidia* open\n");
}

TEST_CASE("rocplay ps without GPU holders: the busy and blocked user processes with their "
          "parents, never kernel threads, cut to the width",
          "[report][ps]") {
  std::vector<process::ProcessInfo> all;
  all.push_back(make_process(1, 0, "/sbin/init"));
  all.push_back(make_process(2, 0, ""));
  all.back().comm = "kthreadd";
  all.push_back(make_process(40, 2, ""));
  all.back().comm = "kworker/0:1";
  all.back().cpu_percent = 90.0; // a busy kernel thread is still not the user's
  all.push_back(make_process(700, 1, "sshd: user@pts/0"));
  all.push_back(make_process(800, 700, "-bash"));
  all.push_back(make_process(810, 800,
                             "python3 train.py --config /very/long/path/to/a/config/"
                             "file/that/does/not/fit/in/eighty/columns.yaml"));
  all.push_back(make_process(820, 800, "./solver --threads 8"));
  all.back().cpu_percent = 99.5;
  all.push_back(make_process(830, 800, "vim notes.txt"));
  const process::ProcessTree tree(std::move(all));

  // Each one's threads' kernel waits, as /proc/PID/task/TID/wchan gives them.
  CHECK(process::worth_a_look(*tree.find(810), {"futex_wait_queue", "futex_wait_queue"}) ==
        "blocked: futex_wait_queue");
  // A C program's lockers, main in pause() (tests/targets/deadlock_target.cpp, kernel 6.x names).
  CHECK(process::worth_a_look(*tree.find(810), {"__do_sys_pause", "futex_do_wait"}) ==
        "blocked: futex_do_wait");
  CHECK(process::worth_a_look(*tree.find(820), {""}) == "busy: 100% CPU");
  CHECK(process::worth_a_look(*tree.find(830), {"do_select"}).empty()); // waits for the user
  CHECK(process::worth_a_look(*tree.find(800), {"do_wait"}).empty());   // a shell and its child
  // A server: workers on a futex, its main thread waiting for connections: idle, not hung.
  CHECK(process::worth_a_look(*tree.find(810), {"ep_poll", "futex_wait_queue"}).empty());
  CHECK(process::worth_a_look(*tree.find(40), {""}).empty());
  CHECK(process::is_kernel_thread(*tree.find(2)));
  CHECK(process::is_kernel_thread(*tree.find(40)));
  CHECK_FALSE(process::is_kernel_thread(*tree.find(700)));

  const std::map<std::int64_t, std::string> why = {{810, "blocked: futex_wait_queue"},
                                                   {820, "busy: 100% CPU"}};
  const auto shown = tree.with_ancestors({810, 820}, 0);
  std::ostringstream out;
  report::write_process_tree_text(out, tree, shown, 80, why);
  const std::string text = out.str();
  INFO(text);
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    INFO(line);
    CHECK(line.size() <= 80);
  }
  // PID, PPID, CPU%, WHY (the kind of why), then the command indented as a tree.
  CHECK(text.find(fmt::format("\n{:<9} {:<9} {:>6} {:<7}   \\_ python3 train.py --config", 810, 800,
                              "", "blocked")) != std::string::npos);
  CHECK(text.find(fmt::format("\n{:<9} {:<9} {:>6} {:<7}   \\_ ./solver --threads 8\n", 820, 800,
                              "99.5", "busy")) != std::string::npos);
  CHECK(text.find(fmt::format("\n{:<9} {:<9} {:>6} {:<7} sshd: user@pts/0\n", 700, 1, "", "")) !=
        std::string::npos);
  CHECK(text.find("vim") == std::string::npos);
  CHECK(text.find("/sbin/init") == std::string::npos); // pid 1 gives no shape worth a line
  CHECK(text.find("look at one with: rocplay run hang-triage --pid 810") != std::string::npos);

  // --all: everything but kernel threads and rocplay itself.
  const auto every = tree.without_kernel_threads(830);
  std::vector<std::int64_t> pids;
  for (const auto& p : every.processes()) {
    pids.push_back(p.pid);
  }
  CHECK(pids == std::vector<std::int64_t>{1, 700, 800, 810, 820});
}
