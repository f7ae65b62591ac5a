// Debugger console text as post-mortem input (rocplay/snapshot/console_log.hpp,
// fixtures/rocgdb-console/): the same snapshot and findings as the MI transcript of the same state.
#include "rocplay/crash/crash.hpp"
#include "rocplay/postmortem/postmortem.hpp"
#include "rocplay/snapshot/console_log.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

using namespace rocplay;
namespace fs = std::filesystem;

namespace console_log_test {

const fs::path kConsoleFixtures = fs::path(ROCPLAY_SOURCE_DIR) / "fixtures";

postmortem::InputResult console_one(const fs::path& p) {
  postmortem::Options o;
  auto results = postmortem::analyse_file(p.string(), o);
  REQUIRE(results.size() == 1);
  return std::move(results.front());
}

std::set<std::string> console_ids(const postmortem::InputResult& r) {
  std::set<std::string> out;
  for (const auto& f : r.findings) {
    out.insert(f.id);
  }
  return out;
}

std::set<std::string> console_kernels(const postmortem::InputResult& r) {
  std::set<std::string> out;
  for (const auto& f : r.findings) {
    out.insert(f.id + "|" + f.kernel);
  }
  return out;
}

bool console_has_note(const postmortem::InputResult& r, std::string_view text) {
  return std::any_of(r.snapshot.notes.begin(), r.snapshot.notes.end(),
                     [&](const std::string& n) { return n.find(text) != std::string::npos; });
}

} // namespace console_log_test

TEST_CASE("the seeds' command-file dump gives the MI transcript's findings (split-K _clean)") {
  const auto mi = console_log_test::console_one(console_log_test::kConsoleFixtures /
                                                "rocgdb/splitk-clean-two-queues/snapshot.mi");
  const auto console = console_log_test::console_one(
      console_log_test::kConsoleFixtures / "rocgdb-console/seed-dump-splitk/rocgdb_dump.txt");
  CHECK(console.kind == postmortem::InputKind::ConsoleLog);
  CHECK(console.status == postmortem::InputStatus::Ok);
  REQUIRE(console_log_test::console_ids(mi).count("splitk-clean-race") == 1);
  CHECK(console_log_test::console_ids(console) == console_log_test::console_ids(mi));
  CHECK(console_log_test::console_kernels(console) == console_log_test::console_kernels(mi));
  CHECK(console.snapshot.agents.size() == 1);
  CHECK(console.snapshot.queues.size() == 2);
  CHECK(console.snapshot.dispatches.size() == 2);
  CHECK(console.snapshot.pid == 5120);
  // What the text does not hold is said, not guessed.
  CHECK(console_log_test::console_has_note(console, "waves: unknown (no `info threads`)"));
  CHECK(console_log_test::console_has_note(console, "taken as thread 1"));
}

TEST_CASE("the seeds' command-file dump gives the MI transcript's findings (host blocked)") {
  const auto mi = console_log_test::console_one(console_log_test::kConsoleFixtures /
                                                "rocgdb/host-blocked-item/snapshot.mi");
  const auto console = console_log_test::console_one(
      console_log_test::kConsoleFixtures / "rocgdb-console/seed-dump-host-blocked/rocgdb_dump.txt");
  CHECK(console.kind == postmortem::InputKind::ConsoleLog);
  REQUIRE(console_log_test::console_ids(mi).count("host-blocked-on-gpu") == 1);
  CHECK(console_log_test::console_ids(console) == console_log_test::console_ids(mi));
  CHECK(console_log_test::console_kernels(console) == console_log_test::console_kernels(mi));
  // The DMA row without Read/Write is a queue all the same.
  REQUIRE(console.snapshot.queues.size() == 2);
  CHECK(!console.snapshot.queues[1].read);
}

TEST_CASE("console text: emoji and pager prompts are removed, headers and prompts cut sections") {
  std::size_t emoji = 0;
  std::size_t pager = 0;
  CHECK(console_log::clean_line("\xE2\x9D\x8C\xEF\xB8\x8F Undefined info command: \"agents\".",
                                &emoji, &pager) == "Undefined info command: \"agents\".");
  CHECK(console_log::clean_line("\xE2\x9A\xA0\xEF\xB8\x8F warning: x", &emoji, &pager) ==
        "warning: x");
  CHECK(emoji == 2);
  CHECK(console_log::clean_line("--Type <RET> for more, q to quit, c to continue without "
                                "paging--  5    AMDGPU Wave 1:1:1:1 (0,0,0)/0",
                                &emoji, &pager) == "  5    AMDGPU Wave 1:1:1:1 (0,0,0)/0");
  CHECK(pager == 1);
  CHECK(console_log::clean_line("\x1b[32mframe\x1b[m ok") == "frame ok");

  console_log::Info info;
  const auto ex = console_log::to_exchanges("(gdb) info agents\nNo agents are currently active.\n"
                                            "(gdb) i th\n(gdb) \n=== info queues ===\n",
                                            &info);
  REQUIRE(ex.size() == 3);
  CHECK(ex[0].command == "info agents");
  CHECK(ex[1].command == "info threads");
  CHECK(ex[2].command == "info queues");
  CHECK(info.prompts == 3);
  CHECK(info.headers == 1);

  CHECK(console_log::looks_like_console_log("(gdb) info dispatches\n"));
  CHECK(console_log::looks_like_console_log("=== info agents ===\n"));
  CHECK(!console_log::looks_like_console_log("hello world\nINFO 12:00:01 started\n"));
  CHECK(!console_log::looks_like_console_log("#1 in the list\n#2 at the top\n"));
  CHECK(console_log::looks_like_console_log(
      "#0  0x00007f3c1e3a8c5b in ioctl () from /lib/libc.so.6\n#1  main () at a.c:3\n"));
}

TEST_CASE("a pasted session: queues pending with no dispatch beside hipDeviceSynchronize") {
  const auto r = console_log_test::console_one(console_log_test::kConsoleFixtures /
                                               "rocgdb-console/pasted-wedged-rank/session.txt");
  CHECK(r.kind == postmortem::InputKind::ConsoleLog);
  CHECK(r.snapshot.pid == 7711);
  CHECK(r.snapshot.coverage.dispatches);
  CHECK(r.snapshot.dispatches.empty());
  REQUIRE(r.snapshot.agents.size() == 1);
  CHECK(r.snapshot.agents[0].name == "Device 1002:74a1.00");
  // Six rows: the DMA and XGMI rows without Read/Write, the overflowing 7-digit row after the
  // glued pager prompt.
  REQUIRE(r.snapshot.queues.size() == 6);
  const auto& q4 = r.snapshot.queues[3];
  CHECK(q4.read == 1048570u);
  CHECK(q4.write == 1048575u);
  const auto found = console_log_test::console_ids(r);
  CHECK(found.count("queue-packets-pending") == 1);
  CHECK(found.count("wedged-rank") == 1);
  for (const auto& f : r.findings) {
    if (f.id == "queue-packets-pending") {
      CHECK(f.title.find("hipDeviceSynchronize") != std::string::npos);
      CHECK(f.next_step.find("second snapshot") != std::string::npos);
    }
  }
}

TEST_CASE("a fault stop in console text: the same gpu-fault as the MI recording") {
  const auto mi = console_log_test::console_one(console_log_test::kConsoleFixtures /
                                                "rocgdb/wave-memory-violation/snapshot.mi");
  const auto console = console_log_test::console_one(
      console_log_test::kConsoleFixtures / "rocgdb-console/wave-fault-session/session.txt");
  CHECK(console.kind == postmortem::InputKind::ConsoleLog);
  REQUIRE(console_log_test::console_ids(mi).count("gpu-fault") == 1);
  CHECK(console_log_test::console_ids(console) == console_log_test::console_ids(mi));
  REQUIRE(console.snapshot.fault);
  const auto& f = *console.snapshot.fault;
  CHECK(f.signal == "SIGSEGV");
  CHECK(f.thread_id == "7");
  CHECK(f.lane == 0u);
  CHECK(f.on_gpu);
  CHECK(f.line == 15u);
  CHECK(f.detail.find("precise memory") != std::string::npos);
  CHECK(f.detail.find("location may not be accurate") != std::string::npos);
  CHECK(console.snapshot.waves.size() == 4);
  CHECK(console.snapshot.host_threads.size() == 2);
}

TEST_CASE("a server log with a late-attach session: the hang verdict and the sync spin both") {
  const auto r = console_log_test::console_one(console_log_test::kConsoleFixtures /
                                               "rocgdb-console/server-log-with-session/server.log");
  CHECK(r.kind == postmortem::InputKind::ConsoleLog);
  REQUIRE(r.snapshot.waves.size() == 4);
  CHECK(!r.snapshot.waves[0].dispatch);      // `?`: unknown
  CHECK(!r.snapshot.waves[0].wave_in_group); // `/?`
  const auto found = console_log_test::console_ids(r);
  CHECK(found.count("sync-lane-barrier-spin") == 1);
  for (const auto& f : r.findings) {
    if (f.id == "sync-lane-barrier-spin") {
      CHECK(f.title.find("positions unknown") != std::string::npos);
      CHECK(f.next_step.find("HSA_ENABLE_DEBUG=1") != std::string::npos);
      // The verdict anchors on the stuck kernel, before any host wait.
      CHECK(&f == &r.findings.front());
    }
  }
  // The runtime's hang line in the same file is crash evidence.
  REQUIRE(r.crash);
  CHECK(std::any_of(r.crash->events.begin(), r.crash->events.end(),
                    [](const crash::Event& e) { return e.kind == crash::EventKind::GpuHang; }));
  CHECK(found.count("crash-gpu-hang") == 1);
}

TEST_CASE("plain text without a session is not a console log") {
  const fs::path p = fs::temp_directory_path() / "rocplay-console-plain.txt";
  {
    std::ofstream out(p);
    out << "hello world\nthis is a README\n";
  }
  const auto r = console_log_test::console_one(p);
  fs::remove(p);
  CHECK(r.kind != postmortem::InputKind::ConsoleLog);
  CHECK(r.status == postmortem::InputStatus::Unreadable);
}

TEST_CASE(
    "a ROCm 4 session: agents without Architecture, `AMDGPU Thread` ids, the old switch line") {
  const auto r = console_log_test::console_one(console_log_test::kConsoleFixtures /
                                               "rocgdb-console/rocm4-old-spelling/session.txt");
  CHECK(r.kind == postmortem::InputKind::ConsoleLog);
  REQUIRE(r.snapshot.agents.size() == 1);
  CHECK(r.snapshot.agents[0].name == "vega20");
  CHECK(r.snapshot.agents[0].location == "0a:00.0");
  REQUIRE(r.snapshot.waves.size() == 2);
  CHECK(r.snapshot.waves[0].wave_no == 1u);
  CHECK(r.snapshot.debugger_version == "GNU gdb (rocm-rel-4.1-26) 10.1");
  REQUIRE(r.snapshot.fault);
  CHECK(r.snapshot.fault->thread_id == "5"); // from the stop line: the switch line has no number
  CHECK(r.snapshot.fault->on_gpu);
  CHECK(console_log_test::console_ids(r).count("gpu-fault") == 1);
}

TEST_CASE("the unknown-positions verdict says how its waves were tied") {
  const auto r = console_log_test::console_one(console_log_test::kConsoleFixtures /
                                               "rocgdb-console/server-log-with-session/server.log");
  REQUIRE(!r.findings.empty());
  const auto& f = r.findings.front();
  REQUIRE(f.id == "sync-lane-barrier-spin");
  CHECK(f.summary.find("tied to the dispatch by queue (the only dispatch of it in flight)") !=
        std::string::npos);
  CHECK(f.details["tied_by"] == "queue (the only dispatch of it in flight)");
}
