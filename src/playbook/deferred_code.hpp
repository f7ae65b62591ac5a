// cuda-gdb's device code, decoded after the detach (see rocplay/snapshot/deferred_code.hpp for
// why). In the stop the runner asks `info symbol PC` under the class's CUDA focus and hands the
// answer here; the device ELF it names (cuda-gdb removes it at the detach) is kept, by a hard link
// where it can be, and nvdisasm starts decoding its function at once, beside the rest of the stop
// and the detach; after the detach the windows are written into the recording as notes.
// nvdisasm spends about 0.5 s starting whatever it decodes, so the device code the target's own
// files hold is decoded from before the attach (start_early), beside cuda-gdb's start; a window
// whose function has the same bytes there takes that listing and needs no nvdisasm of its own.
// Internal to src/playbook.
#pragma once

#include "rocplay/codeobj/listing_cache.hpp"
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
  // Listings are kept between looks in codeobj::ListingCache::default_dir().
  static std::unique_ptr<DeferredCode> for_debugger(const DebuggerIdentity& debugger);
  // With cache_dir, a module or function decoded by an earlier look is not decoded again.
  explicit DeferredCode(std::string nvdisasm, std::optional<std::string> cache_dir = std::nullopt);
  DeferredCode(const DeferredCode&) = delete;
  DeferredCode& operator=(const DeferredCode&) = delete;
  ~DeferredCode(); // stops nvdisasm where it still runs; removes the kept files

  // Before the attach: on its own thread, the cubins stored uncompressed in the `.nv_fatbin`
  // sections of pid's files (target_files) are decoded whole, a few small ones at most. Once per
  // object.
  void start_early(std::int64_t pid);
  // The files whose device code start_early looks at: /proc/PID/exe, then the mapped files
  // outside the system's library directories, read through /proc/PID/root.
  static std::vector<std::string> target_files(std::int64_t pid);

  // In the stop: keeps the ELF named by `info symbol`'s answer, for the window [start, end)
  // around pc. False, with `why`, when it cannot (the caller disassembles in the stop).
  bool keep(const std::string& subject, std::uint64_t pc, std::uint64_t start, std::uint64_t end,
            std::string_view info_symbol_answer, std::string& why);
  bool empty() const { return windows_.empty(); }

  // After the detach: the notes of every kept window, in order, to `note`; the decoding began
  // before the attach (start_early) or when the window was kept.
  // Returns what went wrong, one line each.
  std::vector<std::string> decode(const std::function<void(std::string_view)>& note);

private:
  struct Window {
    std::string subject;
    std::uint64_t pc = 0, start = 0, end = 0;
    std::string function; // linkage name: the section `.text.FUNCTION`
    std::string object;   // the file cuda-gdb named
    // The start_early module with this function's bytes, and where its section runs here.
    std::optional<std::pair<std::size_t, std::uint64_t>> early;
  };
  struct Early; // start_early's thread and what it found
  struct Late;  // one nvdisasm of a kept file's function, from the stop on
  // The module start_early found whose `.text.FUNCTION` has the bytes of the kept ELF's, with
  // the address that section runs at there; nullopt when none does.
  std::optional<std::pair<std::size_t, std::uint64_t>> early_match(const Window& w) const;
  std::unique_ptr<Late> start_late(const Window& w);

  std::string nvdisasm_;
  std::optional<codeobj::ListingCache> cache_;
  std::unique_ptr<Early> early_;
  std::string dir_;                         // private, created on first keep
  std::map<std::string, std::string> kept_; // cuda-gdb's file -> ours
  std::vector<Window> windows_;
  std::map<std::pair<std::string, std::string>, std::unique_ptr<Late>> late_; // (ours, function)
};

} // namespace rocplay::playbook::detail
