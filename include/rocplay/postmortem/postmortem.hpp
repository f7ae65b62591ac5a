// Batch post-mortems: snapshots and findings from recorded transcripts, rocplay JSON output and
// rocm-debug-agent logs, in parallel, in a deterministic order, with bounded memory. Never starts
// a debugger and never runs anything.
#pragma once

#include "rocplay/case/case.hpp"
#include "rocplay/heuristics/heuristics.hpp"
#include "rocplay/mi/transcript.hpp"
#include "rocplay/report/postmortem_result.hpp"

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace rocplay::postmortem {

struct Options {
  std::vector<std::string> paths;          // files, directories (recursive) and globs
  std::optional<std::string> rank_pattern; // --rank-from: ECMAScript regex, first group = rank
  unsigned jobs = 0;                       // 0: all cores
  mi::Limits limits;
  std::size_t max_ranked_snapshots = 1024; // kept for cross-rank analysis; beyond it, a warning
  // --one-event: every input is a rank of one event; ranks without meta or --rank-from are the
  // order the inputs were given in.
  bool one_event = false;
  // The findings' full structured details (heuristics::Context::details): only a report that
  // prints them (JSON, JSON Lines, SARIF) needs them; a text report reads the dispatch's id and
  // kernel, which are kept either way.
  bool details = true;
};

struct Progress {
  std::size_t done = 0;
  std::size_t total = 0;
  std::uint64_t bytes = 0;
};

// Expands paths into files in a stable order (directories sorted, recursive). Paths that match
// nothing come back as unreadable results from run().
std::vector<std::string> expand_inputs(const std::vector<std::string>& paths,
                                       std::vector<std::string>& missing);
// The same, naming what is found but not read, with why: a dangling symbolic link, or a FIFO,
// socket or device inside a directory (named on the command line, a FIFO is read). `-` stays
// `-`: standard input.
std::vector<std::string> expand_inputs(const std::vector<std::string>& paths,
                                       std::vector<std::string>& missing,
                                       std::vector<std::pair<std::string, std::string>>& rejected);

// The same, and what a directory walk found but left out, with why: documentation (Markdown,
// reStructuredText, HTML, a README, ...: documentation_kind), programs' sources (source_kind)
// and empty files. Named on the
// command line, such a file is read.
std::vector<std::string> expand_inputs(const std::vector<std::string>& paths,
                                       std::vector<std::string>& missing,
                                       std::vector<std::pair<std::string, std::string>>& rejected,
                                       std::vector<std::pair<std::string, std::string>>& skipped);
// What kind of documentation a file name says it is (`Markdown`, `HTML`, `a README file`), or
// nullopt for a name that may hold evidence.
std::optional<std::string> documentation_kind(const std::string& path);
// The language of a program's source file by its extension (`Python`, `C++`, `CUDA`), or nullopt.
std::optional<std::string> source_kind(const std::string& path);

// A rank in a file name (`hang_rank3.mi`, `rank_1`, `r3`, `tp2`, `worker-5`, a trailing `-N`):
// the file name with the number replaced by `#` (the template files of one event share) and the
// number. nullopt when the name holds none of these.
std::optional<std::pair<std::string, int>> rank_in_file_name(const std::string& path);

// Reads one input. Never throws for bad input: problems become its status and warnings.
// One input as a Case of the incident model, light: its source (path, member, pid, rank and the
// rule that told it), status, error, its own exit code, and where it stands (Case::at), without
// its snapshot, so a batch keeps one per input at little cost.
Case case_of(const InputResult& result);
// Whether the input's contents count in the report: a snapshot (recording, MI log, console log,
// rocplay JSON), an agent log, findings or crash evidence; not an empty, unreadable or unknown
// file.
bool gave_evidence(const InputResult& result);

std::vector<InputResult> analyse_file(const std::string& path, const Options& options);

// Runs the batch. `on_result` gets every result in input order, from the calling thread.
// `on_progress` (optional) is called from the calling thread as results come in.
Summary run(const Options& options, const std::function<void(const InputResult&)>& on_result,
            const std::function<void(const Progress&)>& on_progress = {});

} // namespace rocplay::postmortem
