// Which debugger to run: --debugger, $ROCPLAY_DEBUGGER, or the first of rocgdb, cuda-gdb, gdb.
#include "rocplay/session/helper_program.hpp"
#include "rocplay/session/session.hpp"
#include "session/internal.hpp"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace rocplay::session {

namespace {

namespace fs = std::filesystem;

// The first line `PROGRAM --version` prints, or nullopt when it cannot be run in time.
std::optional<std::string> version_banner(const std::string& path,
                                          std::chrono::milliseconds timeout) {
  const ProgramRun run = run_program(path, {"--version"}, timeout, 65536, Stderr::Discard);
  std::string first = run.exit_code ? banner_line(run.output) : std::string();
  if (first.empty()) {
    return std::nullopt;
  }
  return first;
}

// CUDA 12's and 13's `cuda-gdb` is a shell script: it runs `BINARY --version` for the binaries
// it might start, those with Python and the TUI first, then starts the first that answered, a
// second start-up of the same binary (0.2 s before cuda-gdb is ready, on an H200 host). rocplay
// needs neither Python nor the TUI (it reads Python frames itself), so it starts the minimal
// binary beside the script. The script's own CUDA_GDB_BINARIES, when set, keeps its choice.
std::string without_cuda_gdb_wrapper(const std::string& path) {
  const fs::path script(path);
  if (script.filename() != "cuda-gdb") {
    return path;
  }
  if (const char* own = std::getenv("CUDA_GDB_BINARIES"); own && *own) {
    return path;
  }
  std::ifstream in(path, std::ios::binary);
  char magic[2] = {};
  if (!in.read(magic, 2) || magic[0] != '#' || magic[1] != '!') {
    return path; // the debugger itself, not a script
  }
  const std::string minimal = (script.parent_path() / "cuda-gdb-minimal").string();
  return is_executable_file(minimal) ? minimal : path;
}

} // namespace

std::string banner_line(std::string_view version_output) {
  std::string_view rest = version_output;
  while (!rest.empty()) {
    const std::size_t nl = rest.find('\n');
    std::string_view line = rest.substr(0, nl);
    rest = nl == std::string_view::npos ? std::string_view{} : rest.substr(nl + 1);
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) {
      line.remove_suffix(1);
    }
    if (!line.empty() && !line.starts_with("exec: ")) {
      return std::string(line);
    }
  }
  return {};
}

std::string version_number(std::string_view banner) {
  // The last word that starts with a digit and holds a dot: `GNU gdb (Debian 13.1-3) 13.1`.
  std::string best;
  std::size_t pos = 0;
  while (pos < banner.size()) {
    while (pos < banner.size() && banner[pos] == ' ') {
      ++pos;
    }
    std::size_t end = banner.find(' ', pos);
    if (end == std::string_view::npos) {
      end = banner.size();
    }
    const std::string_view word = banner.substr(pos, end - pos);
    if (!word.empty() && word[0] >= '0' && word[0] <= '9' &&
        word.find('.') != std::string_view::npos) {
      std::size_t n = 0;
      while (n < word.size() && ((word[n] >= '0' && word[n] <= '9') || word[n] == '.')) {
        ++n;
      }
      // Keep major.minor: `15.2.50.20241010-git` -> `15.2`.
      std::string v(word.substr(0, n));
      const std::size_t first_dot = v.find('.');
      const std::size_t second_dot = v.find('.', first_dot + 1);
      if (second_dot != std::string::npos) {
        v.resize(second_dot);
      }
      while (!v.empty() && v.back() == '.') {
        v.pop_back();
      }
      best = v;
    }
    pos = end + 1;
  }
  return best;
}

Debugger find_debugger(const std::string& requested) {
  return find_debugger(requested, SearchEnv{});
}

Debugger find_debugger(const std::string& requested, const SearchEnv& env, DebuggerChoice* choice) {
  DebuggerChoice local;
  DebuggerChoice& trace = choice != nullptr ? *choice : local;
  trace.requested = requested;
  trace.tried.clear();

  std::string want = requested;
  std::string source = "--debugger";
  if (want.empty()) {
    if (env.rocplay_debugger) {
      want = *env.rocplay_debugger;
    } else if (const char* v = std::getenv("ROCPLAY_DEBUGGER")) {
      want = v;
    }
    source = "$ROCPLAY_DEBUGGER";
  }
  std::string path_var;
  if (env.path_var) {
    path_var = *env.path_var;
  } else if (const char* p = std::getenv("PATH")) {
    path_var = p;
  }
  const auto path_dirs = split_path_var(path_var);

  // Candidate files in order, with the name each came from.
  std::vector<std::string> candidates;
  auto add_name = [&](const std::string& name, const std::vector<std::string>& extra) {
    auto add = [&](const std::string& dir) {
      std::string path = dir + "/" + name;
      // A directory twice in $PATH (or in $PATH and the extras) is looked at once.
      if (std::find(candidates.begin(), candidates.end(), path) == candidates.end()) {
        candidates.push_back(std::move(path));
      }
    };
    for (const auto& dir : path_dirs) {
      add(dir);
    }
    for (const auto& dir : extra) {
      add(dir);
    }
  };
  const bool explicit_choice = !want.empty();
  if (!explicit_choice) {
    add_name("rocgdb", env.extra_dirs);
    add_name("cuda-gdb", {"/usr/local/cuda/bin"});
    add_name("gdb", {});
  } else if (want.find('/') != std::string::npos) {
    candidates.push_back(want);
  } else if (want == "rocgdb") {
    add_name("rocgdb", env.extra_dirs);
  } else if (want == "cuda-gdb") {
    add_name("cuda-gdb", {"/usr/local/cuda/bin"});
  } else {
    add_name(want, {});
  }

  // With defer_banner, a search whose one executable candidate could not be passed over for
  // another defers its banner too: `--version` would only decide between candidates.
  bool defer = env.defer_banner && explicit_choice;
  if (env.defer_banner && !explicit_choice) {
    defer = std::count_if(candidates.begin(), candidates.end(),
                          [](const std::string& p) { return is_executable_file(p); }) == 1;
  }
  for (const auto& candidate : candidates) {
    trace.tried.push_back(candidate);
    if (!is_executable_file(candidate)) {
      continue;
    }
    std::string path = without_cuda_gdb_wrapper(candidate);
    if (defer) {
      Debugger dbg; // kind and version come from the session's `-gdb-version`
      dbg.path = path;
      return dbg;
    }
    auto banner = version_banner(path, env.version_timeout);
    if (!banner && path != candidate) {
      path = candidate; // the minimal binary does not run here; the script finds one that does
      banner = version_banner(path, env.version_timeout);
    }
    if (!banner) {
      if (explicit_choice) {
        throw Error(ExitCode::DebuggerNotFound,
                    path + " exists but `" + path + " --version` did not answer in time",
                    "check that it runs: `" + path + " --version`");
      }
      trace.tried.back() += " (--version failed)";
      continue;
    }
    Debugger dbg;
    dbg.path = path;
    dbg.version = *banner;
    dbg.kind = debugger_kind_from_banner(*banner, path);
    if (dbg.kind == DebuggerKind::Unknown) {
      dbg.kind = DebuggerKind::Gdb; // a GDB build with an unusual banner: speak MI all the same
    }
    return dbg;
  }

  std::string tried;
  for (const auto& t : trace.tried) {
    tried += "\n    " + t;
  }
  if (explicit_choice) {
    throw Error(ExitCode::DebuggerNotFound,
                "debugger `" + want + "` (from " + source + ") not found; looked at:" + tried,
                "install it or give its full path with --debugger PATH");
  }
  throw Error(ExitCode::DebuggerNotFound,
              "no debugger found (rocgdb, cuda-gdb or gdb); looked at:" + tried,
              "install rocgdb (ROCm), cuda-gdb (CUDA) or gdb, or name one with --debugger PATH "
              "or $ROCPLAY_DEBUGGER");
}

} // namespace rocplay::session
