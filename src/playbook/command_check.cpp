// `rocplay playbooks check`: are the playbook's command names commands of the chosen debugger?
// Asked of a debugger started with no target (nothing is attached or run): MI commands through
// `-info-gdb-mi-command`, console commands through the debugger's own `help` lookup, and the
// suggestions from its completion lists (`complete info `).
#include "playbook/internal.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

namespace rocplay::playbook {

namespace {

// MI commands of GDB 13 and the GPU debuggers, for "did you mean": GDB has no MI command that
// lists them. A suggestion is offered only when the debugger says it exists.
const std::vector<std::string_view> kKnownMiCommands = {"ada-task-info",
                                                        "add-inferior",
                                                        "agent-info",
                                                        "break-after",
                                                        "break-commands",
                                                        "break-condition",
                                                        "break-delete",
                                                        "break-disable",
                                                        "break-enable",
                                                        "break-info",
                                                        "break-insert",
                                                        "break-list",
                                                        "break-passcount",
                                                        "break-watch",
                                                        "catch-assert",
                                                        "catch-catch",
                                                        "catch-exception",
                                                        "catch-handlers",
                                                        "catch-load",
                                                        "catch-rethrow",
                                                        "catch-throw",
                                                        "catch-unload",
                                                        "complete",
                                                        "cuda-info-blocks",
                                                        "cuda-info-contexts",
                                                        "cuda-info-devices",
                                                        "cuda-info-kernels",
                                                        "cuda-info-lanes",
                                                        "cuda-info-launch-trace",
                                                        "cuda-info-sms",
                                                        "cuda-info-threads",
                                                        "cuda-info-warps",
                                                        "data-disassemble",
                                                        "data-evaluate-expression",
                                                        "data-list-changed-registers",
                                                        "data-list-register-names",
                                                        "data-list-register-values",
                                                        "data-read-memory",
                                                        "data-read-memory-bytes",
                                                        "dispatch-info",
                                                        "enable-frame-filters",
                                                        "enable-pretty-printing",
                                                        "environment-directory",
                                                        "environment-path",
                                                        "environment-pwd",
                                                        "exec-arguments",
                                                        "file-list-exec-source-file",
                                                        "file-list-exec-source-files",
                                                        "file-list-shared-libraries",
                                                        "gdb-set",
                                                        "gdb-show",
                                                        "gdb-version",
                                                        "info-ada-exceptions",
                                                        "info-frame",
                                                        "info-gdb-mi-command",
                                                        "info-os",
                                                        "inferior-tty-set",
                                                        "inferior-tty-show",
                                                        "interpreter-exec",
                                                        "lane-info",
                                                        "list-features",
                                                        "list-target-features",
                                                        "list-thread-groups",
                                                        "queue-info",
                                                        "stack-info-depth",
                                                        "stack-info-frame",
                                                        "stack-list-arguments",
                                                        "stack-list-frames",
                                                        "stack-list-locals",
                                                        "stack-list-variables",
                                                        "stack-select-frame",
                                                        "symbol-info-functions",
                                                        "symbol-info-module-functions",
                                                        "symbol-info-module-variables",
                                                        "symbol-info-modules",
                                                        "symbol-info-types",
                                                        "symbol-info-variables",
                                                        "symbol-list-lines",
                                                        "thread-info",
                                                        "thread-list-ids",
                                                        "thread-select",
                                                        "trace-define-variable",
                                                        "trace-find",
                                                        "trace-frame-collected",
                                                        "trace-list-variables",
                                                        "trace-save",
                                                        "trace-status",
                                                        "var-assign",
                                                        "var-create",
                                                        "var-delete",
                                                        "var-evaluate-expression",
                                                        "var-info-expression",
                                                        "var-info-num-children",
                                                        "var-info-path-expression",
                                                        "var-info-type",
                                                        "var-list-children",
                                                        "var-set-format",
                                                        "var-set-frozen",
                                                        "var-set-update-range",
                                                        "var-set-visualizer",
                                                        "var-show-attributes",
                                                        "var-show-format",
                                                        "var-update",
                                                        "wave-info"};

class CommandChecker {
public:
  CommandChecker(Driver& driver, std::chrono::milliseconds timeout)
      : driver_(driver), timeout_(timeout) {}

  void check(const std::vector<Step>& steps, bool conditional, CommandCheckResult& out) {
    for (const auto& s : steps) {
      const auto kind = driver_.debugger().kind;
      if (!s.debuggers.empty() &&
          std::find(s.debuggers.begin(), s.debuggers.end(), kind) == s.debuggers.end()) {
        ++out.not_applicable;
        continue; // `requires:` another debugger: it would be skipped
      }
      const bool cond = conditional || s.when.has_value();
      if (s.kind == StepKind::Foreach) {
        check(s.body, cond, out);
        continue;
      }
      if (s.kind != StepKind::Mi && s.kind != StepKind::Cli) {
        continue;
      }
      const std::string& full = s.command.text;
      const std::string first_word = full.substr(0, full.find_first_of(" \t"));
      if (first_word.empty() || first_word.find("${") != std::string::npos) {
        continue; // the command's name is computed: checked when it runs
      }
      const std::string text = literal_prefix(full);
      std::optional<CommandProblem> problem =
          s.kind == StepKind::Mi ? check_mi(text) : check_cli(text);
      ++out.checked;
      if (!problem) {
        continue;
      }
      problem->position = s.command.position.line != 0 ? s.command.position : s.position;
      problem->conditional = cond;
      out.problems.push_back(std::move(*problem));
    }
  }

private:
  // The command up to its first `${`: the name is checked, not the arguments.
  static std::string literal_prefix(const std::string& text) {
    const auto ref = text.find("${");
    return ref == std::string::npos ? text : text.substr(0, ref);
  }

  std::optional<CommandProblem> check_mi(const std::string& text) {
    const std::string word = text.substr(0, text.find_first_of(" \t"));
    if (word.size() < 2 || word[0] != '-') {
      return std::nullopt;
    }
    const std::string name = word.substr(1);
    const auto exists = mi_exists(name);
    if (!exists || *exists) {
      return std::nullopt; // unknown (a debugger without -info-gdb-mi-command), or exists
    }
    CommandProblem p;
    p.command = word;
    p.message = fmt::format("`{}` is not an MI command of {}", word, debugger_name());
    std::vector<std::string_view> candidates;
    for (auto c : kKnownMiCommands) {
      candidates.push_back(c);
    }
    // The nearest known name that this debugger has.
    while (auto guess = detail::nearest(name, candidates)) {
      if (mi_exists(*guess).value_or(false)) {
        p.hint = fmt::format("did you mean `-{}`?", *guess);
        break;
      }
      candidates.erase(std::find(candidates.begin(), candidates.end(), *guess));
    }
    if (p.hint.empty()) {
      p.hint = "check the name in the debugger's manual (GDB/MI commands); a console command "
               "goes in `cli:`";
    }
    return p;
  }

  // Console commands that only rocgdb or cuda-gdb know; nullptr for the others.
  static const char* gpu_debugger_of(const std::string& prefix, const std::string& word) {
    if (prefix.empty() && word == "cuda") {
      return "cuda-gdb";
    }
    if (prefix == "info ") {
      if (word == "cuda") {
        return "cuda-gdb";
      }
      for (const char* rocgdb : {"agents", "dispatches", "queues", "lanes"}) {
        if (word == rocgdb) {
          return "rocgdb";
        }
      }
    }
    return nullptr;
  }

  std::optional<CommandProblem> check_cli(const std::string& text) {
    const std::string trimmed = text.substr(0, text.find_last_not_of(" \t") + 1);
    if (trimmed.empty()) {
      return std::nullopt;
    }
    mi::Exchange ex;
    try {
      ex = driver_.console("help " + trimmed, timeout_);
    } catch (const Error&) {
      return std::nullopt; // the text cannot be sent as is: the run-time check will say why
    }
    const auto err = ex.error_message();
    // `Undefined command: "thredas".  Try "help".` / `Undefined info command: "thredas"...`
    if (!err || err->rfind("Undefined ", 0) != 0) {
      return std::nullopt;
    }
    CommandProblem p;
    p.command = trimmed;
    p.message = fmt::format("`{}` is not a command of {}: {}", trimmed, debugger_name(), *err);
    const auto q1 = err->find('"');
    const auto q2 = q1 == std::string::npos ? q1 : err->find('"', q1 + 1);
    const std::string bad =
        q1 == std::string::npos || q2 == std::string::npos ? "" : err->substr(q1 + 1, q2 - q1 - 1);
    // The words before the bad one are the prefix command (`info`), from "Undefined info command".
    std::string prefix;
    const std::string_view kUndefined = "Undefined ";
    const auto command_word = err->find(" command:");
    if (command_word != std::string::npos && command_word > kUndefined.size()) {
      prefix = err->substr(kUndefined.size(), command_word - kUndefined.size()) + " ";
    }
    const auto& names = completions(prefix);
    std::vector<std::string_view> candidates(names.begin(), names.end());
    if (const char* owner = gpu_debugger_of(prefix, bad)) {
      // Not a typo: the command of a GPU debugger, checked against another one.
      p.hint = fmt::format("`{}{}` is a {} command; check the playbook with `--debugger {}`",
                           prefix, bad, owner, owner);
    } else if (auto guess = detail::nearest(bad, candidates)) {
      std::string fixed = trimmed;
      const auto at = fixed.find(bad, prefix.size() > 0 ? prefix.size() - 1 : 0);
      if (at != std::string::npos) {
        fixed.replace(at, bad.size(), *guess);
      }
      p.hint = fmt::format("did you mean `{}`?", fixed);
    } else {
      p.hint = fmt::format("`help {}` in {} lists the commands there",
                           prefix.empty() ? "all" : prefix, debugger_name());
    }
    return p;
  }

  // Command names after `prefix` (`info `), from `complete PREFIX`; cached.
  const std::vector<std::string>& completions(const std::string& prefix) {
    auto it = completions_.find(prefix);
    if (it != completions_.end()) {
      return it->second;
    }
    std::vector<std::string> names;
    try {
      const auto ex = driver_.console("complete " + prefix, timeout_);
      const std::string text = ex.console();
      std::size_t pos = 0;
      while (pos < text.size()) {
        auto nl = text.find('\n', pos);
        if (nl == std::string::npos) {
          nl = text.size();
        }
        std::string line = text.substr(pos, nl - pos);
        pos = nl + 1;
        if (line.rfind(prefix, 0) == 0) {
          line = line.substr(prefix.size());
        }
        if (!line.empty() && line.find(' ') == std::string::npos) {
          names.push_back(line);
        }
      }
    } catch (const Error&) {
    }
    return completions_.emplace(prefix, std::move(names)).first->second;
  }

  std::optional<bool> mi_exists(const std::string& name) {
    if (auto it = mi_cache_.find(name); it != mi_cache_.end()) {
      return it->second;
    }
    std::optional<bool> exists;
    try {
      const auto ex = driver_.execute("-info-gdb-mi-command " + name, timeout_);
      if (const mi::Record* r = ex.result(); r != nullptr && r->klass() == "done") {
        const auto value = r->results()["command"]["exists"].str_or();
        if (value == "true" || value == "false") {
          exists = value == "true";
        }
      }
    } catch (const Error&) {
    }
    mi_cache_[name] = exists;
    return exists;
  }

  std::string debugger_name() const {
    const auto& d = driver_.debugger();
    const std::string version = session::version_number(d.version);
    return fmt::format("{}{}{}", to_string(d.kind), version.empty() ? "" : " ", version);
  }

  Driver& driver_;
  std::chrono::milliseconds timeout_;
  std::map<std::string, std::optional<bool>> mi_cache_;
  std::map<std::string, std::vector<std::string>> completions_;
};

} // namespace

CommandCheckResult check_command_names(const Playbook& playbook, Driver& driver,
                                       std::chrono::milliseconds timeout) {
  CommandCheckResult out;
  CommandChecker checker(driver, timeout);
  checker.check(playbook.steps, false, out);
  checker.check(playbook.always, false, out);
  return out;
}

} // namespace rocplay::playbook
