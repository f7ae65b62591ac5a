// Known-benign debugger chatter. A ROCm/PyTorch virtualenv makes gdb print dozens of lines at
// attach (`Symbol PySlice_Type has different size in shared object, consider re-linking` for
// every Python extension module built against another libpython, libthread_db notices, missing
// debug info); none of it matters to a hang triage, and all of it buries the warnings that do.
#include "session/internal.hpp"

#include <array>

namespace rocplay::session::detail {

namespace {

struct Pattern {
  std::string_view needle; // substring of the line
  std::string_view kind;   // how the summary names it
};

constexpr std::array kPatterns = {
    Pattern{"has different size in shared object",
            "symbol size mismatch in Python extension modules (`Symbol PySlice_Type has "
            "different size`)"},
    Pattern{"libthread_db", "libthread_db notices"},
    Pattern{"Thread debugging using", "libthread_db notices"},
    Pattern{"Expected absolute pathname for libpthread", "libthread_db notices"},
    Pattern{"Missing separate debuginfo", "missing debug info"},
    Pattern{"No debugging symbols found", "missing debug info"},
    Pattern{"Try: dnf --enablerepo", "missing debug info"},
    Pattern{"Could not load shared library symbols", "unreadable shared-library symbols"},
    Pattern{"Do you need \"set solib-search-path\"", "unreadable shared-library symbols"},
    Pattern{".dynamic section for", "unreadable shared-library symbols"},
    Pattern{"does not match the executable", "mismatched debug info"},
    Pattern{"auto-loading has been declined", "auto-load notices (auto-load is off)"},
    Pattern{"add-auto-load-safe-path", "auto-load notices (auto-load is off)"},
    Pattern{"auto-load safe-path", "auto-load notices (auto-load is off)"},
    Pattern{"Auto-loading safe path", "auto-load notices (auto-load is off)"},
    Pattern{"To enable execution of this file add", "auto-load notices (auto-load is off)"},
    Pattern{"To completely disable this security protection",
            "auto-load notices (auto-load is off)"},
    Pattern{"For more information about this security protection",
            "auto-load notices (auto-load is off)"},
    Pattern{"line to your configuration file", "auto-load notices (auto-load is off)"},
    Pattern{"info \"(gdb)Auto-loading", "auto-load notices (auto-load is off)"},
    Pattern{"Python Exception",
            "debugger Python errors (rocplay does not use the debugger's Python)"},
    Pattern{"Error occurred in Python",
            "debugger Python errors (rocplay does not use the debugger's Python)"},
    Pattern{"Python path configuration",
            "debugger Python errors (rocplay does not use the debugger's Python)"},
    Pattern{"Could not find platform",
            "debugger Python errors (rocplay does not use the debugger's Python)"},
    // A stop by copy hands gdb rocplay's own core of the running process; for a Python program
    // the core's command name (python3) is not the executable's file name (python3.11).
    Pattern{"core file may not match specified executable file",
            "core-file notices (the core is rocplay's copy of the process)"},
    Pattern{"Download failed", "debuginfod notices"},
    Pattern{"debuginfod", "debuginfod notices"},
};

} // namespace

bool NoiseFilter::benign(std::string_view line) {
  for (const auto& p : kPatterns) {
    if (line.find(p.needle) != std::string_view::npos) {
      ++by_kind_[std::string(p.kind)];
      ++total_;
      return true;
    }
  }
  return false;
}

std::string NoiseFilter::summary() const {
  if (total_ == 0) {
    return {};
  }
  std::string out = "suppressed " + std::to_string(total_) + " known-benign debugger message" +
                    (total_ == 1 ? "" : "s") + ":";
  bool first = true;
  for (const auto& [kind, n] : by_kind_) {
    out += first ? " " : "; ";
    out += std::to_string(n) + "x " + kind;
    first = false;
  }
  return out;
}

} // namespace rocplay::session::detail
