// Where a case came from (host, pid, rank) and THE rank rule: every reader and driver that puts a
// rank on a process, an input or a log line asks here, so one process is the same rank to all of
// them. Before this file the rule was written seven times and the copies disagreed (a
// `(Worker_TP3 pid=7)` line was rank 3 to the agent-log reader and rank-less to the crash reader;
// a live fan-out read RANK, LOCAL_RANK, OMPI_COMM_WORLD_RANK and SLURM_PROCID, a post-mortem RANK
// alone; the agent log and the post-mortem read ranks out of file names by different patterns).
//
//   auto p = source::launcher_prefix("(Worker_TP3 pid=7) RuntimeError: ...");
//   // p->rank == 3, p->pid == 7, line.substr(p->length) == "RuntimeError: ..."
//   auto r = source::rank_from_env(env);            // RANK, LOCAL_RANK, ... first that is a number
//   auto f = source::rank_in_file_name("out/hang_rank3.mi");  // {"out/hang_rank#.mi", 3}
//
// Layer: src/core/ (library rocplay_core; docs/architecture.md). Pure functions, no I/O.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace rocplay::source {

// Which rule gave a case its rank, strongest first: the order a driver tries them in.
enum class RankRule : std::uint8_t {
  None,
  Pattern,     // --rank-from: the first group of the user's regex over the input's path
  Meta,        // the recording's meta `rank` (the live run's own decision, recorded)
  Environment, // RANK, LOCAL_RANK, OMPI_COMM_WORLD_RANK, SLURM_PROCID in the process environment
  Prefix,   // a launcher prefix on the log line: `[rank3]:`, `(Worker_TP3 pid=7)`, `[1,3]<stderr>:`
  FileName, // `hang_rank3.mi`, `worker-2.log`
  Device,   // `cuda:N` (SGLang and vLLM put tensor-parallel rank N on device N of its node)
  Order,    // the order the inputs or pids were given in
};
// `--rank-from`, `meta`, `environment`, `launcher prefix`, `file name`, `device`, `input order`;
// empty for None.
std::string_view to_string(RankRule rule);

// Where one case comes from.
struct Source {
  std::string host;                // empty: this machine (live) or unknown (offline)
  std::optional<std::int64_t> pid; // the examined process
  std::optional<int> rank;
  RankRule rank_rule = RankRule::None;
  std::string path;   // an offline input: its path (`-` for stdin); empty when live
  std::string member; // a member inside the input (`#3` of a JSONL file); usually empty

  // Sets rank and rule unless a stronger rule already gave one (RankRule's order); true when set.
  bool offer_rank(std::optional<int> r, RankRule rule);
};

// The environment variables that carry a rank, in the order they are read: RANK (torchrun, vLLM,
// SGLang), LOCAL_RANK, OMPI_COMM_WORLD_RANK, SLURM_PROCID.
inline constexpr std::string_view kRankVariables[] = {"RANK", "LOCAL_RANK", "OMPI_COMM_WORLD_RANK",
                                                      "SLURM_PROCID"};

// A rank as text: 1 to 6 decimal digits from end to end (`3x`, ` 3`, `-1` are no rank).
std::optional<int> parse_rank(std::string_view text);

// The first of kRankVariables present in `env` whose value is a rank (parse_rank); a variable
// present but not a number is passed over for the next one.
std::optional<int> rank_from_env(const std::map<std::string, std::string>& env);

// `cuda:N` -> N (N < 4096); nothing for any other device name.
std::optional<int> rank_from_device(std::string_view device);

// A launcher's per-process prefix at the start of a log line:
//   `[rank3]: `             torchrun --tee, torch.distributed
//   `[1,3]<stderr>:`        OpenMPI --tag-output (rank 3; also <stdout>: and <stddiag>:)
//   `(VllmWorker rank=3 pid=12345) `, `(Worker_TP3 pid=7) `, `(EngineCore_0 pid=9) `
//                           vLLM / SGLang (a parenthesised prefix names `pid=` or `rank=`; the
//                           rank is `rank=N`, else the N of `TP<N>`)
struct LauncherPrefix {
  std::size_t length = 0; // bytes of the line the prefix takes, with one space after it
  std::string_view key;   // the prefix as written, without the space: the stream's name
  std::optional<int> rank;
  std::optional<std::int64_t> pid;
};
// nullopt when the line opens with no launcher prefix. `line` is one line, without its end.
std::optional<LauncherPrefix> launcher_prefix(std::string_view line);

// A rank in a file name: a word that says rank right before the number (`rank3`, `rank_3`, `r3`,
// `tp3`, `worker-3`, `gpu3`, `local_rank3`, any case), else a trailing `-N`/`_N`, in the name up to
// its first dot. Returns the path with the number replaced by `#` (the key that groups the ranks
// of one event: `out/hang_rank#.mi`) and the number.
std::optional<std::pair<std::string, int>> rank_in_file_name(const std::string& path);

} // namespace rocplay::source
