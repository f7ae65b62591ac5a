#include "cli/help_format.hpp"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <sstream>

namespace rocplay::cli {

std::size_t help_width() {
  std::size_t width = 0;
  winsize ws{};
  if (::ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) {
    width = ws.ws_col;
  } else if (const char* columns = std::getenv("COLUMNS")) {
    width = static_cast<std::size_t>(std::strtoul(columns, nullptr, 10));
  }
  if (width == 0) {
    width = 80;
  }
  return std::clamp<std::size_t>(width, 40, 100);
}

std::string wrap_text(std::string_view text, std::size_t width, std::size_t indent) {
  std::string out;
  std::size_t line_start = 0;
  while (line_start <= text.size()) {
    std::size_t line_end = text.find('\n', line_start);
    if (line_end == std::string_view::npos) {
      line_end = text.size();
    }
    const std::string_view line = text.substr(line_start, line_end - line_start);
    // A line's own leading spaces (an indented list) are kept for its continuation lines too.
    const std::size_t lead = std::min(line.find_first_not_of(' '), line.size());
    std::size_t col = 0;
    std::size_t pos = lead;
    out.append(lead, ' ');
    col = lead;
    bool first = true;
    while (pos < line.size()) {
      std::size_t sp = line.find(' ', pos);
      if (sp == std::string_view::npos) {
        sp = line.size();
      }
      const std::string_view word = line.substr(pos, sp - pos);
      pos = sp + 1;
      if (word.empty()) {
        continue;
      }
      if (!first && col + 1 + word.size() > width) {
        out += '\n';
        out.append(indent + lead, ' ');
        col = indent + lead;
        first = true;
      }
      if (!first) {
        out += ' ';
        ++col;
      }
      out += word;
      col += word.size();
      first = false;
    }
    if (line_end >= text.size()) {
      break;
    }
    out += '\n';
    out.append(indent, ' ');
    line_start = line_end + 1;
  }
  return out;
}

WrappingFormatter::WrappingFormatter(std::size_t width) : width_(width) {
  column_width(std::min<std::size_t>(30, width / 3));
}

// CLI11 indents every line after a '\n' in a description to the option column itself.
std::string WrappingFormatter::make_option_desc(const CLI::Option* opt) const {
  const std::size_t room = width_ > get_column_width() + 20 ? width_ - get_column_width() : 20;
  return wrap_text(CLI::Formatter::make_option_desc(opt), room);
}

std::string WrappingFormatter::make_subcommand(const CLI::App* sub) const {
  const std::size_t room = width_ > get_column_width() + 20 ? width_ - get_column_width() : 20;
  std::stringstream out;
  CLI::detail::format_help(out, sub->get_display_name(true),
                           wrap_text(sub->get_description(), room), get_column_width());
  return out.str();
}

std::string WrappingFormatter::make_description(const CLI::App* app) const {
  return wrap_text(CLI::Formatter::make_description(app), width_);
}

std::string WrappingFormatter::make_footer(const CLI::App* app) const {
  const std::string footer = CLI::Formatter::make_footer(app);
  return footer.empty() ? footer : wrap_text(footer, width_);
}

namespace {
// `--color{always}` -> `--color`; false when the name has no flag value.
bool strip_flag_value(std::string& name) {
  bool stripped = false;
  for (auto open = name.find('{'); open != std::string::npos; open = name.find('{')) {
    const auto close = name.find('}', open);
    if (close == std::string::npos) {
      break;
    }
    name.erase(open, close - open + 1);
    stripped = true;
  }
  return stripped;
}
} // namespace

std::string WrappingFormatter::make_option_name(const CLI::Option* opt, bool positional) const {
  std::string name = CLI::Formatter::make_option_name(opt, positional);
  if (!positional && strip_flag_value(name)) {
    name += "[=WHEN]";
  }
  return name;
}

std::string WrappingFormatter::make_option_opts(const CLI::Option* opt) const {
  std::string name = opt->get_name(false, true);
  if (!strip_flag_value(name)) {
    return CLI::Formatter::make_option_opts(opt);
  }
  // The set the value is checked against, `{auto,always,never}` in CLI11's words.
  const std::string type = opt->get_type_name(); // `:{auto,always,never}` after the type
  const auto open = type.find('{');
  const auto close = type.rfind('}');
  if (open != std::string::npos && close != std::string::npos && close > open) {
    std::string choices = type.substr(open + 1, close - open - 1);
    for (auto& c : choices) {
      c = c == ',' ? '|' : c;
    }
    return " WHEN: " + choices;
  }
  return {};
}

} // namespace rocplay::cli
