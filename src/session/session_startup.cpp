// Spawning the debugger and starting it up: the MI version, the probes, the output buffer and
// the symbols preloaded while the target still runs (see session/session_impl.hpp).
#include "session/light_symbols.hpp"
#include "session/session_impl.hpp"

#include "session/child_descriptors.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <filesystem>

extern char** environ;

namespace rocplay::session {

namespace {

const std::array<const char*, 5> kProbedCommands = {"agent-info", "queue-info", "dispatch-info",
                                                    "lane-info", "wave-info"};

// Child-side set-up of the debugger: its own process group (a terminal's Ctrl-C must reach
// rocplay, never the debugger: the seed's "an accidental ^C SIGSTOPs the worker permanently"),
// SIGTERM if rocplay dies (GDB quits on SIGTERM and detaches what it attached), no signals
// blocked, and a C locale so messages are the ones this file recognises.
struct DebuggerLaunch {
  std::vector<std::string> env_storage;
  std::vector<const char*> env_ptrs;
  std::vector<int> inherit_fds; // kept open across the exec (Options::inherit_fds)

  explicit DebuggerLaunch(std::vector<int> keep) : inherit_fds(std::move(keep)) {
    for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
      const std::string_view kv(*e);
      if (kv.rfind("LC_ALL=", 0) == 0 || kv.rfind("LANGUAGE=", 0) == 0) {
        continue;
      }
      env_storage.emplace_back(kv);
    }
    env_storage.emplace_back("LC_ALL=C");
    for (const auto& s : env_storage) {
      env_ptrs.push_back(s.c_str());
    }
    env_ptrs.push_back(nullptr);
  }

  bp2::error_code on_setup(bp2::posix::default_launcher& launcher, const bp2::filesystem::path&,
                           const char* const*) {
    launcher.env = env_ptrs.data();
    for (const int fd : inherit_fds) {
      launcher.fd_whitelist.push_back(fd);
    }
    return {};
  }

  bp2::error_code on_exec_setup(bp2::posix::default_launcher&, const bp2::filesystem::path&,
                                const char* const*) {
    ::setpgid(0, 0);
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    for (const int sig : {SIGINT, SIGTERM, SIGHUP, SIGPIPE}) {
      ::signal(sig, SIG_DFL);
    }
    detail::close_on_exec_from_3();
    for (const int fd : inherit_fds) {
      ::fcntl(fd, F_SETFD, 0);
    }
    return {};
  }
};

bool mi_refused(std::string_view stderr_text) {
  return stderr_text.find("mi3") != std::string_view::npos &&
         (stderr_text.find("unrecognized") != std::string_view::npos ||
          stderr_text.find("Interpreter") != std::string_view::npos);
}

} // namespace

void Session::Impl::spawn(int mi_version) {
  if (in) { // a respawn (MI2 fallback): retire the previous debugger's pipes first
    boost::system::error_code ec;
    in->close(ec);
    out->close(ec);
    err->close(ec);
    drain();
  }
  ++generation;
  mi = mi_version;
  in = std::make_unique<asio::writable_pipe>(ioc);
  out = std::make_unique<asio::readable_pipe>(ioc);
  err = std::make_unique<asio::readable_pipe>(ioc);
  parser = std::make_unique<mi::Parser>();
  reaped = false;
  wait_status.reset();
  stderr_all.clear();
  err_carry.clear();
  DebuggerLaunch launch(options.inherit_fds);
  const std::string interp = "--interpreter=mi" + std::to_string(mi_version);
  try {
    proc = std::make_unique<bp2::process>(ioc, debugger.path,
                                          std::vector<std::string>{"-nx", "-q", interp},
                                          bp2::process_stdio{*in, *out, *err}, launch);
  } catch (const std::exception& e) {
    throw Error(ExitCode::DebuggerNotFound,
                "could not start the debugger " + debugger.path + ": " + e.what(),
                "check that it runs: `" + debugger.path + " --version`");
  }
  gdb_pid = proc->id();
  out_open = true;
  err_open = true;
  start_read_out();
  start_read_err();
  start_signal_watch();
  on_note("spawned " + debugger.path + " -nx -q " + interp + " (pid " + std::to_string(gdb_pid) +
          ")");
}

void Session::Impl::read_fault_point() {
  const char* spec = std::getenv("ROCPLAY_FAULT_INJECT");
  if (spec == nullptr || *spec == '\0') {
    return;
  }
  const std::string text(spec);
  const auto colon = text.find(':');
  const std::string action = colon == std::string::npos ? "" : text.substr(colon + 1);
  FaultPoint f;
  try {
    f.after = std::stoull(text.substr(0, colon));
  } catch (const std::exception&) {
    return;
  }
  f.action = action == "kill-debugger"   ? SIGKILL
             : action == "stop-debugger" ? SIGSTOP
             : action == "sigint"        ? SIGINT
             : action == "sigterm"       ? SIGTERM
                                         : 0;
  if (f.action != 0) {
    fault = f;
  }
}

void Session::Impl::startup() {
  read_fault_point();
  spawn(3);
  const auto deadline = Clock::now() + options.startup_timeout;
  auto remaining = [&] {
    return std::max(milliseconds(1), std::chrono::ceil<milliseconds>(deadline - Clock::now()));
  };
  // A debugger named without running its `--version` (SearchEnv::defer_banner): the banner
  // comes from `-gdb-version` below, and a program that does not answer as a GDB in MI mode is
  // reported as `--version` failing was, with the same time limit (SearchEnv::version_timeout).
  const bool banner_deferred = debugger.version.empty();
  auto first_timeout = [&] {
    return banner_deferred ? std::min(remaining(), milliseconds(SearchEnv{}.version_timeout))
                           : remaining();
  };
  // The first command tells whether this debugger speaks MI3.
  try {
    try {
      start_command("-gdb-set pagination off", first_timeout());
    } catch (const Error& e) {
      if (e.code() == ExitCode::DebuggerCrashed && mi_refused(stderr_all)) {
        closed.reset();
        on_note("the debugger refused mi3; falling back to mi2");
        spawn(2);
        start_command("-gdb-set pagination off", first_timeout());
      } else {
        throw;
      }
    }
  } catch (const Error& e) {
    if (!banner_deferred || results_seen > 0 ||
        (e.code() != ExitCode::DebuggerCrashed && e.code() != ExitCode::Timeout)) {
      throw;
    }
    throw Error(ExitCode::DebuggerNotFound,
                debugger.path + " does not run as a GDB-family debugger in MI mode: " + e.what(),
                "check that it runs: `" + debugger.path +
                    " --version`; --debugger takes rocgdb, cuda-gdb, gdb or the path of one");
  }
  if (options.buffered_output) {
    buffer_output(remaining());
  }
  // `print thread-events off`: no `[New LWP N]` console line per thread at attach (a thousand
  // flushed writes for a thousand threads); =thread-created still reports each one.
  for (const char* cmd : {"-gdb-set confirm off", "-gdb-set width 0", "-gdb-set height 0",
                          "-gdb-set auto-load off", "-gdb-set print thread-events off"}) {
    start_command(cmd, remaining());
  }
  // Argument values cost GDB a DWARF evaluation per frame it prints: -thread-info of 1,000
  // threads took 0.4-0.5 s of the stop with them, 0.07-0.08 s without (docs/benchmarks.md).
  // Frames keep the arguments' names; nothing rocplay reads uses the values.
  if (!options.frame_argument_values) {
    start_command("-gdb-set print frame-arguments none", remaining());
  }
  // Belt and braces for builds where `auto-load off` leaves Python scripts on; a GDB without
  // Python refuses the setting, which is fine.
  command("-interpreter-exec console \"set auto-load python-scripts off\"", remaining());
  // With DEBUGINFOD_URLS set, GDB 12+ asks whether to download debug info, and `confirm off`
  // answers yes: a stop could then wait on the network. Older GDBs lack the setting.
  command("-gdb-set debuginfod enabled off", remaining());
  if (debugger.version.empty()) {
    // The same first line as `--version` prints (a cuda-gdb wrapper's `exec:` line skipped).
    const auto ex = start_command("-gdb-version", remaining());
    debugger.version = banner_line(ex.console());
    if (debugger.kind == DebuggerKind::Unknown) {
      debugger.kind = debugger_kind_from_banner(debugger.version, debugger.path);
    }
    if (debugger.kind == DebuggerKind::Unknown) {
      debugger.kind = DebuggerKind::Gdb; // as find_debugger: an unusual banner still speaks MI
    }
  }
  // GDB 17+ prefixes error and warning stream lines with emoji under a UTF-8 locale (`❌️`,
  // `⚠️`); rocplay's readers strip them either way. Older GDBs refuse the setting, and every
  // snapshot would carry the refusal as a warning: asked of 17+ only.
  if (const std::string v = version_number(debugger.version);
      !v.empty() && std::atoi(v.c_str()) >= 17) {
    command("-gdb-set style emoji off", remaining());
  }
  // GDB 13 on Linux drives threads through a non-stop target even when the user sees all-stop:
  // an attach then stops and accounts for each thread on its own. With the all-stop target,
  // attaching to 1,000 threads and listing them stopped the target 0.30 s instead of 0.39
  // (docs/benchmarks.md). Plain gdb only: rocgdb's and cuda-gdb's GPU targets were not tried
  // without it. A maintenance setting: a GDB that lacks it refuses it and keeps its default.
  if (options.all_stop_target && debugger.kind == DebuggerKind::Gdb) {
    command("-interpreter-exec console \"maint set target-non-stop off\"", remaining());
  }
  {
    const auto ex = start_command("-list-features", remaining());
    if (const auto* r = ex.result(); r != nullptr && r->klass() == "done") {
      for (const auto v : r->results()["features"]) {
        features.push_back(v.text());
      }
    }
  }
  const bool can_probe =
      std::find(features.begin(), features.end(), "info-gdb-mi-command") != features.end();
  if (can_probe) {
    for (const char* name : kProbedCommands) {
      const auto ex = start_command(std::string("-info-gdb-mi-command ") + name, remaining());
      if (const auto* r = ex.result(); r != nullptr && r->klass() == "done" &&
                                       r->results()["command"]["exists"].str_or() == "true") {
        mi_commands.insert(name);
      }
    }
  }
}

void Session::Impl::buffer_output(milliseconds timeout) {
  for (const char* cmd : {"-gdb-set logging file /proc/self/fd/1", "-gdb-set logging overwrite on",
                          "-gdb-set logging redirect on"}) {
    if (command(cmd, timeout).error_message()) {
      on_note(std::string("MI output stays unbuffered: `") + cmd + "` failed");
      return;
    }
  }
  // `logging enabled` is GDB 12's name; older GDBs have `set logging on`.
  if (!command("-gdb-set logging enabled on", timeout).error_message() ||
      !command("-gdb-set logging on", timeout).error_message()) {
    output_buffered = true;
    return;
  }
  command("-gdb-set logging redirect off", timeout);
  on_note("MI output stays unbuffered: the debugger could not turn logging on");
}

namespace {
std::string base_name(const std::string& path) {
  return std::filesystem::path(path).filename().string();
}

// Paths go into CLI arguments and MI parameters: keep to ones that need no quoting there.
bool plain_path(const std::string& p) {
  return !p.empty() && p[0] == '/' && std::none_of(p.begin(), p.end(), [](char c) {
    const auto u = static_cast<unsigned char>(c);
    return u <= 0x20 || u == 0x7f || c == '"' || c == '\'' || c == '\\';
  });
}

} // namespace

std::optional<std::string> Session::Impl::light_copy_for(const std::string& library,
                                                         std::vector<std::string>& light_names) {
  const bool allowed = options.light_symbols_above > 0 && (debugger.kind == DebuggerKind::Gdb ||
                                                           debugger.kind == DebuggerKind::CudaGdb);
  if (!allowed) {
    return std::nullopt;
  }
  const auto entries = symtab_entries(library);
  if (!entries || *entries <= options.light_symbols_above) {
    return std::nullopt;
  }
  std::string why;
  auto light = shared_light_copy(library, &why);
  if (!light || !plain_path(*light)) {
    if (!why.empty() && !light_failure_noted) {
      on_note("symbol-light copies: " + why + "; every library is read whole");
      light_failure_noted = true;
    }
    return std::nullopt;
  }
  light_names.push_back(fmt::format("{} ({} symbols)", base_name(library), *entries));
  std::string path = *light;
  light_files.push_back(std::move(light));
  return path;
}

void Session::Impl::note_light_libraries(const std::vector<std::string>& light_names) {
  if (!light_names.empty()) {
    on_note(fmt::format("{}{}: a PC in a function they do not "
                        "export reads ?? (--full-symbols reads them whole, in more time)",
                        kLightSymbolsNote, fmt::join(light_names, ", ")));
  }
}

std::size_t Session::Impl::preload_symbols(std::int64_t target_pid, Clock::time_point deadline) {
  constexpr std::size_t kMaxObjects = 4096;
  auto remaining = [&] {
    return std::max(milliseconds(1), std::chrono::ceil<milliseconds>(deadline - Clock::now()));
  };
  std::size_t loaded = 0;
  const std::string exe = process::read_exe(target_pid);
  if (plain_path(exe)) {
    const auto ex = command("-file-exec-and-symbols " + exe, remaining());
    loaded += ex.error_message() ? 0 : 1;
    preloaded_paths.insert(exe);
  }
  const auto objects = process::read_mapped_objects(target_pid);
  if (!objects) {
    return loaded;
  }
  std::vector<std::string> light_names;
  for (const auto& obj : *objects) {
    const bool shared = obj.path.find(".so") != std::string::npos;
    if (!shared || obj.path == exe || obj.base == 0 || !plain_path(obj.path) ||
        loaded >= kMaxObjects) {
      continue;
    }
    const std::string symbols = light_copy_for(obj.path, light_names).value_or(obj.path);
    char base[32];
    std::snprintf(base, sizeof base, "0x%llx", static_cast<unsigned long long>(obj.base));
    const auto ex =
        command(console_command("add-symbol-file " + symbols + " -o " + base), remaining());
    loaded += ex.error_message() ? 0 : 1;
    preloaded_paths.insert(obj.path); // read or refused: asking again in the stop gains nothing
  }
  on_note("read the symbols of " + std::to_string(loaded) +
          " mapped files before attaching (the target kept running)");
  note_light_libraries(light_names);
  return loaded;
}

void Session::Impl::use_light_sysroot(std::int64_t target_pid, milliseconds timeout) {
  constexpr std::size_t kMaxObjects = 4096;
  const auto objects = process::read_mapped_objects(target_pid);
  if (!objects || options.light_symbols_above == 0) {
    return;
  }
  std::vector<std::pair<std::string, std::string>> copies;
  std::vector<std::string> light_names;
  std::set<std::string> seen;
  for (const auto& obj : *objects) {
    if (obj.path.find(".so") == std::string::npos || seen.size() >= kMaxObjects ||
        !seen.insert(obj.path).second) {
      continue;
    }
    if (auto light = light_copy_for(obj.path, light_names)) {
      copies.emplace_back(obj.path, std::move(*light));
    }
  }
  if (copies.empty()) {
    return;
  }
  std::string why;
  auto sysroot = LightSysroot::make(copies, why);
  if (sysroot && !plain_path(sysroot->root())) {
    why = "the temporary directory's path needs quoting";
    sysroot.reset();
  }
  if (!sysroot || start_command("-gdb-set sysroot " + sysroot->root(), timeout).error_message()) {
    on_note("symbol-light copies: no sysroot for them" + (why.empty() ? "" : " (" + why + ")") +
            "; every library is read whole");
    light_files.clear();
    return;
  }
  light_sysroot = std::move(sysroot);
  note_light_libraries(light_names);
}

namespace {

// A basic regular expression (GDB's `sharedlibrary`) matching a library by its file name in any
// directory: the dynamic linker's name for it (/lib/...) need not be the path /proc shows.
std::optional<std::string> library_regex(const std::string& path) {
  const std::string name = base_name(path);
  if (name.empty() || name.front() == ' ' || name.back() == ' ') {
    return std::nullopt;
  }
  std::string re = "/";
  for (const char c : name) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      return std::nullopt;
    }
    if (c == '.' || c == '[' || c == ']' || c == '*' || c == '^' || c == '$' || c == '\\') {
      re += '\\';
    }
    re += c;
  }
  return re + "$";
}

} // namespace

std::size_t Session::Impl::load_unpreloaded_libraries(std::int64_t target_pid,
                                                      milliseconds timeout) {
  constexpr std::size_t kMaxLibraries = 256;
  const auto objects = process::read_mapped_objects(target_pid);
  if (!objects) {
    return 0;
  }
  std::set<std::string> asked;
  std::vector<std::string> names;
  for (const auto& obj : *objects) {
    if (obj.path.find(".so") == std::string::npos || preloaded_paths.count(obj.path) != 0) {
      continue;
    }
    const auto re = library_regex(obj.path);
    if (!re || asked.size() >= kMaxLibraries || !asked.insert(*re).second) {
      continue;
    }
    preloaded_paths.insert(obj.path); // asked once per session, read or not
    const auto ex = command(console_command("sharedlibrary " + *re), timeout);
    if (!ex.error_message()) {
      names.push_back(base_name(obj.path));
    }
  }
  if (!names.empty()) {
    on_note(fmt::format("read the symbols of {} shared libraries the preload had not read, inside "
                        "the stop: {}",
                        names.size(), fmt::join(names, ", ")));
  }
  return asked.size();
}

mi::Exchange Session::Impl::start_command(const std::string& cmd, milliseconds timeout) {
  auto ex = command(cmd, timeout);
  if (const auto msg = ex.error_message()) {
    warn("start-up command `" + cmd + "` failed: " + *msg);
  }
  return ex;
}

} // namespace rocplay::session
