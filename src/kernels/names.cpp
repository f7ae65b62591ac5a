// Kernel and function names: scanning, the project's one demangler (bounded:
// see kMaxDemangleBytes and kMaxDemangleNesting) and short names.
#include "kernels/name_parts.hpp"
#include "rocplay/kernels/kernel_names.hpp"

#include <cxxabi.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <memory>

namespace rocplay {
namespace kernels {

namespace {

// Bracket depth while scanning a demangled name: template arguments, parameter
// lists, braces. A closer with no opener is ignored (names come from untrusted
// text).
struct Depth {
  int angle = 0;
  int paren = 0;
  int brace = 0;
  bool top() const { return angle == 0 && paren == 0 && brace == 0; }
  void step(char c) {
    if (c == '<') {
      ++angle;
    } else if (c == '>' && angle > 0) {
      --angle;
    } else {
      step_brackets(c);
    }
  }
  // Parentheses and braces only: where a `<` is text (inside a parameter list).
  void step_brackets(char c) {
    if (c == '(') {
      ++paren;
    } else if (c == ')' && paren > 0) {
      --paren;
    } else if (c == '{') {
      ++brace;
    } else if (c == '}' && brace > 0) {
      --brace;
    }
  }
};

// How deep libstdc++'s recursive demangler would go: nested scopes and template
// argument lists
// (`N`/`I`/`X`/`J` ... `E`) plus the longest run of type qualifiers
// (`PPPR...`), skipping the identifiers (`<length><name>`) so their letters do
// not count. An over-estimate is harmless: the name then stays mangled and
// classification reads its identifiers.
std::size_t mangled_nesting(std::string_view s) {
  std::size_t depth = 0;
  std::size_t deepest = 0;
  std::size_t run = 0;
  for (std::size_t i = 2; i < s.size();) {
    const char c = s[i];
    if (std::isdigit(static_cast<unsigned char>(c)) != 0) {
      std::size_t len = 0;
      std::size_t j = i;
      while (j < s.size() && std::isdigit(static_cast<unsigned char>(s[j])) != 0 && len < 100000) {
        len = len * 10 + static_cast<std::size_t>(s[j] - '0');
        ++j;
      }
      const bool literal = i >= 2 && s[i - 2] == 'L';
      i = literal ? j : std::min(s.size(), j + len);
      run = 0;
      continue;
    }
    if (c == 'N' || c == 'I' || c == 'X' || c == 'J') {
      ++depth;
    } else if (c == 'E' && depth > 0) {
      --depth;
    }
    run = (c == 'P' || c == 'R' || c == 'O' || c == 'K' || c == 'V') ? run + 1 : 0;
    deepest = std::max(deepest, depth + run);
    ++i;
  }
  return deepest;
}

} // namespace

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

bool contains(std::string_view haystack, std::string_view needle) {
  return haystack.find(needle) != std::string_view::npos;
}

bool is_ident_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' || c == '$';
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front())) != 0) {
    s.remove_prefix(1);
  }
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back())) != 0) {
    s.remove_suffix(1);
  }
  return s;
}

std::string_view strip_descriptor_suffix(std::string_view s) {
  s = trim(s);
  for (std::string_view suffix : {std::string_view(" [clone .kd]"), std::string_view(".kd")}) {
    if (s.size() > suffix.size() && s.ends_with(suffix)) {
      s.remove_suffix(suffix.size());
      break;
    }
  }
  return trim(s);
}

NameParts split_name(std::string_view s) {
  constexpr std::string_view kAnon = "(anonymous namespace)";
  // 1. The head: everything before the top-level parameter list.
  Depth depth;
  std::size_t head_end = s.size();
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '(' && depth.top()) {
      if (s.substr(i).starts_with(kAnon)) {
        i += kAnon.size() - 1;
        continue;
      }
      head_end = i;
      break;
    }
    depth.step(c);
  }
  std::string_view head = trim(s.substr(0, head_end));
  // 2. Drop the return type: the name is the last top-level space-separated
  // token.
  depth = {};
  std::size_t name_begin = 0;
  for (std::size_t i = 0; i < head.size(); ++i) {
    const char c = head[i];
    if (c == ' ' && depth.top()) {
      if (!head.substr(i + 1).starts_with(kAnon) && !head.substr(0, i).ends_with("(anonymous")) {
        name_begin = i + 1;
      }
    }
    depth.step(c);
  }
  std::string_view name = head.substr(name_begin);
  // 3. Split on top-level `::`, removing template arguments from each
  // component. Inside a parameter list or braces a `<` is text, not a
  // template's opening.
  NameParts parts;
  std::string current;
  std::string args;
  depth = {};
  for (std::size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    if (depth.top()) {
      if (c == ':' && i + 1 < name.size() && name[i + 1] == ':') {
        parts.components.push_back(current);
        current.clear();
        args.clear();
        ++i;
        continue;
      }
      if (c == '<') {
        ++depth.angle;
        continue;
      }
      depth.step_brackets(c);
      current.push_back(c);
      continue;
    }
    if (depth.angle > 0) {
      if (c == '<') {
        ++depth.angle;
      } else if (c == '>') {
        --depth.angle;
      }
      if (depth.angle > 0) {
        args.push_back(c);
      }
      continue;
    }
    depth.step_brackets(c);
    current.push_back(c);
  }
  parts.components.push_back(current);
  parts.template_args = std::string(trim(args));
  return parts;
}

std::vector<std::string> mangled_identifiers(std::string_view s) {
  std::vector<std::string> out;
  std::size_t i = 2; // after `_Z`
  while (i < s.size() && out.size() < 256) {
    if (std::isdigit(static_cast<unsigned char>(s[i])) == 0) {
      ++i;
      continue;
    }
    std::size_t len = 0;
    std::size_t j = i;
    while (j < s.size() && std::isdigit(static_cast<unsigned char>(s[j])) != 0 && len < 100000) {
      len = len * 10 + static_cast<std::size_t>(s[j] - '0');
      ++j;
    }
    // Template literals (`Li256E`, `Lin1E`) are numbers, not lengths.
    const auto is_lower = [&](std::size_t k) {
      return std::islower(static_cast<unsigned char>(s[k])) != 0;
    };
    const bool literal = (i >= 2 && s[i - 2] == 'L' && is_lower(i - 1)) ||
                         (i >= 3 && s[i - 1] == 'n' && s[i - 3] == 'L' && is_lower(i - 2));
    if (literal) {
      i = j;
      continue;
    }
    const bool plausible = len > 0 && j + len <= s.size() &&
                           (std::isalpha(static_cast<unsigned char>(s[j])) != 0 || s[j] == '_');
    if (plausible && std::all_of(s.begin() + static_cast<std::ptrdiff_t>(j),
                                 s.begin() + static_cast<std::ptrdiff_t>(j + len), is_ident_char)) {
      out.emplace_back(s.substr(j, len));
      i = j + len;
    } else {
      i = j;
    }
  }
  return out;
}

bool is_plain_identifier(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), is_ident_char) &&
         std::isdigit(static_cast<unsigned char>(s.front())) == 0;
}

std::string join(const std::vector<std::string>& parts, std::string_view sep) {
  std::string out;
  for (const auto& p : parts) {
    if (!out.empty()) {
      out += sep;
    }
    out += p;
  }
  return out;
}

} // namespace kernels

using kernels::split_name;
using kernels::trim;

bool is_mangled(std::string_view name) {
  return trim(name).starts_with("_Z");
}

std::string demangle_symbol(std::string_view name) {
  name = trim(name);
  if (name.size() > 3 && name.ends_with(".kd")) {
    name.remove_suffix(3);
  }
  return demangle(name);
}

std::string demangle(std::string_view name) {
  name = trim(name);
  if (!name.starts_with("_Z") || name.size() > kMaxDemangleBytes ||
      kernels::mangled_nesting(name) > kMaxDemangleNesting) {
    return std::string(name);
  }
  auto attempt = [](std::string_view mangled) -> std::string {
    const std::string copy(mangled);
    int status = 0;
    std::unique_ptr<char, void (*)(void*)> out(
        abi::__cxa_demangle(copy.c_str(), nullptr, nullptr, &status), std::free);
    if (status != 0 || out == nullptr) {
      return {};
    }
    return std::string(out.get());
  };
  if (auto out = attempt(name); !out.empty()) {
    return out;
  }
  if (name.ends_with(".kd")) {
    if (auto out = attempt(name.substr(0, name.size() - 3)); !out.empty()) {
      return out + " [clone .kd]";
    }
  }
  return std::string(name);
}

std::string short_function_name(std::string_view name) {
  auto parts = split_name(trim(name));
  if (parts.components.empty() || parts.components.back().empty()) {
    return std::string(trim(name));
  }
  return std::move(parts.components.back());
}

std::string kernel_short_name(std::string_view name) {
  return classify_kernel(name).short_name;
}

} // namespace rocplay
