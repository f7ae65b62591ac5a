// Stops by copy (session::Session::stop_by_copy): the session's notes for each copy's hold and for
// the threads' names, which a core file does not carry, as the snapshot and the samples read them.
#include "support.hpp"

#include "rocplay/mi/parser.hpp"
#include "rocplay/snapshot/sampling.hpp"

#include <catch2/catch.hpp>

#include <map>

using namespace rocplay;
using test::exchange;

namespace {

// A -thread-info answer as gdb 13 gives it for a core file: no `name`, `LWP n` target ids.
mi::Exchange core_thread_info(double at) {
  auto e = exchange("-thread-info", at, at + 0.001);
  const std::string line =
      R"(^done,threads=[{id="1",target-id="LWP 4242",frame={level="0",addr="0x401000",)"
      R"(func="main"},state="stopped"},{id="2",target-id="LWP 4243",frame={level="0",)"
      R"(addr="0x401100",func="worker"},state="stopped"}],current-thread-id="1")";
  auto records = mi::parse_all(line + "\n");
  REQUIRE(records.size() == 1);
  e.records.push_back(std::move(records.front()));
  return e;
}

} // namespace

TEST_CASE("copy notes: the hold's times and thread count, and nothing else") {
  const auto c = snapshot::parse_copy_note("copy: held 10 threads of pid 4242 from 0.198070 s to "
                                           "0.199311 s, then let them go; the debugger reads it");
  REQUIRE(c);
  CHECK(c->threads == 10);
  CHECK(c->held_from == Approx(0.198070));
  CHECK(c->held_to == Approx(0.199311));
  CHECK_FALSE(snapshot::parse_copy_note("copy: held many threads"));
  CHECK_FALSE(snapshot::parse_copy_note("copy: held 3 threads of pid 1 from 2.0 s to 1.0 s"));
  CHECK_FALSE(snapshot::parse_copy_note("sample 2: stop began at 1.0 s"));
  CHECK_FALSE(snapshot::parse_copy_note("copy: held 3 threads of pid 1 from -1 s to 1.0 s"));
}

TEST_CASE("copy notes: each sample's stop is its copy's hold") {
  std::vector<mi::Exchange> exchanges;
  exchanges.push_back(exchange("-gdb-set auto-solib-add off", 0.1, 0.2));
  exchanges.back().notes.push_back(
      "copy: held 2 threads of pid 4242 from 0.300000 s to 0.302000 s, "
      "then let them go; the debugger reads the copy");
  exchanges.push_back(exchange("-target-select core /tmp/core.1", 0.31, 0.4));
  exchanges.push_back(core_thread_info(0.5));
  exchanges.back().notes.push_back(snapshot::sample_note(1, 0.3, 1000.0));
  // The second copy's note comes before the note of the sample it belongs to.
  exchanges.back().notes.push_back(
      "copy: held 2 threads of pid 4242 from 2.300000 s to 2.305000 s, "
      "then let them go; the debugger reads the copy");
  exchanges.back().notes.push_back(snapshot::sample_note(2, 2.3, 1002.0));
  exchanges.push_back(exchange("-target-select core /tmp/core.2", 2.31, 2.4));
  exchanges.push_back(core_thread_info(2.5));
  const auto samples = snapshot::build_samples(exchanges);
  REQUIRE(samples.size() == 2);
  CHECK(samples[0].stop_seconds == Approx(0.002));
  CHECK(samples[1].stop_seconds == Approx(0.005));
  CHECK(samples[1].at == Approx(2.0));
}

TEST_CASE("thread names: the session's notes name the threads a core file leaves unnamed") {
  auto info = core_thread_info(0.5);
  info.notes.push_back(R"(thread names: {"4242":"python3","4243":"pt_nccl_watchdg"})");
  info.notes.push_back(R"(thread names: not json)"); // ours, unreadable: ignored
  info.notes.push_back(R"(thread names: {"x":"y","4244":7})");
  snapshot::Builder b;
  b.add(info);
  const auto s = b.finish();
  REQUIRE(s.host_threads.size() == 2);
  CHECK(s.host_threads[0].lwp == 4242u);
  CHECK(s.host_threads[0].name == "python3");
  CHECK(s.host_threads[1].name == "pt_nccl_watchdg");
  CHECK(s.notes.empty()); // the names are not notes of the snapshot
}

TEST_CASE("unchanged stacks: a later sample takes them from the sample before, by LWP") {
  auto stack = [](std::string id, std::string func, double at) {
    auto e = exchange("-stack-list-frames --thread " + id + " 0 29", at, at + 0.001);
    auto records =
        mi::parse_all("^done,stack=[frame={level=\"0\",addr=\"0x401100\",func=\"" + func +
                      "\"},frame={level=\"1\",addr=\"0x401200\",func=\"main\"}]\n");
    REQUIRE(records.size() == 1);
    e.records.push_back(std::move(records.front()));
    return e;
  };
  std::vector<mi::Exchange> exchanges;
  exchanges.push_back(core_thread_info(0.5)); // id 1 = LWP 4242, id 2 = LWP 4243
  exchanges.push_back(stack("1", "wait_here", 0.6));
  exchanges.push_back(stack("2", "worker_loop", 0.7));
  exchanges.push_back(exchange("", 2.0, 0)); // the run between: notes only
  exchanges.back().notes.push_back(snapshot::sample_note(2, 2.0, 1002.0));
  // gdb numbers a core's threads afresh: in sample 2, LWP 4243 is thread 1.
  auto info = exchange("-thread-info", 2.5, 2.501);
  auto records = mi::parse_all(
      R"(^done,threads=[{id="1",target-id="LWP 4243",frame={level="0",addr="0x401100",)"
      R"(func="worker_loop"},state="stopped"},{id="2",target-id="LWP 4242",frame={level="0",)"
      R"(addr="0x401100",func="wait_here"},state="stopped"}],current-thread-id="1")"
      "\n");
  REQUIRE(records.size() == 1);
  info.records.push_back(std::move(records.front()));
  const auto notes = snapshot::unchanged_stacks_notes({4242});
  REQUIRE(notes.size() == 1);
  CHECK(notes.front() == "stacks as in the sample before: 4242");
  info.notes = notes;
  exchanges.push_back(std::move(info));
  exchanges.push_back(stack("1", "worker_loop_moved", 2.6)); // LWP 4243 was asked again
  const auto samples = snapshot::build_samples(exchanges);
  REQUIRE(samples.size() == 2);
  std::map<std::uint64_t, std::vector<std::string>> second;
  for (const auto& t : samples[1].snapshot.host_threads) {
    std::vector<std::string> fs;
    for (const auto& f : t.frames) {
      fs.push_back(f.function);
    }
    second[*t.lwp] = fs;
  }
  CHECK(second[4242] == std::vector<std::string>{"wait_here", "main"});
  CHECK(second[4243] == std::vector<std::string>{"worker_loop_moved", "main"});
  // Many LWPs: several notes, each under the size a note may have.
  std::vector<std::int64_t> many(2'000);
  for (std::size_t i = 0; i < many.size(); ++i) {
    many[i] = 100'000 + static_cast<std::int64_t>(i);
  }
  const auto split = snapshot::unchanged_stacks_notes(many);
  CHECK(split.size() > 1);
  for (const auto& n : split) {
    CHECK(n.size() < 4'000);
  }
}

TEST_CASE("kernel waits: each sample gets the look taken just before its own stop") {
  // Sample 1's look comes before the attach; sample 2's before its copy, among the exchanges
  // that precede the `sample 2:` note (fixtures/graph/host/*.rocplay have this order).
  auto look = [](const char* call) {
    return std::string("kernel waits: {\"pid\":4242,\"role\":\"target\",\"threads\":[{\"t\":4242,"
                       "\"c\":\"") +
           call + "\"}]}";
  };
  std::vector<mi::Exchange> exchanges;
  auto first = exchange("-gdb-set auto-solib-add off", 0.1, 0.11);
  first.notes = {look("wait4")};
  exchanges.push_back(std::move(first));
  auto copy1 = exchange("-target-select core /tmp/c/core.1", 0.2, 0.21);
  copy1.notes = {"copy: held 2 threads of pid 4242 from 0.15 s to 0.18 s, then let them go; the "
                 "debugger reads the copy"};
  exchanges.push_back(std::move(copy1));
  auto s1 = core_thread_info(0.3);
  s1.notes = {"sample 1: stop began at 0.15 s (unix 1763940000.0)"};
  exchanges.push_back(std::move(s1));
  auto copy2 = exchange("-target-select core /tmp/c/core.2", 2.2, 2.21);
  copy2.notes = {look("read"), "copy: held 2 threads of pid 4242 from 2.15 s to 2.18 s, then "
                               "let them go; the debugger reads the copy"};
  exchanges.push_back(std::move(copy2));
  auto s2 = core_thread_info(2.3);
  s2.notes = {"sample 2: stop began at 2.15 s (unix 1763940002.0)"};
  exchanges.push_back(std::move(s2));
  const auto samples = snapshot::build_samples(exchanges);
  REQUIRE(samples.size() == 2);
  auto call_of = [](const Snapshot& s) {
    const ProcessWaits* p = s.kernel_waits.process(4242);
    return p == nullptr || p->threads.empty() ? std::string("-") : p->threads.front().call;
  };
  CHECK(call_of(samples[0].snapshot) == "wait4");
  CHECK(call_of(samples[1].snapshot) == "read");
}
