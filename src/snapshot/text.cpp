#include "snapshot/text.hpp"

#include "core/text_scan.hpp"
#include "rocplay/core/debugger.hpp"

#include "rocplay/mi/value.hpp"

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <memory>

namespace rocplay::snapshot::text {

std::string_view trim(std::string_view s) {
  while (!s.empty() &&
         (s.front() == ' ' || s.front() == '\t' || s.front() == '\r' || s.front() == '\n')) {
    s.remove_prefix(1);
  }
  while (!s.empty() &&
         (s.back() == ' ' || s.back() == '\t' || s.back() == '\r' || s.back() == '\n')) {
    s.remove_suffix(1);
  }
  return s;
}

bool starts_with(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

std::size_t char_boundary(std::string_view s, std::size_t at) {
  while (at > 0 && at < s.size() && (static_cast<unsigned char>(s[at]) & 0xc0) == 0x80) {
    --at;
  }
  return at;
}

std::string cut_utf8(std::string s, std::size_t max) {
  s.resize(mi::utf8_prefix(s, max).size());
  return s;
}

std::optional<std::uint64_t> parse_hex(std::string_view s) {
  return text_scan::parse_hex(s);
}

std::optional<std::uint32_t> parse_u32(std::string_view s) {
  auto v = parse_u64(trim(s));
  if (!v || *v > UINT32_MAX) {
    return std::nullopt;
  }
  return static_cast<std::uint32_t>(*v);
}

namespace {
// The string's body when it can be used as it stands: no escapes, plain ASCII (so already valid
// UTF-8). Eight bytes are tested at a time: this runs for several fields of every wave.
std::optional<std::string_view> plain_text(const mi::Value& v) {
  if (v.node().escaped) {
    return std::nullopt;
  }
  const std::string_view raw = v.raw();
  std::uint64_t high = 0;
  std::size_t i = 0;
  for (; i + 8 <= raw.size(); i += 8) {
    std::uint64_t word = 0;
    std::memcpy(&word, raw.data() + i, 8);
    high |= word;
  }
  for (; i < raw.size(); ++i) {
    high |= static_cast<unsigned char>(raw[i]);
  }
  return (high & 0x8080808080808080ull) == 0 ? std::optional(raw) : std::nullopt;
}
} // namespace

std::string field(const mi::Value& v) {
  if (!v.is_string()) {
    return {};
  }
  if (auto plain = plain_text(v)) {
    return std::string(*plain);
  }
  return v.text();
}

std::string console(const mi::Exchange& exchange) {
  return mi::lossy_utf8(exchange.console());
}

SharedString shared_field(const mi::Value& v) {
  if (!v.is_string()) {
    return {};
  }
  if (auto plain = plain_text(v)) {
    return SharedString(*plain);
  }
  return SharedString(v.text());
}

SharedString shared_field(const mi::Value& v, Interner& strings) {
  if (!v.is_string()) {
    return {};
  }
  if (auto plain = plain_text(v)) {
    return strings.get(*plain);
  }
  return strings.get(v.text());
}

std::optional<std::uint64_t> parse_u64(std::string_view s) {
  return text_scan::parse_number(s);
}

std::optional<std::int64_t> parse_i64(std::string_view s) {
  if (s.empty()) {
    return std::nullopt;
  }
  std::int64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v, 10);
  if (ec != std::errc() || end != s.data() + s.size()) {
    return std::nullopt;
  }
  return v;
}

std::string cli_command(std::string_view command) {
  command = trim(command);
  constexpr std::string_view kExec = "-interpreter-exec";
  if (starts_with(command, kExec)) {
    auto rest = trim(command.substr(kExec.size()));
    if (!starts_with(rest, "console")) {
      return {};
    }
    rest = trim(rest.substr(7));
    if (rest.size() >= 2 && rest.front() == '"' && rest.back() == '"') {
      return mi::unescape(rest.substr(1, rest.size() - 2));
    }
    return std::string(rest);
  }
  if (command.empty() || command.front() == '-') {
    return {};
  }
  return std::string(command);
}

std::string_view mi_operation(std::string_view command) {
  command = trim(command);
  if (command.empty() || command.front() != '-') {
    return {};
  }
  auto sp = command.find_first_of(" \t");
  return command.substr(0, sp);
}

std::optional<std::string> option_value(std::string_view command, std::string_view option) {
  std::size_t pos = 0;
  while ((pos = command.find(option, pos)) != std::string_view::npos) {
    std::size_t after = pos + option.size();
    bool boundary_before = pos == 0 || command[pos - 1] == ' ';
    if (boundary_before && after < command.size() && command[after] == ' ') {
      auto rest = trim(command.substr(after));
      auto sp = rest.find(' ');
      auto value = rest.substr(0, sp);
      if (!value.empty()) {
        return mi::lossy_utf8(value); // a recording's command line may hold any bytes
      }
    }
    pos = after;
  }
  return std::nullopt;
}

std::vector<std::string_view> split_lines(std::string_view text) {
  std::vector<std::string_view> out;
  std::size_t start = 0;
  while (start <= text.size()) {
    auto nl = text.find('\n', start);
    if (nl == std::string_view::npos) {
      if (start < text.size()) {
        auto line = text.substr(start);
        if (!line.empty() && line.back() == '\r') {
          line.remove_suffix(1);
        }
        out.push_back(line);
      }
      break;
    }
    auto line = text.substr(start, nl - start);
    if (!line.empty() && line.back() == '\r') {
      line.remove_suffix(1);
    }
    out.push_back(line);
    start = nl + 1;
  }
  return out;
}

Frame frame_from_mi(const mi::Value& f) {
  Frame out;
  if (auto level = f["level"].as_u64()) {
    out.level = static_cast<std::uint32_t>(std::min<std::uint64_t>(*level, UINT32_MAX));
  }
  out.pc = f["addr"].as_address().to_optional();
  auto func = f["func"].text();
  if (func != "??") {
    out.function = std::move(func);
  }
  out.file = f["file"].text();
  if (auto line = f["line"].as_u64(); line && *line <= UINT32_MAX) {
    out.line = static_cast<std::uint32_t>(*line);
  }
  out.from = std::string(without_light_sysroot(f["from"].text()));
  return out;
}

std::optional<AddressNote> parse_address_note(std::string_view text) {
  text = trim(text);
  auto sp = text.find_first_of(" \t");
  auto addr = parse_hex(text.substr(0, sp));
  if (!addr || !starts_with(text, "0x")) {
    return std::nullopt;
  }
  AddressNote note;
  note.address = *addr;
  if (sp == std::string_view::npos) {
    return note;
  }
  auto rest = trim(text.substr(sp));
  if (rest.empty() || rest.front() != '<') {
    return note;
  }
  // The symbol may itself hold `<`/`>` (templates); the annotation ends at the last `>`.
  auto close = rest.rfind('>');
  if (close == std::string_view::npos || close < 1) {
    return note;
  }
  auto inner = rest.substr(1, close - 1);
  auto plus = inner.rfind('+');
  if (plus != std::string_view::npos) {
    if (auto off = parse_u64(inner.substr(plus + 1))) {
      note.offset = *off;
      inner = inner.substr(0, plus);
    }
  }
  note.symbol = std::string(inner);
  note.has_symbol = !note.symbol.empty();
  return note;
}

namespace {

// `0x7ffff608e3a8 <sym+168>` at the start of `s`; returns the note and the rest after it.
std::optional<std::pair<AddressNote, std::string_view>> take_address(std::string_view s) {
  s = trim(s);
  if (!starts_with(s, "0x")) {
    return std::nullopt;
  }
  auto sp = s.find(' ');
  std::string_view addr_text = s.substr(0, sp);
  std::string_view rest = sp == std::string_view::npos ? std::string_view{} : s.substr(sp + 1);
  std::string_view note_text = addr_text;
  if (starts_with(rest, "<")) {
    // Find the matching `>` by depth: templates nest.
    int depth = 0;
    std::size_t i = 0;
    for (; i < rest.size(); ++i) {
      if (rest[i] == '<') {
        ++depth;
      } else if (rest[i] == '>') {
        if (--depth == 0) {
          break;
        }
      }
    }
    if (i < rest.size()) {
      note_text = s.substr(0, sp + 1 + i + 1);
      rest = rest.substr(i + 1);
    }
  }
  auto note = parse_address_note(note_text);
  if (!note) {
    return std::nullopt;
  }
  return std::make_pair(*note, rest);
}

} // namespace

std::vector<LineRange> parse_info_line(std::string_view text) {
  std::vector<LineRange> out;
  for (auto line : split_lines(text)) {
    line = trim(line);
    if (starts_with(line, "Line ")) {
      // Line N of "FILE" starts at address A <s+o> and ends at B <s+o>.
      // Line N of "FILE" is at address A <s+o> but contains no code.
      auto of = line.find(" of \"");
      if (of == std::string_view::npos) {
        continue;
      }
      auto num = parse_u64(line.substr(5, of - 5));
      auto file_start = of + 5;
      auto file_end = line.find('"', file_start);
      if (!num || file_end == std::string_view::npos || *num > UINT32_MAX) {
        continue;
      }
      LineRange r;
      r.line.file = std::string(line.substr(file_start, file_end - file_start));
      r.line.line = static_cast<std::uint32_t>(*num);
      auto rest = line.substr(file_end + 1);
      bool no_code = false;
      if (auto p = rest.find(" starts at address "); p != std::string_view::npos) {
        rest = rest.substr(p + 19);
      } else if (auto q = rest.find(" is at address "); q != std::string_view::npos) {
        rest = rest.substr(q + 15);
        no_code = true;
      } else {
        continue;
      }
      auto start = take_address(rest);
      if (!start) {
        continue;
      }
      r.start = start->first.address;
      r.end = r.start;
      r.line.pc = r.start;
      if (start->first.has_symbol) {
        r.line.function = start->first.symbol;
        r.line.offset = start->first.offset;
      }
      rest = start->second;
      if (no_code) {
        r.line.has_code = false;
      } else if (auto e = rest.find(" and ends at "); e != std::string_view::npos) {
        if (auto end = take_address(rest.substr(e + 13))) {
          r.end = end->first.address;
          rest = end->second;
        }
      }
      // cuda-gdb: `... inlined from start_sync at line 13 of hang.cu.`
      if (auto in = rest.find(" inlined from "); in != std::string_view::npos) {
        auto what = trim(rest.substr(in + 14));
        if (!what.empty() && what.back() == '.') {
          what.remove_suffix(1);
        }
        r.line.inlined_from = std::string(what);
      }
      out.push_back(std::move(r));
    } else if (constexpr std::string_view kNoInfo =
                   "No line number information available for address ";
               starts_with(line, kNoInfo)) {
      if (auto a = take_address(line.substr(kNoInfo.size()))) {
        LineRange r;
        r.start = r.end = a->first.address;
        r.line.pc = r.start;
        r.line.has_code = false;
        if (a->first.has_symbol) {
          r.line.function = a->first.symbol;
          r.line.offset = a->first.offset;
        }
        out.push_back(std::move(r));
      }
    }
  }
  return out;
}

std::optional<std::pair<std::string, std::uint64_t>> parse_info_symbol(std::string_view text) {
  text = trim(text);
  auto sect = text.rfind(" in section ");
  if (sect == std::string_view::npos || starts_with(text, "No symbol matches")) {
    return std::nullopt;
  }
  auto head = text.substr(0, sect);
  std::uint64_t off = 0;
  if (auto plus = head.rfind(" + "); plus != std::string_view::npos) {
    if (auto o = parse_u64(head.substr(plus + 3))) {
      off = *o;
      head = head.substr(0, plus);
    }
  }
  head = trim(head);
  if (head.empty()) {
    return std::nullopt;
  }
  return std::make_pair(std::string(head), off);
}

Frame parse_frame_text(std::string_view s) {
  Frame f;
  s = trim(s);
  if (starts_with(s, "0x")) {
    auto in = s.find(" in ");
    if (in != std::string_view::npos) {
      f.pc = parse_hex(s.substr(0, in));
      s = s.substr(in + 4);
    }
  }
  // Location suffix: ` at FILE:LINE` or ` from LIB`, after the argument list.
  auto at = s.rfind(") at ");
  auto from = s.rfind(") from ");
  std::string_view head = s;
  if (at != std::string_view::npos && (from == std::string_view::npos || at > from)) {
    auto loc = s.substr(at + 5);
    head = s.substr(0, at + 1);
    auto colon = loc.rfind(':');
    if (colon != std::string_view::npos) {
      if (auto line = parse_u64(loc.substr(colon + 1)); line && *line <= UINT32_MAX) {
        f.line = static_cast<std::uint32_t>(*line);
        f.file = std::string(loc.substr(0, colon));
      } else {
        f.file = std::string(loc);
      }
    } else {
      f.file = std::string(loc);
    }
  } else if (from != std::string_view::npos) {
    f.from = std::string(without_light_sysroot(trim(s.substr(from + 7))));
    head = s.substr(0, from + 1);
  }
  // Drop the argument list: the last balanced `( ... )` at the end of head.
  head = trim(head);
  if (!head.empty() && head.back() == ')') {
    int depth = 0;
    for (std::size_t i = head.size(); i-- > 0;) {
      if (head[i] == ')') {
        ++depth;
      } else if (head[i] == '(') {
        if (--depth == 0) {
          head = trim(head.substr(0, i));
          break;
        }
      }
    }
  }
  if (head != "??") {
    f.function = std::string(head);
  }
  return f;
}

std::vector<std::pair<std::string, std::vector<Frame>>>
parse_backtraces(std::string_view text, const std::string& current_thread) {
  std::vector<std::pair<std::string, std::vector<Frame>>> out;
  std::string thread = current_thread;
  bool open = false;
  for (auto line : split_lines(text)) {
    auto t = trim(line);
    if (starts_with(t, "Thread ") && t.back() == ':') {
      auto rest = t.substr(7);
      auto sp = rest.find(' ');
      thread = std::string(rest.substr(0, sp));
      open = false;
      continue;
    }
    if (t.size() < 2 || t[0] != '#') {
      continue;
    }
    auto sp = t.find_first_of(" \t");
    auto level = parse_u64(t.substr(1, sp - 1));
    if (!level || sp == std::string_view::npos) {
      continue;
    }
    if (*level == 0 || !open) {
      out.emplace_back(thread, std::vector<Frame>{});
      open = true;
    }
    Frame f = parse_frame_text(t.substr(sp));
    f.level = static_cast<std::uint32_t>(std::min<std::uint64_t>(*level, UINT32_MAX));
    out.back().second.push_back(std::move(f));
  }
  return out;
}

std::string kernel_symbol(std::string_view name) {
  std::string n(trim(name));
  if (!starts_with(n, "_Z") && n.size() > 3 && n.compare(n.size() - 3, 3, ".kd") == 0) {
    n.resize(n.size() - 3);
  }
  return n;
}

std::size_t CliTable::index(std::string_view header) const {
  for (std::size_t i = 0; i < headers.size(); ++i) {
    if (headers[i] == header) {
      return i;
    }
  }
  return std::string_view::npos;
}

std::string_view CliTable::cell(const Row& row, std::string_view header) const {
  auto i = index(header);
  if (i == std::string_view::npos || i >= row.cells.size()) {
    return {};
  }
  return row.cells[i];
}

namespace {

std::size_t find_word(std::string_view line, std::string_view word, std::size_t from) {
  while (true) {
    auto p = line.find(word, from);
    if (p == std::string_view::npos) {
      return p;
    }
    bool before = p == 0 || line[p - 1] == ' ';
    bool after = p + word.size() == line.size() || line[p + word.size()] == ' ';
    if (before && after) {
      return p;
    }
    from = p + 1;
  }
}

} // namespace

std::optional<CliTable> parse_cli_table(const std::vector<std::string_view>& lines, std::size_t at,
                                        const std::vector<std::string_view>& headers,
                                        std::size_t& next) {
  if (at >= lines.size() || headers.empty()) {
    return std::nullopt;
  }
  std::string_view header = lines[at];
  std::vector<std::size_t> starts;
  std::size_t from = 1; // column 0 is the unnamed `current` column
  for (auto h : headers) {
    auto p = find_word(header, h, from);
    if (p == std::string_view::npos) {
      return std::nullopt;
    }
    starts.push_back(p);
    from = p + h.size();
  }
  // Exactly these headers: every other byte of the header line is blank.
  {
    std::vector<bool> covered(header.size(), false);
    for (std::size_t c = 0; c < starts.size(); ++c) {
      for (std::size_t k = 0; k < headers[c].size(); ++k) {
        covered[starts[c] + k] = true;
      }
    }
    for (std::size_t k = 0; k < header.size(); ++k) {
      if (!covered[k] && header[k] != ' ') {
        return std::nullopt;
      }
    }
  }
  CliTable table;
  table.headers.assign(headers.begin(), headers.end());
  std::size_t i = at + 1;
  for (; i < lines.size(); ++i) {
    std::string_view line = lines[i];
    if (trim(line).empty() || line.size() < 2 || (line[0] != ' ' && line[0] != '*') ||
        line[1] != ' ') {
      break;
    }
    CliTable::Row row;
    row.current = line[0] == '*';
    std::size_t shift = 0;
    // Columns are byte offsets: no cell may end or start inside a multi-byte character.
    auto boundary = [&](std::size_t k) { return char_boundary(line, k); };
    for (std::size_t c = 0; c < starts.size(); ++c) {
      std::size_t s = boundary(starts[c] + shift);
      if (s >= line.size()) {
        row.cells.emplace_back();
        continue;
      }
      std::size_t e = c + 1 < starts.size() ? boundary(std::min(starts[c + 1] + shift, line.size()))
                                            : line.size();
      // A value wider than its column pushes the rest of the row right (cli-out pads, it
      // never truncates): the separator blank is then missing.
      if (c + 1 < starts.size() && e < line.size() && e > s && line[e - 1] != ' ') {
        auto sp = line.find(' ', e);
        if (sp == std::string_view::npos) {
          sp = line.size();
        }
        shift += sp + 1 - e;
        e = sp;
      }
      row.cells.emplace_back(trim(line.substr(s, e - s)));
    }
    // The first column is an id: a row without one is not a row.
    if (row.cells.empty() || row.cells[0].empty() ||
        !(row.cells[0][0] >= '0' && row.cells[0][0] <= '9')) {
      break;
    }
    table.rows.push_back(std::move(row));
  }
  next = i;
  return table;
}

} // namespace rocplay::snapshot::text
