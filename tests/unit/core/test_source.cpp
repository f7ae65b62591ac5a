// The one rank rule (rocplay/core/source.hpp): each case below is a line, an environment or a file
// name that two readers used to read differently; tests/unit/crash and tests/unit/agentlog check
// that both readers now give the same answer through it.
#include "rocplay/core/source.hpp"

#include <catch2/catch.hpp>

using namespace rocplay;
using namespace rocplay::source;

TEST_CASE("launcher prefixes: torchrun, OpenMPI, vLLM and SGLang", "[source]") {
  SECTION("torchrun --tee") {
    const std::string_view line = "[rank3]: RuntimeError: NCCL error";
    auto p = launcher_prefix(line);
    REQUIRE(p);
    CHECK(p->rank == 3);
    CHECK(!p->pid);
    CHECK(p->key == "[rank3]:");
    CHECK(line.substr(p->length) == "RuntimeError: NCCL error");
  }
  SECTION("OpenMPI --tag-output") {
    const std::string_view line = "[1,5]<stderr>:Segmentation fault";
    auto p = launcher_prefix(line);
    REQUIRE(p);
    CHECK(p->rank == 5);
    CHECK(p->key == "[1,5]<stderr>:");
    CHECK(line.substr(p->length) == "Segmentation fault");
  }
  SECTION("vLLM worker with rank= and pid=") {
    const std::string_view line = "(VllmWorker rank=2 pid=4242) INFO hello";
    auto p = launcher_prefix(line);
    REQUIRE(p);
    CHECK(p->rank == 2);
    CHECK(p->pid == 4242);
    CHECK(p->key == "(VllmWorker rank=2 pid=4242)");
    CHECK(line.substr(p->length) == "INFO hello");
  }
  SECTION("SGLang `(Worker_TP3 pid=7)`: rank 3 and pid 7 (the crash reader used to see no rank)") {
    auto p = launcher_prefix("(Worker_TP3 pid=7) RuntimeError: CUDA error");
    REQUIRE(p);
    CHECK(p->rank == 3);
    CHECK(p->pid == 7);
  }
  SECTION("a process prefix without a rank keeps its pid") {
    auto p = launcher_prefix("(EngineCore_0 pid=91) ERROR x");
    REQUIRE(p);
    CHECK(!p->rank);
    CHECK(p->pid == 91);
  }
  SECTION("no prefix") {
    for (std::string_view line :
         {"Traceback (most recent call last):", "(most recent call last)", "[E302 14:17:31] x",
          "[rank]: x", "[rank3x]: x", "[1,2]<stdin>: x", "[a,2]<stderr>:x", "", "(",
          "[rank1234567]: x"}) {
      INFO(line);
      CHECK(!launcher_prefix(line));
    }
  }
  SECTION("bounded: a prefix never reaches past 128 bytes") {
    std::string line = "(" + std::string(200, 'x') + " pid=3) y";
    CHECK(!launcher_prefix(line));
  }
}

TEST_CASE("rank from the environment: the four variables, in order", "[source]") {
  // A post-mortem used to read RANK alone; a live fan-out all four.
  CHECK(rank_from_env({{"LOCAL_RANK", "1"}}) == 1);
  CHECK(rank_from_env({{"SLURM_PROCID", "6"}, {"OMPI_COMM_WORLD_RANK", "4"}}) == 4);
  CHECK(rank_from_env({{"RANK", "2"}, {"LOCAL_RANK", "0"}}) == 2);
  CHECK(rank_from_env({{"RANK", "3x"}, {"LOCAL_RANK", "0"}}) == 0); // `3x` names no rank
  CHECK(!rank_from_env({{"RANK", ""}}));
  CHECK(!rank_from_env({{"RANK", "-1"}}));
  CHECK(!rank_from_env({{"RANK", "1234567"}}));
  CHECK(!rank_from_env({}));
}

TEST_CASE("rank from a device name and from a file name", "[source]") {
  CHECK(rank_from_device("cuda:3") == 3);
  CHECK(!rank_from_device("cuda:"));
  CHECK(!rank_from_device("cuda:4096"));
  CHECK(!rank_from_device("GPU 0"));

  // The agent log used to find `rank` anywhere in the name and nothing else; the post-mortem
  // the rule below. Both now read this one.
  auto r = rank_in_file_name("out/hang_rank3.mi");
  REQUIRE(r);
  CHECK(r->first == "out/hang_rank#.mi");
  CHECK(r->second == 3);
  CHECK(rank_in_file_name("dump_worker-2.log")->second == 2);
  CHECK(rank_in_file_name("gpu_dump_rank_5.log")->second == 5);
  CHECK(rank_in_file_name("TP7.txt")->second == 7);
  CHECK(!rank_in_file_name("frank3.log")); // `rank` inside a longer word
  CHECK(!rank_in_file_name("server.log"));
}

TEST_CASE("a stronger rule keeps its rank", "[source]") {
  Source s;
  CHECK(s.offer_rank(1, RankRule::FileName));
  CHECK(s.offer_rank(2, RankRule::Meta)); // meta outranks a file name
  CHECK(!s.offer_rank(3, RankRule::Order));
  CHECK(!s.offer_rank(std::nullopt, RankRule::Pattern));
  CHECK(s.rank == 2);
  CHECK(s.rank_rule == RankRule::Meta);
  CHECK(s.offer_rank(0, RankRule::Pattern)); // --rank-from outranks everything
  CHECK(s.rank == 0);
  CHECK(to_string(s.rank_rule) == "--rank-from");
  CHECK(to_string(RankRule::None).empty());
}
