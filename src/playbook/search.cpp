// Where playbooks come from: the built-ins compiled into rocplay, then user directories.
#include "playbook/internal.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace rocplay::playbook {

namespace {

namespace fs = std::filesystem;

constexpr std::size_t kMaxFilesPerDir = 1000;

bool is_yaml(const fs::path& p) {
  return p.extension() == ".yaml" || p.extension() == ".yml";
}

bool looks_like_path(const std::string& s) {
  return s.find('/') != std::string::npos || s.ends_with(".yaml") || s.ends_with(".yml");
}

std::string read_text(const std::string& path) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) {
    throw Error(ExitCode::NoInput, fmt::format("no playbook file {}", path),
                "check the path; `rocplay playbooks` lists the playbooks rocplay can find");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw Error(ExitCode::NoInput, fmt::format("cannot read playbook {}", path),
                "check the file's permissions");
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The YAML files of one directory, sorted, bounded.
std::vector<fs::path> yaml_files(const std::string& dir) {
  std::vector<fs::path> out;
  std::error_code ec;
  fs::directory_iterator it(dir, ec);
  if (ec) {
    return out;
  }
  for (const auto& entry : it) {
    std::error_code e2;
    if (entry.is_regular_file(e2) && is_yaml(entry.path())) {
      out.push_back(entry.path());
      if (out.size() >= kMaxFilesPerDir) {
        break;
      }
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

const std::string_view* builtin_text(std::string_view name) {
  for (const auto& [n, text] : builtin_playbook_sources()) {
    if (n == name) {
      return &text;
    }
  }
  return nullptr;
}

} // namespace

std::vector<std::string> search_dirs() {
  std::vector<std::string> dirs = {"playbooks"};
  if (const char* xdg = std::getenv("XDG_CONFIG_HOME"); xdg != nullptr && *xdg != '\0') {
    dirs.push_back(std::string(xdg) + "/rocplay/playbooks");
  } else if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0') {
    dirs.push_back(std::string(home) + "/.config/rocplay/playbooks");
  }
  if (const char* extra = std::getenv("ROCPLAY_PLAYBOOK_PATH"); extra != nullptr) {
    std::string_view rest = extra;
    while (!rest.empty()) {
      const auto colon = rest.find(':');
      const std::string_view dir = rest.substr(0, colon);
      if (!dir.empty()) {
        dirs.emplace_back(dir);
      }
      if (colon == std::string_view::npos) {
        break;
      }
      rest.remove_prefix(colon + 1);
    }
  }
  return dirs;
}

std::vector<Entry> list_playbooks() {
  std::vector<Entry> out;
  auto find = [&](const std::string& name) -> const Entry* {
    for (const auto& e : out) {
      if (e.name == name && e.shadowed_by.empty()) {
        return &e;
      }
    }
    return nullptr;
  };
  for (const auto& [name, text] : builtin_playbook_sources()) {
    Entry e;
    e.name = std::string(name);
    e.origin = "built-in";
    e.builtin = true;
    try {
      e.description = load(text, "builtin:" + e.name, {.builtin = true}).description;
    } catch (const Error& err) {
      e.error = err.what();
    }
    out.push_back(std::move(e));
  }
  for (const auto& dir : search_dirs()) {
    for (const auto& path : yaml_files(dir)) {
      Entry e;
      e.name = path.stem().string();
      e.origin = path.string();
      std::string text;
      try {
        text = read_text(e.origin);
        e.description = load(text, e.origin, {}).description;
      } catch (const Error& err) {
        e.error = err.what();
      }
      if (const auto* builtin = builtin_text(e.name); builtin != nullptr && *builtin == text) {
        continue; // the source tree's copy of a built-in
      }
      if (const Entry* earlier = find(e.name)) {
        e.shadowed_by = earlier->origin;
      }
      out.push_back(std::move(e));
    }
  }
  return out;
}

Source find_source(const std::string& name_or_path) {
  if (looks_like_path(name_or_path)) {
    return Source{fs::path(name_or_path).stem().string(), name_or_path, read_text(name_or_path),
                  false};
  }
  if (const auto* text = builtin_text(name_or_path)) {
    return Source{name_or_path, "builtin:" + name_or_path, std::string(*text), true};
  }
  for (const auto& dir : search_dirs()) {
    for (const char* ext : {".yaml", ".yml"}) {
      const std::string path = dir + "/" + name_or_path + ext;
      std::error_code ec;
      if (fs::is_regular_file(path, ec)) {
        return Source{name_or_path, path, read_text(path), false};
      }
    }
  }
  std::vector<std::string> names;
  for (const auto& [name, text] : builtin_playbook_sources()) {
    names.emplace_back(name);
  }
  for (const auto& dir : search_dirs()) {
    for (const auto& path : yaml_files(dir)) {
      names.push_back(path.stem().string());
    }
  }
  std::vector<std::string_view> views(names.begin(), names.end());
  auto guess = detail::nearest(name_or_path, views);
  std::string dirs;
  for (const auto& d : search_dirs()) {
    dirs += (dirs.empty() ? "" : ", ") + d;
  }
  throw Error(
      ExitCode::NoInput,
      fmt::format("no playbook named `{}` (looked in the built-ins and {})", name_or_path, dirs),
      guess ? fmt::format("did you mean `{}`? `rocplay playbooks` lists them", *guess)
            : std::string("`rocplay playbooks` lists them; a path to a .yaml file works "
                          "too"));
}

Playbook find_playbook(const std::string& name_or_path, const LoadOptions& options) {
  Source src = find_source(name_or_path);
  LoadOptions o = options;
  o.builtin = src.builtin;
  return load(src.text, src.origin, o);
}

} // namespace rocplay::playbook
