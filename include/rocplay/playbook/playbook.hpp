// YAML playbooks: named, validated sequences of debugger steps run against a live process.
//
//   auto pb = playbook::find_playbook("hang-triage", {});       // validated up front
//   session::Session session(session::find_debugger(""), {});
//   auto driver = playbook::make_driver(session);
//   auto result = playbook::run(pb, *driver, {.pid = 4242});    // always detaches
//
// Loading checks everything before anything runs: keys (with the nearest valid key for a
// misspelling), step shapes, conditions, `${...}` references and, for playbooks that are not
// built in, the commands that may run code or touch files (refused unless allowed). Errors carry
// FILE:LINE:COLUMN. A playbook that fails to load never attaches (ExitCode::BadPlaybook).
// docs/playbooks.md is the reference for the format.
#pragma once

#include "rocplay/case/run_result.hpp"
#include "rocplay/core/error.hpp"
#include "rocplay/heuristics/heuristics.hpp"
#include "rocplay/heuristics/progress.hpp"
#include "rocplay/mi/transcript.hpp"
#include "rocplay/session/session.hpp"
#include "rocplay/snapshot/snapshot.hpp"

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace rocplay::playbook {

// Generated from playbooks/*.yaml (scripts/embed_playbooks.cmake): (name, YAML text), by name.
const std::vector<std::pair<std::string_view, std::string_view>>& builtin_playbook_sources();

// What variables, registered results and loop items hold. Integers and addresses are kept apart
// from strings so that substitution can insert them bare and quote everything else.
class Value {
public:
  enum class Kind : std::uint8_t { Null, Bool, Int, Address, String, List, Map };
  using Entries = std::vector<std::pair<std::string, Value>>;

  Value() = default;
  static Value boolean(bool b);
  static Value integer(std::int64_t i);
  static Value address(std::uint64_t a);
  static Value string(std::string s);
  static Value list(std::vector<Value> items);
  static Value map(Entries entries);

  Kind kind() const { return kind_; }
  bool is_null() const { return kind_ == Kind::Null; }
  bool as_bool() const { return b_; }
  std::int64_t as_int() const { return i_; }
  std::uint64_t as_address() const { return u_; }
  const std::string& as_string() const { return s_; }
  const std::vector<Value>& items() const;
  const Entries& entries() const;
  // Map lookup; nullptr when absent or not a map.
  const Value* get(std::string_view key) const;
  // Truthiness for conditions: null/false/0/""/[]/{} are false.
  bool truthy() const;
  // For messages: strings quoted, addresses in hex.
  std::string repr() const;
  nlohmann::json to_json() const;

private:
  Kind kind_ = Kind::Null;
  bool b_ = false;
  std::int64_t i_ = 0;
  std::uint64_t u_ = 0;
  std::string s_;
  std::shared_ptr<const std::vector<Value>> list_;
  std::shared_ptr<const Entries> map_;
};

namespace detail {
struct ExprNode; // the parsed condition (src/playbook/expr.hpp)
}

// A `when:`, `where:`, `expect:` or `fail_when:` expression, parsed at load time. The language is
// small on purpose: literals, dotted names, comparisons, `contains`/`startswith`/`endswith`,
// and/or/not, and the functions has_mi_command(), defined() and len(). Nothing is evaluated by
// the debugger or a shell.
struct Condition {
  std::string text;
  Position position;
  std::shared_ptr<const detail::ExprNode> root;
};

// A command with `${name}` / `${name.field}` references, split at load time.
struct Template {
  struct Piece {
    bool literal = true;
    std::string text;              // literal text, or the reference as written (`thread.pc`)
    std::vector<std::string> path; // the reference split at dots
  };
  std::string text;
  Position position;
  std::vector<Piece> pieces;
};

enum class OnError : std::uint8_t { Abort, Continue };
enum class ForeachOver : std::uint8_t { Threads, Waves, Dispatches };
std::string_view to_string(ForeachOver over);

struct Step {
  StepKind kind = StepKind::Mi;
  std::string name;                    // as given, or derived from the action
  Position position;                   // of the step's first key
  Template command;                    // mi / cli
  std::optional<Condition> when;       // skipped when false
  std::vector<DebuggerKind> debuggers; // `requires:`; skipped on other debuggers
  std::string register_as;             // `register:`
  std::vector<Condition> expect;       // each must hold
  std::optional<Condition> fail_when;  // replaces the default failure test (^error)
  std::optional<std::chrono::milliseconds> timeout;
  OnError on_error = OnError::Abort;
  std::uint32_t frames = 0;                // backtrace: frame limit; info-line: frames per thread
  ForeachOver over = ForeachOver::Threads; // foreach
  std::string loop_var;                    // foreach `as:` (thread / wave / dispatch)
  std::optional<Condition> where;          // foreach filter
  std::size_t limit = 0;                   // foreach: most items visited
  std::vector<Step> body;                  // foreach `steps:`
};

// How the target is stopped for a sample: the debugger attaches and holds it for the whole
// sample, or rocplay holds it just long enough to copy its threads and the debugger reads the copy
// (session::Session::stop_by_copy; plain gdb only, the others always attach).
enum class StopMode : std::uint8_t { Attach, Copy };
std::string_view to_string(StopMode mode);
std::optional<StopMode> stop_mode_of(std::string_view text);

struct Requirements {
  std::vector<DebuggerKind> debuggers;             // empty: any
  std::map<DebuggerKind, std::string> min_version; // `13.1`
};

struct Playbook {
  std::string name;
  std::string description;
  std::string origin; // a path or `builtin:NAME`
  bool builtin = false;
  std::string source; // the YAML as loaded
  Requirements requirements;
  std::vector<std::pair<std::string, Value>> vars;  // declared, with defaults
  std::optional<std::chrono::milliseconds> timeout; // default per command
  std::vector<Step> steps;
  std::vector<Step> always;
  bool has_attach_step = false;
  bool allow_unsafe_commands = false; // loaded with --allow-unsafe-commands
  // `samples:` / `interval:`: snapshots to take, the target running `interval` between two
  // (--samples / --interval win). Unset: one sample.
  std::optional<std::uint32_t> samples;
  std::optional<std::chrono::milliseconds> interval;
  // `stop: copy`: the playbook reads only what a copy holds (threads, registers, stacks, code), so
  // plain gdb may read a copy instead of holding the target (--stop wins). Unset: attach.
  std::optional<StopMode> stop;
};
// Most samples one run may take.
inline constexpr std::uint32_t kMaxSamples = 100;

struct LoadOptions {
  bool builtin = false;               // set by the search path for compiled-in playbooks
  bool allow_unsafe_commands = false; // --allow-unsafe-commands
};

// Parses and validates. Throws Error(BadPlaybook): "FILE:LINE:COLUMN: what", hint: what to do.
Playbook load(std::string_view yaml, const std::string& origin, const LoadOptions& options = {});
// Throws Error(NoInput) when the file cannot be read, else as load().
Playbook load_file(const std::string& path, const LoadOptions& options = {});

// The user directories searched after the built-ins: ./playbooks,
// $XDG_CONFIG_HOME/rocplay/playbooks
// (~/.config when unset), then each directory of $ROCPLAY_PLAYBOOK_PATH (colon-separated).
std::vector<std::string> search_dirs();

struct Entry {
  std::string name;
  std::string description;
  std::string origin; // `built-in` or the file's path
  bool builtin = false;
  std::string shadowed_by; // an earlier entry of the same name wins
  std::string error;       // it does not load: the first error
};
std::vector<Entry> list_playbooks();

struct Source {
  std::string name;
  std::string origin;
  std::string text;
  bool builtin = false;
};
// A name from the search path or a path to a .yaml/.yml file. Throws Error(BadPlaybook) for an
// unknown name (suggesting the nearest) and Error(NoInput) for an unreadable file.
Source find_source(const std::string& name_or_path);
Playbook find_playbook(const std::string& name_or_path, const LoadOptions& options = {});

// What the runner needs from a debugger: session::Session through make_driver(), or anything
// else that speaks for one (a recording being replayed, a test double).
class Driver {
public:
  virtual ~Driver() = default;
  virtual void attach(std::int64_t pid) = 0;
  virtual mi::Exchange execute(const std::string& command,
                               std::optional<std::chrono::milliseconds> timeout) = 0;
  virtual mi::Exchange console(const std::string& command,
                               std::optional<std::chrono::milliseconds> timeout) = 0;
  // Plain MI commands in order (session::Session::execute_all); by default one execute() each.
  virtual std::vector<mi::Exchange> execute_all(const std::vector<std::string>& commands,
                                                std::optional<std::chrono::milliseconds> timeout);
  virtual void detach() = 0; // idempotent, never throws
  // Once detached: ends the debugger now (session::Session::end); nothing by default.
  virtual void end() {}
  virtual bool has_mi_command(const std::string& name) const = 0;
  virtual const session::Debugger& debugger() const = 0;
  virtual const std::vector<mi::Exchange>& exchanges() const = 0;
  virtual session::TargetTimes times() const = 0;
  virtual std::vector<std::string> warnings() const = 0;
  // The target's environment variables that matter (HSA_TOOLS_LIB ...), once attached.
  virtual std::map<std::string, std::string> target_env() const { return {}; }
  // Lets the stopped target run for `interval`, then stops it again, for the next sample
  // (session::Session::run_for, `interval_start` included). Drivers that cannot throw
  // Error(Usage).
  virtual session::ResumeResult run_for(std::chrono::milliseconds interval,
                                        std::chrono::milliseconds stop_timeout,
                                        const session::IntervalStart& interval_start);
  // Takes the stops by copy (session::Session::stop_by_copy), `while_stopped` run inside each,
  // when the debugger allows it; false: the debugger attaches. Called before attach().
  virtual bool stop_by_copy(std::function<void()> /*while_stopped*/) { return false; }
  // Stops by copy: the LWPs whose stacks are byte for byte those of the sample before
  // (session::Session::unchanged_stacks); their backtraces are not asked again.
  virtual std::vector<std::int64_t> unchanged_stacks() const { return {}; }
  // Whether run_for() works; a replayed recording cannot let the target run, so a run over it
  // takes one sample.
  virtual bool can_resume() const { return false; }
  // A `!` note in the recording (sample boundaries); nothing by default.
  virtual void note(std::string_view /*text*/) {}
  // Seconds on the session's clock (the recording's time base); 0 when unknown.
  virtual double now() const { return 0; }
};
std::unique_ptr<Driver> make_driver(session::Session& session);

struct RunOptions {
  std::int64_t pid = 0;
  std::vector<std::pair<std::string, std::string>> vars; // --var k=v
  heuristics::Context context;
  // Called when a step starts (done = false) and ends (done = true); for progress lines.
  std::function<void(const StepRecord&, bool done)> progress;
  // Samples to take (the playbook's `samples:` when unset) and the time the target runs between
  // two (the playbook's `interval:`, else 2 s). 1: one snapshot, as before.
  std::optional<std::uint32_t> samples;
  std::optional<std::chrono::milliseconds> interval;
  // --stop: how each sample stops the target; unset: the playbook's `stop:`, else attach.
  std::optional<StopMode> stop;
  // How long the stop for a later sample may take before the run ends with what it has.
  std::chrono::milliseconds stop_timeout{30'000};
  // Lockstep (--pids): asked again and again while the target runs towards sample `next` (2, 3,
  // ...) until it returns the instant the interval began, the same for every target, so that
  // all are stopped together; the targets wait running, never stopped. Empty: at once.
  std::function<std::optional<std::chrono::steady_clock::time_point>(std::uint32_t next)>
      interval_start;
  // Called when a sample run ends early (no more samples from this target), for lockstep.
  std::function<void()> sampling_done;
  // Do no harm, across targets: `gpu_attach_failed` is called when this target's debugger could
  // not attach to its GPU side (the driver's attach failed inside the process); `halt` says
  // another target's did, so this one takes no further sample (the job may be damaged: touch it
  // no more).
  std::function<void()> gpu_attach_failed;
  std::function<bool()> halt;
};

// Checks requirements and --var names (Error(DebuggerNotFound|Usage)) before attaching, then runs
// the steps and `always`, detaches, builds the snapshot over every exchange and runs the
// heuristics. Errors during the run are recorded in the result, never thrown; the target is
// detached before run() returns on every path. The result's types are in
// rocplay/case/run_result.hpp; report::run_section_to_json and write_run_section_text
// (rocplay/report/run.hpp) render it.
RunResult run(const Playbook& playbook, Driver& driver, const RunOptions& options);

// A command name the debugger does not know (`rocplay playbooks check`).
struct CommandProblem {
  Position position;
  std::string command; // `-thread-infoo`, `info thredas`
  std::string message;
  std::string hint;         // "did you mean `-thread-info`?"
  bool conditional = false; // under `when:`: may never run, so a note rather than an error
};
struct CommandCheckResult {
  std::size_t checked = 0;        // mi:/cli: steps asked about
  std::size_t not_applicable = 0; // `requires:` another debugger
  std::vector<CommandProblem> problems;
};
// Asks the driver's debugger, which need not be attached to anything, whether each mi:/cli:
// step's command exists there (`-info-gdb-mi-command`, `help`), with the nearest name it knows.
// Sends nothing else; steps whose command name is a `${...}` are left to the run.
CommandCheckResult check_command_names(const Playbook& playbook, Driver& driver,
                                       std::chrono::milliseconds timeout);

// Parses `k=v` from --var. Throws Error(Usage).
std::pair<std::string, std::string> parse_var_assignment(const std::string& text);

} // namespace rocplay::playbook
