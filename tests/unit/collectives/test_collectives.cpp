// The collective-record readers and the cross-rank matching (rocplay/collectives), over
// fixtures/collectives: pickles CPython wrote (tests/collectives/make_pickle_fixtures.py), Flight
// Recorder dumps laid out as PyTorch's writer does (make_fr_fixtures.py, reconstructed), NCCL and
// watchdog lines and ncclras answers in their writers' formats (each fixture's header cites them).
#include "rocplay/collectives/collectives.hpp"
#include "rocplay/collectives/pickle.hpp"

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

using namespace rocplay;
using namespace rocplay::collectives;
namespace fs = std::filesystem;

namespace {

const fs::path kDir = fs::path(ROCPLAY_SOURCE_DIR) / "fixtures" / "collectives";

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  REQUIRE(in);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

Input read_file(const fs::path& p) {
  const std::string data = slurp(p);
  const auto source = detect(data);
  REQUIRE(source);
  return read(data, *source, p.string());
}

std::vector<Input> read_dir(const fs::path& dir, std::string_view contains = "") {
  std::vector<Input> out;
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().filename().string().find(contains) != std::string::npos &&
        e.path().filename() != "README.md") {
      files.push_back(e.path());
    }
  }
  std::sort(files.begin(), files.end());
  for (const auto& f : files) {
    out.push_back(read_file(f));
  }
  return out;
}

} // namespace

TEST_CASE("pickle: CPython's data-only pickles of protocols 2 to 5 read whole") {
  for (int proto : {2, 3, 4, 5}) {
    CAPTURE(proto);
    const std::string data =
        slurp(kDir / "pickle" / ("data_protocol" + std::to_string(proto) + ".pkl"));
    REQUIRE(pickle::looks_like_pickle(data));
    const auto r = pickle::read(data);
    INFO(r.error);
    REQUIRE(r.ok());
    CHECK(r.protocol == proto);
    const pickle::Value& root = *r.root;
    REQUIRE(root.is(pickle::Value::Kind::Dict));
    REQUIRE(root.get("version"));
    CHECK(root.get("version")->text == "2.10");
    const auto* ints = root.get("ints");
    REQUIRE(ints);
    std::vector<std::int64_t> got;
    for (const auto* v : ints->items) {
      REQUIRE(v->is(pickle::Value::Kind::Int));
      got.push_back(v->integer);
    }
    CHECK(got == std::vector<std::int64_t>{0, 1, 255, 256, 65535, 65536, -1, -2147483648LL,
                                           2147483648LL, 1LL << 62, INT64_MIN});
    CHECK(root.get("floats")->items.at(0)->real == 0.25);
    CHECK(root.get("floats")->items.at(1)->real == -1.5e300);
    const auto* flags = root.get("flags");
    REQUIRE(flags->is(pickle::Value::Kind::Tuple));
    CHECK(flags->items.at(0)->boolean);
    CHECK(flags->items.at(1)->is(pickle::Value::Kind::Bool));
    CHECK(!flags->items.at(1)->boolean);
    CHECK(flags->items.at(2)->is(pickle::Value::Kind::None));
    CHECK(root.get("text")->text == "h\xc3\xa9llo");
    CHECK(root.get("raw")->text == std::string("\0\1bytes", 7));
    CHECK(root.get("tuple5")->items.size() == 5);
    // The memo: one dict in two places is the same value.
    const auto* shared = root.get("shared");
    REQUIRE(shared->items.size() == 2);
    CHECK(shared->items[0] == shared->items[1]);
    CHECK(shared->items[0]->get("line")->integer == 7);
    // A non-string key stays an int key.
    const auto* nested = root.get("nested");
    bool int_key = false;
    for (const auto& [k, v] : nested->entries) {
      int_key =
          int_key || (k->is(pickle::Value::Kind::Int) && k->integer == 7 && v->text == "int key");
    }
    CHECK(int_key);
  }
}

TEST_CASE("pickle: opcodes that name or call code are refused with their offset") {
  const auto g = pickle::read(slurp(kDir / "pickle" / "global_protocol2.pkl"));
  CHECK(!g.ok());
  CHECK(g.offset == 16);
  CHECK(g.error.starts_with("offset 16: GLOBAL (0x63)"));
  CHECK(g.error.find("never runs anything") != std::string::npos);
  const auto r = pickle::read(slurp(kDir / "pickle" / "reduce_protocol4.pkl"));
  CHECK(!r.ok());
  CHECK(r.offset == 39);
  CHECK(r.error.starts_with("offset 39: STACK_GLOBAL"));
}

TEST_CASE("pickle: damaged and hostile input gives an error, never a crash") {
  const std::string good = slurp(kDir / "pickle" / "data_protocol3.pkl");
  for (std::size_t cut :
       {std::size_t{1}, std::size_t{2}, std::size_t{10}, good.size() / 2, good.size() - 1}) {
    const auto r = pickle::read(good.substr(0, cut));
    CHECK(!r.ok());
    CHECK(!r.error.empty());
  }
  CHECK(pickle::read(good.substr(0, good.size() - 1)).error.find("before its STOP") !=
        std::string::npos);
  // MARKs nested past the bound.
  std::string deep = "\x80\x02";
  deep += std::string(300, '(');
  const auto d = pickle::read(deep);
  CHECK(d.error.find("MARKs open") != std::string::npos);
  // A string longer than the bytes left.
  const auto s = pickle::read(std::string("\x80\x02X\x10\x00\x00\x00", 7));
  CHECK(s.error.find("needs 16 bytes; 0 are left") != std::string::npos);
  // A memo read before it was written; a STOP with nothing on the stack.
  CHECK(pickle::read(std::string("\x80\x02h\x05.", 5)).error.find("read before it was written") !=
        std::string::npos);
  CHECK(pickle::read(std::string("\x80\x02.", 3)).error.find("STOP with 0 values") !=
        std::string::npos);
  // Values past the limit.
  pickle::Limits small;
  small.max_values = 10;
  CHECK(pickle::read(good, small).error.find("more than 10 values") != std::string::npos);
  // A list inside itself (Python's pickler can write one): read, and owned without a leak.
  const auto cyc = pickle::read(std::string("\x80\x02]q\x00h\x00"
                                            "a.",
                                            9));
  REQUIRE(cyc.ok());
  CHECK(cyc.root->items.at(0) == cyc.root);
}

TEST_CASE("flight recorder: the pickle and JSON forms of one dump read the same") {
  const auto p = read_file(kDir / "reconstructed" / "size_mismatch" / "nccl_trace_rank_1");
  const auto j =
      read_file(kDir / "reconstructed" / "size_mismatch" / "nccl_trace_json_rank_1.json");
  CHECK(p.source == Source::FlightRecorderPickle);
  CHECK(j.source == Source::FlightRecorderJson);
  CHECK(p.notes.empty());
  CHECK(j.notes.empty());
  CHECK(p.rank == 1);
  CHECK(j.rank == 1);
  CHECK(p.version == "2.10");
  CHECK(j.version == "2.10");
  REQUIRE(p.records.size() == 4);
  REQUIRE(j.records.size() == 4);
  for (std::size_t i = 0; i < 4; ++i) {
    CHECK(p.records[i].seq == j.records[i].seq);
    CHECK(p.records[i].op == j.records[i].op);
    CHECK(p.records[i].numel_in == j.records[i].numel_in);
    CHECK(p.records[i].state == j.records[i].state);
    CHECK(p.records[i].group == j.records[i].group);
  }
  const Record& last = p.records.back();
  CHECK(last.op_name() == "all_reduce");
  CHECK(last.seq == 4);
  CHECK(last.numel_in == 262144);
  CHECK(last.dtype == "Float");
  CHECK(last.state == State::Started);
  CHECK(last.group.name == "0");
  CHECK(last.group.desc == "default_pg");
  CHECK(last.group.ranks == std::vector<int>{0, 1});
  // Frames only in the pickle (dump_json leaves them out); the call site is the user's line.
  REQUIRE(last.call_site());
  CHECK(last.call_site()->file == "/home/user/train.py");
  CHECK(last.call_site()->line == 127);
  CHECK(j.records.back().frames.empty());
}

TEST_CASE("flight recorder: each hang's first divergence, kind and ranks") {
  struct Case {
    const char* dir;
    DivergenceKind kind;
    std::uint64_t seq;
    std::string group;
  };
  for (const Case& c : {Case{"missing_rank", DivergenceKind::MissingRank, 4, "0"},
                        Case{"op_mismatch", DivergenceKind::OpMismatch, 4, "0"},
                        Case{"size_mismatch", DivergenceKind::SizeMismatch, 4, "0"},
                        Case{"order_deadlock", DivergenceKind::OrderDeadlock, 2, "1"}}) {
    for (const char* form : {"nccl_trace_rank", "nccl_trace_json"}) {
      CAPTURE(c.dir, form);
      const auto m = match(read_dir(kDir / "reconstructed" / c.dir, form));
      REQUIRE(!m.divergences.empty());
      const Divergence& d = m.divergences.front();
      CHECK(d.kind == c.kind);
      CHECK(d.seq == c.seq);
      CHECK(d.group.name == c.group);
      CHECK(m.ranks == std::vector<int>{0, 1});
      const auto f = findings(m);
      REQUIRE(!f.empty());
      CHECK(f.front().title.find("seq " + std::to_string(c.seq)) != std::string::npos);
      CHECK(f.front().title.find(std::string(to_string(c.kind))) != std::string::npos);
      if (c.kind == DivergenceKind::MissingRank) {
        CHECK(d.waiting == std::vector<int>{0});
        CHECK(d.absent == std::vector<int>{1});
        CHECK(f.front().title.find("rank(s) 1 never entered") != std::string::npos);
      }
      if (c.kind == DivergenceKind::OrderDeadlock) {
        CHECK(d.waiting == std::vector<int>{0, 1});
        REQUIRE(d.sides.size() == 2);
        CHECK(d.sides[0].group.name == "1");
        CHECK(d.sides[1].group.name == "2");
        CHECK(d.what.find("rank 0 waits in group 1 seq 2") != std::string::npos);
        CHECK(d.what.find("rank 1 waits in group 2 seq 2") != std::string::npos);
      }
      if (std::string(form) == "nccl_trace_rank") { // each side's Python line, from the frames
        for (const Side& s : d.sides) {
          if (s.entered) {
            REQUIRE(s.call_site);
            CHECK(s.call_site->file == "/home/user/train.py");
          }
        }
      }
    }
  }
}

TEST_CASE("flight recorder: a run with no hang reads as no finding, a damaged dump as a note") {
  const auto m = match(read_dir(kDir / "reconstructed" / "healthy", "nccl_trace_rank"));
  CHECK(m.divergences.empty());
  CHECK(m.records == 8);
  CHECK(findings(m).empty());
  std::string cut = slurp(kDir / "reconstructed" / "healthy" / "nccl_trace_rank_0");
  cut.resize(cut.size() / 2);
  const auto in = read_flight_recorder(cut, "fr/nccl_trace_rank_0");
  CHECK(in.damaged);
  REQUIRE(!in.notes.empty());
  CHECK(in.notes.front().starts_with("unreadable pickle: offset "));
  CHECK(in.records.empty());
  const auto js = read_flight_recorder("{\"version\": \"2.10\", \"entries\": [", "x_rank_1.json");
  CHECK(js.damaged);
  CHECK(js.notes.front().find("unreadable JSON") != std::string::npos);
}

TEST_CASE("nccl log: init lines, COLL lines and the watchdog's timeout lines") {
  const auto in = read_file(kDir / "logs" / "nccl_debug_rank1.log");
  CHECK(in.source == Source::NcclLog);
  CHECK(in.host == "gpu-node-7");
  CHECK(in.pid == 31337);
  REQUIRE(in.communicators.size() == 1);
  const Communicator& c = in.communicators.front();
  CHECK(c.rank == 1);
  CHECK(c.nranks == 2);
  CHECK(c.comm_id == "0x9d2a5e0b1c7f4a33");
  CHECK(c.bus_id == "2a000");
  REQUIRE(in.records.size() == 3);
  CHECK(in.records[0].op == "AllReduce");
  CHECK(in.records[0].seq == 1);
  CHECK(in.records[2].seq == 3);
  CHECK(in.records[2].numel_in == 1024);
  CHECK(in.records[2].dtype == "Float32");
  CHECK(in.records[2].rank == 1);
  CHECK(in.records[2].group.name == "0x9d2a5e0b1c7f4a33");

  const auto w = read_file(kDir / "logs" / "watchdog.log");
  REQUIRE(w.records.size() == 3);
  CHECK(w.records[0].state == State::TimedOut);
  CHECK(w.records[0].seq == 4);
  CHECK(w.records[0].op == "allreduce");
  CHECK(w.records[0].numel_in == 1024);
  CHECK(w.records[0].timeout_ms == 20000);
  CHECK(w.records[0].rank == 0);
  CHECK(w.records[0].group.name == "0");
  CHECK(w.records[0].group.desc == "default_pg");
  CHECK(w.records[1].rank == 3);
  CHECK(w.records[1].group.name == "1");
  CHECK(w.records[2].rank == 1); // the group from the line's own prefix
  CHECK(w.records[2].group.name == "2");
  CHECK(w.records[2].group.desc == "tp_group");
  CHECK(w.records[2].op == "reduce_scatter");
  CHECK(w.records[2].numel_out == 2048);
}

TEST_CASE("nccl log: two ranks' COLL lines name the rank that stopped launching") {
  const auto m = match(read_dir(kDir / "logs", "nccl_debug_rank"));
  REQUIRE(!m.divergences.empty());
  const Divergence& d = m.divergences.front();
  CHECK(d.kind == DivergenceKind::MissingRank);
  CHECK(d.seq == 4);
  CHECK(d.waiting == std::vector<int>{0});
  CHECK(d.absent == std::vector<int>{1});
}

TEST_CASE("ncclras: text and JSON answers give each communicator's lagging ranks") {
  const auto t = read_file(kDir / "ras" / "mismatch.txt");
  CHECK(t.source == Source::RasText);
  CHECK(t.version == "2.27.5+cuda12.9");
  REQUIRE(t.ras.size() == 1);
  CHECK(t.ras[0].comm_hash == "8b2f0e4d91c3a6f7");
  CHECK(t.ras[0].status == "MISMATCH");
  REQUIRE(t.ras[0].ranks.size() == 2);
  CHECK(t.ras[0].ranks[1].rank == 1);
  CHECK(t.ras[0].ranks[1].count == 3);
  CHECK(t.ras[0].ranks[1].pid == 31337);
  const auto tm = match({t});
  REQUIRE(tm.divergences.size() == 1);
  CHECK(tm.divergences[0].kind == DivergenceKind::MissingRank);
  CHECK(tm.divergences[0].waiting == std::vector<int>{0});
  CHECK(tm.divergences[0].absent == std::vector<int>{1});
  CHECK(tm.divergences[0].seq == 4);

  const auto j = read_file(kDir / "ras" / "op_mismatch.json");
  CHECK(j.source == Source::RasJson);
  const auto jm = match({j});
  REQUIRE(jm.divergences.size() == 1);
  CHECK(jm.divergences[0].kind == DivergenceKind::OpMismatch);
  CHECK(jm.divergences[0].what.find("rank 0 launched AllReduce #4") != std::string::npos);
  CHECK(jm.divergences[0].what.find("rank 1 launched AllGather #1") != std::string::npos);
}

TEST_CASE("matching: a rank with no record of a group is absent only if its record is whole") {
  // Group 1 = ranks 0 and 1 (pg_config); rank 0 waits in its seq 1, rank 1 has records of the
  // default group only. Whole (record_id 0 kept): rank 1 never entered group 1. Wrapped (its
  // oldest record_id is 500): group 1's entries may have been dropped, so nothing is said.
  auto record = [](int rank, const char* group, std::uint64_t seq, std::uint64_t id, State st) {
    Record r;
    r.rank = rank;
    r.group.name = group;
    r.group.ranks = {0, 1};
    r.seq = seq;
    r.record_id = id;
    r.op = "nccl:all_reduce";
    r.numel_in = 8;
    r.state = st;
    return r;
  };
  for (std::uint64_t oldest : {std::uint64_t{0}, std::uint64_t{500}}) {
    CAPTURE(oldest);
    Input r0;
    r0.records = {record(0, "0", 1, 0, State::Completed), record(0, "1", 1, 1, State::Started)};
    Input r1;
    r1.records = {record(1, "0", 1, oldest, State::Completed)};
    const auto m = match({r0, r1});
    if (oldest == 0) {
      REQUIRE(m.divergences.size() == 1);
      CHECK(m.divergences[0].kind == DivergenceKind::MissingRank);
      CHECK(m.divergences[0].group.name == "1");
      CHECK(m.divergences[0].absent == std::vector<int>{1});
    } else {
      CHECK(m.divergences.empty());
    }
  }
}

TEST_CASE("flight recorder: a retired entry that never completed timed out") {
  // The JSON form as dump_json writes it (keys sorted, no frames), one entry per state.
  const std::string dump =
      R"({"comm_lib_version":"2.27.5","entries":[)"
      R"({"collective_seq_id":1,"input_dtypes":["Float"],"input_sizes":[[8]],"is_p2p":false,)"
      R"("op_id":1,"output_dtypes":["Float"],"output_sizes":[[8]],"p2p_seq_id":0,"pg_id":0,)"
      R"("process_group":["0","default_pg"],"profiling_name":"nccl:all_reduce","record_id":0,)"
      R"("retired":true,"state":"completed","timeout_ms":20000},)"
      R"({"collective_seq_id":2,"input_dtypes":["Float"],"input_sizes":[[8]],"is_p2p":false,)"
      R"("op_id":2,"output_dtypes":["Float"],"output_sizes":[[8]],"p2p_seq_id":0,"pg_id":0,)"
      R"("process_group":["0","default_pg"],"profiling_name":"nccl:all_reduce","record_id":1,)"
      R"("retired":true,"state":"started","timeout_ms":20000},)"
      R"({"collective_seq_id":3,"input_dtypes":["Float"],"input_sizes":[[8]],"is_p2p":false,)"
      R"("op_id":3,"output_dtypes":["Float"],"output_sizes":[[8]],"p2p_seq_id":0,"pg_id":0,)"
      R"("process_group":["0","default_pg"],"profiling_name":"nccl:all_reduce","record_id":2,)"
      R"("retired":false,"state":"scheduled","timeout_ms":20000}],)"
      R"("pg_config":{"0":{"desc":"default_pg","name":"0","ranks":"[0, 1]"}},"version":"2.10"})";
  REQUIRE(detect(dump) == Source::FlightRecorderJson);
  const auto in = read_flight_recorder(dump, "dumps/rank_0.json");
  REQUIRE(in.records.size() == 3);
  CHECK(in.rank == 0);
  CHECK(in.records[0].state == State::Completed);
  CHECK(in.records[1].state == State::TimedOut);
  CHECK(in.records[2].state == State::Scheduled);
  CHECK(in.notes.empty());
}

TEST_CASE("ncclras: a communicator with ranks that did not answer names them") {
  // The INCOMPLETE block as NCCL src/ras/client_support.cc prints it (rasClientRunComms).
  const std::string text = "NCCL version 2.27.5+cuda12.9 compiled with CUDA 12.9\n"
                           "\nJob summary\n===========\n\n"
                           "Warnings\n========\n\n"
                           "#0-0 (00000000deadbeef) INCOMPLETE\n"
                           "  Missing communicator data from 1 rank\n"
                           "  Rank 3 -- GPU 3 managed by process 777 on node gpu-node-2\n\n";
  const auto in = read_ras(text, "ras.txt");
  REQUIRE(in.ras.size() == 1);
  CHECK(in.ras[0].status == "INCOMPLETE");
  REQUIRE(in.ras[0].ranks.size() == 1);
  CHECK(in.ras[0].ranks[0].missing);
  CHECK(in.ras[0].ranks[0].pid == 777);
  CHECK(in.ras[0].ranks[0].host == "gpu-node-2");
  const auto m = match({in});
  REQUIRE(m.divergences.size() == 1);
  CHECK(m.divergences[0].kind == DivergenceKind::MissingRank);
  CHECK(m.divergences[0].absent == std::vector<int>{3});
  CHECK(m.divergences[0].what.find("rank 3 did not answer RAS") != std::string::npos);
}

TEST_CASE("ncclras, asked live: a rank our debugger held stopped is not counted missing") {
  // Seen on two H200s (issue 40): a healthy two-rank job read `collective-missing-rank` because
  // RAS was asked while rocplay's debuggers held the ranks stopped.
  const std::string text = "Warnings\n========\n\n"
                           "#0-0 (5af3d3469c17b308) INCOMPLETE\n"
                           "  Missing communicator data from 2 ranks\n"
                           "  Rank 1 -- GPU 1 managed by process 2039 on node n1\n"
                           "  Rank 2 -- GPU 2 managed by process 2040 on node n1\n";
  auto in = read_ras(text, "ras.txt");
  REQUIRE(in.ras.at(0).ranks.size() == 2);
  const auto notes = set_aside_unanswered(in, {2038, 2039});
  REQUIRE(notes.size() == 1);
  CHECK(notes[0].find("rank 1 (pid 2039) did not answer RAS while rocplay's debuggers") !=
        std::string::npos);
  // Rank 2's process was not examined: its silence still counts.
  REQUIRE(in.ras[0].ranks.size() == 1);
  CHECK(in.ras[0].ranks[0].rank == 2);
  const auto m = match({in});
  REQUIRE(m.divergences.size() == 1);
  CHECK(m.divergences[0].absent == std::vector<int>{2});

  auto ours = read_ras(text, "ras.txt");
  set_aside_unanswered(ours, {2039, 2040});
  CHECK(match({ours}).divergences.empty());
}

TEST_CASE("ncclras, asked live: an answer about another job's processes is not used") {
  const std::string text = "Warnings\n========\n\n"
                           "#0-0 (8b2f0e4d91c3a6f7) MISMATCH\n"
                           "  Communicator ranks have different AllReduce operation counts\n"
                           "  Rank 0 has launched up to operation 4 -- GPU 0 managed by process "
                           "31336 on node n1\n"
                           "  Rank 1 has launched up to operation 3 -- GPU 1 managed by process "
                           "31337 on node n1\n";
  auto in = read_ras(text, "ras.txt");
  REQUIRE(match({in}).divergences.size() == 1);
  const auto notes = set_aside_unanswered(in, {500, 501});
  REQUIRE(notes.size() == 1);
  CHECK(notes[0].find("31336, 31337, none of them examined") != std::string::npos);
  CHECK(match({in}).divergences.empty());
  // The same answer about our own ranks stands: a count that differs is not a silence.
  auto own = read_ras(text, "ras.txt");
  CHECK(set_aside_unanswered(own, {31336, 31337}).empty());
  CHECK(match({own}).divergences.size() == 1);
}

TEST_CASE("flight recorder: the user's line is kept below a deep library stack") {
  // 30 frames of PyTorch's own plumbing (FSDP, DDP) before the user's: the kept frames are the
  // innermost 16 and the user's line.
  std::string frames;
  for (int i = 0; i < 30; ++i) {
    frames += R"({"filename":"/site-packages/torch/distributed/fsdp/_runtime_utils.py","line":)" +
              std::to_string(100 + i) + R"(,"name":"f"},)";
  }
  frames += R"({"filename":"/home/user/train.py","line":42,"name":"step"})";
  const std::string dump =
      R"({"entries":[{"collective_seq_id":1,"frames":[)" + frames +
      R"(],"input_sizes":[[8]],"input_dtypes":["Float"],"output_sizes":[[8]],)"
      R"("output_dtypes":["Float"],"process_group":["0","default_pg"],)"
      R"("profiling_name":"nccl:all_reduce","record_id":0,"state":"started"}],)"
      R"("pg_config":{},"version":"2.10"})";
  const auto in = read_flight_recorder(dump, "trace_rank_0");
  REQUIRE(in.records.size() == 1);
  CHECK(in.records[0].frames.size() == 17);
  REQUIRE(in.records[0].call_site());
  CHECK(in.records[0].call_site()->file == "/home/user/train.py");
  CHECK(in.records[0].call_site()->line == 42);
}
