// Severity names and the signature that groups like findings.
#include "rocplay/core/finding.hpp"

#include <fmt/format.h>

#include <filesystem>

namespace rocplay {

std::string_view to_string(Severity severity) {
  switch (severity) {
  case Severity::Info:
    return "info";
  case Severity::Warning:
    return "warning";
  case Severity::Error:
    return "error";
  case Severity::Critical:
    return "critical";
  }
  return "info";
}

std::optional<Severity> severity_from_string(std::string_view name) {
  for (Severity s : {Severity::Info, Severity::Warning, Severity::Error, Severity::Critical}) {
    if (to_string(s) == name) {
      return s;
    }
  }
  return std::nullopt;
}

Signature signature_of(const Finding& finding) {
  Signature s;
  s.heuristic = finding.id;
  s.kernel = finding.kernel;
  if (!finding.locations.empty()) {
    const Location& loc = finding.locations.front();
    if (s.kernel.empty()) {
      s.kernel = loc.function;
    }
    if (!loc.file.empty()) {
      s.location = std::filesystem::path(loc.file).filename().string();
      if (loc.line) {
        s.location += ":" + std::to_string(*loc.line);
      }
    } else if (!loc.function.empty() && loc.function != s.kernel) {
      s.location = loc.function; // a host frame: its address differs per process (ASLR)
    } else if (loc.pc) {
      s.location = fmt::format("pc {:#x}", *loc.pc);
    }
  }
  return s;
}

} // namespace rocplay
