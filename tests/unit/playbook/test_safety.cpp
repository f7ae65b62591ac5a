// Which commands an untrusted playbook may send. tests/live/playbook_safety_gdb.cpp checks the
// same rules against the command lookup of the real gdb.
#include "playbook/internal.hpp"

#include <catch2/catch.hpp>

using rocplay::playbook::detail::check_cli;
using rocplay::playbook::detail::check_mi;

TEST_CASE("the commands the issue names are refused, with their aliases and prefixes") {
  for (const char* cmd : {"shell id",
                          "!id",
                          "! id",
                          "pipe bt | cat",
                          "| bt | cat",
                          "python print(1)",
                          "pi",
                          "py print(1)",
                          "source /tmp/x.gdb",
                          "define foo",
                          "make all",
                          "  shell id",
                          "sh\tid",
                          "she id",
                          "so /tmp/x",
                          "sou /tmp/x",
                          "def foo",
                          "pyt print(1)",
                          "pip bt | x",
                          "mak",
                          "SHELL id",
                          "guile (display 1)",
                          "gu 1",
                          "gr",
                          "eval \"shell id\"",
                          "alias x = shell",
                          "interpreter-exec console \"shell id\"",
                          "compile code 1",
                          "expression 1",
                          "edit main",
                          "dump memory /tmp/x 0 1",
                          "append value /tmp/x 1",
                          "restore /tmp/x",
                          "save breakpoints /tmp/x",
                          "gcore /tmp/core",
                          "generate-core-file",
                          "checkpoint",
                          "cd /",
                          "set logging file /tmp/x",
                          "set logging on",
                          "set auto-load python-scripts on",
                          "set history save on",
                          "set may-call-functions on",
                          "if 1",
                          "while 1",
                          "commands 1",
                          "document foo",
                          "define-prefix foo",
                          "new-ui mi /dev/pts/3",
                          "add-auto-load-safe-path /"}) {
    INFO(cmd);
    auto r = check_cli(cmd, false);
    REQUIRE(r.has_value());
    CHECK_FALSE(r->always);
    CHECK_FALSE(check_cli(cmd, true).has_value()); // allowed with --allow-unsafe-commands
  }
}

TEST_CASE("commands that run other commands are checked through") {
  for (const char* cmd :
       {"thread apply all shell id", "thread apply 1 2 -q shell id", "t a all so x",
        "frame apply all -q python print(1)", "taas shell id", "tfaas !id", "faas | cat",
        "with print pretty -- shell id", "w print pretty -- pipe bt | cat",
        "thread apply all thread apply all shell id", "with logging enabled on -- bt"}) {
    INFO(cmd);
    REQUIRE(check_cli(cmd, false).has_value());
  }
}

TEST_CASE("MI commands: -interpreter-exec is checked, MI settings too") {
  for (const char* cmd :
       {"-interpreter-exec console \"shell id\"", "-interpreter-exec console \"bt\" \"!id\"",
        "-interpreter-exec mi \"-interpreter-exec console \\\"shell id\\\"\"",
        "-interpreter-exec mi3 \"shell id\"", "-interpreter-exec console \"sh\\tid\"",
        "-gdb-set logging file /tmp/x", "-gdb-set may-call-functions on", "-environment-cd /",
        "-interpreter-exec guile \"1\"", "shell id"}) {
    INFO(cmd);
    REQUIRE(check_mi(cmd, false).has_value());
    CHECK_FALSE(check_mi(cmd, true).has_value());
  }
}

TEST_CASE("quit, kill, run, attach and detach are refused even when unsafe commands are allowed") {
  for (const char* cmd : {"quit", "q", "exit", "qui", "kill", "k", "ki", "run", "r", "start",
                          "starti", "detach", "det", "attach 1", "thread apply all kill",
                          "target remote | nc host 1", "tar remote | x", "disconnect"}) {
    INFO(cmd);
    auto r = check_cli(cmd, true);
    REQUIRE(r.has_value());
    CHECK(r->always);
  }
  for (const char* cmd :
       {"-gdb-exit", "-target-detach", "-target-attach 1", "-exec-run", "-target-select remote | x",
        "-interpreter-exec console \"quit\"", "-target-disconnect", "-exec-jump 12",
        "-file-exec-and-symbols /bin/true"}) {
    INFO(cmd);
    auto r = check_mi(cmd, true);
    REQUIRE(r.has_value());
    CHECK(r->always);
  }
}

TEST_CASE("the commands a triage needs pass") {
  for (const char* cmd : {"info agents",
                          "info queues",
                          "info dispatches -full",
                          "info threads",
                          "bt 30",
                          "backtrace full 10",
                          "thread 3",
                          "thread apply all bt 30",
                          "frame 2",
                          "info line *$pc",
                          "info line *0x401136",
                          "x/8i $pc",
                          "p $pc",
                          "print g_release",
                          "info sharedlibrary",
                          "info cuda threads",
                          "cuda kernel 1",
                          "set pagination off",
                          "set confirm off",
                          "set print pretty on",
                          "show version",
                          "info symbol 0x401136",
                          "disassemble /r start_sync",
                          "maint info sections",
                          "echo hello",
                          "list start_sync",
                          "info registers rip",
                          "with print pretty -- bt",
                          "where",
                          "i r",
                          "up",
                          "down",
                          "ptype g_release",
                          "info frame",
                          "set var g_release = 0",
                          "shared",
                          "show confirm"}) {
    INFO(cmd);
    CHECK_FALSE(check_cli(cmd, false).has_value());
  }
  for (const char* cmd :
       {"-thread-info", "-stack-list-frames --thread 3 0 29", "-agent-info", "-queue-info",
        "-dispatch-info", "-cuda-info-kernels", "-gdb-set pagination off",
        "-data-evaluate-expression $pc", "-interpreter-exec console \"info agents\"",
        "-list-features", "-info-gdb-mi-command agent-info"}) {
    INFO(cmd);
    CHECK_FALSE(check_mi(cmd, false).has_value());
  }
}
