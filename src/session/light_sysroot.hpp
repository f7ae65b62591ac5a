// A sysroot through which cuda-gdb's own shared-library load reads symbol-light copies of huge
// libraries (session/light_symbols.hpp). cuda-gdb cannot take them by preload: with libraries
// preloaded (add-symbol-file), its in-target cudbgApiAttach() failed in the CUDA driver and froze
// healthy jobs (docs/hardware-validation.md, "Do no harm"). Through `set sysroot` the debugger
// loads every library as raw cuda-gdb does, at the addresses the dynamic linker reports, and only
// the file it reads for a huge one is the light copy: raw cuda-gdb's stop on a PyTorch worker fell
// from 10.6 s to 1.7 s that way, and four looks at a healthy two-rank job left it stepping
// (issue 46). Internal to src/session.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace rocplay::session {

// `$TMPDIR/rocplay-sysroot-PID-XXXXXX`: the file system through links, except that each library
// of `light_copies` (its path on this system, the light copy's path) is a link to its copy. The
// directories on the way to a light copy are real directories whose other entries are links (a
// link to an absolute path points into the sysroot again), so that a path through `..` or a link
// (`/lib/x86_64-linux-gnu/...` for `/usr/lib/...`) finds what it finds on the real system.
// Removed, links only, when destroyed. Move-only.
class LightSysroot {
public:
  // nullopt, with `why`, when the directory cannot be made or would need more than a bounded
  // number of links.
  static std::optional<LightSysroot>
  make(const std::vector<std::pair<std::string, std::string>>& light_copies, std::string& why);

  LightSysroot(LightSysroot&& other) noexcept;
  LightSysroot& operator=(LightSysroot&& other) noexcept;
  LightSysroot(const LightSysroot&) = delete;
  LightSysroot& operator=(const LightSysroot&) = delete;
  ~LightSysroot();

  const std::string& root() const { return root_; }

private:
  explicit LightSysroot(std::string root) : root_(std::move(root)) {}
  std::string root_;
};

} // namespace rocplay::session
