#include "rocplay/report/step_output.hpp"

#include "rocplay/mi/value.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <vector>

namespace rocplay::report {
namespace {

// Cuts `line` (valid UTF-8) to at most `columns` code points.
std::string cut(std::string_view line, std::size_t columns, bool& was_cut) {
  std::size_t points = 0;
  for (std::size_t i = 0; i < line.size(); ++i) {
    if ((static_cast<unsigned char>(line[i]) & 0xc0) == 0x80) {
      continue; // a continuation byte
    }
    if (points++ == columns) {
      was_cut = true;
      return std::string(line.substr(0, i)) + "...";
    }
  }
  return std::string(line);
}

// Control bytes (escape sequences included) would drive the reader's terminal: show them.
std::string visible(std::string_view line) {
  std::string out;
  out.reserve(line.size());
  for (const char c : line) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '\t') {
      out += "    ";
    } else if (u < 0x20 || u == 0x7f) {
      out += fmt::format("\\x{:02x}", u);
    } else {
      out += c;
    }
  }
  return out;
}

} // namespace

void write_step_output_text(std::ostream& out, std::string_view output, std::string_view indent,
                            const StepOutputLimits& limits) {
  const std::string text = mi::lossy_utf8(output);
  std::vector<std::string_view> lines;
  std::string_view rest = text;
  while (!rest.empty()) {
    const auto nl = rest.find('\n');
    std::string_view line = rest.substr(0, nl);
    if (!line.empty() && line.back() == '\r') {
      line.remove_suffix(1);
    }
    lines.push_back(line);
    rest = nl == std::string_view::npos ? std::string_view() : rest.substr(nl + 1);
  }
  while (!lines.empty() && lines.back().find_first_not_of(" \t") == std::string_view::npos) {
    lines.pop_back();
  }
  if (lines.empty()) {
    return;
  }
  bool was_cut = false;
  const std::size_t shown = std::min(lines.size(), limits.max_lines);
  for (std::size_t i = 0; i < shown; ++i) {
    out << indent << "| " << cut(visible(lines[i]), limits.max_columns, was_cut) << '\n';
  }
  if (shown < lines.size()) {
    out << indent
        << fmt::format("| ... {} more line(s), {} bytes in all; --format json has the whole output",
                       lines.size() - shown, output.size())
        << '\n';
  } else if (was_cut) {
    out << indent
        << fmt::format("| (long lines cut; {} bytes in all; --format json has the whole output)",
                       output.size())
        << '\n';
  }
}

} // namespace rocplay::report
