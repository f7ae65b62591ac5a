// `rocplay playbooks`: list the playbooks rocplay can find; `show NAME` prints one; `check FILE`
// validates one without running it.
#include "cli/commands.hpp"
#include "rocplay/playbook.hpp"

#include <fmt/format.h>

#include <cstdio>
#include <memory>

namespace rocplay::cli::playbooks_command {
namespace {

struct PlaybooksOptions {
  std::string show_name;
  std::string check_name;
  bool allow_unsafe = false;
};

int list() {
  const auto entries = playbook::list_playbooks();
  std::size_t width = 4;
  for (const auto& e : entries) {
    width = std::max(width, e.name.size());
  }
  for (const auto& e : entries) {
    std::string note;
    if (!e.shadowed_by.empty()) {
      note = fmt::format(" [shadowed by {}]", e.shadowed_by);
    }
    if (!e.error.empty()) {
      note += " [does not load: run `rocplay playbooks check " + e.origin + "`]";
    }
    std::printf("%-*s  %s%s\n", static_cast<int>(width), e.name.c_str(), e.description.c_str(),
                note.c_str());
    std::printf("%-*s  (%s)\n", static_cast<int>(width), "", e.origin.c_str());
  }
  std::string dirs;
  for (const auto& d : playbook::search_dirs()) {
    dirs += (dirs.empty() ? "" : ", ") + d;
  }
  std::printf("\nSearched: built-ins, then %s.\n", dirs.c_str());
  return 0;
}

Action add_playbooks(CLI::App& app) {
  auto o = std::make_shared<PlaybooksOptions>();
  auto* sub = app.add_subcommand("playbooks", "List the playbooks; show or check one");
  auto* show = sub->add_subcommand("show", "Print a playbook's YAML");
  show->add_option("name", o->show_name, "A playbook name or a path to a .yaml file")->required();
  auto* check = sub->add_subcommand("check", "Validate a playbook without running it");
  check->add_option("name", o->check_name, "A playbook name or a path to a .yaml file")->required();
  check->add_flag("--allow-unsafe-commands", o->allow_unsafe,
                  "Validate as `rocplay run --allow-unsafe-commands` would");
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
      std::printf("%s: ok (%zu steps%s)\n", pb.origin.c_str(), n,
                  pb.has_attach_step ? "" : ", attach implicit");
      return 0;
    }
    return list();
  };
}

const bool kRegistered = register_command({"playbooks", 20, &add_playbooks});

} // namespace
} // namespace rocplay::cli::playbooks_command
