// The crash verdict in text: what died, where, on what, and what to do next; then its evidence.
#include "rocplay/report/crash.hpp"

#include "rocplay/report/report.hpp"

#include <fmt/format.h>

namespace rocplay::report {
namespace {

std::string bold(bool color, std::string_view s) {
  return color ? fmt::format("\x1b[1m{}\x1b[0m", s) : std::string(s);
}

} // namespace

void write_crash_verdict(std::ostream& out, const std::vector<Finding>& findings, bool color,
                         std::size_t width) {
  if (findings.empty()) {
    return;
  }
  const Finding& v = findings.front();
  out << '\n';
  write_wrapped(out, width, bold(color, "CRASH VERDICT") + "  ",
                fmt::format("[{} {:.2f}] ", to_string(v.severity), v.confidence) +
                    bold(color, v.title));
  if (!v.summary.empty()) {
    write_wrapped(out, width, "  Meaning: ", v.summary);
  }
  if (!v.next_step.empty()) {
    write_wrapped(out, width, "  Next:    ", v.next_step);
  }
  out << "  Finding: " << v.id << '\n';
  if (!v.evidence.empty()) {
    out << "  Evidence:\n";
    for (const auto& e : v.evidence) {
      write_wrapped(out, width, "    - ", e);
    }
  }
  for (std::size_t i = 1; i < findings.size(); ++i) {
    const Finding& f = findings[i];
    write_wrapped(
        out, width, "  ",
        fmt::format("[{} {:.2f}] {}: {}", to_string(f.severity), f.confidence, f.id, f.title));
    if (!f.summary.empty()) {
      write_wrapped(out, width, "      ", f.summary);
    }
    for (const auto& e : f.evidence) {
      write_wrapped(out, width, "      - ", e);
    }
    if (!f.next_step.empty()) {
      write_wrapped(out, width, "      Next: ", f.next_step);
    }
  }
}

} // namespace rocplay::report
