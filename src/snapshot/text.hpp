// Text helpers the dialects share: numbers, commands, frames, `info line`, console tables.
// Everything here takes untrusted text and returns nullopt/empty rather than throwing.
#pragma once

#include "rocplay/mi/transcript.hpp"
#include "rocplay/snapshot/snapshot.hpp"
#include "snapshot/dialect.hpp"

#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace rocplay::snapshot::text {

std::string_view trim(std::string_view s);
// `s == literal` with the length known at compile time, so the comparison is inlined: the
// dialects compare a name for every field of every wave, and std::string_view's == calls
// memcmp whenever the lengths match.
template <std::size_t N> bool is(std::string_view s, const char (&literal)[N]) {
  return s.size() == N - 1 && std::memcmp(s.data(), literal, N - 1) == 0;
}
bool starts_with(std::string_view s, std::string_view prefix);
// `at`, or the start of the UTF-8 character `at` falls inside: where a table parser that cuts
// lines at byte columns may cut without leaving half a character in either cell.
std::size_t char_boundary(std::string_view s, std::size_t at);
// Decimal, or hex with a 0x prefix; the whole string must be the number.
std::optional<std::uint64_t> parse_u64(std::string_view s);
std::optional<std::int64_t> parse_i64(std::string_view s);
std::optional<std::uint64_t> parse_hex(std::string_view s); // with or without 0x
std::optional<std::uint32_t> parse_u32(std::string_view s); // parse_u64 of the trimmed text
// A string field's text, empty for a tuple or list. Plain ASCII without escapes (most MI strings)
// is copied directly, which matters at 78,000 waves.
std::string field(const mi::Value& v);
// The exchange's console text made valid UTF-8: MI c-strings may carry any bytes, and whatever
// a dialect takes from this text ends up in reports, which must be valid UTF-8 JSON.
std::string console(const mi::Exchange& exchange);
// The same as a SharedString: for texts unique to a wave (its target id), and, through the
// interner, for those its neighbours repeat (function, file).
SharedString shared_field(const mi::Value& v);
SharedString shared_field(const mi::Value& v, Interner& strings);

// The CLI command of `-interpreter-exec console "info agents"` (or a bare CLI command sent over
// MI); empty for an MI command or an unknown one.
std::string cli_command(std::string_view command);
// `-thread-info` of `-thread-info --thread 3`; empty when the command is not MI.
std::string_view mi_operation(std::string_view command);
// The value of `--thread N` / `--lane N` in an MI command.
std::optional<std::string> option_value(std::string_view command, std::string_view option);
// At most max bytes of s, never ending inside a UTF-8 sequence.
std::string cut_utf8(std::string s, std::size_t max);

std::vector<std::string_view> split_lines(std::string_view text);

// A `frame={level,addr,func,file,fullname,line,from,...}` tuple.
Frame frame_from_mi(const mi::Value& frame);

// `0x7ffff608e3a8 <_Z12saxpy_kernelfPKfPfj+168>`: the address and its annotation.
struct AddressNote {
  std::uint64_t address = 0;
  std::string symbol;       // as printed, mangled or not
  std::uint64_t offset = 0; // +168
  bool has_symbol = false;
};
std::optional<AddressNote> parse_address_note(std::string_view text);

// Every `info line` sentence in the text (GDB's three forms, plus cuda-gdb's "inlined from").
std::vector<LineRange> parse_info_line(std::string_view text);

// `info symbol ADDR`: `NAME [+ OFF] in section SECT [of FILE]`. Returns the name and offset.
std::optional<std::pair<std::string, std::uint64_t>> parse_info_symbol(std::string_view text);

// A frame as the CLI prints it (`info threads` Frame column, `bt` lines without `#N`):
// `[0xADDR in ]FUNC (ARGS)[ at FILE:LINE| from LIB]`.
Frame parse_frame_text(std::string_view text);

// `bt` / `thread apply all bt` text: stacks by thread id. Lines `#N  ...` before any
// `Thread N (...)` header belong to `current_thread`.
std::vector<std::pair<std::string, std::vector<Frame>>>
parse_backtraces(std::string_view text, const std::string& current_thread);

// A kernel symbol as the debugger printed it, trimmed: `kern.kd` -> `kern`. Mangled names keep
// their text (and `.kd`) here; snapshot::demangle_names() demangles them once, keeping the
// linkage name (src/kernels/ holds the only demangler).
std::string kernel_symbol(std::string_view name);

// A console table laid out by GDB's CLI ui_out: left-aligned cells, each padded to the column
// width and followed by one blank. Columns are found from the header line, by the header names
// given in order; the unnamed first column holds `*` for the current entity.
struct CliTable {
  std::vector<std::string> headers;
  struct Row {
    bool current = false;
    std::vector<std::string> cells; // one per header, trimmed; empty when blank
  };
  std::vector<Row> rows;
  std::size_t index(std::string_view header) const; // npos when absent
  std::string_view cell(const Row& row, std::string_view header) const;
};

// Finds `headers` (all required, in order; `optional_headers` may be absent) in `lines[at]`;
// on success reads rows from the following lines until a blank line or a line that is not a row.
// `next` receives the index after the table.
std::optional<CliTable> parse_cli_table(const std::vector<std::string_view>& lines, std::size_t at,
                                        const std::vector<std::string_view>& headers,
                                        std::size_t& next);

} // namespace rocplay::snapshot::text
