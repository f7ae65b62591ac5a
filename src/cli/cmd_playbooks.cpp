// `rocplay playbooks`: list the playbooks rocplay can find; `show NAME` prints one; `check FILE`
// validates one without running it.
#include "cli/commands.hpp"
#include "cli/help_format.hpp"
#include "rocplay/core/error.hpp"
#include "rocplay/playbook/playbook.hpp"
#include "rocplay/report/report.hpp"
#include "rocplay/session/session.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>

#include <unistd.h>

namespace rocplay::cli::playbooks_command {
namespace {

struct PlaybooksOptions {
  std::string show_name;
  std::string check_name;
  bool allow_unsafe = false;
  std::string debugger;
  bool offline = false;
};

// The command names, against a debugger started with no target. Returns the exit code.
int check_names(const playbook::Playbook& pb, const PlaybooksOptions& o) {
  session::Debugger debugger;
  const auto& needed = pb.requirements.debuggers;
  // Without --debugger, a playbook that needs rocgdb or cuda-gdb is checked against one of them.
  std::string requested = o.debugger;
  if (requested.empty() && needed.size() == 1) {
    requested = std::string(to_string(needed.front()));
  }
  try {
    debugger = session::find_debugger(requested);
  } catch (const Error& e) {
    if (!o.debugger.empty()) {
      throw;
    }
    std::fprintf(stderr,
                 "%s: command names not checked: no %s found (pass --debugger PATH, or --offline "
                 "to check the YAML alone)\n",
                 pb.origin.c_str(), requested.empty() ? "debugger" : requested.c_str());
    return 0;
  }
  if (!needed.empty() && std::find(needed.begin(), needed.end(), debugger.kind) == needed.end()) {
    std::string names;
    for (auto k : needed) {
      names += (names.empty() ? "" : " or ") + std::string(to_string(k));
    }
    std::fprintf(stderr,
                 "%s: command names not checked: the playbook needs %s and the debugger is %s "
                 "(%s)\n",
                 pb.origin.c_str(), names.c_str(), std::string(to_string(debugger.kind)).c_str(),
                 debugger.path.c_str());
    return 0;
  }
  session::Options so;
  so.preload_symbols = false;
  session::Session session(debugger, so);
  auto driver = playbook::make_driver(session);
  const auto result = playbook::check_command_names(pb, *driver, std::chrono::milliseconds(10'000));
  std::size_t errors = 0;
  for (const auto& p : result.problems) {
    if (!p.conditional) {
      ++errors;
    }
    std::fprintf(stderr, "%s: %s: %s%s\n", p.position.str().c_str(),
                 p.conditional ? "note" : "error", p.message.c_str(),
                 p.conditional ? " (the step runs only when its `when:` holds)" : "");
    if (!p.hint.empty() && (!p.conditional || p.hint.rfind("did you mean", 0) == 0)) {
      std::fprintf(stderr, "  hint: %s\n", p.hint.c_str());
    }
  }
  const std::string version = session::version_number(debugger.version);
  std::printf(
      "%s: %s with %s%s%s (%zu command(s) checked%s)\n", pb.origin.c_str(),
      errors == 0 ? "ok" : "FAILED", std::string(to_string(debugger.kind)).c_str(),
      version.empty() ? "" : " ", version.c_str(), result.checked,
      result.not_applicable == 0
          ? ""
          : fmt::format(", {} step(s) for other debuggers not checked", result.not_applicable)
                .c_str());
  return errors == 0 ? 0 : static_cast<int>(ExitCode::BadPlaybook);
}

int list() {
  const auto entries = playbook::list_playbooks();
  // The report's width (the terminal's, $COLUMNS, else 100), as every listing of rocplay fits.
  const std::size_t columns = report::text_width(STDOUT_FILENO);
  for (const auto& e : entries) {
    std::string note;
    if (!e.shadowed_by.empty()) {
      note = fmt::format(" [shadowed by {}]", e.shadowed_by);
    }
    if (!e.error.empty()) {
      note += " [does not load: run `rocplay playbooks check " + e.origin + "`]";
    }
    // The name and where it comes from, then the description under it, a little indented: a
    // long name no longer pushes every description into a narrow column.
    std::printf("%s\n", wrap_text(e.name + "  (" + e.origin + ")", columns, 4).c_str());
    std::printf("    %s\n", wrap_text(e.description + note, columns - 4, 4).c_str());
  }
  std::string dirs;
  for (const auto& d : playbook::search_dirs()) {
    const bool relative = !d.empty() && d.front() != '/';
    dirs += (dirs.empty() ? "" : ", ") + d +
            (relative ? " (a folder under the current directory, " +
                            std::filesystem::absolute(d).lexically_normal().string() + ")"
                      : std::string());
  }
  std::printf("\n%s\n", wrap_text("Searched: built-ins, then " + dirs + ".", columns).c_str());
  return 0;
}

Action add_playbooks(CLI::App& app) {
  auto o = std::make_shared<PlaybooksOptions>();
  auto* sub = app.add_subcommand("playbooks", "List the playbooks; show or check one");
  sub->footer("Exit codes: 0 listed, shown or valid, 64 bad command line, 66 a playbook file "
              "cannot be read, 78 the playbook failed validation (unknown name: the nearest is "
              "suggested).");
  auto* show = sub->add_subcommand("show", "Print a playbook's YAML");
  show->add_option("name", o->show_name, "A playbook name or a path to a .yaml file")->required();
  auto* check = sub->add_subcommand("check", "Validate a playbook without running it");
  check->add_option("name", o->check_name, "A playbook name or a path to a .yaml file")->required();
  check->add_flag("--allow-unsafe-commands", o->allow_unsafe,
                  "Validate as `rocplay run --allow-unsafe-commands` would");
  check->add_option("--debugger", o->debugger,
                    "Check command names against this debugger (rocgdb|cuda-gdb|gdb|PATH; "
                    "default: the one `run` would pick)");
  check->add_flag("--offline", o->offline,
                  "Check the YAML alone; start no debugger (command names unchecked)");
  return [o, show, check] {
    if (show->parsed()) {
      const auto src = playbook::find_source(o->show_name);
      std::printf("# %s (%s)\n%s", src.name.c_str(), src.builtin ? "built-in" : src.origin.c_str(),
                  src.text.c_str());
      if (!src.text.empty() && src.text.back() != '\n') {
        std::printf("\n");
      }
      return 0;
    }
    if (check->parsed()) {
      playbook::LoadOptions lo;
      lo.allow_unsafe_commands = o->allow_unsafe;
      const auto pb = playbook::find_playbook(o->check_name, lo);
      std::size_t n = pb.steps.size() + pb.always.size();
      std::printf("%s: valid (%zu steps%s)\n", pb.origin.c_str(), n,
                  pb.has_attach_step ? "" : ", attach implicit");
      if (o->offline) {
        return 0;
      }
      std::fflush(stdout);
      return check_names(pb, *o);
    }
    return list();
  };
}

const bool kRegistered = register_command({"playbooks", 20, &add_playbooks});

} // namespace
} // namespace rocplay::cli::playbooks_command
