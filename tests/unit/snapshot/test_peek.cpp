// Builder::peek and Builder::host_thread_ids: what a live run's steps read of a sample inside the
// stop is what finish() makes of the same exchanges after the detach, and reading it changes
// nothing in the builder (issue 28). Also how the gdb dialect files stacks onto threads.
#include "support.hpp"

#include "rocplay/mi/transcript.hpp"
#include "rocplay/snapshot/snapshot.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

using namespace rocplay;

namespace {

// -thread-info with thread 1 listed twice (a malformed list), then stacks for 1, 3 (a thread the
// list does not have) and 2, in recording form.
const char* const kSession = R"MI(# rocplay-transcript 1
> 0.100 1-thread-info
< 0.101 1^done,threads=[{id="1",target-id="Thread 0x1 (LWP 11)",name="first",state="stopped",frame={level="0",addr="0x1000",func="spin",args=[]}},{id="2",target-id="Thread 0x2 (LWP 12)",name="two",state="stopped",frame={level="0",addr="0x2000",func="nap",args=[]}},{id="1",target-id="Thread 0x3 (LWP 13)",name="again",state="stopped",frame={level="0",addr="0x3000",func="dup",args=[]}}],current-thread-id="1"
< 0.101 (gdb) 
> 0.200 2-stack-list-frames --thread 1 0 29
< 0.201 2^done,stack=[frame={level="0",addr="0x1000",func="spin"},frame={level="1",addr="0x1100",func="main"}]
< 0.201 (gdb) 
> 0.300 3-stack-list-frames --thread 3 0 29
< 0.301 3^done,stack=[frame={level="0",addr="0x5000",func="_ZN3foo3barEv"}]
< 0.301 (gdb) 
> 0.400 4-stack-list-frames --thread 2 0 29
< 0.401 4^done,stack=[frame={level="0",addr="0x2000",func="nap"},frame={level="1",addr="0x2100",func="start"},frame={level="2",addr="0x2200",func="clone"}]
< 0.401 (gdb) 
)MI";

std::vector<std::string> ids_of(const Snapshot& s) {
  std::vector<std::string> ids;
  for (const auto& t : s.host_threads) {
    ids.push_back(t.id);
  }
  return ids;
}

} // namespace

TEST_CASE("a peek is the finished snapshot of the exchanges so far, and leaves the builder as it "
          "was") {
  const auto exchanges = mi::read_transcript(kSession);
  REQUIRE(exchanges.size() == 4);
  snapshot::BuildOptions bo;
  bo.debugger = DebuggerKind::Gdb;
  snapshot::Builder builder(bo);
  std::vector<nlohmann::json> peeks;
  std::vector<std::vector<std::string>> ids;
  for (std::size_t i = 0; i < exchanges.size(); ++i) {
    builder.add(exchanges[i]);
    ids.push_back(builder.host_thread_ids());
    const Snapshot peek = builder.peek();
    CHECK(to_json(builder.peek()) == to_json(peek)); // twice the same: nothing moved
    CHECK(ids.back() == ids_of(peek));
    // The same as a builder that takes exchanges 0..i and finishes.
    snapshot::Builder once(bo);
    for (std::size_t j = 0; j <= i; ++j) {
      once.add(exchanges[j]);
    }
    CHECK(to_json(once.finish()) == to_json(peek));
    peeks.push_back(to_json(peek));
  }
  const auto before = snapshot::builder_counts();
  const Snapshot done = builder.finish();
  CHECK(snapshot::builder_counts().finished == before.finished + 1);
  CHECK(to_json(done) == peeks.back());
  test::check_invariants(done);

  // A repeated id is one thread (the later row's fields), its stack merged in by level; the
  // stack of a thread the list does not have comes last, its name demangled.
  CHECK(ids.front() == std::vector<std::string>{"1", "2"});
  REQUIRE(ids_of(done) == std::vector<std::string>{"1", "2", "3"});
  CHECK(done.host_threads[0].name == "again");
  REQUIRE(done.host_threads[0].frames.size() == 2);
  CHECK(done.host_threads[0].frames[0].function == "spin");
  CHECK(done.host_threads[0].frames[1].function == "main");
  CHECK(done.host_threads[1].frames.size() == 3);
  REQUIRE(done.host_threads[2].frames.size() == 1);
  CHECK(done.host_threads[2].frames[0].function == "foo::bar()");
}
