// Severity names and the signature that groups like findings.
#include "rocplay/core/finding.hpp"

#include "rocplay/core/names.hpp"

#include <fmt/format.h>

#include <filesystem>

namespace rocplay {

namespace {
constexpr NameTable<Severity, 4> kSeverityNames{{
    {Severity::Info, "info"},
    {Severity::Warning, "warning"},
    {Severity::Error, "error"},
    {Severity::Critical, "critical"},
}};
static_assert(names_cover(kSeverityNames, Severity::Critical));
} // namespace

std::string_view to_string(Severity severity) {
  return name_of(kSeverityNames, severity, "info");
}

std::optional<Severity> severity_from_string(std::string_view name) {
  return value_of(kSeverityNames, name);
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
