// What may reach the debugger's input: validation and MI c-string quoting.
#include "rocplay/mi/parser.hpp"
#include "rocplay/mi/value.hpp"
#include "rocplay/session/session.hpp"

#include <catch2/catch.hpp>

#include <csignal>

using namespace rocplay;

namespace {

ExitCode code_of(std::string_view text) {
  try {
    session::validate_command_text(text);
  } catch (const Error& e) {
    return e.code();
  }
  return ExitCode::Ok;
}

} // namespace

TEST_CASE("command text: one line, no control bytes", "[session][commands]") {
  CHECK(code_of("-thread-info") == ExitCode::Ok);
  CHECK(code_of("-data-evaluate-expression \"a\\tb\"") == ExitCode::Ok); // escaped, not raw
  CHECK(code_of("") == ExitCode::Usage);
  CHECK(code_of("-thread-info\n-target-detach") == ExitCode::Usage);
  CHECK(code_of("-thread-info\r") == ExitCode::Usage);
  CHECK(code_of(std::string("-thread-info\0x", 14)) == ExitCode::Usage);
  CHECK(code_of("info\x1b[2J") == ExitCode::Usage);
  CHECK(code_of("bt\x7f") == ExitCode::Usage);
  CHECK(code_of(std::string(2u << 20, 'a')) == ExitCode::Usage);
  try {
    session::validate_command_text("info threads\nshell rm -rf ~", "console command");
    FAIL("newline must be refused");
  } catch (const Error& e) {
    const std::string msg = e.what();
    CHECK(msg.find("console command") != std::string::npos);
    CHECK(msg.find("newline") != std::string::npos);
    CHECK(msg.find("byte 12") != std::string::npos);
  }
}

TEST_CASE("console commands are quoted by MI c-string rules", "[session][commands]") {
  CHECK(session::console_command("info threads") == "-interpreter-exec console \"info threads\"");
  CHECK(session::console_command("info line *$pc") ==
        "-interpreter-exec console \"info line *$pc\"");
  const std::string tricky = R"(print "a\"b" \ end)";
  const std::string cmd = session::console_command(tricky);
  // The argument is one MI c-string whose decoded bytes are the original text.
  const std::string prefix = "-interpreter-exec console \"";
  REQUIRE(cmd.rfind(prefix, 0) == 0);
  REQUIRE(cmd.back() == '"');
  const std::string body = cmd.substr(prefix.size(), cmd.size() - prefix.size() - 1);
  CHECK(mi::unescape(body) == tricky);
  // No unescaped quote ends the string early.
  for (std::size_t i = 0; i < body.size(); ++i) {
    if (body[i] == '\\') {
      ++i;
      continue;
    }
    CHECK(body[i] != '"');
  }
  CHECK_THROWS_AS(session::console_command("bt\nkill"), Error);
  CHECK_THROWS_AS(session::console_command(""), Error);
}

TEST_CASE("signal exit codes", "[session][signals]") {
  CHECK(static_cast<int>(session::exit_code_for_signal(SIGINT)) == 130);
  CHECK(session::exit_code_for_signal(SIGINT) == ExitCode::Interrupted);
  CHECK(static_cast<int>(session::exit_code_for_signal(SIGTERM)) == 143);
  CHECK(static_cast<int>(session::exit_code_for_signal(SIGHUP)) == 129);
  CHECK_FALSE(session::caught_signal().has_value());
}

TEST_CASE("lifecycle commands belong to the session", "[session][commands]") {
  using session::CommandRole;
  CHECK(session::classify_mi_command("-thread-info").role == CommandRole::Ordinary);
  CHECK(session::classify_mi_command("-target-detach").role == CommandRole::Detach);
  CHECK(session::classify_mi_command("-target-attach 42").role == CommandRole::Refused);
  CHECK(session::classify_mi_command("-gdb-exit").role == CommandRole::Refused);
  CHECK(session::classify_mi_command("-exec-run").role == CommandRole::Refused);
  CHECK(session::classify_mi_command("-interpreter-exec console \"info threads\"").role ==
        CommandRole::Ordinary);
  CHECK(session::classify_mi_command("-interpreter-exec console \"kill\"").role ==
        CommandRole::Refused);
  CHECK(session::classify_mi_command("-interpreter-exec console \"detach\"").role ==
        CommandRole::Detach);
  // An escaped newline would smuggle a second command past the check.
  CHECK(session::classify_mi_command("-interpreter-exec console \"bt\\nkill\"").role ==
        CommandRole::Refused);
  CHECK(session::classify_mi_command("-interpreter-exec console").role == CommandRole::Refused);

  CHECK(session::classify_console_command("info line *0x401000").role == CommandRole::Ordinary);
  CHECK(session::classify_console_command("  KILL").role == CommandRole::Refused);
  CHECK(session::classify_console_command("k").role == CommandRole::Refused);
  CHECK(session::classify_console_command("kill inferiors 1").role == CommandRole::Refused);
  CHECK(session::classify_console_command("quit").role == CommandRole::Refused);
  CHECK(session::classify_console_command("run").role == CommandRole::Refused);
  CHECK(session::classify_console_command("detach").role == CommandRole::Detach);
  // Words that merely start like one are fine.
  CHECK(session::classify_console_command("kernel").role == CommandRole::Ordinary);
  CHECK(session::classify_console_command("info queues").role == CommandRole::Ordinary);
  CHECK_FALSE(session::classify_console_command("kill").reason.empty());
}
