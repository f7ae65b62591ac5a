// cuda-gdb's device code, decoded after the detach (see rocplay/snapshot/deferred_code.hpp for
// why). In the stop the runner asks `info symbol PC` under the class's CUDA focus and hands the
// answer here; the device ELF it names (cuda-gdb removes it at the detach) is kept, by a hard link
// where it can be. After the detach each window is decoded by nvdisasm and written into the
// recording as notes. Internal to src/playbook.
#pragma once

#include "rocplay/core/debugger.hpp"

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace rocplay::playbook::detail {

class DeferredCode {
public:
  // nvdisasm beside the debugger, on $PATH, or in /usr/local/cuda/bin; nullptr when there is
  // none (the runner then disassembles in the stop, as for the other debuggers).
  static std::unique_ptr<DeferredCode> for_debugger(const DebuggerIdentity& debugger);
  explicit DeferredCode(std::string nvdisasm) : nvdisasm_(std::move(nvdisasm)) {}
  DeferredCode(const DeferredCode&) = delete;
  DeferredCode& operator=(const DeferredCode&) = delete;
  ~DeferredCode(); // removes the kept files

  // In the stop: keeps the ELF named by `info symbol`'s answer, for the window [start, end)
  // around pc. False, with `why`, when it cannot (the caller disassembles in the stop).
  bool keep(const std::string& subject, std::uint64_t pc, std::uint64_t start, std::uint64_t end,
            std::string_view info_symbol_answer, std::string& why);
  bool empty() const { return windows_.empty(); }

  // After the detach: decodes every kept window and passes the notes to `note`, in order.
  // Returns what went wrong, one line each.
  std::vector<std::string> decode(const std::function<void(std::string_view)>& note);

private:
  struct Window {
    std::string subject;
    std::uint64_t pc = 0, start = 0, end = 0;
    std::string function; // linkage name: the section `.text.FUNCTION`
    std::string object;   // the file cuda-gdb named
  };
  std::string nvdisasm_;
  std::string dir_;                         // private, created on first keep
  std::map<std::string, std::string> kept_; // cuda-gdb's file -> ours
  std::vector<Window> windows_;
};

} // namespace rocplay::playbook::detail
