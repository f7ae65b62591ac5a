// Pieces of the session layer shared between its files (not a public interface).
#pragma once

#include "rocplay/session/session.hpp"

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace rocplay::session::detail {

// Why ptrace may be refused for `pid`, from Yama, CapEff, uids and TracerPid: a sentence for a
// message (empty when nothing explains it) and a hint.
struct PtraceDiagnosis {
  std::string reason;
  std::string hint;
};
PtraceDiagnosis diagnose_ptrace(std::int64_t pid);

// Known-benign debugger chatter at attach (a ROCm virtualenv's Python extension modules,
// libthread_db notices, missing debug info): recognised, counted, summarised in one line.
class NoiseFilter {
public:
  // True when `line` (one line of a `&`/`~` stream record or of stderr) is known-benign noise.
  bool benign(std::string_view line);
  std::size_t count() const { return total_; }
  // `suppressed 31 known-benign debugger messages: 28x ...`; empty when none.
  std::string summary() const;

private:
  std::map<std::string, std::size_t> by_kind_;
  std::size_t total_ = 0;
};

} // namespace rocplay::session::detail
