// The command check of src/playbook/safety.cpp against the real gdb's command lookup: every word
// gdb resolves to a refused command (a unique prefix or an alias) must be refused.
#include "playbook/internal.hpp"
#include "session_target.hpp"

#include <catch2/catch.hpp>

#include <array>
#include <cstdio>
#include <map>
#include <sstream>

using rocplay::playbook::detail::check_cli;

namespace {

// Full names of the commands the check refuses, unsafe and never-allowed alike.
const std::vector<std::string> kRefused = {"shell",
                                           "pipe",
                                           "make",
                                           "python",
                                           "python-interactive",
                                           "guile",
                                           "guile-repl",
                                           "source",
                                           "define",
                                           "define-prefix",
                                           "document",
                                           "alias",
                                           "eval",
                                           "interpreter-exec",
                                           "compile",
                                           "edit",
                                           "if",
                                           "while",
                                           "commands",
                                           "dump",
                                           "append",
                                           "restore",
                                           "save",
                                           "generate-core-file",
                                           "checkpoint",
                                           "cd",
                                           "add-auto-load-safe-path",
                                           "add-auto-load-scripts-directory",
                                           "new-ui",
                                           "quit",
                                           "detach",
                                           "attach",
                                           "kill",
                                           "run",
                                           "start",
                                           "starti"};

std::string run_gdb(const std::vector<std::string>& commands) {
  std::string cmd = rocplay::testing::test_gdb().path + " -nx -batch";
  for (const auto& c : commands) {
    cmd += " -ex '" + c + "'";
  }
  cmd += " 2>&1";
  std::string out;
  FILE* p = ::popen(cmd.c_str(), "r");
  REQUIRE(p != nullptr);
  std::array<char, 65536> buf{};
  std::size_t n = 0;
  while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0) {
    out.append(buf.data(), n);
  }
  ::pclose(p);
  return out;
}

// `help WORD` for each word, split by markers.
std::map<std::string, std::string> help_texts(const std::vector<std::string>& words) {
  std::vector<std::string> commands;
  for (const auto& w : words) {
    commands.push_back("echo @@@" + w + "\\n");
    commands.push_back("help " + w);
  }
  const std::string out = run_gdb(commands);
  std::map<std::string, std::string> texts;
  std::size_t pos = out.find("@@@");
  while (pos != std::string::npos) {
    const std::size_t eol = out.find('\n', pos);
    const std::string word = out.substr(pos + 3, eol - pos - 3);
    const std::size_t next = out.find("@@@", eol);
    texts[word] =
        out.substr(eol + 1, next == std::string::npos ? std::string::npos : next - eol - 1);
    pos = next;
  }
  return texts;
}

} // namespace

TEST_CASE("every prefix and alias gdb resolves to a refused command is refused") {
  // Aliases from gdb's own command list: `name, alias, alias -- doc`.
  const std::string all = run_gdb({"help all"});
  std::map<std::string, std::vector<std::string>> aliases;
  std::istringstream lines(all);
  std::string line;
  while (std::getline(lines, line)) {
    const auto dash = line.find(" -- ");
    if (dash == std::string::npos) {
      continue;
    }
    std::vector<std::string> names;
    std::istringstream parts(line.substr(0, dash));
    std::string part;
    while (std::getline(parts, part, ',')) {
      part.erase(0, part.find_first_not_of(' '));
      names.push_back(part);
    }
    if (!names.empty()) {
      aliases[names[0]] = std::vector<std::string>(names.begin() + 1, names.end());
    }
  }
  REQUIRE(aliases.count("shell") == 1); // the parse found gdb's list

  std::vector<std::string> words;
  for (const auto& name : kRefused) {
    if (aliases.count(name) == 0) {
      continue; // not in this gdb (guile without Guile support still lists it)
    }
    words.push_back(name);
    for (std::size_t k = 1; k < name.size(); ++k) {
      words.push_back(name.substr(0, k));
    }
    for (const auto& a : aliases[name]) {
      words.push_back(a);
    }
  }
  const auto help = help_texts(words);
  std::size_t checked = 0;
  for (const auto& name : kRefused) {
    if (aliases.count(name) == 0) {
      continue;
    }
    const auto full = help.find(name);
    REQUIRE(full != help.end());
    for (const auto& [word, text] : help) {
      if (word == name || text != full->second || word.find('!') != std::string::npos) {
        continue;
      }
      // gdb resolves `word` to `name`: the check must refuse it.
      INFO("gdb runs `" << word << "` as `" << name << "`");
      CHECK(check_cli(word + " x", false).has_value());
      ++checked;
    }
    INFO(name);
    CHECK(check_cli(name + " x", false).has_value());
  }
  CHECK(checked > 50);
}
