// Live: the preload of a library with a big .symtab from a symbol-light copy
// (src/session/light_symbols.hpp), with real gdb against tests/targets/light_target, whose main
// thread waits three frames deep in liblight_lib.so. The copy's own checks come first.
#include "cli_util.hpp"
#include "session/light_symbols.hpp"
#include "session_target.hpp"
#include "snapshot/text.hpp"

#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>

using namespace rocplay;
namespace fs = std::filesystem;

namespace {

// TMPDIR for the session's copies, restored afterwards.
struct TmpdirOverride {
  explicit TmpdirOverride(const std::string& dir) {
    if (const char* old = std::getenv("TMPDIR")) {
      saved = old;
    }
    ::setenv("TMPDIR", dir.c_str(), 1);
  }
  ~TmpdirOverride() {
    if (saved) {
      ::setenv("TMPDIR", saved->c_str(), 1);
    } else {
      ::unsetenv("TMPDIR");
    }
  }
  std::optional<std::string> saved;
};

struct MiFrame {
  std::string func;
  std::string from;
};

// The main thread's frames, as gdb names them after the attach.
// `kind`: plain gdb standing in for another debugger of the family (the session decides by kind).
std::vector<MiFrame> main_thread_frames(const session::Options& options, std::string* recording,
                                        DebuggerKind kind = DebuggerKind::Gdb) {
  testing::ReadyProcess target({testing::find_built("light_target")});
  std::vector<MiFrame> frames;
  {
    auto debugger = testing::test_gdb();
    debugger.kind = kind;
    session::Session s(debugger, options);
    s.attach(target.pid());
    const auto ex = s.execute("-stack-list-frames");
    REQUIRE(ex.result() != nullptr);
    for (const auto f : ex.result()->results()["stack"]) {
      frames.push_back({f["func"].text(), f["from"].text()});
    }
    s.detach();
  }
  testing::require_no_thread_stopped(target.pid(), 1);
  if (recording != nullptr) {
    *recording = testing::read_file(options.record_path);
  }
  return frames;
}

std::string frames_text(const std::vector<MiFrame>& frames) {
  std::string out;
  for (const auto& f : frames) {
    out += f.func + " (" + f.from + ")\n";
  }
  return out;
}

} // namespace

TEST_CASE("a symbol-light copy keeps the section headers and drops .symtab", "[live][symbols]") {
  const std::string lib = testing::find_built("liblight_lib.so");
  const auto entries = session::symtab_entries(lib);
  REQUIRE(entries.has_value());
  CHECK(*entries > 5); // the build keeps .symtab: the hidden function is named there

  testing::TempDir dir;
  const std::string copy = dir.path() + "/liblight_lib.so";
  REQUIRE(session::write_light_copy(lib, copy));
  CHECK(session::symtab_entries(copy) == std::optional<std::uint64_t>(0));
  CHECK(fs::file_size(copy) < fs::file_size(lib));
  // A second copy to the same place is refused, and the first stays.
  CHECK_FALSE(session::write_light_copy(lib, copy));
  CHECK(fs::exists(copy));

  SECTION("what is not a whole ELF64 file is refused and leaves nothing") {
    const std::string text = dir.path() + "/text";
    std::ofstream(text) << "not an ELF file\n";
    const std::string truncated = dir.path() + "/truncated.so";
    {
      const std::string bytes = testing::read_file(lib);
      std::ofstream(truncated, std::ios::binary) << bytes.substr(0, 200);
    }
    for (const auto& bad : {text, truncated, dir.path() + "/missing.so"}) {
      INFO(bad);
      CHECK_FALSE(session::symtab_entries(bad).has_value());
      const std::string dest = bad + ".light";
      CHECK_FALSE(session::write_light_copy(bad, dest));
      CHECK_FALSE(fs::exists(dest));
    }
  }
}

TEST_CASE("sessions of one process share a light copy until the last lets go", "[live][symbols]") {
  testing::TempDir tmp;
  const TmpdirOverride tmpdir(tmp.path());
  const std::string lib = tmp.path() + "/liblight_lib.so";
  std::filesystem::copy_file(testing::find_built("liblight_lib.so"), lib);

  auto first = session::shared_light_copy(lib);
  auto second = session::shared_light_copy(lib);
  REQUIRE(first != nullptr);
  CHECK(first == second); // one file for both
  CHECK(fs::exists(*first));
  const fs::path dir = fs::path(*first).parent_path();
  CHECK(dir.parent_path() == fs::path(tmp.path()));

  // The library changes on disk: a new copy, the old one still held.
  fs::last_write_time(lib, fs::last_write_time(lib) + std::chrono::seconds(5));
  auto changed = session::shared_light_copy(lib);
  REQUIRE(changed != nullptr);
  CHECK(*changed != *first);

  const std::string first_path = *first;
  first.reset();
  CHECK(fs::exists(first_path)); // `second` still holds it
  second.reset();
  CHECK_FALSE(fs::exists(first_path));
  CHECK(fs::exists(dir)); // `changed` lives there
  changed.reset();
  CHECK_FALSE(fs::exists(dir));

  CHECK(session::shared_light_copy(tmp.path() + "/missing.so") == nullptr);
}

TEST_CASE("gdb preloads a light copy: exported frames named, the hidden one ??, the copy removed",
          "[live][symbols]") {
  testing::TempDir tmp;
  const TmpdirOverride tmpdir(tmp.path());
  session::Options options = testing::test_options();
  options.light_symbols_above = 1; // the test library is small; every library with a .symtab
  options.record_path = tmp.path() + "/light.rec";
  std::string recording;
  const auto frames = main_thread_frames(options, &recording);
  INFO(frames_text(frames));

  // light_wait <- (hidden middle) <- light_outer <- main: named where the library exports.
  auto at = [&](const std::string& func) {
    return std::find_if(frames.begin(), frames.end(),
                        [&](const MiFrame& f) { return f.func == func; });
  };
  const auto wait = at("light_wait");
  REQUIRE(wait != frames.end());
  REQUIRE(wait + 2 < frames.end());
  CHECK((wait + 1)->func == "??"); // not light_wait+offset, not a wrong neighbour
  CHECK((wait + 1)->from.find("liblight_lib.so") != std::string::npos);
  CHECK((wait + 2)->func == "light_outer");
  CHECK(at("main") != frames.end());
  CHECK(at("light_hidden_middle") == frames.end());

  CHECK(recording.find(std::string(kLightSymbolsNote) + "liblight_lib.so (") != std::string::npos);
  // The copies went with the session; the recording is all that is left.
  for (const auto& entry : fs::directory_iterator(tmp.path())) {
    CHECK(entry.path().filename() == "light.rec");
  }
}

TEST_CASE("with light copies off every frame of the library is named", "[live][symbols]") {
  session::Options options = testing::test_options();
  options.light_symbols_above = 0;
  const auto frames = main_thread_frames(options, nullptr);
  INFO(frames_text(frames));
  const auto middle = std::find_if(frames.begin(), frames.end(), [](const MiFrame& f) {
    return f.func == "light_hidden_middle";
  });
  CHECK(middle != frames.end());
}

TEST_CASE("cuda-gdb reads a light copy through its own library load, from a sysroot of links",
          "[live][symbols]") {
  // No preload for cuda-gdb (docs/hardware-validation.md, "Do no harm"): the session points
  // `sysroot` at a tree of links in which liblight_lib.so is its light copy.
  testing::TempDir tmp;
  const TmpdirOverride tmpdir(tmp.path());
  session::Options options = testing::test_options();
  options.light_symbols_above = 1;
  options.record_path = tmp.path() + "/sysroot.rec";
  const std::string library = fs::canonical(testing::find_built("liblight_lib.so")).string();
  const auto size_before = fs::file_size(library);
  std::string recording;
  const auto frames = main_thread_frames(options, &recording, DebuggerKind::CudaGdb);
  INFO(frames_text(frames));

  const auto wait = std::find_if(frames.begin(), frames.end(),
                                 [](const MiFrame& f) { return f.func == "light_wait"; });
  REQUIRE(wait != frames.end());
  REQUIRE(wait + 2 < frames.end());
  CHECK((wait + 1)->func == "??"); // the copy has no .symtab: the hidden function is not named
  CHECK((wait + 2)->func == "light_outer");
  // GDB names the library by its place in the sysroot; the snapshot by its place on the system.
  CHECK((wait + 1)->from.find(std::string(kLightSysrootPrefix) + "-") != std::string::npos);
  CHECK(without_light_sysroot((wait + 1)->from) == library);
  CHECK(snapshot::text::parse_frame_text("0x1 in ?? () from " + (wait + 1)->from).from == library);
  const auto libc = std::find_if(frames.begin(), frames.end(), [](const MiFrame& f) {
    return f.from.find("libc.so") != std::string::npos;
  });
  if (libc != frames.end()) { // read through the sysroot's links, whole
    CHECK(libc->func != "??");
  }

  const auto commands = recording;
  const auto sysroot = commands.find("-gdb-set sysroot ");
  const auto attach = commands.find("-target-attach ");
  REQUIRE(sysroot != std::string::npos);
  REQUIRE(attach != std::string::npos);
  CHECK(sysroot < attach);
  CHECK(commands.find("add-symbol-file") == std::string::npos);
  CHECK(recording.find(std::string(kLightSymbolsNote) + "liblight_lib.so (") != std::string::npos);
  // The sysroot's links and the copy went with the session, and what they linked to stays.
  for (const auto& entry : fs::directory_iterator(tmp.path())) {
    CHECK(entry.path().filename() == "sysroot.rec");
  }
  CHECK(fs::file_size(library) == size_before);
  CHECK(fs::exists("/usr/lib/x86_64-linux-gnu/libc.so.6"));
}
