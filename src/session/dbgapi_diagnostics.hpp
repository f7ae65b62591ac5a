// amd-dbgapi / ROCgdb diagnostics a live debugger prints, named with what to do about them
// (docs/session.md, "Debugger diagnostics"). The same messages in saved logs are crash evidence
// (src/crash/text_reader.cpp).
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace rocplay::session::detail {

struct Diagnostic {
  std::string_view what; // what happened, in a sentence
  std::string_view next; // what to do now
  bool fatal = false;    // the debugger will not show GPU state this session
};

// The known diagnostic a line of debugger output holds, whatever its prefix (`amd-dbgapi:
// warning:`, `rocm-dbgapi:`, `warning:`, `fatal error:`, a GDB 17+ emoji), or nullopt.
std::optional<Diagnostic> dbgapi_diagnostic(std::string_view line);

// The line without a GDB 17+ emoji prefix (U+274C U+FE0F or U+26A0 U+FE0F and a blank).
std::string_view without_emoji(std::string_view line);

// `what (next)`: the warning text a run reports for a known diagnostic.
std::string explain(const Diagnostic& d, std::string_view line);

} // namespace rocplay::session::detail
