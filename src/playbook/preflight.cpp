// Before the attach: the debugger the playbook needs, its variables (with `--var` values typed
// by their defaults), and every command that only those variables shape, rendered and checked
// while the target still runs.
#include "playbook/internal.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <set>

namespace rocplay::playbook::detail {

namespace {

// Numeric version compare: `13.1` >= `12.1.90`.
bool version_at_least(const std::string& have, const std::string& want) {
  auto parts = [](const std::string& s) {
    std::vector<std::uint64_t> out;
    std::uint64_t cur = 0;
    bool any = false;
    for (char c : s) {
      if (c >= '0' && c <= '9') {
        cur = cur * 10 + static_cast<std::uint64_t>(c - '0');
        any = true;
      } else if (c == '.') {
        out.push_back(cur);
        cur = 0;
        any = false;
      } else {
        break;
      }
    }
    if (any) {
      out.push_back(cur);
    }
    return out;
  };
  auto a = parts(have);
  auto b = parts(want);
  a.resize(std::max(a.size(), b.size()));
  b.resize(a.size());
  return a >= b;
}

Value typed_var(const std::string& name, const std::string& text, const Value& def) {
  auto bad = [&](std::string_view want) {
    return Error(ExitCode::Usage, fmt::format("--var {}={}: expected {}", name, text, want),
                 fmt::format("the default of `{}` is {}", name, def.repr()));
  };
  for (char c : text) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      throw Error(ExitCode::Usage,
                  fmt::format("--var {}: the value holds a line break or control character", name),
                  "values are single-line text");
    }
  }
  switch (def.kind()) {
  case Value::Kind::Int: {
    std::int64_t i = 0;
    auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), i);
    if (text.empty() || ec != std::errc() || p != text.data() + text.size()) {
      throw bad("a whole number");
    }
    return Value::integer(i);
  }
  case Value::Kind::Address: {
    std::uint64_t a = 0;
    const bool hex = text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X');
    const char* b = text.data() + (hex ? 2 : 0);
    auto [p, ec] = std::from_chars(b, text.data() + text.size(), a, hex ? 16 : 10);
    if (ec != std::errc() || p != text.data() + text.size() || b == p) {
      throw bad("an address such as 0x401000");
    }
    return Value::address(a);
  }
  case Value::Kind::Bool:
    if (text != "true" && text != "false") {
      throw bad("true or false");
    }
    return Value::boolean(text == "true");
  default:
    return Value::string(text);
  }
}

void collect_runtime_names(const std::vector<Step>& steps, std::set<std::string>& out) {
  for (const auto& s : steps) {
    if (!s.register_as.empty()) {
      out.insert(s.register_as);
    }
    if (!s.loop_var.empty()) {
      out.insert(s.loop_var);
    }
    collect_runtime_names(s.body, out);
  }
}

struct RenderCheck {
  const Playbook& pb;
  const RunOptions& options;
  DebuggerKind debugger;
  const std::map<std::string, Value>& globals;
  const Scope& scope;
  const std::set<std::string>& runtime_names;

  void steps(const std::vector<Step>& list) const {
    for (const auto& s : list) {
      steps(s.body);
      if (s.kind != StepKind::Mi && s.kind != StepKind::Cli) {
        continue;
      }
      if (!s.debuggers.empty() &&
          std::find(s.debuggers.begin(), s.debuggers.end(), debugger) == s.debuggers.end()) {
        continue;
      }
      std::set<std::string> vars_read;
      bool static_only = true;
      for (const auto& piece : s.command.pieces) {
        if (piece.literal || piece.path.empty()) {
          continue;
        }
        if (runtime_names.count(piece.path[0]) != 0 || globals.count(piece.path[0]) == 0) {
          static_only = false;
        } else {
          vars_read.insert(piece.path[0]);
        }
      }
      if (!static_only || vars_read.empty()) {
        continue; // literal commands were checked when the playbook loaded
      }
      std::string given;
      for (const auto& [name, text] : options.vars) {
        if (vars_read.count(name) != 0) {
          given += fmt::format("{}--var {}={}", given.empty() ? "" : ", ", name, text);
        }
      }
      const auto code = given.empty() ? ExitCode::BadPlaybook : ExitCode::Usage;
      const std::string where = s.position.line != 0 ? s.position.str() + ": " : std::string();
      std::string command;
      try {
        command = render(s.command, scope, s.kind == StepKind::Mi ? Quoting::Mi : Quoting::Cli);
      } catch (const TextError& e) {
        throw Error(
            code,
            fmt::format("{}step `{}`: {}{}", where, s.name, e.what(),
                        given.empty() ? "" : fmt::format(" (from {})", given)),
            fmt::format("nothing was attached; {}", e.hint.empty() ? "fix the value" : e.hint));
      }
      const bool allow = pb.builtin || pb.allow_unsafe_commands;
      const auto refusal =
          s.kind == StepKind::Mi ? check_mi(command, allow) : check_cli(command, allow);
      if (refusal) {
        throw Error(ExitCode::BadPlaybook,
                    fmt::format("{}step `{}` would send `{}`{}: refused, {}", where, s.name,
                                command, given.empty() ? "" : fmt::format(" (from {})", given),
                                refusal->reason),
                    "nothing was attached; give a value that makes a safe command");
      }
    }
  }
};

} // namespace

void check_requirements(const Playbook& pb, const session::Debugger& dbg) {
  const auto& req = pb.requirements;
  if (!req.debuggers.empty() &&
      std::find(req.debuggers.begin(), req.debuggers.end(), dbg.kind) == req.debuggers.end()) {
    std::string names;
    for (auto k : req.debuggers) {
      names += (names.empty() ? "" : " or ") + std::string(to_string(k));
    }
    throw Error(ExitCode::DebuggerNotFound,
                fmt::format("playbook `{}` needs {}, but the debugger is {} ({})", pb.name, names,
                            to_string(dbg.kind), dbg.path),
                fmt::format("pass --debugger {}, or run a playbook that works with {} "
                            "(`rocplay playbooks`)",
                            to_string(req.debuggers.front()), to_string(dbg.kind)));
  }
  if (auto it = req.min_version.find(dbg.kind); it != req.min_version.end()) {
    const std::string have = session::version_number(dbg.version);
    if (have.empty() || !version_at_least(have, it->second)) {
      throw Error(ExitCode::DebuggerNotFound,
                  fmt::format("playbook `{}` needs {} {} or newer; {} is {}", pb.name,
                              to_string(dbg.kind), it->second, dbg.path,
                              have.empty() ? dbg.version : have),
                  "install a newer debugger, or pass --debugger PATH to one");
    }
  }
}

std::map<std::string, Value> global_values(const Playbook& pb, const session::Debugger& debugger,
                                           const RunOptions& options) {
  std::map<std::string, Value> globals;
  globals["pid"] = Value::integer(options.pid);
  globals["debugger"] = Value::string(std::string(to_string(debugger.kind)));
  globals["debugger_version"] = Value::string(session::version_number(debugger.version));
  globals["playbook"] = Value::string(pb.name);
  for (const auto& [name, value] : pb.vars) {
    globals[name] = value;
  }
  for (const auto& [name, text] : options.vars) {
    auto it = std::find_if(pb.vars.begin(), pb.vars.end(),
                           [&name = name](const auto& v) { return v.first == name; });
    if (it == pb.vars.end()) {
      std::vector<std::string_view> declared;
      for (const auto& v : pb.vars) {
        declared.push_back(v.first);
      }
      auto guess = nearest(name, declared);
      std::string list;
      for (auto d : declared) {
        list += (list.empty() ? "" : ", ") + std::string(d);
      }
      throw Error(
          ExitCode::Usage,
          fmt::format("--var {}: playbook `{}` declares no variable `{}`", name, pb.name, name),
          guess ? fmt::format("did you mean `{}`?", *guess)
                : (list.empty() ? std::string("this playbook takes no variables")
                                : "its variables: " + list));
    }
    globals[name] = typed_var(name, text, it->second);
  }
  return globals;
}

// Every command that reads only the playbook's variables (and pid, debugger ...) is rendered
// and checked now, before the attach: a `--var` value that cannot go into its command, or that
// makes it unsafe, is refused while the target still runs. Steps that read a registered
// result or a loop item are checked when they run.
void check_rendered_commands(const Playbook& pb, const RunOptions& options, DebuggerKind debugger,
                             const std::map<std::string, Value>& globals, const Scope& scope) {
  std::set<std::string> runtime_names;
  collect_runtime_names(pb.steps, runtime_names);
  collect_runtime_names(pb.always, runtime_names);
  const RenderCheck check{pb, options, debugger, globals, scope, runtime_names};
  check.steps(pb.steps);
  check.steps(pb.always);
}

} // namespace rocplay::playbook::detail
