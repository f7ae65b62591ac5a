// Loading and validating playbooks: every error names FILE:LINE:COLUMN and, for a misspelt key,
// the nearest valid one.
#include "rocplay/playbook/playbook.hpp"

#include <catch2/catch.hpp>

using namespace rocplay;
using namespace rocplay::playbook;

namespace {

struct LoadFailure {
  std::string message;
  std::string hint;
  ExitCode code = ExitCode::Ok;
};

LoadFailure failure(const std::string& yaml, LoadOptions options = {}) {
  try {
    load(yaml, "t.yaml", options);
  } catch (const Error& e) {
    return {e.what(), e.hint(), e.code()};
  }
  FAIL("loaded without an error:\n" << yaml);
  return {};
}

bool starts_with(const std::string& s, const std::string& prefix) {
  return s.rfind(prefix, 0) == 0;
}

#define CHECK_FAILS_AT(yaml, where, msg_part, hint_part)                                           \
  do {                                                                                             \
    const auto f_ = failure(yaml);                                                                 \
    INFO(f_.message << " / hint: " << f_.hint);                                                    \
    CHECK(f_.code == ExitCode::BadPlaybook);                                                       \
    CHECK(starts_with(f_.message, std::string("t.yaml:") + (where) + ": "));                       \
    CHECK(f_.message.find(msg_part) != std::string::npos);                                         \
    CHECK(f_.hint.find(hint_part) != std::string::npos);                                           \
  } while (0)

} // namespace

TEST_CASE("a playbook loads into typed steps") {
  const auto pb = load(R"y(name: demo
description: a demo
timeout: 20s
vars:
  frames: 12
  label: hello
steps:
  - mi: -gdb-set pagination off
  - attach
  - name: all threads
    threads:
    register: t
    expect: result.count > 0
  - backtrace: {frames: 5}
  - info-line:
  - foreach: threads
    where: thread.function == "start_sync(int)"
    limit: 3
    steps:
      - cli: thread ${thread.id}
        on_error: continue
      - mi: -stack-list-frames --thread ${thread.id} 0 ${frames}
        timeout: 500ms
  - snapshot
always:
  - cli: info threads
    when: t.count > 1
)y",
                       "demo.yaml");
  CHECK(pb.name == "demo");
  CHECK(pb.description == "a demo");
  CHECK(pb.timeout == std::chrono::milliseconds(20000));
  REQUIRE(pb.vars.size() == 2);
  CHECK(pb.vars[0].second.kind() == Value::Kind::Int);
  CHECK(pb.vars[1].second.kind() == Value::Kind::String);
  CHECK(pb.has_attach_step);
  REQUIRE(pb.steps.size() == 7);
  CHECK(pb.steps[0].kind == StepKind::Mi);
  CHECK(pb.steps[0].position.str() == "demo.yaml:8:5");
  CHECK(pb.steps[1].kind == StepKind::Attach);
  CHECK(pb.steps[2].kind == StepKind::Threads);
  CHECK(pb.steps[2].name == "all threads");
  CHECK(pb.steps[2].register_as == "t");
  CHECK(pb.steps[2].expect.size() == 1);
  CHECK(pb.steps[3].frames == 5);
  CHECK(pb.steps[4].frames == 1);
  const Step& fe = pb.steps[5];
  CHECK(fe.kind == StepKind::Foreach);
  CHECK(fe.over == ForeachOver::Threads);
  CHECK(fe.loop_var == "thread");
  CHECK(fe.limit == 3);
  REQUIRE(fe.body.size() == 2);
  CHECK(fe.body[0].on_error == OnError::Continue);
  CHECK(fe.body[1].timeout == std::chrono::milliseconds(500));
  REQUIRE(pb.always.size() == 1);
  CHECK(pb.always[0].when.has_value());
}

TEST_CASE("the name defaults to the file's stem, and attach to implicit") {
  const auto pb = load("steps:\n  - threads\n", "/some/dir/my-book.yaml");
  CHECK(pb.name == "my-book");
  CHECK_FALSE(pb.has_attach_step);
}

TEST_CASE("Ansible spellings are accepted: tasks, failed_when, ignore_errors") {
  const auto pb = load(R"y(tasks:
  - mi: -thread-info
    failed_when: result.class == "error"
    ignore_errors: true
)y",
                       "a.yaml");
  REQUIRE(pb.steps.size() == 1);
  CHECK(pb.steps[0].fail_when.has_value());
  CHECK(pb.steps[0].on_error == OnError::Continue);
}

TEST_CASE("YAML syntax errors have the parser's position") {
  CHECK_FAILS_AT("steps:\n  - mi: [unclosed\n", "3:1", "YAML syntax", "");
  CHECK_FAILS_AT("steps:\n  - mi: -thread-info\n - bad indent\n", "3:2", "YAML syntax", "");
}

TEST_CASE("YAML indentation errors say where the parser expected the line, and show it") {
  // A key at the column of the list's `- ` entries.
  CHECK_FAILS_AT("name: t\nsteps:\n  - cli: info threads\n  mi: -thread-info\n", "4:3",
                 "line 4 starts a key at column 3, where the list of line 3 has `- ` entries: "
                 "write `- mi:` for a new entry",
                 "indent with spaces");
  // Indented to a column where no block is open: the columns that would fit.
  CHECK_FAILS_AT("name: t\nsteps:\n  - cli: info threads\n   - mi: -thread-info\n", "4:4",
                 "line 4 starts at column 4, where no block is open; the parser expected a line "
                 "at column 5 (`cli:` as on line 3), column 3 (`- ...` as on line 3), column 1 "
                 "(`steps:` as on line 2)",
                 "");
  CHECK_FAILS_AT("name: t\nsteps:\n  - cli: info threads\n     name: x\n", "4:10",
                 "line 4 starts at column 6, where no block is open", "");
  // The offending line and the one before, with a caret under the column.
  const auto f = failure("name: t\nsteps:\n  - cli: info threads\n   - mi: -thread-info\n");
  CHECK(f.message.find("\n      3 |   - cli: info threads\n      4 |    - mi: -thread-info\n"
                       "        |    ^") != std::string::npos);
  CHECK_FAILS_AT("steps:\n- cli: a: b\n", "2:9", "a second `: ` on one line; quote", "");
  CHECK_FAILS_AT("name: t\n\tsteps:\n", "2:1", "a tab in the indentation", "");
}

TEST_CASE("a debugger command written as a key is told to go in cli:") {
  CHECK_FAILS_AT("steps:\n  - print: $pc\n", "2:5",
                 "unknown key `print` in a step: `print` is a debugger command",
                 "did you mean `cli: print $pc`?");
  CHECK_FAILS_AT("print: $pc\nsteps: []\n", "1:1", "`print` is a debugger command",
                 "did you mean `cli: print $pc`? Console commands go in `cli:`, MI commands in "
                 "`mi:`, as a step under `steps:`");
}

TEST_CASE("the top level: shape, unknown keys with suggestions, duplicates") {
  CHECK_FAILS_AT("- mi: -thread-info\n", "1:1", "a playbook is a YAML mapping", "");
  CHECK_FAILS_AT("name: x\nstpes:\n  - threads\n", "2:1", "unknown key `stpes`",
                 "did you mean `steps`?");
  CHECK_FAILS_AT("name: x\ndescriptoin: y\nsteps: []\n", "2:1", "unknown key `descriptoin`",
                 "`description`");
  CHECK_FAILS_AT("name: x\n", "1:1", "no `steps:`", "add a `steps:` list");
  CHECK_FAILS_AT("steps: []\nsteps: []\n", "2:1", "`steps` appears twice", "");
  CHECK_FAILS_AT("steps: []\ntasks: []\n", "2:1", "both `steps` and `tasks`", "");
  CHECK_FAILS_AT("steps: 3\n", "1:8", "`steps` is a list of steps", "");
  CHECK_FAILS_AT("on_error: contine\nsteps: []\n", "1:11", "on_error is `abort` or `continue`",
                 "did you mean `continue`?");
  CHECK_FAILS_AT("timeout: soon\nsteps: []\n", "1:10", "not a duration", "500ms");
  CHECK_FAILS_AT("timeout: 3 parsecs\nsteps: []\n", "1:10", "unknown unit ` parsecs`", "ms, s, m");
  CHECK_FAILS_AT("timeout: 3h\nsteps: []\n", "1:10", "unknown unit `h`", "ms, s, m");
  CHECK_FAILS_AT("timeout: 0\nsteps: []\n", "1:10", "out of range", "");
}

TEST_CASE("requirements and vars") {
  CHECK_FAILS_AT("requirements: {debuggers: [rocgbd]}\nsteps: []\n", "1:28",
                 "unknown debugger `rocgbd`", "did you mean `rocgdb`?");
  CHECK_FAILS_AT("requirements:\n  debugers: [gdb]\nsteps: []\n", "2:3", "unknown key `debugers`",
                 "did you mean `debuggers`?");
  CHECK_FAILS_AT("requirements:\n  min_version: {gdb: thirteen}\nsteps: []\n", "2:22",
                 "`thirteen` is not a version", "");
  CHECK_FAILS_AT("vars:\n  pid: 3\nsteps: []\n", "2:3", "`pid` is set by rocplay", "");
  CHECK_FAILS_AT("vars:\n  2x: 3\nsteps: []\n", "2:3", "not a variable name", "");
  CHECK_FAILS_AT("vars:\n  x: [1, 2]\nsteps: []\n", "2:6", "must be a single value", "");
  const auto pb = load("requirements:\n  debuggers: rocgdb\n  min_version: {rocgdb: \"14.2\"}\n"
                       "steps: []\n",
                       "r.yaml");
  CHECK(pb.requirements.debuggers == std::vector<DebuggerKind>{DebuggerKind::RocGdb});
  CHECK(pb.requirements.min_version.at(DebuggerKind::RocGdb) == "14.2");
}

TEST_CASE("step shapes") {
  CHECK_FAILS_AT("steps:\n  - mii: -thread-info\n", "2:5", "unknown key `mii` in a step",
                 "did you mean `mi`?");
  CHECK_FAILS_AT("steps:\n  - mi: -thread-info\n    regsiter: x\n", "3:5", "unknown key `regsiter`",
                 "did you mean `register`?");
  CHECK_FAILS_AT("steps:\n  - mi: -thread-info\n    fail_wehn: x\n", "3:5",
                 "unknown key `fail_wehn`", "did you mean `fail_when`?");
  CHECK_FAILS_AT("steps:\n  - name: x\n", "2:5", "this step has no action", "add one of: mi, cli");
  CHECK_FAILS_AT("steps:\n  - mi: -thread-info\n    cli: bt\n", "3:5",
                 "a step has one action; this one has `mi` and `cli`", "split it");
  CHECK_FAILS_AT("steps:\n  - thread\n", "2:5", "`thread` is not a step",
                 "did you mean `threads`?");
  CHECK_FAILS_AT("steps:\n  - 42\n", "2:5", "`42` is not a step", "");
  CHECK_FAILS_AT("steps:\n  - mi: thread-info\n", "2:9", "not an MI command", "use `cli:`");
  CHECK_FAILS_AT("steps:\n  - mi: [a]\n", "2:9", "`mi` takes one command as text", "");
  CHECK_FAILS_AT("steps:\n  - cli: \"bt\\nshell id\"\n", "2:13", "may not contain a line break",
                 "");
  CHECK_FAILS_AT("steps:\n  - threads: 3\n", "2:14", "`threads` takes no value", "");
  CHECK_FAILS_AT("steps:\n  - backtrace: {frams: 3}\n", "2:17", "unknown key `frams`",
                 "did you mean `frames`?");
  CHECK_FAILS_AT("steps:\n  - backtrace: {frames: -1}\n", "2:25", "frames must be a whole number",
                 "");
  CHECK_FAILS_AT("steps:\n  - mi: -thread-info\n    where: x\n", "3:5",
                 "`where` belongs to a foreach step", "");
  CHECK_FAILS_AT("steps:\n  - mi: -thread-info\n    on_error: ignore\n", "3:15",
                 "on_error is `abort` or `continue`", "");
  CHECK_FAILS_AT("steps:\n  - mi: -thread-info\n    timeout: soon\n", "3:14", "not a duration", "");
  CHECK_FAILS_AT("steps:\n  - mi: -thread-info\n    requires: lldb\n", "3:15",
                 "unknown debugger `lldb`", "");
  CHECK_FAILS_AT("steps:\n  - attach:\n    timeout: 5\n", "3:14", "--attach-timeout", "");
  CHECK_FAILS_AT("steps:\n  - mi: -thread-info\n    on_error: continue\n    ignore_errors: true\n",
                 "4:5", "both `on_error` and `ignore_errors`", "");
  CHECK_FAILS_AT("steps:\n  - mi: -thread-info\n    register: 1x\n", "3:15", "not a name", "");
  CHECK_FAILS_AT("steps:\n  - mi: -thread-info\n    register: pid\n", "3:15",
                 "`pid` is set by rocplay", "");
}

TEST_CASE("foreach shapes") {
  CHECK_FAILS_AT("steps:\n  - foreach: thread\n    steps: [threads]\n", "2:14",
                 "foreach goes over threads, waves or dispatches", "did you mean `threads`?");
  CHECK_FAILS_AT("steps:\n  - foreach: threads\n", "2:14", "a foreach needs `steps:`", "");
  CHECK_FAILS_AT("steps:\n  - foreach: waves\n    limit: 0\n    steps: [snapshot]\n", "3:12",
                 "limit must be a whole number", "");
  CHECK_FAILS_AT("steps:\n  - foreach: waves\n    as: pid\n    steps: [snapshot]\n", "3:9",
                 "cannot name the loop item", "");
  CHECK_FAILS_AT("steps:\n  - foreach: waves\n    steps:\n      - foreach: waves\n"
                 "        steps: [snapshot]\n",
                 "4:18", "`wave` is already defined", "");
  CHECK_FAILS_AT("steps:\n  - foreach: threads\n    steps:\n      - detach\n", "4:9",
                 "`detach` may not be inside a foreach", "");
  // Nesting is bounded.
  std::string deep = "steps:\n";
  std::string indent = "  ";
  for (int i = 0; i < 6; ++i) {
    deep += indent + "- foreach: threads\n" + indent + "  as: t" + std::to_string(i) + "\n" +
            indent + "  steps:\n";
    indent += "    ";
  }
  deep += indent + "- snapshot\n";
  const auto f = failure(deep);
  CHECK(f.message.find("foreach nested deeper than 4") != std::string::npos);
}

TEST_CASE("step order: attach once, nothing that needs the target outside it") {
  CHECK_FAILS_AT("steps:\n  - threads\n  - attach\n", "2:5", "comes before `attach`",
                 "move it after");
  CHECK_FAILS_AT("steps:\n  - attach\n  - attach\n", "3:5", "a second `attach`", "");
  CHECK_FAILS_AT("steps: []\nalways:\n  - attach\n", "3:5", "`attach` may only be a top-level", "");
  CHECK_FAILS_AT("steps:\n  - detach\n  - backtrace\n", "3:5", "comes after `detach`", "");
  CHECK_FAILS_AT("steps:\n  - detach\nalways:\n  - info-line\n", "4:5", "comes after `detach`", "");
  CHECK_FAILS_AT("steps:\n  - detach\nalways:\n  - detach\n", "4:5", "a second `detach`", "");
  // mi/cli steps may come before attach (settings) and after detach.
  const auto pb = load("steps:\n  - mi: -gdb-set pagination off\n  - attach\n  - threads\n"
                       "  - detach\n  - snapshot\n  - cli: show version\n",
                       "o.yaml");
  CHECK(pb.steps.size() == 6);
}

TEST_CASE("conditions: syntax errors and unknown names point into the condition") {
  CHECK_FAILS_AT("steps:\n  - threads:\n    when: pid = 3\n", "3:15", "`=` is not a comparison",
                 "==");
  CHECK_FAILS_AT("steps:\n  - threads:\n    when: \"pid = 3\"\n", "3:16", "`=` is not a comparison",
                 "");
  CHECK_FAILS_AT("steps:\n  - threads:\n    when: has_mi_comand(agent-info)\n", "3:11",
                 "unknown function `has_mi_comand`", "did you mean `has_mi_command`?");
  CHECK_FAILS_AT("steps:\n  - threads:\n    when: pdi == 3\n", "3:11", "`pdi` is not defined",
                 "did you mean `pid`?");
  CHECK_FAILS_AT("steps:\n  - threads:\n    expect: reslt.count > 0\n", "3:13",
                 "`reslt` is not defined", "did you mean `result`?");
  CHECK_FAILS_AT("steps:\n  - threads:\n    when: result.count > 0\n", "3:11",
                 "`result` exists only in expect/fail_when", "");
  CHECK_FAILS_AT("steps:\n  - threads:\n    expect: result.cuont > 0\n", "3:13",
                 "`result` has no field `cuont`", "did you mean `result.count`?");
  CHECK_FAILS_AT("steps:\n  - foreach: threads\n    where: thread.fucntion == \"x\"\n"
                 "    steps: [snapshot]\n",
                 "3:12", "`thread` has no field `fucntion`", "did you mean `thread.function`?");
  CHECK_FAILS_AT("steps:\n  - foreach: dispatches\n    where: dispatch.kernel_nme == \"x\"\n"
                 "    steps: [snapshot]\n",
                 "3:12", "no field `kernel_nme`", "fields: id, target_id");
  CHECK_FAILS_AT("steps:\n  - threads:\n    when: pid.x == 1\n", "3:11", "`pid` is a single value",
                 "");
  // A registered name is known only after its step.
  CHECK_FAILS_AT("steps:\n  - threads:\n    when: later.status == \"ok\"\n  - mi: -thread-info\n"
                 "    register: later\n",
                 "3:11", "`later` is not defined", "");
}

TEST_CASE("commands: references are checked like conditions") {
  CHECK_FAILS_AT("steps:\n  - cli: info line *${thread.pc}\n", "2:21", "`thread` is not defined",
                 "");
  CHECK_FAILS_AT("steps:\n  - foreach: threads\n    steps:\n      - cli: thread ${thread.idd}\n",
                 "4:21", "`thread` has no field `idd`", "did you mean `thread.id`?");
  CHECK_FAILS_AT("steps:\n  - cli: p ${pid\n", "2:12", "without its closing", "");
  CHECK_FAILS_AT("vars: {c: shell}\nsteps:\n  - cli: ${c} id\n", "3:10",
                 "the command's name comes from a variable", "--allow-unsafe-commands");
  const auto pb = load("vars: {n: 3}\nsteps:\n  - mi: -thread-info\n    register: ti\n"
                       "  - foreach: threads\n    steps:\n"
                       "      - cli: frame ${n}\n      - mi: -thread-select ${thread.id}\n"
                       "  - cli: echo ${ti.results.threads}\n",
                       "ok.yaml");
  CHECK(pb.steps.size() == 3);
}

TEST_CASE("dispatch field suggestion names the nearest field") {
  const auto f = failure("steps:\n  - foreach: dispatches\n    where: dispatch.kernal == \"x\"\n"
                         "    steps: [snapshot]\n");
  CHECK(f.hint.find("did you mean `dispatch.kernel`?") != std::string::npos);
}

TEST_CASE("unsafe commands in a user playbook are refused at load with their position") {
  CHECK_FAILS_AT("steps:\n  - threads\n  - cli: shell id\n", "3:10", "refused: `shell` (shell)",
                 "--allow-unsafe-commands");
  CHECK_FAILS_AT("steps:\n  - mi: -interpreter-exec console \"python print(1)\"\n", "2:9",
                 "refused: `python` (python)", "--allow-unsafe-commands");
  CHECK_FAILS_AT("steps:\n  - foreach: threads\n    steps:\n      - cli: thread apply all !id\n",
                 "4:14", "refused", "");
  CHECK_FAILS_AT("steps:\n  - cli: so /tmp/cmds\n", "2:10", "(source)", "");
  CHECK_FAILS_AT("steps:\n  - cli: define hack\n", "2:10", "(define)", "");
  CHECK_FAILS_AT("steps:\n  - cli: make\n", "2:10", "(make)", "");
  CHECK_FAILS_AT("steps:\n  - cli: pi\n", "2:10", "(python-interactive)", "");
  CHECK_FAILS_AT("steps:\n  - cli: \"| bt | sh\"\n", "2:11", "(pipe)", ""); // inside the quotes
  // Allowed with the flag, or in a built-in.
  for (bool builtin : {false, true}) {
    LoadOptions o;
    o.allow_unsafe_commands = !builtin;
    o.builtin = builtin;
    CHECK_NOTHROW(load("steps:\n  - cli: shell id\n", "u.yaml", o));
  }
  // Never, whatever the flag: rocplay owns quit and detach.
  LoadOptions allow;
  allow.allow_unsafe_commands = true;
  for (const char* cmd : {"quit", "kill", "detach", "-gdb-exit", "-target-detach"}) {
    const std::string key = cmd[0] == '-' ? "mi" : "cli";
    const auto f = failure("steps:\n  - " + key + ": " + cmd + "\n", allow);
    INFO(cmd);
    CHECK(f.message.find("refused") != std::string::npos);
    CHECK(f.hint.find("remove this step") != std::string::npos);
  }
}

TEST_CASE("limits: size and step count") {
  std::string big(std::size_t{1} << 21, '#');
  CHECK(failure(big).message.find("limit") != std::string::npos);
  std::string many = "steps:\n";
  for (int i = 0; i < 10'001; ++i) {
    many += "  - snapshot\n";
  }
  CHECK(failure(many).message.find("more than 10000 steps") != std::string::npos);
  // YAML aliases do not multiply the work past the step limit.
  std::string aliases = "x: &a [snapshot, snapshot, snapshot, snapshot, snapshot, snapshot]\n";
  CHECK(failure(aliases + "steps: []\n").message.find("unknown key `x`") != std::string::npos);
}

TEST_CASE("load_file reports unreadable files as NoInput") {
  try {
    load_file("/nonexistent/dir/p.yaml");
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(e.code() == ExitCode::NoInput);
  }
}

TEST_CASE("stop: copy or attach, and nothing else") {
  CHECK_FALSE(load("name: t\nsteps:\n  - attach\n", "t.yaml").stop);
  CHECK(load("name: t\nstop: copy\nsteps:\n  - attach\n", "t.yaml").stop == StopMode::Copy);
  CHECK(load("name: t\nstop: attach\nsteps:\n  - attach\n", "t.yaml").stop == StopMode::Attach);
  CHECK_FAILS_AT("name: t\nstop: core\nsteps:\n  - attach\n", "2:7", "`stop: core` is neither",
                 "`stop: copy`");
  // hang-triage reads only what a copy holds.
  CHECK(find_playbook("hang-triage").stop == StopMode::Copy);
}
