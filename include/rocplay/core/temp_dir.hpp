// rocplay's private temporary directories (symbol-light library copies, device code kept from
// cuda-gdb). Each is named PREFIX-PID-XXXXXX, so a rocplay killed before it could clean up
// (SIGKILL, a crash) leaves a directory the next one recognises and removes.
// Layer: src/core/ (library rocplay_core; docs/architecture.md).
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace rocplay {

// Creates $TMPDIR/PREFIX-PID-XXXXXX (or under /tmp) with mode 0700, after removing this user's
// PREFIX-N-* directories whose process N no longer exists. nullopt, with `why`, when it cannot.
std::optional<std::string> make_private_temp_dir(std::string_view prefix, std::string& why);

} // namespace rocplay
