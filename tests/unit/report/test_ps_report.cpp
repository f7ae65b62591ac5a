// `rocplay ps`'s report over a process tree built here (a server, its GPU workers, a helper of a
// worker, another user's process): the JSON holds exactly the keys docs/json-schema.md documents,
// and the text is the tree `ps --forest` users expect.
#include "rocplay/report/ps.hpp"
#include "schema_doc.hpp"

#include <catch2/catch.hpp>

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
  CHECK(none.str() == "no process has /dev/kfd or /dev/nvidia* open (1 processes scanned)\n"
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
