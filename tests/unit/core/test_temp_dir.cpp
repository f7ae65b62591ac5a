// Private temporary directories: named by pid, and those of a rocplay that died are swept.
#include "rocplay/core/temp_dir.hpp"

#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

namespace fs = std::filesystem;

namespace {

// A pid that existed and is gone: a child that exited and was reaped.
pid_t dead_pid() {
  const pid_t child = ::fork();
  if (child == 0) {
    ::_exit(0);
  }
  ::waitpid(child, nullptr, 0);
  return child;
}

struct TmpdirOverride {
  fs::path dir;
  std::string saved;
  bool had = false;
  TmpdirOverride() {
    std::string pattern = (fs::temp_directory_path() / "rocplay-tmpdir-test-XXXXXX").string();
    REQUIRE(::mkdtemp(pattern.data()) != nullptr);
    dir = pattern;
    if (const char* t = std::getenv("TMPDIR")) {
      had = true;
      saved = t;
    }
    ::setenv("TMPDIR", dir.c_str(), 1);
  }
  ~TmpdirOverride() {
    if (had) {
      ::setenv("TMPDIR", saved.c_str(), 1);
    } else {
      ::unsetenv("TMPDIR");
    }
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
};

} // namespace

TEST_CASE("private temp dirs: named by pid, a dead rocplay's swept, a live one's kept") {
  TmpdirOverride tmp;
  const fs::path orphan = tmp.dir / ("rocplay-code-" + std::to_string(dead_pid()) + "-abc123");
  const fs::path live = tmp.dir / ("rocplay-code-" + std::to_string(::getppid()) + "-def456");
  const fs::path other = tmp.dir / ("rocplay-symbols-" + std::to_string(dead_pid()) + "-x");
  const fs::path unrelated = tmp.dir / "rocplay-code-notapid-x";
  for (const auto& d : {orphan, live, other, unrelated}) {
    fs::create_directories(d / "sub");
  }
  std::string why;
  const auto made = rocplay::make_private_temp_dir("rocplay-code", why);
  REQUIRE(made);
  CHECK(why.empty());
  CHECK(fs::path(*made).parent_path() == tmp.dir);
  CHECK(fs::path(*made).filename().string().starts_with("rocplay-code-" +
                                                        std::to_string(::getpid()) + "-"));
  CHECK(fs::is_directory(*made));
  CHECK((fs::status(*made).permissions() & fs::perms::all) == fs::perms::owner_all);
  CHECK_FALSE(fs::exists(orphan)); // its rocplay is gone
  CHECK(fs::exists(live));         // its process runs
  CHECK(fs::exists(other));        // another prefix: swept by its own kind
  CHECK(fs::exists(unrelated));    // no pid in the name
}

TEST_CASE("private temp dirs: a directory that cannot be written is an error that says where") {
  TmpdirOverride tmp;
  ::setenv("TMPDIR", (tmp.dir / "missing").c_str(), 1);
  std::string why;
  CHECK_FALSE(rocplay::make_private_temp_dir("rocplay-code", why));
  CHECK(why.find("missing") != std::string::npos);
}
