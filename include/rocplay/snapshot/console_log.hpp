// Debugger console text as people save it (a `set logging` file, `rocgdb -batch -x cmds` output,
// a `(gdb)` session pasted into a bug report) turned into the exchanges an MI transcript gives, so
// the same dialects, snapshot model, heuristics and reports read it (docs/rocgdb-dialect.md,
// "Console session logs").
// Layer: src/snapshot/ (library rocplay_snapshot; docs/architecture.md).
#pragma once

#include "rocplay/mi/exchange.hpp"
#include "rocplay/snapshot/snapshot.hpp"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace rocplay::console_log {

// What the reader found besides the exchanges.
struct Info {
  std::size_t lines = 0;
  std::size_t sections = 0;        // commands: prompts, echo'd headers, or inferred from content
  std::size_t prompts = 0;         // `(gdb) CMD` lines
  std::size_t headers = 0;         // `=== info agents ===` lines
  std::size_t inferred = 0;        // sections told by their content (a table header, `#0`)
  std::size_t stops = 0;           // `Thread N "..." received signal ...` lines
  std::size_t pager_prompts = 0;   // `--Type <RET> for more ...` removed
  std::size_t emoji = 0;           // GDB 17+ emoji prefixes removed
  std::size_t long_lines = 0;      // cut at kMaxLineBytes
  std::optional<std::int64_t> pid; // `Attaching to process N`, `[Inferior 1 (process N) detached]`
  DebuggerKind debugger = DebuggerKind::Unknown; // from the banner or AMDGPU content
  std::string banner;                            // `GNU gdb (rocm-rel-7.2.3) 16.3`
  bool bt_thread_assumed = false;    // a `bt` with no thread named before it: taken as thread 1
  std::vector<std::string> commands; // the commands in order, bounded
};

inline constexpr std::size_t kMaxLineBytes = 64 * 1024;
inline constexpr std::size_t kMaxExchanges = 100000;

// True when the text (the head of a file) holds debugger console output: a `(gdb) ` prompt with a
// command, an echo'd `=== info ... ===` header, a rocgdb table header, a backtrace, a stop line.
bool looks_like_console_log(std::string_view head);

// The text's sections as exchanges: each command's output as console records with its command,
// a stop line as a `*stopped` record. Untrusted text: lines are bounded, nothing throws.
std::vector<mi::Exchange> to_exchanges(std::string_view text, Info* info = nullptr);

// A line without what terminals and GDB 17+ glue onto it: the pager prompt, ANSI styling, the
// emoji before errors and warnings (U+274C U+FE0F, U+26A0 U+FE0F). `emoji`/`pager` count them.
std::string clean_line(std::string_view line, std::size_t* emoji = nullptr,
                       std::size_t* pager = nullptr);

// The GDB 17+ emoji prefix removed from one line (`❌️ Undefined ...`, `⚠️ warning: ...`),
// or the line as it was.
std::string_view strip_emoji_prefix(std::string_view line);

// A sentence per field the console text left unknown, for the input's notes.
std::vector<std::string> unknowns(const Snapshot& snapshot, const Info& info);

} // namespace rocplay::console_log
