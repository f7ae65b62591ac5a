// The built-in playbooks, and the search path that finds user playbooks after them.
#include "rocplay/playbook/playbook.hpp"

#include <catch2/catch.hpp>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>

using namespace rocplay;
using namespace rocplay::playbook;
namespace fs = std::filesystem;

namespace {

// A temporary directory tree, and the environment and working directory pointed into it.
class SearchSandbox {
public:
  SearchSandbox() {
    char tmpl[] = "/tmp/rocplay-pb-XXXXXX";
    root_ = mkdtemp(tmpl);
    old_cwd_ = fs::current_path();
    save("XDG_CONFIG_HOME");
    save("ROCPLAY_PLAYBOOK_PATH");
    fs::create_directories(root_ / "cwd/playbooks");
    fs::create_directories(root_ / "xdg/rocplay/playbooks");
    fs::create_directories(root_ / "extra1");
    fs::create_directories(root_ / "extra2");
    fs::current_path(root_ / "cwd");
    setenv("XDG_CONFIG_HOME", (root_ / "xdg").c_str(), 1);
    setenv("ROCPLAY_PLAYBOOK_PATH",
           ((root_ / "extra1").string() + "::" + (root_ / "extra2").string()).c_str(), 1);
  }
  ~SearchSandbox() {
    fs::current_path(old_cwd_);
    for (auto& [name, value] : saved_) {
      if (value) {
        setenv(name.c_str(), value->c_str(), 1);
      } else {
        unsetenv(name.c_str());
      }
    }
    std::error_code ec;
    fs::remove_all(root_, ec);
  }
  SearchSandbox(const SearchSandbox&) = delete;
  SearchSandbox& operator=(const SearchSandbox&) = delete;

  void write(const fs::path& rel, const std::string& text) { std::ofstream(root_ / rel) << text; }
  fs::path root() const { return root_; }

private:
  void save(const std::string& name) {
    const char* v = std::getenv(name.c_str());
    saved_.emplace_back(name, v ? std::optional<std::string>(v) : std::nullopt);
  }
  fs::path root_;
  fs::path old_cwd_;
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

} // namespace

TEST_CASE("the four built-ins are compiled in, load and validate") {
  std::set<std::string> names;
  for (const auto& [name, text] : builtin_playbook_sources()) {
    names.emplace(name);
    INFO(name);
    const Playbook pb = load(text, "builtin:" + std::string(name), {.builtin = true});
    CHECK(pb.name == name);
    CHECK_FALSE(pb.description.empty());
    CHECK_FALSE(pb.steps.empty());
    // Nothing in them needs the built-in trust: they load as user playbooks too.
    CHECK_NOTHROW(load(text, "copy.yaml", {}));
  }
  CHECK(names.count("hang-triage") == 1);
  CHECK(names.count("gpu-state") == 1);
  CHECK(names.count("host-stacks") == 1);
  CHECK(names.count("rocgdb-dump") == 1);
}

TEST_CASE("hang-triage takes GPU state only where the debugger has it") {
  const Playbook pb = find_playbook("hang-triage");
  CHECK(pb.builtin);
  bool agent_info = false;
  bool cuda = false;
  bool info_line = false;
  bool backtrace = false;
  for (const auto& s : pb.steps) {
    if (s.kind == StepKind::Mi && s.command.text == "-agent-info") {
      agent_info = true;
      REQUIRE(s.when.has_value());
      CHECK(s.when->text == "has_mi_command(agent-info)");
    }
    if (s.kind == StepKind::Mi && s.command.text == "-cuda-info-kernels") {
      cuda = true;
      CHECK(s.debuggers == std::vector<DebuggerKind>{DebuggerKind::CudaGdb});
    }
    info_line = info_line || s.kind == StepKind::InfoLine;
    backtrace = backtrace || s.kind == StepKind::Backtrace;
  }
  CHECK(agent_info);
  CHECK(cuda);
  CHECK(info_line);
  CHECK(backtrace);
  CHECK(find_playbook("gpu-state").requirements.debuggers.size() == 2);
  CHECK(find_playbook("rocgdb-dump").requirements.debuggers ==
        std::vector<DebuggerKind>{DebuggerKind::RocGdb});
}

TEST_CASE("rocgdb-dump carries the seed's command file") {
  const auto src = find_source("rocgdb-dump");
  for (const char* cmd : {"info agents", "info dispatches", "info queues", "bt 30"}) {
    CHECK(src.text.find(std::string("cli: ") + cmd) != std::string::npos);
  }
}

TEST_CASE("search path: built-ins first, then ./playbooks, XDG, ROCPLAY_PLAYBOOK_PATH") {
  SearchSandbox box;
  box.write("cwd/playbooks/local.yaml", "description: from cwd\nsteps: [threads]\n");
  box.write("xdg/rocplay/playbooks/mine.yml", "description: from xdg\nsteps: [threads]\n");
  box.write("extra2/shared.yaml", "description: from extra2\nsteps: [threads]\n");
  box.write("extra1/local.yaml", "description: shadowed\nsteps: [threads]\n");
  box.write("extra1/host-stacks.yaml", "description: not the built-in\nsteps: [threads]\n");
  box.write("extra1/broken.yaml", "steps:\n  - mii: x\n");
  box.write("extra1/notes.txt", "not a playbook");

  const auto dirs = search_dirs();
  REQUIRE(dirs.size() == 4);
  CHECK(dirs[0] == "playbooks");
  CHECK(dirs[1] == (box.root() / "xdg/rocplay/playbooks").string());
  CHECK(dirs[2] == (box.root() / "extra1").string());
  CHECK(dirs[3] == (box.root() / "extra2").string());

  CHECK(find_playbook("local").description == "from cwd");
  CHECK(find_playbook("mine").description == "from xdg");
  CHECK(find_playbook("shared").description == "from extra2");
  CHECK_FALSE(find_playbook("local").builtin);
  // A built-in name finds the built-in; the user file is reachable by its path.
  CHECK(find_playbook("host-stacks").builtin);
  const auto by_path = find_playbook((box.root() / "extra1/host-stacks.yaml").string());
  CHECK(by_path.description == "not the built-in");
  CHECK_FALSE(by_path.builtin);

  const auto entries = list_playbooks();
  auto entry = [&](const std::string& name, const std::string& origin_part) -> const Entry* {
    for (const auto& e : entries) {
      if (e.name == name && e.origin.find(origin_part) != std::string::npos) {
        return &e;
      }
    }
    return nullptr;
  };
  REQUIRE(entry("hang-triage", "built-in") != nullptr);
  REQUIRE(entry("local", "playbooks/local.yaml") != nullptr);
  CHECK(entry("local", "playbooks/local.yaml")->shadowed_by.empty());
  REQUIRE(entry("local", "extra1") != nullptr);
  CHECK(entry("local", "extra1")->shadowed_by == "playbooks/local.yaml");
  REQUIRE(entry("host-stacks", "extra1") != nullptr);
  CHECK(entry("host-stacks", "extra1")->shadowed_by == "built-in");
  REQUIRE(entry("broken", "extra1") != nullptr);
  CHECK(entry("broken", "extra1")->error.find("unknown key `mii`") != std::string::npos);
  CHECK(entry("notes", "") == nullptr);
}

TEST_CASE("a copy of a built-in in ./playbooks is not listed twice") {
  SearchSandbox box;
  const auto src = find_source("gpu-state");
  box.write("cwd/playbooks/gpu-state.yaml", src.text);
  int count = 0;
  for (const auto& e : list_playbooks()) {
    count += e.name == "gpu-state" ? 1 : 0;
  }
  CHECK(count == 1);
}

TEST_CASE("unknown names suggest the nearest and missing files are NoInput") {
  SearchSandbox box;
  try {
    find_playbook("hang-triag");
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(e.code() == ExitCode::NoInput);
    CHECK(e.hint().find("did you mean `hang-triage`?") != std::string::npos);
  }
  try {
    find_playbook("./nothing-here.yaml");
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(e.code() == ExitCode::NoInput);
  }
}

TEST_CASE("a playbook found on the search path is not trusted like a built-in") {
  SearchSandbox box;
  box.write("cwd/playbooks/evil.yaml", "steps:\n  - cli: shell id\n");
  try {
    find_playbook("evil");
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(e.code() == ExitCode::BadPlaybook);
    CHECK(std::string(e.what()).find("playbooks/evil.yaml:2:10: refused") != std::string::npos);
  }
  LoadOptions allow;
  allow.allow_unsafe_commands = true;
  CHECK_NOTHROW(find_playbook("evil", allow));
}

TEST_CASE("parsing --var assignments") {
  CHECK(parse_var_assignment("frames=30") == std::pair<std::string, std::string>{"frames", "30"});
  CHECK(parse_var_assignment("x=a=b") == std::pair<std::string, std::string>{"x", "a=b"});
  CHECK(parse_var_assignment("x=") == std::pair<std::string, std::string>{"x", ""});
  CHECK_THROWS_AS(parse_var_assignment("novalue"), Error);
  CHECK_THROWS_AS(parse_var_assignment("=3"), Error);
}
