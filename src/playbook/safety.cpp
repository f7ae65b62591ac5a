// Which debugger commands a playbook may send.
//
// A playbook from outside the built-ins is untrusted text: it must not make the debugger run a
// shell, a script interpreter, or a command file, define new commands, or write files, unless the
// person running it says so (--allow-unsafe-commands). GDB accepts any unique prefix of a command
// name (`sou` is source, `ed` is edit) and aliases (`!`, `|`, `py`, `pi`, `gu`), and some commands
// run other commands (`thread apply all CMD`, `with SETTING -- CMD`), so the check follows GDB's
// own lookup conservatively: a word of two or more letters that begins an unsafe command's name
// is refused, and every command a wrapper could run is checked the same way.
//
// Some commands are refused even then, because they break the runner's guarantees: quit,
// detach/attach and target belong to rocplay, and kill/run would end or replace the target. Their
// list is the session's (session::lifecycle_console_commands), so the loader refuses up front
// exactly what the session would refuse at run time.
#include "playbook/internal.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <iterator>
#include <type_traits>

namespace rocplay::playbook::detail {

namespace {

struct CommandRule {
  std::string_view name;
  std::array<std::string_view, 3> aliases; // exact spellings besides prefixes of `name`
  std::string_view reason;
};

// Refused unless --allow-unsafe-commands.
constexpr std::array<CommandRule, 30> kUnsafe = {{
    {"shell", {"!"}, "runs a shell command"},
    {"pipe", {"|"}, "runs a shell command"},
    {"make", {}, "runs make, a shell command"},
    {"python", {"py"}, "runs Python code in the debugger"},
    {"python-interactive", {"pi"}, "starts a Python prompt"},
    {"guile", {"gu"}, "runs Guile code in the debugger"},
    {"guile-repl", {"gr"}, "starts a Guile prompt"},
    {"source", {}, "runs the commands of a file"},
    {"define", {}, "defines a new command"},
    {"define-prefix", {}, "defines a new command"},
    {"document", {}, "reads further lines as a command's documentation"},
    {"alias", {}, "defines an alias, which could name an unsafe command"},
    {"eval", {}, "builds a command at run time, which cannot be checked"},
    {"interpreter-exec", {}, "runs commands in another interpreter"},
    {"compile", {"expression"}, "compiles code and runs it in the target"},
    {"edit", {}, "starts an editor"},
    {"if", {}, "reads further lines as commands"},
    {"while", {"ws"}, "reads further lines as commands"},
    {"commands", {}, "attaches commands to breakpoints"},
    {"dump", {}, "writes a file"},
    {"append", {}, "writes a file"},
    {"restore", {}, "writes the target's memory from a file"},
    {"save", {}, "writes a file"},
    {"generate-core-file", {"gcore"}, "writes a core file"},
    {"checkpoint", {}, "forks the target"},
    {"cd", {}, "changes the debugger's directory"},
    {"add-auto-load-safe-path", {}, "lets the debugger auto-load scripts"},
    {"add-auto-load-scripts-directory", {}, "lets the debugger auto-load scripts"},
    {"new-ui", {}, "opens another console on a file"},
    {"tui", {}, "starts the full-screen interface"},
}};

// `set`/`-gdb-set` settings that write files or re-enable what the runner turned off.
constexpr std::array<std::string_view, 5> kUnsafeSettings = {
    "logging", "auto-load", "history", "may-call-functions", "script-extension"};

// Commands whose arguments can hold another command.
constexpr std::array<std::string_view, 6> kWrappers = {"thread", "frame", "taas",
                                                       "tfaas",  "faas",  "with"};
constexpr std::array<std::string_view, 3> kWrapperAliases = {"t", "f", "w"};

bool is_cmd_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '-' || c == '_' || c == '.';
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (auto& c : out) {
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return out;
}

// GDB's lookup: an exact name or alias first; else (two letters or more) a prefix of a name or
// of an alias (gdb resolves `expr` to `expression`, an alias of compile).
template <typename Rule> bool names_exactly(const Rule& rule, std::string_view word) {
  if (word == rule.name) {
    return true;
  }
  return std::any_of(rule.aliases.begin(), rule.aliases.end(),
                     [&](std::string_view a) { return !a.empty() && word == a; });
}

std::size_t min_prefix(const CommandRule& /*rule*/) {
  return 2;
}
std::size_t min_prefix(const session::LifecycleCommand& rule) {
  return rule.min_prefix;
}

template <typename Rule> bool names_by_prefix(const Rule& rule, std::string_view word) {
  if (word.size() < min_prefix(rule)) {
    return false;
  }
  if (rule.name.substr(0, word.size()) == word) {
    return true;
  }
  return std::any_of(rule.aliases.begin(), rule.aliases.end(), [&](std::string_view a) {
    return !a.empty() && a.substr(0, word.size()) == word;
  });
}

// The unsafe commands (CommandRule) and the session's lifecycle commands, which are refused even
// with --allow-unsafe-commands (session::lifecycle_console_commands).
template <typename Rules> auto lookup(const Rules& rules, std::string_view word) {
  using Rule = std::remove_cvref_t<decltype(*std::begin(rules))>;
  for (const auto& rule : rules) {
    if (names_exactly(rule, word)) {
      return &rule;
    }
  }
  for (const auto& rule : rules) {
    if (names_by_prefix(rule, word)) {
      return &rule;
    }
  }
  return static_cast<const Rule*>(nullptr);
}

bool prefix_of(std::string_view full, std::string_view word, std::size_t min_len) {
  return word.size() >= min_len && full.substr(0, word.size()) == word;
}

std::string_view trim_left(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) {
    s.remove_prefix(1);
  }
  return s;
}

// The first word of a console command, the way GDB delimits command names.
std::string_view command_word(std::string_view s) {
  if (!s.empty() && (s.front() == '!' || s.front() == '|')) {
    return s.substr(0, 1);
  }
  std::size_t n = 0;
  while (n < s.size() && is_cmd_char(s[n])) {
    ++n;
  }
  return s.substr(0, n);
}

std::optional<Refusal> check_cli_depth(std::string_view command, bool allow_unsafe, int depth);
std::optional<Refusal> check_mi_depth(std::string_view command, bool allow_unsafe, int depth);

std::optional<Refusal> check_setting(std::string_view args, std::string_view word,
                                     bool allow_unsafe) {
  const std::string setting = lower(command_word(trim_left(args)));
  for (auto unsafe : kUnsafeSettings) {
    if (prefix_of(unsafe, setting, 3)) {
      if (allow_unsafe) {
        return std::nullopt;
      }
      return Refusal{
          std::string(word) + " " + std::string(unsafe),
          fmt::format("`{} {}` writes files or lets the debugger run code", word, unsafe), false};
    }
  }
  return std::nullopt;
}

std::optional<Refusal> check_cli_depth(std::string_view command, bool allow_unsafe, int depth) {
  if (depth > 8) {
    return Refusal{std::string(command.substr(0, 32)), "commands nested too deeply to check",
                   false};
  }
  command = trim_left(command);
  const std::string_view raw_word = command_word(command);
  if (raw_word.empty()) {
    return std::nullopt;
  }
  const std::string word = lower(raw_word);
  const std::string_view args = command.substr(raw_word.size());
  if (const auto* rule = lookup(session::lifecycle_console_commands(), word)) {
    return Refusal{std::string(raw_word),
                   fmt::format("`{}` ({}): {}", raw_word, rule->name, rule->reason), true};
  }
  if (const CommandRule* rule = lookup(kUnsafe, word)) {
    if (allow_unsafe) {
      return std::nullopt;
    }
    return Refusal{std::string(raw_word),
                   fmt::format("`{}` ({}) {}", raw_word, rule->name, rule->reason), false};
  }
  if (word == "set") {
    return check_setting(args, "set", allow_unsafe);
  }
  const bool wrapper =
      std::find(kWrapperAliases.begin(), kWrapperAliases.end(), word) != kWrapperAliases.end() ||
      std::any_of(kWrappers.begin(), kWrappers.end(),
                  [&](std::string_view w) { return prefix_of(w, word, 2); });
  if (wrapper) {
    if (word == "w" || prefix_of("with", word, 2)) {
      if (auto r = check_setting(args, "with", allow_unsafe)) {
        return r;
      }
    }
    // Any suffix of the arguments could be the command it runs; check each one.
    std::string_view rest = args;
    while (true) {
      rest = trim_left(rest);
      if (rest.empty()) {
        break;
      }
      if (auto r = check_cli_depth(rest, allow_unsafe, depth + 1)) {
        return r;
      }
      const std::size_t next = rest.find_first_of(" \t");
      if (next == std::string_view::npos) {
        break;
      }
      rest.remove_prefix(next);
    }
  }
  return std::nullopt;
}

// The arguments of -interpreter-exec: words or MI c-strings.
std::vector<std::string> mi_arguments(std::string_view s) {
  std::vector<std::string> out;
  std::size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) {
      ++i;
    }
    if (i == s.size()) {
      break;
    }
    if (s[i] == '"') {
      std::string body;
      ++i;
      while (i < s.size() && s[i] != '"') {
        if (s[i] == '\\' && i + 1 < s.size()) {
          body += s[i];
          ++i;
        }
        body += s[i];
        ++i;
      }
      ++i;
      out.push_back(mi::unescape(body));
    } else {
      std::size_t start = i;
      while (i < s.size() && s[i] != ' ' && s[i] != '\t') {
        ++i;
      }
      out.emplace_back(s.substr(start, i - start));
    }
  }
  return out;
}

std::optional<Refusal> check_mi_depth(std::string_view command, bool allow_unsafe, int depth) {
  if (depth > 8) {
    return Refusal{std::string(command.substr(0, 32)), "commands nested too deeply to check",
                   false};
  }
  command = trim_left(command);
  if (command.empty() || command.front() != '-') {
    // The MI interpreter runs anything else as a console command.
    return check_cli_depth(command, allow_unsafe, depth + 1);
  }
  std::size_t n = 1;
  while (n < command.size() && is_cmd_char(command[n])) {
    ++n;
  }
  const std::string name = lower(command.substr(1, n - 1));
  const std::string_view args = command.substr(n);
  for (const session::LifecycleCommand& never : session::lifecycle_mi_commands()) {
    if (name == never.name) {
      return Refusal{"-" + name, fmt::format("`-{}`: {}", name, never.reason), true};
    }
  }
  if (name == "gdb-set") {
    return check_setting(args, "-gdb-set", allow_unsafe);
  }
  if (name == "environment-cd") {
    if (allow_unsafe) {
      return std::nullopt;
    }
    return Refusal{"-environment-cd", "`-environment-cd` changes the debugger's directory", false};
  }
  if (name == "interpreter-exec") {
    auto words = mi_arguments(args);
    if (words.empty()) {
      return std::nullopt;
    }
    const std::string interp = lower(words[0]);
    for (std::size_t i = 1; i < words.size(); ++i) {
      std::optional<Refusal> r;
      if (interp == "console") {
        r = check_cli_depth(words[i], allow_unsafe, depth + 1);
      } else if (interp.rfind("mi", 0) == 0) {
        r = check_mi_depth(words[i], allow_unsafe, depth + 1);
      } else if (!allow_unsafe) {
        r = Refusal{"-interpreter-exec " + words[0],
                    fmt::format("interpreter `{}` cannot be checked", words[0]), false};
      }
      if (r) {
        return r;
      }
    }
  }
  return std::nullopt;
}

} // namespace

std::optional<Refusal> check_cli(std::string_view command, bool allow_unsafe) {
  return check_cli_depth(command, allow_unsafe, 0);
}

std::optional<Refusal> check_mi(std::string_view command, bool allow_unsafe) {
  return check_mi_depth(command, allow_unsafe, 0);
}

} // namespace rocplay::playbook::detail
