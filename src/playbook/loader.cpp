// Loading a playbook: YAML to a validated Playbook, every problem with FILE:LINE:COLUMN.
//
// Validation happens here, before a debugger is started, so that a typo never costs a stopped
// target: unknown keys (with the nearest valid key), step shapes, durations, conditions, `${...}`
// references (defined before use, fields that exist), step order (nothing that needs the target
// before `attach` or after `detach`), and the commands a playbook from outside the built-ins may
// send (src/playbook/safety.cpp).
#include "core/text_scan.hpp"
#include "playbook/internal.hpp"
#include "rocplay/core/names.hpp"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>

namespace rocplay::playbook {

namespace {

using detail::TextError;

constexpr std::size_t kMaxPlaybookBytes = std::size_t{1} << 20;
constexpr std::size_t kMaxSteps = 10'000;
constexpr std::size_t kMaxForeachDepth = 4;
constexpr std::size_t kDefaultForeachLimit = 256;
constexpr std::uint32_t kDefaultBacktraceFrames = 64;
constexpr auto kMaxTimeout = std::chrono::hours(1);

const std::vector<std::string_view> kTopKeys = {"name",    "description", "requirements", "vars",
                                                "timeout", "on_error",    "steps",        "tasks",
                                                "always",  "samples",     "interval",     "stop"};
const std::vector<std::string_view> kRequirementKeys = {"debuggers", "min_version"};
// The action keys, in the order messages list them (to_string(StepKind) maps kinds to keys).
const std::vector<std::string_view> kActionKeys = [] {
  std::vector<std::string_view> keys;
  for (const StepKind kind : kStepKinds) {
    keys.push_back(to_string(kind));
  }
  return keys;
}();
std::optional<StepKind> action_kind(std::string_view key) {
  return step_kind_from_string(key);
}
const std::vector<std::string_view> kCommonKeys = {
    "name",      "when",        "requires", "register", "expect",
    "fail_when", "failed_when", "timeout",  "on_error", "ignore_errors"};
const std::vector<std::string_view> kForeachKeys = {"where", "as", "limit", "steps"};
const std::vector<std::string_view> kFramesKeys = {"frames"};
const std::vector<std::string_view> kReserved = {"pid", "debugger", "debugger_version", "playbook",
                                                 "result"};
const std::vector<std::string_view> kDebuggerNames = {"gdb", "rocgdb", "cuda-gdb"};

std::vector<std::string_view> all_step_keys() {
  std::vector<std::string_view> keys = kActionKeys;
  keys.insert(keys.end(), kCommonKeys.begin(), kCommonKeys.end());
  keys.insert(keys.end(), kForeachKeys.begin(), kForeachKeys.end());
  return keys;
}

// The fields a registered result has, by step kind.
const std::vector<std::string_view>& result_fields(StepKind kind) {
  static const std::vector<std::string_view> kCommand = {"status",  "class",   "error", "output",
                                                         "results", "command", "ms"};
  static const std::vector<std::string_view> kCount = {"status", "count", "failed", "ms"};
  static const std::vector<std::string_view> kSnapshot = {"status",       "agents",   "queues",
                                                          "dispatches",   "waves",    "threads",
                                                          "source_lines", "warnings", "ms"};
  static const std::vector<std::string_view> kForeach = {"status", "count", "matched", "ms"};
  static const std::vector<std::string_view> kPlain = {"status", "ms"};
  switch (kind) {
  case StepKind::Mi:
  case StepKind::Cli:
    return kCommand;
  case StepKind::Threads:
  case StepKind::InfoLine:
  case StepKind::Backtrace:
  case StepKind::Disassemble:
    return kCount;
  case StepKind::Snapshot:
    return kSnapshot;
  case StepKind::Foreach:
    return kForeach;
  case StepKind::Attach:
  case StepKind::Detach:
    return kPlain;
  }
  return kPlain;
}

// Line `n` (1-based) of `text`, without its line ending; empty past the end.
std::string_view nth_line(std::string_view text, std::uint32_t n) {
  std::size_t start = 0;
  for (std::uint32_t i = 1; i < n; ++i) {
    const auto nl = text.find('\n', start);
    if (nl == std::string_view::npos) {
      return {};
    }
    start = nl + 1;
  }
  std::string_view line = text.substr(start, text.find('\n', start) - start);
  if (!line.empty() && line.back() == '\r') {
    line.remove_suffix(1);
  }
  return line;
}

std::size_t indent_of(std::string_view line) {
  const auto first = line.find_first_not_of(' ');
  return first == std::string_view::npos ? line.size() : first;
}

bool blank_or_comment(std::string_view line) {
  const auto first = line.find_first_not_of(" \t");
  return first == std::string_view::npos || line[first] == '#';
}

// The word at `column` of a line, for naming it: `cli:`, `-`.
std::string word_at(std::string_view line, std::size_t column) {
  line.remove_prefix(std::min(column, line.size()));
  return std::string(line.substr(0, std::min<std::size_t>(line.find(' '), 24)));
}

bool is_item(std::string_view line) {
  const std::string_view rest = line.substr(indent_of(line));
  return rest == "-" || rest.rfind("- ", 0) == 0;
}

// A block still open above an error: its column (0-based), the line that opened it, and whether
// it is a list (its entries start with `- `) or a mapping (its entries are `key:`).
struct OpenBlock {
  std::size_t column;
  std::uint32_t line;
  bool list;
};

// The blocks open at `line_no`, innermost first: where a line there may start.
std::vector<OpenBlock> open_blocks(std::string_view text, std::uint32_t line_no) {
  std::vector<OpenBlock> blocks;
  std::size_t limit = std::string_view::npos; // only shallower blocks stay open
  for (std::uint32_t n = line_no; n-- > 1 && limit > 0;) {
    const std::string_view line = nth_line(text, n);
    if (blank_or_comment(line)) {
      continue;
    }
    const std::size_t indent = indent_of(line);
    const bool item = is_item(line);
    if (item && indent + 2 < limit && line.find(": ", indent) != std::string_view::npos) {
      blocks.push_back({indent + 2, n, false}); // the mapping inside `- key: value`
    }
    if (indent < limit) {
      blocks.push_back({indent, n, item});
      limit = indent;
    }
  }
  return blocks;
}

// yaml-cpp's error, said in terms of the playbook: what the parser expected where, then the line
// with a caret under the column.
std::string explain_yaml_error(std::string_view text, std::uint32_t line_no, std::uint32_t column,
                               const std::string& parser_message) {
  const std::string_view line = nth_line(text, line_no);
  const std::size_t indent = indent_of(line);
  std::string what = parser_message;
  const bool structure = parser_message == "illegal map value" ||
                         parser_message == "end of map not found" ||
                         parser_message == "end of sequence not found";
  const auto first_colon = line.find(": ");
  if (parser_message.find("tab") != std::string::npos) {
    what = "a tab in the indentation; YAML indents with spaces only";
  } else if (parser_message == "illegal map value" && first_colon != std::string_view::npos &&
             line.find(": ", first_colon + 2) != std::string_view::npos) {
    what = "a second `: ` on one line; quote a value that holds `: ` (`cli: \"a: b\"`)";
  } else if (structure && line_no > 1) {
    const bool item = is_item(line);
    const auto blocks = open_blocks(text, line_no);
    std::string expected;
    for (const auto& b : blocks) {
      const std::string opener = word_at(nth_line(text, b.line), b.column);
      if (b.column == indent && b.list != item) {
        expected.clear();
        what = item ? fmt::format("line {} starts a `- ` entry at column {}, where the mapping "
                                  "of line {} (`{}`) has keys, not a list",
                                  line_no, indent + 1, b.line, opener)
                    : fmt::format("line {} starts a key at column {}, where the list of line {} "
                                  "has `- ` entries: write `- {}` for a new entry, or indent it "
                                  "to line up with the keys of that entry",
                                  line_no, indent + 1, b.line, word_at(line, indent));
        break;
      }
      if (b.column == indent) {
        break; // the column is open and of the right kind: keep the parser's words
      }
      expected += fmt::format("{}column {} (`{}` as on line {})", expected.empty() ? "" : ", ",
                              b.column + 1, b.list ? "- ..." : opener, b.line);
      if (expected.size() > 240) {
        break;
      }
    }
    if (!expected.empty()) {
      what = fmt::format("line {} starts at column {}, where no block is open; the parser "
                         "expected a line at {}",
                         line_no, indent + 1, expected);
    }
  }
  std::string out = "YAML syntax: " + what;
  if (line_no == 0) {
    return out;
  }
  if (line_no > 1 && !blank_or_comment(nth_line(text, line_no - 1))) {
    out += fmt::format("\n  {:>5} | {}", line_no - 1, nth_line(text, line_no - 1).substr(0, 120));
  }
  out += fmt::format("\n  {:>5} | {}", line_no, line.substr(0, 120));
  out += fmt::format("\n  {:>5} | {}^", "",
                     std::string(std::min<std::size_t>(column > 0 ? column - 1 : 0, 120), ' '));
  return out;
}

// Console commands people write as if they were step keys (`print: $pc`).
bool is_console_command_word(std::string_view key) {
  // Inspection commands only: suggesting `cli: kill` would only meet the safety check.
  static const std::vector<std::string_view> kWords = {
      "print",  "p",    "bt",   "where", "info",        "x",       "frame",  "f",
      "thread", "set",  "show", "list",  "disassemble", "ptype",   "whatis", "display",
      "output", "echo", "up",   "down",  "inspect",     "examine", "maint",  "maintenance"};
  return std::find(kWords.begin(), kWords.end(), key) != kWords.end();
}

bool is_identifier(std::string_view s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) != 0 || s[0] == '_')) {
    return false;
  }
  return std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_';
  });
}

// What a name refers to while validating, so that fields can be checked too.
struct Binding {
  enum class Kind : std::uint8_t { Scalar, Result, Item } kind = Kind::Scalar;
  StepKind step = StepKind::Mi;            // Result
  ForeachOver over = ForeachOver::Threads; // Item
};

class Loader {
public:
  Loader(std::string_view text, std::string origin, const LoadOptions& options)
      : text_(text), origin_(std::move(origin)), options_(options) {}

  Playbook load() {
    if (text_.size() > kMaxPlaybookBytes) {
      fail_at(
          1, 1,
          fmt::format("the playbook is {} bytes; the limit is {}", text_.size(), kMaxPlaybookBytes),
          "split it into smaller playbooks");
    }
    YAML::Node root;
    try {
      root = YAML::Load(std::string(text_));
    } catch (const YAML::Exception& e) {
      const auto line = static_cast<std::uint32_t>(e.mark.line + 1);
      const auto column = static_cast<std::uint32_t>(e.mark.column + 1);
      fail_at(line, column, explain_yaml_error(text_, line, column, e.msg),
              "keys of one mapping start in one column, and a list's `- ` entries too; indent "
              "with spaces");
    }
    if (!root.IsMap()) {
      fail(root, "a playbook is a YAML mapping with at least `steps:`",
           "start from `rocplay playbooks show host-stacks`");
    }
    Playbook pb;
    pb.origin = origin_;
    pb.builtin = options_.builtin;
    pb.source = std::string(text_);
    check_keys(root, kTopKeys, "playbook");

    const YAML::Node name = root["name"];
    if (name) {
      pb.name = scalar(name, "name");
      if (pb.name.empty() || pb.name.size() > 128) {
        fail(name, "`name` must be 1 to 128 characters");
      }
    } else {
      pb.name = stem(origin_);
    }
    if (const YAML::Node d = root["description"]) {
      pb.description = scalar(d, "description");
    }
    if (const YAML::Node r = root["requirements"]) {
      pb.requirements = requirements(r);
    }
    if (const YAML::Node v = root["timeout"]) {
      pb.timeout = duration(v);
    }
    if (const YAML::Node e = root["on_error"]) {
      default_on_error_ = on_error(e);
    }
    if (const YAML::Node v = root["samples"]) {
      const std::string text = scalar(v, "samples");
      unsigned n = 0;
      auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
      if (ec != std::errc() || p != text.data() + text.size() || n < 1 || n > kMaxSamples) {
        fail(v, fmt::format("`samples: {}` is not a number from 1 to {}", text, kMaxSamples),
             "`samples: 2` takes two snapshots, the target running between them");
      }
      pb.samples = n;
    }
    if (const YAML::Node v = root["interval"]) {
      pb.interval = duration(v);
    }
    if (const YAML::Node v = root["stop"]) {
      const std::string text = scalar(v, "stop");
      pb.stop = stop_mode_of(text);
      if (!pb.stop) {
        fail(v, fmt::format("`stop: {}` is neither `attach` nor `copy`", text),
             "`stop: copy` lets plain gdb read a copy of the threads instead of holding the "
             "target; `stop: attach` (the default) holds it for the whole sample");
      }
    }
    if (const YAML::Node v = root["vars"]) {
      vars(v, pb);
    }
    YAML::Node steps = root["steps"];
    const char* steps_key = "steps";
    if (root["tasks"]) {
      if (steps) {
        fail(key_of(root, "tasks"), "both `steps` and `tasks`; they are the same list",
             "keep one of them");
      }
      steps = root["tasks"];
      steps_key = "tasks";
    }
    if (!steps) {
      fail(root, "the playbook has no `steps:`", "add a `steps:` list");
    }
    pb.steps = step_list(steps, steps_key, Section::Steps, 0, nullptr);
    if (const YAML::Node a = root["always"]) {
      pb.always = step_list(a, "always", Section::Always, 0, nullptr);
    }
    pb.has_attach_step = attach_seen_;
    pb.allow_unsafe_commands = options_.allow_unsafe_commands;
    return pb;
  }

private:
  enum class Section : std::uint8_t { Steps, Always };

  [[noreturn]] void fail_at(std::uint32_t line, std::uint32_t column, const std::string& message,
                            const std::string& hint = {}) const {
    Position p{origin_, line, column};
    throw Error(ExitCode::BadPlaybook, p.str() + ": " + message, hint);
  }

  Position position(const YAML::Node& node, std::uint32_t offset = 0) const {
    const YAML::Mark m = node.Mark();
    if (m.is_null() || m.line < 0) {
      return Position{origin_, 0, 0};
    }
    // Quoted scalars start one column before their text.
    const std::uint32_t shift = (node.IsScalar() && node.Tag() == "!") ? 1 : 0;
    return Position{origin_, static_cast<std::uint32_t>(m.line + 1),
                    static_cast<std::uint32_t>(m.column + 1) + shift + offset};
  }

  [[noreturn]] void fail(const YAML::Node& node, const std::string& message,
                         const std::string& hint = {}, std::uint32_t offset = 0) const {
    throw Error(ExitCode::BadPlaybook, position(node, offset).str() + ": " + message, hint);
  }

  static std::string stem(const std::string& origin) {
    std::string s = origin;
    if (s.rfind("builtin:", 0) == 0) {
      return s.substr(8);
    }
    const auto slash = s.find_last_of('/');
    if (slash != std::string::npos) {
      s = s.substr(slash + 1);
    }
    const auto dot = s.find_last_of('.');
    return dot == std::string::npos || dot == 0 ? s : s.substr(0, dot);
  }

  // The key node of `key` in a mapping, for errors about the key itself.
  static YAML::Node key_of(const YAML::Node& map, std::string_view key) {
    for (const auto& kv : map) {
      if (kv.first.IsScalar() && kv.first.Scalar() == key) {
        return kv.first;
      }
    }
    return map;
  }

  std::string scalar(const YAML::Node& node, std::string_view what) const {
    if (!node.IsScalar()) {
      fail(node, fmt::format("`{}` must be a single value", what));
    }
    return node.Scalar();
  }

  // Unknown keys (with a suggestion) and duplicates.
  void check_keys(const YAML::Node& map, const std::vector<std::string_view>& valid,
                  std::string_view where) const {
    std::set<std::string> seen;
    for (const auto& kv : map) {
      if (!kv.first.IsScalar()) {
        fail(kv.first, fmt::format("keys of a {} must be plain names", where));
      }
      const std::string key = kv.first.Scalar();
      if (!seen.insert(key).second) {
        fail(kv.first, fmt::format("`{}` appears twice in this {}", key, where),
             "keep one of them");
      }
      if (std::find(valid.begin(), valid.end(), key) == valid.end()) {
        auto guess = detail::nearest(key, valid);
        std::string valid_list;
        for (auto v : valid) {
          valid_list += (valid_list.empty() ? "" : ", ") + std::string(v);
        }
        if (!guess && is_console_command_word(key)) {
          // `print: $pc`: a debugger command written as a key.
          const std::string value =
              kv.second.IsScalar() && !kv.second.Scalar().empty() ? " " + kv.second.Scalar() : "";
          fail(kv.first,
               fmt::format("unknown key `{}` in a {}: `{}` is a debugger command, not a key", key,
                           where, key),
               fmt::format("did you mean `cli: {}{}`? Console commands go in `cli:`, MI commands "
                           "in `mi:`{}",
                           key, value, where == "playbook" ? ", as a step under `steps:`" : ""));
        }
        fail(kv.first, fmt::format("unknown key `{}` in a {}", key, where),
             guess ? fmt::format("did you mean `{}`? (valid: {})", *guess, valid_list)
                   : fmt::format("valid keys: {}", valid_list));
      }
    }
  }

  std::chrono::milliseconds duration(const YAML::Node& node) const {
    const std::string s = scalar(node, "timeout");
    const auto parsed = text_scan::parse_duration(s);
    if (!parsed.ms && parsed.unit.empty()) {
      fail(node, fmt::format("`{}` is not a duration", s),
           "write seconds (`30`, `2.5`) or a number with a unit: `500ms`, `30s`, `2m`");
    }
    if (!parsed.ms) {
      fail(node, fmt::format("unknown unit `{}` in `{}`", parsed.unit, s), "units: ms, s, m");
    }
    const double ms = *parsed.ms;
    if (!(ms >= 1) || ms > static_cast<double>(std::chrono::milliseconds(kMaxTimeout).count())) {
      fail(node, fmt::format("timeout `{}` is out of range", s),
           "a timeout is between 1ms and 1 hour");
    }
    return std::chrono::milliseconds(static_cast<std::int64_t>(std::llround(ms)));
  }

  OnError on_error(const YAML::Node& node) const {
    const std::string s = scalar(node, "on_error");
    if (s == "abort") {
      return OnError::Abort;
    }
    if (s == "continue") {
      return OnError::Continue;
    }
    auto guess = detail::nearest(s, {"abort", "continue"});
    fail(node, fmt::format("on_error is `abort` or `continue`, not `{}`", s),
         guess ? fmt::format("did you mean `{}`?", *guess) : std::string());
  }

  DebuggerKind debugger_name(const YAML::Node& node) const {
    const std::string s = scalar(node, "debugger");
    if (const DebuggerKind kind = debugger_kind_from_string(s); kind != DebuggerKind::Unknown) {
      return kind;
    }
    auto guess = detail::nearest(s, kDebuggerNames);
    fail(node, fmt::format("unknown debugger `{}`", s),
         guess ? fmt::format("did you mean `{}`? (debuggers: gdb, rocgdb, cuda-gdb)", *guess)
               : "debuggers: gdb, rocgdb, cuda-gdb");
  }

  std::vector<DebuggerKind> debugger_list(const YAML::Node& node) const {
    std::vector<DebuggerKind> out;
    if (node.IsScalar()) {
      out.push_back(debugger_name(node));
    } else if (node.IsSequence()) {
      for (const auto& item : node) {
        out.push_back(debugger_name(item));
      }
    } else {
      fail(node, "expected a debugger name or a list of them", "e.g. [rocgdb, cuda-gdb]");
    }
    return out;
  }

  Requirements requirements(const YAML::Node& node) const {
    if (!node.IsMap()) {
      fail(node, "`requirements` is a mapping", "e.g. requirements: {debuggers: [rocgdb]}");
    }
    check_keys(node, kRequirementKeys, "requirements mapping");
    Requirements r;
    if (const YAML::Node d = node["debuggers"]) {
      r.debuggers = debugger_list(d);
    }
    if (const YAML::Node v = node["min_version"]) {
      if (!v.IsMap()) {
        fail(v, "`min_version` maps a debugger to a version", "e.g. min_version: {gdb: \"12.1\"}");
      }
      for (const auto& kv : v) {
        const DebuggerKind kind = debugger_name(kv.first);
        const std::string version = scalar(kv.second, "min_version");
        if (version.empty() || version.find_first_not_of("0123456789.") != std::string::npos) {
          fail(kv.second, fmt::format("`{}` is not a version", version), "e.g. \"13.1\"");
        }
        r.min_version[kind] = version;
      }
    }
    return r;
  }

  static Value scalar_value(const YAML::Node& node) {
    const std::string& s = node.Scalar();
    if (node.Tag() != "!") { // plain scalars may be numbers or booleans
      std::int64_t i = 0;
      auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), i);
      if (!s.empty() && ec == std::errc() && p == s.data() + s.size()) {
        return Value::integer(i);
      }
      if (s.size() > 2 && s[0] == '0' && s[1] == 'x') {
        std::uint64_t a = 0;
        auto [q, ec2] = std::from_chars(s.data() + 2, s.data() + s.size(), a, 16);
        if (ec2 == std::errc() && q == s.data() + s.size()) {
          return Value::address(a);
        }
      }
      if (s == "true" || s == "false") {
        return Value::boolean(s == "true");
      }
    }
    return Value::string(s);
  }

  void vars(const YAML::Node& node, Playbook& pb) {
    if (!node.IsMap()) {
      fail(node, "`vars` maps names to default values", "e.g. vars: {frames: 30}");
    }
    std::set<std::string> seen;
    for (const auto& kv : node) {
      const std::string key = kv.first.IsScalar() ? kv.first.Scalar() : std::string();
      if (!is_identifier(key)) {
        fail(kv.first, fmt::format("`{}` is not a variable name", key),
             "names are letters, digits and _, starting with a letter");
      }
      if (std::find(kReserved.begin(), kReserved.end(), key) != kReserved.end()) {
        fail(kv.first, fmt::format("`{}` is set by rocplay and cannot be declared", key),
             "pick another name");
      }
      if (!seen.insert(key).second) {
        fail(kv.first, fmt::format("variable `{}` is declared twice", key));
      }
      if (!kv.second.IsScalar()) {
        fail(kv.second, fmt::format("the default of `{}` must be a single value", key));
      }
      pb.vars.emplace_back(key, scalar_value(kv.second));
      bind(key, Binding{});
    }
  }

  // ---- names in scope ------------------------------------------------------------------

  void bind(const std::string& name, Binding b) { scope_[name] = b; }

  std::vector<std::string_view> scope_names() const {
    std::vector<std::string_view> out;
    for (const auto& [k, v] : scope_) {
      out.push_back(k);
    }
    for (auto r : kReserved) {
      out.push_back(r);
    }
    return out;
  }

  void check_name(const std::vector<std::string>& path, const YAML::Node& node,
                  std::uint32_t offset, const std::optional<StepKind>& result_kind) const {
    const std::string& root = path[0];
    std::optional<Binding> b;
    if (root == "result" && result_kind) {
      b = Binding{Binding::Kind::Result, *result_kind, {}};
    } else if (root == "pid" || root == "debugger" || root == "debugger_version" ||
               root == "playbook") {
      b = Binding{};
    } else if (auto it = scope_.find(root); it != scope_.end()) {
      b = it->second;
    }
    if (!b) {
      auto guess = detail::nearest(root, scope_names());
      const std::string extra =
          root == "result" ? " (`result` exists only in expect/fail_when)" : "";
      fail(node, fmt::format("`{}` is not defined here{}", root, extra),
           guess ? fmt::format("did you mean `{}`?", *guess)
                 : "define it under `vars:`, or `register:` a step before this one",
           offset);
    }
    if (path.size() < 2) {
      return;
    }
    const std::vector<std::string_view>* fields = nullptr;
    switch (b->kind) {
    case Binding::Kind::Scalar:
      fail(node, fmt::format("`{}` is a single value; it has no field `{}`", root, path[1]), {},
           offset);
    case Binding::Kind::Result:
      fields = &result_fields(b->step);
      break;
    case Binding::Kind::Item:
      fields = &detail::item_fields(b->over);
      break;
    }
    if (std::find(fields->begin(), fields->end(), path[1]) == fields->end()) {
      auto guess = detail::nearest(path[1], *fields);
      std::string list;
      for (auto f : *fields) {
        list += (list.empty() ? "" : ", ") + std::string(f);
      }
      fail(node, fmt::format("`{}` has no field `{}`", root, path[1]),
           guess ? fmt::format("did you mean `{}.{}`? (fields: {})", root, *guess, list)
                 : fmt::format("fields: {}", list),
           offset);
    }
  }

  Condition condition(const YAML::Node& node, std::string_view key,
                      const std::optional<StepKind>& result_kind) const {
    if (!node.IsScalar()) {
      fail(node, fmt::format("`{}` is a condition, written as one line of text", key),
           "e.g. when: has_mi_command(agent-info)");
    }
    Condition c;
    c.text = node.Scalar();
    c.position = position(node);
    try {
      c.root = detail::parse_expr(c.text);
    } catch (const TextError& e) {
      fail(node, fmt::format("in `{}`: {}", key, e.what()), e.hint, e.offset);
    }
    detail::for_each_name(*c.root, [&](const std::vector<std::string>& path, std::uint32_t off) {
      check_name(path, node, off, result_kind);
    });
    return c;
  }

  Template command(const YAML::Node& node, StepKind kind) const {
    const std::string key = kind == StepKind::Mi ? "mi" : "cli";
    if (!node.IsScalar() || node.Scalar().empty()) {
      fail(node, fmt::format("`{}` takes one command as text", key),
           kind == StepKind::Mi ? "e.g. mi: -thread-info" : "e.g. cli: info sharedlibrary");
    }
    const std::string text = node.Scalar();
    if (text.size() > 4096) {
      fail(node, "the command is longer than 4096 bytes");
    }
    Template t;
    try {
      t = detail::parse_template(text, position(node));
    } catch (const TextError& e) {
      fail(node, e.what(), e.hint, e.offset);
    }
    std::uint32_t offset = 0;
    for (const auto& piece : t.pieces) {
      if (!piece.literal) {
        check_name(piece.path, node, offset, std::nullopt);
      }
      offset +=
          static_cast<std::uint32_t>(piece.literal ? piece.text.size() : piece.text.size() + 3);
    }
    if (kind == StepKind::Mi) {
      const auto first = text.find_first_not_of(" \t");
      if (first == std::string::npos || text[first] != '-') {
        fail(node, fmt::format("`{}` is not an MI command; MI commands start with `-`", text),
             "use `cli:` for a console command, e.g. cli: " + text);
      }
    }
    if (!t.pieces.empty() && !t.pieces.front().literal && !options_.builtin &&
        !options_.allow_unsafe_commands) {
      fail(node, "the command's name comes from a variable, so it cannot be checked",
           "write the command name literally; pass --allow-unsafe-commands to run it anyway");
    }
    // References are checked again at run time; here they stand for a plain word.
    std::string checkable;
    for (const auto& piece : t.pieces) {
      checkable += piece.literal ? piece.text : std::string("0");
    }
    const bool allow = options_.builtin || options_.allow_unsafe_commands;
    auto refusal = kind == StepKind::Mi ? detail::check_mi(checkable, allow)
                                        : detail::check_cli(checkable, allow);
    if (refusal) {
      if (refusal->always) {
        fail(node, fmt::format("refused: {}", refusal->reason),
             "rocplay attaches, detaches and quits by itself; remove this step");
      }
      fail(node,
           fmt::format("refused: {}; playbooks from outside the built-ins may not do this",
                       refusal->reason),
           "review the playbook; if you trust it, run with --allow-unsafe-commands");
    }
    return t;
  }

  std::uint32_t frames_option(const YAML::Node& value, std::string_view action,
                              std::uint32_t fallback) const {
    if (!value || value.IsNull()) {
      return fallback;
    }
    if (value.IsScalar()) {
      if (value.Scalar() == "true") {
        return fallback;
      }
      fail(value, fmt::format("`{}` takes no value, or a mapping such as {{frames: 10}}", action));
    }
    if (!value.IsMap()) {
      fail(value, fmt::format("`{}` takes a mapping such as {{frames: 10}}", action));
    }
    check_keys(value, kFramesKeys, std::string(action) + " mapping");
    const YAML::Node f = value["frames"];
    if (!f) {
      return fallback;
    }
    const std::string s = scalar(f, "frames");
    std::uint32_t n = 0;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
    if (ec != std::errc() || p != s.data() + s.size() || n == 0 || n > 10'000) {
      fail(f, fmt::format("frames must be a whole number from 1 to 10000, not `{}`", s));
    }
    return n;
  }

  void no_value(const YAML::Node& value, std::string_view action) const {
    if (!value || value.IsNull()) {
      return;
    }
    if (value.IsScalar() && value.Scalar() == "true") {
      return;
    }
    if (value.IsMap() && value.size() == 0) {
      return;
    }
    fail(value, fmt::format("`{}` takes no value", action),
         fmt::format("write `- {}` or `{}:` on its own", action, action));
  }

  std::vector<Step> step_list(const YAML::Node& node, std::string_view key, Section section,
                              std::size_t depth, const Step* parent) {
    if (!node.IsSequence()) {
      if (node.IsNull()) {
        return {};
      }
      fail(node, fmt::format("`{}` is a list of steps", key), "each step starts with `- `");
    }
    std::vector<Step> out;
    for (const auto& item : node) {
      out.push_back(step(item, section, depth, parent));
    }
    return out;
  }

  // One step: its shape, its one action, where it may stand, then its keys. `parent` is the
  // enclosing foreach, if any.
  Step step(const YAML::Node& node, Section section, std::size_t depth, const Step* parent) {
    if (++step_count_ > kMaxSteps) {
      fail(node, fmt::format("more than {} steps", kMaxSteps));
    }
    Step s;
    s.position = position(node);
    s.on_error = default_on_error_;

    // `- threads` is built as its own mapping: assigning to a yaml-cpp Node would rewrite the
    // document node it shares (and lose its position).
    YAML::Node shorthand(YAML::NodeType::Map);
    if (node.IsScalar()) {
      // `- threads` is short for `- threads:`.
      const std::string word = node.Scalar();
      if (!action_kind(word) || word == "mi" || word == "cli" || word == "foreach") {
        auto guess = detail::nearest(word, kActionKeys);
        fail(node, fmt::format("`{}` is not a step", word),
             guess ? fmt::format("did you mean `{}`?", *guess)
                   : "a step is a mapping such as `- mi: -thread-info`");
      }
      shorthand[word] = YAML::Node(YAML::NodeType::Null);
    } else if (!node.IsMap()) {
      fail(node, "a step is a mapping such as `- mi: -thread-info`");
    }
    const YAML::Node& map = node.IsScalar() ? shorthand : node;
    check_keys(map, all_step_keys(), "step");
    const YAML::Node& cmap = map; // const lookups never insert keys

    const StepAction action = find_action(node, map);
    s.kind = action.kind;
    const YAML::Node& where_node = node.IsScalar() ? node : action.key_node;
    if (s.kind != StepKind::Foreach) {
      for (auto k : kForeachKeys) {
        if (cmap[std::string(k)]) {
          fail(key_of(map, k), fmt::format("`{}` belongs to a foreach step", k),
               "move it under a `foreach:` step, or remove it");
        }
      }
    }
    check_order(s.kind, action.key, where_node, section, depth);
    common_keys(cmap, map, s);

    switch (s.kind) {
    case StepKind::Mi:
    case StepKind::Cli:
      s.command = command(action.value, s.kind);
      break;
    case StepKind::Backtrace:
      s.frames = frames_option(action.value, action.key, kDefaultBacktraceFrames);
      break;
    case StepKind::InfoLine:
      s.frames = frames_option(action.value, action.key, 1);
      break;
    case StepKind::Foreach:
      foreach_step(map, action.value, s, section, depth);
      break;
    default:
      no_value(action.value, action.key);
      break;
    }
    if (s.name.empty()) {
      s.name = derived_name(s);
    }
    result_keys(cmap, map, s);
    (void)parent;
    return s;
  }

  struct StepAction {
    std::string key;
    StepKind kind = StepKind::Mi;
    YAML::Node value;
    YAML::Node key_node;
  };

  // The step's one action key.
  StepAction find_action(const YAML::Node& node, const YAML::Node& map) {
    StepAction action;
    for (const auto& kv : map) {
      const std::string key = kv.first.Scalar();
      if (const auto kind = action_kind(key)) {
        if (!action.key.empty()) {
          fail(kv.first,
               fmt::format("a step has one action; this one has `{}` and `{}`", action.key, key),
               "split it into two steps");
        }
        action = {key, *kind, kv.second, kv.first};
      }
    }
    if (action.key.empty()) {
      std::string list;
      for (auto a : kActionKeys) {
        list += (list.empty() ? "" : ", ") + std::string(a);
      }
      fail(node, "this step has no action", "add one of: " + list);
    }
    return action;
  }

  // One attach, at the top of `steps:`, before anything that needs the target; one detach,
  // after it.
  void check_order(StepKind kind, const std::string& action, const YAML::Node& where_node,
                   Section section, std::size_t depth) {
    if (kind == StepKind::Attach) {
      if (section != Section::Steps || depth > 0) {
        fail(where_node, "`attach` may only be a top-level step under `steps:`");
      }
      if (attach_seen_) {
        fail(where_node, "a second `attach`; a playbook attaches once");
      }
      if (detach_seen_) {
        fail(where_node, "`attach` after `detach`; a playbook attaches once");
      }
      attach_seen_ = true;
    }
    if (kind == StepKind::Detach) {
      if (depth > 0) {
        fail(where_node, "`detach` may not be inside a foreach");
      }
      if (detach_seen_) {
        fail(where_node, "a second `detach`");
      }
      detach_seen_ = true;
    }
    if (detail::needs_target(kind)) {
      if (detach_seen_) {
        fail(where_node, fmt::format("`{}` needs the target, but it comes after `detach`", action),
             "move it before the detach step (the always section detaches by itself)");
      }
      if (!first_needs_target_) {
        first_needs_target_ = position(where_node);
      }
    }
    if (kind == StepKind::Attach && first_needs_target_) {
      throw Error(ExitCode::BadPlaybook,
                  first_needs_target_->str() +
                      ": this step needs the target, but it comes before `attach`",
                  "move it after the attach step");
    }
  }

  // name, when, requires, timeout, on_error / ignore_errors: read before the action's value.
  void common_keys(const YAML::Node& cmap, const YAML::Node& map, Step& s) {
    if (const YAML::Node n = cmap["name"]) {
      s.name = scalar(n, "name");
    }
    if (const YAML::Node w = cmap["when"]) {
      s.when = condition(w, "when", std::nullopt);
    }
    if (const YAML::Node r = cmap["requires"]) {
      s.debuggers = debugger_list(r);
    }
    if (const YAML::Node t = cmap["timeout"]) {
      if (s.kind == StepKind::Attach) {
        fail(t, "attach takes its deadline from --attach-timeout",
             "remove `timeout:` here and pass --attach-timeout SECONDS");
      }
      s.timeout = duration(t);
    }
    const YAML::Node ignore = cmap["ignore_errors"];
    if (const YAML::Node e = cmap["on_error"]) {
      if (ignore) {
        fail(key_of(map, "ignore_errors"), "both `on_error` and `ignore_errors`",
             "keep `on_error`");
      }
      s.on_error = on_error(e);
    } else if (ignore) {
      const std::string v = scalar(ignore, "ignore_errors");
      if (v != "true" && v != "false") {
        fail(ignore, "ignore_errors is true or false");
      }
      s.on_error = v == "true" ? OnError::Continue : OnError::Abort;
    }
  }

  // fail_when, expect and register: after the action, so that `expect` sees `result`.
  void result_keys(const YAML::Node& cmap, const YAML::Node& map, Step& s) {
    const YAML::Node fw = cmap["fail_when"] ? cmap["fail_when"] : cmap["failed_when"];
    if (cmap["fail_when"] && cmap["failed_when"]) {
      fail(key_of(map, "failed_when"), "both `fail_when` and `failed_when`", "keep `fail_when`");
    }
    if (fw) {
      s.fail_when = condition(fw, "fail_when", s.kind);
    }
    if (const YAML::Node e = cmap["expect"]) {
      if (e.IsSequence()) {
        for (const auto& c : e) {
          s.expect.push_back(condition(c, "expect", s.kind));
        }
      } else {
        s.expect.push_back(condition(e, "expect", s.kind));
      }
    }
    if (const YAML::Node r = cmap["register"]) {
      const std::string name = scalar(r, "register");
      if (!is_identifier(name)) {
        fail(r, fmt::format("`{}` is not a name", name),
             "names are letters, digits and _, starting with a letter");
      }
      if (std::find(kReserved.begin(), kReserved.end(), name) != kReserved.end()) {
        fail(r, fmt::format("`{}` is set by rocplay; register under another name", name));
      }
      if (auto it = scope_.find(name);
          it != scope_.end() && it->second.kind != Binding::Kind::Result) {
        fail(r, fmt::format("`{}` is already a variable or loop item", name));
      }
      s.register_as = name;
      bind(name, Binding{Binding::Kind::Result, s.kind, {}});
    }
  }

  void foreach_step(const YAML::Node& map, const YAML::Node& over, Step& s, Section section,
                    std::size_t depth) {
    // `map` is const here: lookups never insert keys.
    if (depth + 1 > kMaxForeachDepth) {
      fail(over, fmt::format("foreach nested deeper than {} levels", kMaxForeachDepth));
    }
    const std::string what = scalar(over, "foreach");
    if (what == "threads") {
      s.over = ForeachOver::Threads;
      s.loop_var = "thread";
    } else if (what == "waves") {
      s.over = ForeachOver::Waves;
      s.loop_var = "wave";
    } else if (what == "dispatches") {
      s.over = ForeachOver::Dispatches;
      s.loop_var = "dispatch";
    } else {
      auto guess = detail::nearest(what, {"threads", "waves", "dispatches"});
      fail(over, fmt::format("foreach goes over threads, waves or dispatches, not `{}`", what),
           guess ? fmt::format("did you mean `{}`?", *guess) : std::string());
    }
    if (const YAML::Node a = map["as"]) {
      s.loop_var = scalar(a, "as");
      if (!is_identifier(s.loop_var) ||
          std::find(kReserved.begin(), kReserved.end(), s.loop_var) != kReserved.end()) {
        fail(a, fmt::format("`{}` cannot name the loop item", s.loop_var));
      }
    }
    if (auto it = scope_.find(s.loop_var); it != scope_.end()) {
      fail(map["as"] ? map["as"] : over,
           fmt::format("`{}` is already defined; name the loop item with `as:`", s.loop_var));
    }
    s.limit = kDefaultForeachLimit;
    if (const YAML::Node l = map["limit"]) {
      const std::string v = scalar(l, "limit");
      std::size_t n = 0;
      auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
      if (ec != std::errc() || p != v.data() + v.size() || n == 0 || n > 1'000'000) {
        fail(l, fmt::format("limit must be a whole number from 1 to 1000000, not `{}`", v));
      }
      s.limit = n;
    }
    bind(s.loop_var, Binding{Binding::Kind::Item, {}, s.over});
    if (const YAML::Node w = map["where"]) {
      s.where = condition(w, "where", std::nullopt);
    }
    const YAML::Node body = map["steps"];
    if (!body || !body.IsSequence() || body.size() == 0) {
      fail(body ? body : over, "a foreach needs `steps:`, a list of steps to run for each item");
    }
    s.body = step_list(body, "steps", section, depth + 1, &s);
    scope_.erase(s.loop_var);
  }

  static std::string derived_name(const Step& s) {
    switch (s.kind) {
    case StepKind::Mi:
    case StepKind::Cli:
      return s.command.text;
    case StepKind::Foreach:
      return fmt::format("foreach {}", to_string(s.over));
    default:
      return std::string(to_string(s.kind));
    }
  }

  std::string_view text_;
  std::string origin_;
  LoadOptions options_;
  OnError default_on_error_ = OnError::Abort;
  std::map<std::string, Binding> scope_;
  std::size_t step_count_ = 0;
  bool attach_seen_ = false;
  bool detach_seen_ = false;
  std::optional<Position> first_needs_target_;
};

} // namespace

constexpr NameTable<ForeachOver, 3> kForeachOverNames{{
    {ForeachOver::Threads, "threads"},
    {ForeachOver::Waves, "waves"},
    {ForeachOver::Dispatches, "dispatches"},
}};
static_assert(names_cover(kForeachOverNames, ForeachOver::Dispatches));

std::string_view to_string(ForeachOver over) {
  return name_of(kForeachOverNames, over, "?");
}

constexpr NameTable<StopMode, 2> kStopModeNames{{
    {StopMode::Attach, "attach"},
    {StopMode::Copy, "copy"},
}};
static_assert(names_cover(kStopModeNames, StopMode::Copy));

std::string_view to_string(StopMode mode) {
  return name_of(kStopModeNames, mode, "?");
}

std::optional<StopMode> stop_mode_of(std::string_view text) {
  return value_of(kStopModeNames, text);
}

Playbook load(std::string_view yaml, const std::string& origin, const LoadOptions& options) {
  return Loader(yaml, origin, options).load();
}

Playbook load_file(const std::string& path, const LoadOptions& options) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw Error(ExitCode::NoInput, fmt::format("cannot read playbook {}", path),
                "check the path; `rocplay playbooks` lists the playbooks it can find");
  }
  std::string text;
  char buf[65536];
  while (in.read(buf, sizeof buf) || in.gcount() > 0) {
    text.append(buf, static_cast<std::size_t>(in.gcount()));
    if (text.size() > kMaxPlaybookBytes) {
      throw Error(ExitCode::BadPlaybook,
                  fmt::format("{}: the playbook is larger than {} bytes", path, kMaxPlaybookBytes),
                  "split it into smaller playbooks");
    }
  }
  return load(text, path, options);
}

} // namespace rocplay::playbook
