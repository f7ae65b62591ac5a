// The job's own records of its collectives, read after the fact, and what they say across ranks
// (docs/collectives.md):
//
//  - PyTorch Flight Recorder dumps (TORCH_NCCL_TRACE_BUFFER_SIZE + TORCH_NCCL_DUMP_ON_TIMEOUT, or
//    `_dump_nccl_trace[_json]()`): one file per rank, pickle (pickle.hpp) or JSON, dump format
//    versions 2.x as PyTorch 2.5 to 2.11 write them;
//  - NCCL/RCCL `NCCL_DEBUG=INFO` logs: communicator init lines, per-collective `COLL` lines, and
//    PyTorch's watchdog timeout lines (`WorkNCCL(SeqNum=..., OpType=...)`) in the same streams;
//  - saved `ncclras` answers (NCCL 2.24+ RAS), text or JSON: each communicator's ranks, their
//    operation counts and the ranks missing.
//
// Each becomes per-rank Records; `match` lines the records of all ranks up by process group and
// sequence id and names the first place where they differ. Nothing here opens files or runs
// anything; input is untrusted and bounded (Limits).
#pragma once

#include "rocplay/core/finding.hpp"

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace rocplay::collectives {

struct Limits {
  std::size_t max_records = 200000; // per input; the rest are counted
  std::size_t max_frames = 16;      // Python frames kept per record, innermost first
  std::size_t max_text = 512;       // bytes of one kept string (names, file paths)
  std::size_t max_line_bytes = 64 * 1024;
  std::size_t max_groups = 4096; // process groups / communicators per input
  std::size_t max_notes = 50;
};

enum class Source : std::uint8_t {
  FlightRecorderPickle,
  FlightRecorderJson,
  NcclLog, // NCCL_DEBUG lines, PyTorch watchdog lines
  RasText, // `ncclras` text
  RasJson, // `ncclras -f json`
};
std::string_view to_string(Source source);

enum class State : std::uint8_t {
  Unknown,
  Scheduled, // enqueued, its kernel not seen starting
  Started,   // its kernel started, not seen completing
  Completed,
  TimedOut, // the watchdog said so
};
std::string_view to_string(State state);

struct Frame {
  std::string function;
  std::string file;
  std::uint32_t line = 0;
};

struct Group {
  std::string name;       // process group name (`0`, `1`, a hash), or NCCL comm hash
  std::string desc;       // `default_pg`, `undefined`, a user description
  std::vector<int> ranks; // global ranks, when recorded
  bool operator==(const Group&) const = default;
};

// One collective (or p2p op) as one rank recorded it.
struct Record {
  int rank = -1; // global rank (-1: unknown)
  Group group;
  std::optional<std::int64_t> pg_id;
  std::uint64_t seq = 0; // collective_seq_id (p2p_seq_id when p2p)
  bool p2p = false;
  std::string op; // `all_reduce`, `_allgather_base`, `send 0->1`, `ALLREDUCE`
  std::optional<std::int64_t> numel_in;
  std::optional<std::int64_t> numel_out;
  std::vector<std::vector<std::int64_t>> input_sizes;
  std::vector<std::vector<std::int64_t>> output_sizes;
  std::string dtype; // first input dtype (`Float`), else first output
  State state = State::Unknown;
  std::vector<Frame> frames; // innermost first, as PyTorch records them
  std::optional<std::int64_t> timeout_ms;
  Source source = Source::FlightRecorderPickle;
  std::string file;            // the input it came from
  std::size_t line = 0;        // its line, for text inputs
  std::uint64_t record_id = 0; // Flight Recorder's record_id
  // The source records every collective of its rank (a Flight Recorder dump, NCCL COLL lines),
  // so a seq missing from it was never entered. A watchdog line says where one rank is stuck
  // and nothing about what it did not enter.
  bool complete_history = true;
  // The user's line: the first frame outside torch/distributed and the Python runtime.
  const Frame* call_site() const;
  std::string op_name() const; // `all_reduce` from `nccl:all_reduce`, lower case
};

// A communicator as NCCL's init line or RAS names it.
struct Communicator {
  std::string comm_id;  // commId hash (`0x...`) or RAS comm hash
  std::string comm_ptr; // `0x55d...` from the init line
  int rank = -1;        // rank within the communicator
  int nranks = 0;
  std::string bus_id;
  std::string host;
  std::optional<std::int64_t> pid;
  std::optional<int> cuda_dev;
  std::size_t line = 0;
};

// What RAS said about one communicator: per-rank operation counts and the ranks missing.
struct RasComm {
  std::string comm_hash;
  std::string status; // `MISMATCH`, `INCOMPLETE`, `ERROR`, `OK`
  int nranks = 0;
  struct RankCount {
    int rank = -1;
    std::string op;                     // `AllReduce`
    std::optional<std::uint64_t> count; // launched up to operation N (0: none launched)
    std::optional<std::int64_t> pid;
    std::string host;
    bool missing = false; // the rank's process did not answer
  };
  std::vector<RankCount> ranks;
};

// Everything one input held.
struct Input {
  std::string file;
  Source source = Source::FlightRecorderPickle;
  std::optional<int> rank; // the dump's rank (file name suffix, as fr_trace reads it)
  std::optional<std::int64_t> pid;
  std::string host;
  std::string version; // dump format version (`2.10`), NCCL version
  std::string comm_lib_version;
  std::vector<Group> groups; // pg_config
  std::vector<Record> records;
  std::vector<Communicator> communicators;
  std::vector<RasComm> ras;
  std::vector<std::string> notes; // problems found while reading, each with its position
  bool damaged = false;           // the file could not be read whole
  std::uint64_t records_dropped = 0;
  bool empty() const { return records.empty() && communicators.empty() && ras.empty(); }
};

// By content: a pickle whose first strings are a Flight Recorder dump's keys, JSON with
// `pg_config` and `version`, `ncclras` text or JSON, or text with NCCL_DEBUG/watchdog lines.
std::optional<Source> detect(std::string_view head);

// Readers. `file` names the input in records and notes; its name's trailing number is the rank
// of a Flight Recorder dump (as PyTorch's fr_trace reads it) when `rank` is not given.
Input read_flight_recorder(std::string_view data, const std::string& file,
                           std::optional<int> rank = std::nullopt, const Limits& limits = {});
Input read_nccl_log(std::string_view text, const std::string& file,
                    std::optional<int> rank = std::nullopt, const Limits& limits = {});
Input read_ras(std::string_view text, const std::string& file, const Limits& limits = {});

// A live RAS query runs while rocplay's debuggers hold the job's ranks stopped, so "did not
// answer" may only mean "stopped by us", and a host with two jobs on the default port may answer
// for the other one. Removes from `ras` (an answer read with read_ras) every non-answering rank
// whose process is one of `examined` or is not named, and every communicator when the answer names
// processes and none is examined. Returns what was set aside, one line each, for the notes.
std::vector<std::string> set_aside_unanswered(Input& ras,
                                              const std::vector<std::int64_t>& examined);
Input read(std::string_view data, Source source, const std::string& file,
           std::optional<int> rank = std::nullopt, const Limits& limits = {});

// The rank a Flight Recorder file name ends in (`nccl_trace_rank_3` -> 3).
std::optional<int> rank_from_file_name(std::string_view file);

// ---- Cross-rank matching ----

enum class DivergenceKind : std::uint8_t {
  MissingRank,   // some ranks entered seq N of a group, others never did
  OpMismatch,    // the ranks entered seq N with different collectives
  SizeMismatch,  // same collective, different element counts or shapes
  DtypeMismatch, // same collective and size, different dtypes
  OrderDeadlock, // each rank waits in a different group's collective the other has not entered
};
std::string_view to_string(DivergenceKind kind);

// One rank's side of a divergence: where it is in the group, and its Python line.
struct Side {
  int rank = -1;
  Group group;
  std::uint64_t seq = 0; // the seq it is at (entered), or the last it completed
  bool entered = false;  // false: this rank never recorded `seq` (it is behind)
  std::string op;
  std::optional<std::int64_t> numel;
  std::string shape; // `[[1024]]`
  std::string dtype;
  State state = State::Unknown;
  std::optional<Frame> call_site;
  std::string file; // the record's input
  Source source = Source::FlightRecorderPickle;
};

// Where the ranks first differ. A clean data type the wait-for graph can take as rank and
// collective nodes: `waiting` ranks wait in (group, seq) for `absent` ranks (missing rank), or
// the sides disagree (mismatch), or the sides form a cycle over two groups (order deadlock).
struct Divergence {
  DivergenceKind kind = DivergenceKind::MissingRank;
  Group group;                      // the group of the first divergence
  std::uint64_t seq = 0;            // the first diverging sequence id
  std::vector<int> waiting;         // ranks that entered seq and wait in it
  std::vector<int> absent;          // ranks that never entered it (MissingRank, OrderDeadlock)
  std::vector<Side> sides;          // one per rank involved, in rank order
  std::string what;                 // one line: what differs
  std::vector<std::string> sources; // which record said what (`rank 0: fr_rank0 (Flight Recorder)`)
};

struct MatchOptions {
  std::size_t max_divergences = 8; // independent first divergences reported
};

struct Matched {
  std::vector<Divergence> divergences; // the first per group; order deadlocks first
  std::vector<int> ranks;              // ranks whose records were read
  std::size_t groups = 0;              // process groups compared
  std::size_t records = 0;
  std::vector<std::string> notes; // e.g. a rank with no dump
};

Matched match(const std::vector<Input>& inputs, const MatchOptions& options = {});

// Findings for the report: one per divergence, the first naming the first diverging sequence
// id, its kind and the ranks in its title. `collective-*` ids (docs/heuristics.md).
std::vector<Finding> findings(const Matched& matched);

nlohmann::json to_json(const Input& input);
nlohmann::json to_json(const Divergence& divergence);

} // namespace rocplay::collectives

namespace rocplay::collectives {

// ---- Live: asking a node's NCCL RAS service (NCCL 2.24+), no ptrace ----

struct RasQueryOptions {
  std::string host = "127.0.0.1";
  int port = 28028;                          // NCCL_RAS_CLIENT_PORT (NCCL_RAS_ADDR overrides it)
  std::chrono::milliseconds handshake{1000}; // connect + protocol exchange: a port that does not
                                             // answer costs at most this
  std::chrono::milliseconds answer{8000};    // the status: RAS gathers from every process first
  int ras_timeout_s = 5;                     // `TIMEOUT n`: how long RAS waits for its peers
  bool verbose = true;                       // `VERBOSE STATUS`: every outlier rank named
  std::size_t max_bytes = 4u << 20;
};

struct RasAnswer {
  bool answered = false;
  std::string text;  // the status as `ncclras` prints it (read it with read_ras)
  std::string error; // why there is none: refused, no answer within the handshake, cut off
  double seconds = 0;
};

// The ncclras client's exchange (NCCL src/ras/client.cc): `CLIENT PROTOCOL 2` -> `SERVER
// PROTOCOL n`, `TIMEOUT n` -> `OK`, `[VERBOSE ]STATUS` -> the status, to EOF.
RasAnswer ask_ras(const RasQueryOptions& options = {});

} // namespace rocplay::collectives
