// The crash verdict in text: what died, where, on what, and what to do next; then its evidence.
#include "rocplay/report_crash.hpp"

#include <fmt/format.h>

namespace rocplay::report {
namespace {

constexpr std::size_t kCrashWidth = 100;

// Word-wraps `text` after a label; continuation lines are indented to the label's width.
void wrap_after(std::ostream& out, std::string_view label, std::string_view text) {
  const std::size_t indent = label.size();
  std::size_t col = indent;
  out << label;
  bool first = true;
  std::size_t pos = 0;
  while (pos < text.size()) {
    const auto sp = text.find(' ', pos);
    const auto word = text.substr(pos, sp == std::string_view::npos ? sp : sp - pos);
    pos = sp == std::string_view::npos ? text.size() : sp + 1;
    if (word.empty()) {
      continue;
    }
    if (!first && col + 1 + word.size() > kCrashWidth) {
      out << '\n' << std::string(indent, ' ');
      col = indent;
      first = true;
    }
    if (!first) {
      out << ' ';
      ++col;
    }
    out << word;
    col += word.size();
    first = false;
  }
  out << '\n';
}

std::string bold(bool color, std::string_view s) {
  return color ? fmt::format("\x1b[1m{}\x1b[0m", s) : std::string(s);
}

} // namespace

void write_crash_verdict(std::ostream& out, const std::vector<Finding>& findings, bool color) {
  if (findings.empty()) {
    return;
  }
  const Finding& v = findings.front();
  out << '\n'
      << bold(color, "CRASH VERDICT") << "  "
      << fmt::format("[{} {:.2f}] ", to_string(v.severity), v.confidence) << bold(color, v.title)
      << '\n';
  if (!v.summary.empty()) {
    wrap_after(out, "  Meaning: ", v.summary);
  }
  if (!v.next_step.empty()) {
    wrap_after(out, "  Next:    ", v.next_step);
  }
  out << "  Finding: " << v.id << '\n';
  if (!v.evidence.empty()) {
    out << "  Evidence:\n";
    for (const auto& e : v.evidence) {
      wrap_after(out, "    - ", e);
    }
  }
  for (std::size_t i = 1; i < findings.size(); ++i) {
    const Finding& f = findings[i];
    out << fmt::format("  [{} {:.2f}] {}: {}\n", to_string(f.severity), f.confidence, f.id,
                       f.title);
    if (!f.summary.empty()) {
      wrap_after(out, "      ", f.summary);
    }
    for (const auto& e : f.evidence) {
      wrap_after(out, "      - ", e);
    }
    if (!f.next_step.empty()) {
      wrap_after(out, "      Next: ", f.next_step);
    }
  }
}

} // namespace rocplay::report
