// Pieces of the playbook layer that the loader, the runner and the unit tests share.
#pragma once

#include "rocplay/playbook/playbook.hpp"

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace rocplay::playbook::detail {

// An error inside one scalar (a condition or a command); the loader adds the file position.
struct TextError : std::runtime_error {
  TextError(std::uint32_t offset_, std::string message, std::string hint_ = {})
      : std::runtime_error(std::move(message)), offset(offset_), hint(std::move(hint_)) {}
  std::uint32_t offset; // bytes into the scalar
  std::string hint;
};

class DeferredCode; // playbook/deferred_code.hpp
// run(), with cuda-gdb's device code decoding already under way (DeferredCode::start_early).
RunResult run_with_code(const Playbook& playbook, Driver& driver, const RunOptions& options,
                        std::unique_ptr<DeferredCode> deferred);

// Steps that talk to the target's threads, so they need an attach before them.
inline bool needs_target(StepKind kind) {
  return kind == StepKind::Threads || kind == StepKind::InfoLine || kind == StepKind::Backtrace ||
         kind == StepKind::Foreach;
}

// Levenshtein distance, bounded inputs (keys and names).
// The candidate closest to `word` when it is close enough to be a misspelling of it.
std::optional<std::string> nearest(std::string_view word,
                                   const std::vector<std::string_view>& candidates);

// ---- conditions --------------------------------------------------------------------------

struct ExprNode {
  enum class Op : std::uint8_t {
    Literal,
    Name, // a dotted path: `thread.function`, `agents.results.agents`
    Not,
    And,
    Or,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    Contains,
    StartsWith,
    EndsWith,
    HasMiCommand, // literal argument: `has_mi_command(agent-info)`
    Defined,      // name argument
    Len,
  };
  Op op = Op::Literal;
  Value literal;
  std::vector<std::string> path;
  std::uint32_t offset = 0;
  std::vector<std::shared_ptr<const ExprNode>> args;
};

// Throws TextError. Bounded: at most kMaxExprLength bytes and kMaxExprDepth nesting.
constexpr std::size_t kMaxExprLength = 4096;
constexpr std::size_t kMaxExprDepth = 32;
std::shared_ptr<const ExprNode> parse_expr(std::string_view text);

// Every name an expression reads, with its offset (for load-time checks).
void for_each_name(const ExprNode& node,
                   const std::function<void(const std::vector<std::string>&, std::uint32_t)>& fn);

// What conditions and templates read names from.
class Scope {
public:
  virtual ~Scope() = default;
  // The value bound to a root name, or nullptr.
  virtual const Value* lookup(std::string_view root) const = 0;
  virtual bool has_mi_command(const std::string& name) const = 0;
};

// Follows a dotted path: map fields by name, list items by index. nullptr when absent.
const Value* resolve(const Scope& scope, const std::vector<std::string>& path);
// Never throws: undefined names are null, mismatched comparisons are false.
Value evaluate(const ExprNode& node, const Scope& scope);

// ---- command templates -------------------------------------------------------------------

// Splits `${name.field}` references out of a command. `$${` is a literal `${`. Throws TextError.
Template parse_template(std::string_view text, const Position& position);

enum class Quoting : std::uint8_t { Mi, Cli };
// Renders a command. Integers and addresses go in bare; strings are MI c-strings in MI
// arguments and plain words (letters, digits, `_.:/@+,=~%-`) in console commands and inside MI
// c-strings; newlines and control bytes are refused. Throws TextError (offset of the reference).
std::string render(const Template& tmpl, const Scope& scope, Quoting quoting);

// ---- command safety ----------------------------------------------------------------------

struct Refusal {
  std::string command; // the offending command word, as written
  std::string reason;
  bool always = false; // refused even with --allow-unsafe-commands (quit, kill, run ...)
};
// A console command (and any command it runs: `thread apply all ...`, `with ... -- ...`).
std::optional<Refusal> check_cli(std::string_view command, bool allow_unsafe);
// An MI command (and console/MI commands inside -interpreter-exec).
std::optional<Refusal> check_mi(std::string_view command, bool allow_unsafe);

// ---- loop items --------------------------------------------------------------------------

Value thread_item(const HostThread& thread);
Value wave_item(const Wave& wave);
Value dispatch_item(const Dispatch& dispatch);
// The fields each item has, for load-time checks of `thread.fucntion`.
const std::vector<std::string_view>& item_fields(ForeachOver over);

// ---- before the attach (preflight.cpp) ---------------------------------------------------

// Throws (DebuggerNotFound) when the playbook's `requirements:` rule the debugger out.
void check_requirements(const Playbook& playbook, const session::Debugger& debugger);
// pid, debugger, debugger_version, playbook, the playbook's vars, and each `--var` typed by its
// variable's default. Throws (Usage) on a variable the playbook does not declare or a bad value.
std::map<std::string, Value> global_values(const Playbook& playbook,
                                           const session::Debugger& debugger,
                                           const RunOptions& options);
// Renders and checks every command that reads only `globals` (through `scope`), so a `--var`
// that makes a command unsafe is refused before the attach.
void check_rendered_commands(const Playbook& playbook, const RunOptions& options,
                             DebuggerKind debugger, const std::map<std::string, Value>& globals,
                             const Scope& scope);

} // namespace rocplay::playbook::detail
