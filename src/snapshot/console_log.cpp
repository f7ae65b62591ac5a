// Console text to exchanges (include/rocplay/snapshot/console_log.hpp). The dialects already read
// CLI tables, backtraces and `info line` sentences from console records (rocplay asks some commands
// through `-interpreter-exec console`), so a saved console session only has to be cut into the
// same exchanges: one per command, its output as `~` records, closed by `^done`.
#include "rocplay/snapshot/console_log.hpp"

#include "rocplay/mi/parser.hpp"
#include "rocplay/mi/value.hpp"
#include "snapshot/text.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>

namespace rocplay::console_log {

namespace {

using snapshot::text::starts_with;
using snapshot::text::trim;

constexpr std::string_view kPagerPrompts[] = {
    "--Type <RET> for more, q to quit, c to continue without paging--",
    "---Type <return> to continue, or q <return> to quit---",
    "--Type <RET> for more, q to quit, c to continue without paging, h for help--"};

// GDB 17+ under a UTF-8 locale: U+274C U+FE0F (error) and U+26A0 U+FE0F (warning), then a blank.
constexpr std::string_view kEmojiError = "\xE2\x9D\x8C";
constexpr std::string_view kEmojiWarning = "\xE2\x9A\xA0";
constexpr std::string_view kVariationSelector = "\xEF\xB8\x8F";

bool is_digits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

std::string_view first_word(std::string_view s) {
  s = trim(s);
  return s.substr(0, s.find_first_of(" \t"));
}

// The command a prompt or header names, in the spelling the dialects know.
std::string normalise_command(std::string_view raw) {
  std::string_view c = trim(raw);
  const std::string_view w = first_word(c);
  if (w == "bt" || w == "backtrace" || w == "where") {
    return "bt";
  }
  if (starts_with(c, "thread apply all") || starts_with(c, "t a a") || starts_with(c, "taas")) {
    return "thread apply all bt";
  }
  if (w == "i" || w == "info") {
    std::string_view rest = trim(c.substr(w.size()));
    const std::string_view what = first_word(rest);
    if (!what.empty() && starts_with(std::string_view("threads"), what) && what.size() >= 2) {
      return "info threads";
    }
    return "info " + std::string(rest);
  }
  return std::string(c);
}

// `=== info agents ===`, `##### main thread bt`, `--- info queues ---`: an echo'd header.
std::optional<std::string> echo_header(std::string_view t) {
  if (t.size() < 5) {
    return std::nullopt;
  }
  const char mark = t.front();
  if (mark != '=' && mark != '#' && mark != '-') {
    return std::nullopt;
  }
  std::size_t n = 0;
  while (n < t.size() && t[n] == mark) {
    ++n;
  }
  if (n < 3 || n == t.size() || t[n] != ' ') {
    return std::nullopt;
  }
  std::string_view body = t.substr(n);
  while (!body.empty() && body.back() == mark) {
    body.remove_suffix(1);
  }
  body = trim(body);
  if (body.empty() || body.size() > 200) {
    return std::nullopt;
  }
  return std::string(body);
}

// A header's text as a command: `info agents` as it is, `main thread bt` -> `bt`.
std::string header_command(std::string_view body) {
  const std::string_view w = first_word(body);
  if (w == "info" || w == "bt" || w == "backtrace" || w == "thread" || w == "where") {
    return normalise_command(body);
  }
  for (std::string_view k : {" bt", "backtrace", "stack"}) {
    if (body.find(k) != std::string_view::npos) {
      return body.find("all") != std::string_view::npos ? "thread apply all bt" : "bt";
    }
  }
  for (std::string_view k : {"agents", "queues", "dispatches", "threads", "lanes"}) {
    if (body.find(k) != std::string_view::npos) {
      return "info " + std::string(k);
    }
  }
  return {};
}

// The command a CLI table's header line belongs to.
std::string table_command(std::string_view t) {
  if (!starts_with(t, "Id") || t.find("Target Id") == std::string_view::npos) {
    return {};
  }
  if (t.find("Cores") != std::string_view::npos && t.find("State") != std::string_view::npos) {
    return "info agents";
  }
  if (t.find("Read") != std::string_view::npos && t.find("Write") != std::string_view::npos) {
    return "info queues";
  }
  if (t.find("Grid") != std::string_view::npos && t.find("Fence") != std::string_view::npos) {
    return "info dispatches";
  }
  if (t.find("Frame") != std::string_view::npos) {
    return t.find("State") != std::string_view::npos ? "info lanes" : "info threads";
  }
  return {};
}

// `Thread 3 (Thread 0x7f... (LWP 12) "python3"):` / `Thread 9 (AMDGPU Wave 1:1:1:1 ...):`
bool is_thread_header(std::string_view t) {
  if (!starts_with(t, "Thread ") || t.back() != ':') {
    return false;
  }
  return is_digits(first_word(t.substr(7))) && t.find(" (") != std::string_view::npos;
}

bool is_frame_zero(std::string_view t) {
  return starts_with(t, "#0 ") || starts_with(t, "#0\t");
}

bool is_info_line_answer(std::string_view t) {
  return (starts_with(t, "Line ") && t.find(" starts at address ") != std::string_view::npos) ||
         (starts_with(t, "Line ") && t.find(" is at address ") != std::string_view::npos) ||
         starts_with(t, "No line number information available for address ");
}

// The address an `info line` answer is about: `... for address 0x7f... <sym+1>` or `starts at
// address 0x...`.
std::string info_line_address(std::string_view t) {
  const auto at = t.find("address 0x");
  if (at == std::string_view::npos) {
    return {};
  }
  std::string_view rest = t.substr(at + 8);
  const auto end = rest.find_first_not_of("0123456789abcdefABCDEFx");
  return std::string(rest.substr(0, end));
}

constexpr std::string_view kNoneActive[] = {"No agents are currently active.",
                                            "No queues are currently active.",
                                            "No dispatches are currently active."};

// A stop line: `Thread 7 "saxpy" received signal SIGSEGV, Segmentation fault.`,
// `Thread 7 received signal ...`, `Program received signal ...`, `Program terminated with signal
// SIGABRT, Aborted.`
struct StopLine {
  std::string thread; // empty: the current thread
  std::string name;   // the quoted thread name
  std::string signal;
  std::string meaning;
};

std::optional<StopLine> parse_stop(std::string_view t) {
  StopLine s;
  std::string_view rest;
  if (starts_with(t, "Thread ")) {
    std::string_view after = t.substr(7);
    const std::string_view num = first_word(after);
    if (!is_digits(num)) {
      return std::nullopt;
    }
    s.thread = std::string(num);
    after = trim(after.substr(num.size()));
    if (!after.empty() && after.front() == '"') {
      const auto close = after.find('"', 1);
      if (close == std::string_view::npos) {
        return std::nullopt;
      }
      s.name = std::string(after.substr(1, close - 1));
      after = trim(after.substr(close + 1));
    }
    if (!starts_with(after, "received signal ")) {
      return std::nullopt;
    }
    rest = after.substr(16);
  } else if (starts_with(t, "Program received signal ")) {
    rest = t.substr(24);
  } else if (starts_with(t, "Program terminated with signal ")) {
    rest = t.substr(31);
  } else {
    return std::nullopt;
  }
  const auto comma = rest.find(',');
  s.signal = std::string(trim(rest.substr(0, comma)));
  if (!starts_with(s.signal, "SIG") || s.signal.size() > 16) {
    return std::nullopt;
  }
  if (comma != std::string_view::npos) {
    std::string_view m = trim(rest.substr(comma + 1));
    if (!m.empty() && m.back() == '.') {
      m.remove_suffix(1);
    }
    s.meaning = std::string(m);
  }
  return s;
}

// `[Switching to thread 7, lane 0 (AMDGPU Lane ...)]`, `[Switching to thread 3 (Thread 0x...)]`.
struct Switch {
  std::string thread;
  std::optional<std::uint32_t> lane;
  bool gpu = false;
};

std::optional<Switch> parse_switch(std::string_view t) {
  for (std::string_view prefix : {"[Switching to thread ", "[Current thread is "}) {
    if (!starts_with(t, prefix)) {
      continue;
    }
    Switch s;
    std::string_view rest = t.substr(prefix.size());
    const auto end = rest.find_first_of(" ,]");
    s.thread = std::string(rest.substr(0, end));
    if (!is_digits(s.thread)) {
      return std::nullopt;
    }
    if (auto lane = rest.find(", lane "); lane != std::string_view::npos) {
      s.lane = snapshot::text::parse_u32(first_word(rest.substr(lane + 7)));
    }
    s.gpu = rest.find("AMDGPU") != std::string_view::npos;
    return s;
  }
  if (starts_with(t, "[Switching to AMDGPU ")) { // before 2022: no thread number
    Switch s;
    s.gpu = true;
    return s;
  }
  return std::nullopt;
}

// One section of the log being assembled.
struct Section {
  std::string command;
  bool from_content = false; // told by its content, not named by a prompt or header
  std::vector<std::string> lines;
  std::optional<StopLine> stop;
  std::optional<Switch> stop_switch;
  bool select_thread_one = false; // a bt with no thread named before it
};

class Splitter {
public:
  explicit Splitter(Info& info) : info_(info) {}

  void line(std::string_view raw) {
    ++info_.lines;
    if (raw.size() > kMaxLineBytes) {
      raw = raw.substr(0, kMaxLineBytes);
      ++info_.long_lines;
    }
    const std::string cleaned = clean_line(raw, &info_.emoji, &info_.pager_prompts);
    std::string_view t = trim(cleaned);
    take_context(t);
    // A prompt, with or without a command after it.
    for (std::string_view p : {"(gdb)", "(rocgdb)", "(cuda-gdb)"}) {
      if (starts_with(t, p)) {
        ++info_.prompts;
        const std::string command = normalise_command(t.substr(p.size()));
        close();
        if (!command.empty()) {
          open(command, false);
        }
        return;
      }
    }
    if (auto h = echo_header(t)) {
      ++info_.headers;
      close();
      open(header_command(*h), false);
      return;
    }
    if (auto stop = parse_stop(t)) {
      ++info_.stops;
      std::optional<Switch> sw = last_switch_;
      close();
      open("", false);
      cur_.stop = std::move(stop);
      cur_.stop_switch = sw;
      cur_.lines.emplace_back(t);
      return;
    }
    if (auto sw = parse_switch(t)) {
      last_switch_ = sw;
      if (!sw->thread.empty()) {
        thread_named_ = true;
      }
    }
    // Content that starts a command's output of its own.
    if (std::string c = table_command(t); !c.empty()) {
      if (!(open_ && cur_.command == c && cur_.lines.empty())) {
        close();
        open(c, true);
      }
    } else if (is_thread_header(t)) {
      if (!(open_ && cur_.command == "thread apply all bt")) {
        close();
        open("thread apply all bt", true);
      }
    } else if (is_frame_zero(t)) {
      if (!(open_ && (cur_.command == "bt" || cur_.command == "thread apply all bt" ||
                      starts_with(cur_.command, "thread ") || starts_with(cur_.command, "frame") ||
                      cur_.stop))) {
        close();
        open("bt", true);
      }
    } else if (is_info_line_answer(t)) {
      const std::string addr = info_line_address(t);
      if (!(open_ && starts_with(cur_.command, "info line") && cur_.lines.empty())) {
        close();
        open(addr.empty() ? std::string("info line") : "info line *" + addr, true);
      }
    } else if (std::find(std::begin(kNoneActive), std::end(kNoneActive), t) !=
               std::end(kNoneActive)) {
      if (!(open_ && starts_with(cur_.command, "info ") && cur_.lines.empty())) {
        close();
        open("info " + std::string(first_word(t.substr(3))), true);
      }
    }
    if (!open_) {
      open("", true); // text before any command: a preamble (banner, attach lines, server log)
    }
    cur_.lines.emplace_back(cleaned);
  }

  std::vector<mi::Exchange> finish() {
    close();
    return std::move(out_);
  }

private:
  void take_context(std::string_view t) {
    if (info_.banner.empty() && starts_with(t, "GNU gdb")) {
      info_.banner = std::string(t.substr(0, 200));
    }
    if (info_.debugger == DebuggerKind::Unknown) {
      if (t.find("rocm-rel") != std::string_view::npos ||
          t.find("ROCgdb") != std::string_view::npos ||
          t.find("AMDGPU ") != std::string_view::npos) {
        info_.debugger = DebuggerKind::RocGdb;
      } else if (t.find("cuda-gdb") != std::string_view::npos ||
                 t.find("CUDA Debugger") != std::string_view::npos) {
        info_.debugger = DebuggerKind::CudaGdb;
      }
    }
    if (!info_.pid) {
      for (std::string_view k :
           {"Attaching to process ", "(process ", ", process ", "Attaching to program: "}) {
        if (auto p = t.find(k); p != std::string_view::npos) {
          std::string_view rest = t.substr(p + k.size());
          const auto end = rest.find_first_not_of("0123456789");
          if (auto v = snapshot::text::parse_i64(rest.substr(0, end)); v && *v > 0) {
            info_.pid = *v;
          }
        }
      }
    }
  }

  void open(std::string command, bool from_content) {
    cur_ = Section{};
    cur_.command = std::move(command);
    cur_.from_content = from_content;
    open_ = true;
    if (!cur_.command.empty()) {
      ++info_.sections;
      info_.inferred += from_content ? 1 : 0;
      if (info_.commands.size() < 64) {
        info_.commands.push_back(cur_.command);
      }
      if (starts_with(cur_.command, "thread ") && cur_.command != "thread apply all bt") {
        thread_named_ = true;
      }
      if (cur_.command == "bt" && !thread_named_) {
        cur_.select_thread_one = true;
        info_.bt_thread_assumed = true;
      }
    }
  }

  void add_record(mi::Exchange& ex, const std::string& line) {
    mi::ParseError error;
    const mi::RecordView view = mi::parse_line(line, ++line_no_, scratch_, error);
    if (!view.is_error()) {
      ex.records.emplace_back(view);
    }
  }

  static std::string quoted(std::string_view s) { return "\"" + mi::escape(s) + "\""; }

  // `*stopped` as GDB/MI reports the stop the console line describes, with the frame printed
  // after it (`0x... in saxpy (...) at saxpy.cpp:15`).
  std::string stopped_record(const Section& s) {
    const StopLine& stop = *s.stop;
    std::string thread = stop.thread;
    if (thread.empty() && s.stop_switch) {
      thread = s.stop_switch->thread;
    }
    const bool gpu = s.stop_switch && s.stop_switch->gpu;
    std::string frame;
    for (std::size_t i = 1; i < s.lines.size() && i < 8; ++i) {
      const std::string_view t = trim(s.lines[i]);
      if (t.empty() || starts_with(t, "Warning:") || starts_with(t, "warning:") ||
          starts_with(t, "location may not") || starts_with(t, "[")) {
        continue;
      }
      std::string_view text = t;
      if (is_frame_zero(text)) {
        text = trim(text.substr(2));
      }
      if (!(starts_with(text, "0x") || text.find(" at ") != std::string_view::npos ||
            text.find(" from ") != std::string_view::npos ||
            text.find(" (") != std::string_view::npos)) {
        break;
      }
      const Frame f = snapshot::text::parse_frame_text(text);
      if (f.function.empty() && !f.pc) {
        break;
      }
      std::vector<std::string> parts;
      if (f.pc) {
        parts.push_back(fmt::format("addr=\"0x{:016x}\"", *f.pc));
      }
      if (!f.function.empty()) {
        parts.push_back("func=" + quoted(f.function));
      }
      if (!f.file.empty()) {
        parts.push_back("file=" + quoted(f.file));
        parts.push_back("fullname=" + quoted(f.file));
      }
      if (f.line) {
        parts.push_back(fmt::format("line=\"{}\"", *f.line));
      }
      if (!f.from.empty()) {
        parts.push_back("from=" + quoted(f.from));
      }
      if (gpu) {
        parts.push_back("arch=\"amdgcn\"");
      }
      frame = ",frame={" + fmt::format("{}", fmt::join(parts, ",")) + "}";
      break;
    }
    if (frame.empty() && gpu) {
      frame = ",frame={arch=\"amdgcn\"}";
    }
    std::string rec = "*stopped,reason=\"signal-received\",signal-name=" + quoted(stop.signal) +
                      ",signal-meaning=" + quoted(stop.meaning) + frame;
    if (!thread.empty()) {
      rec += ",thread-id=" + quoted(thread);
    }
    if (s.stop_switch && s.stop_switch->lane) {
      rec += fmt::format(",lane-id=\"{}\"", *s.stop_switch->lane);
    }
    return rec + ",stopped-threads=\"all\"";
  }

  void close() {
    if (!open_) {
      return;
    }
    open_ = false;
    if (out_.size() >= kMaxExchanges) {
      return;
    }
    mi::Exchange ex;
    ex.command = cur_.command;
    if (cur_.select_thread_one) {
      add_record(ex, "=thread-selected,id=\"1\"");
    }
    if (cur_.stop) {
      add_record(ex, stopped_record(cur_));
      if (cur_.stop_switch && !cur_.stop_switch->thread.empty()) {
        thread_named_ = true;
      }
    }
    for (const auto& l : cur_.lines) {
      add_record(ex, "~" + quoted(l + "\n"));
    }
    if (ex.records.empty() && ex.command.empty()) {
      return;
    }
    add_record(ex, "^done");
    out_.push_back(std::move(ex));
  }

  Info& info_;
  Section cur_;
  bool open_ = false;
  bool thread_named_ = false;
  std::optional<Switch> last_switch_;
  std::vector<mi::Exchange> out_;
  mi::NodeTable scratch_;
  std::uint64_t line_no_ = 0;
};

} // namespace

std::string_view strip_emoji_prefix(std::string_view line) {
  const std::size_t lead = line.find_first_not_of(' ');
  if (lead == std::string_view::npos) {
    return line;
  }
  std::string_view t = line.substr(lead);
  for (std::string_view e : {kEmojiError, kEmojiWarning}) {
    if (starts_with(t, e)) {
      t.remove_prefix(e.size());
      if (starts_with(t, kVariationSelector)) {
        t.remove_prefix(kVariationSelector.size());
      }
      if (starts_with(t, " ")) {
        t.remove_prefix(1);
      }
      return t;
    }
  }
  return line;
}

std::string clean_line(std::string_view line, std::size_t* emoji, std::size_t* pager) {
  if (!line.empty() && line.back() == '\r') {
    line.remove_suffix(1);
  }
  std::string out;
  out.reserve(line.size());
  for (std::size_t i = 0; i < line.size();) {
    const char c = line[i];
    if (c == '\x1b' && i + 1 < line.size() && line[i + 1] == '[') { // ANSI styling
      std::size_t j = i + 2;
      while (j < line.size() && j - i < 32 &&
             ((line[j] >= '0' && line[j] <= '9') || line[j] == ';')) {
        ++j;
      }
      if (j < line.size() &&
          ((line[j] >= 'A' && line[j] <= 'Z') || (line[j] >= 'a' && line[j] <= 'z'))) {
        i = j + 1;
        continue;
      }
    }
    if (c == '-') {
      bool matched = false;
      for (std::string_view p : kPagerPrompts) {
        if (line.substr(i, p.size()) == p) {
          i += p.size();
          if (pager != nullptr) {
            ++*pager;
          }
          matched = true;
          break;
        }
      }
      if (matched) {
        continue;
      }
    }
    if (c == '\r') { // a carriage return inside the line: the terminal overwrote what came before
      out.clear();
      ++i;
      continue;
    }
    out.push_back(c);
    ++i;
  }
  const std::string_view stripped = strip_emoji_prefix(out);
  if (stripped.size() != out.size()) {
    if (emoji != nullptr) {
      ++*emoji;
    }
    return std::string(stripped);
  }
  return out;
}

bool looks_like_console_log(std::string_view head) {
  std::size_t pos = 0;
  int strong = 0;
  int frames = 0;
  for (int n = 0; pos < head.size() && n < 2000; ++n) {
    std::size_t end = head.find('\n', pos);
    if (end == std::string_view::npos) {
      end = head.size();
    }
    std::string_view line = head.substr(pos, std::min<std::size_t>(end - pos, 4096));
    pos = end + 1;
    std::string_view t = trim(line);
    if (t.empty()) {
      continue;
    }
    for (std::string_view p : {"(gdb) ", "(rocgdb) ", "(cuda-gdb) "}) {
      if (starts_with(t, p) && t.size() > p.size()) {
        ++strong;
      }
    }
    if (auto h = echo_header(t); h && !header_command(*h).empty()) {
      ++strong;
    }
    if (!table_command(t).empty() || parse_stop(t) ||
        std::find(std::begin(kNoneActive), std::end(kNoneActive), t) != std::end(kNoneActive) ||
        starts_with(t, "[Switching to thread ") || is_info_line_answer(t) ||
        (starts_with(t, "[Inferior ") && t.find(" detached]") != std::string_view::npos)) {
      ++strong;
    }
    // `#1  0x... in f (...) from lib` / `#3  f (...) at file:line`: a frame, not a list item.
    if (starts_with(t, "#") && t.size() > 3 && t[1] >= '0' && t[1] <= '9' &&
        t.find(" (") != std::string_view::npos &&
        (t.find(" 0x") != std::string_view::npos || t.find(") at ") != std::string_view::npos ||
         t.find(") from ") != std::string_view::npos)) {
      ++frames;
    }
    if (strong > 0 || frames >= 2) {
      return true;
    }
  }
  return false;
}

std::vector<mi::Exchange> to_exchanges(std::string_view text, Info* info) {
  Info local;
  Info& in = info != nullptr ? *info : local;
  Splitter splitter(in);
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) {
      end = text.size();
    }
    splitter.line(text.substr(pos, end - pos));
    pos = end + 1;
  }
  return splitter.finish();
}

std::vector<std::string> unknowns(const Snapshot& s, const Info& info) {
  std::vector<std::string> out;
  const bool gpu = info.debugger == DebuggerKind::RocGdb || !s.agents.empty() ||
                   !s.dispatches.empty() || !s.queues.empty() || !s.waves.empty();
  out.push_back("read from console text, not MI: fields the text does not print are unknown");
  if (!info.pid) {
    out.push_back("process id: unknown (no `Attaching to process N` or `[Inferior 1 (process N) "
                  "detached]` line)");
  }
  if (gpu) {
    if (!s.coverage.agents) {
      out.push_back("agents: unknown (no `info agents` in the log)");
    }
    if (!s.coverage.queues) {
      out.push_back("queues: unknown (no `info queues`): pending packets cannot be checked");
    }
    if (!s.coverage.dispatches) {
      out.push_back(
          "dispatches: unknown (no `info dispatches`): kernels in flight cannot be named");
    } else if (!s.dispatches.empty() &&
               std::none_of(s.dispatches.begin(), s.dispatches.end(),
                            [](const Dispatch& d) { return d.kernel_desc.has_value(); })) {
      out.push_back("dispatches: kernel descriptor, kernel arguments and completion signal unknown "
                    "(the short `info dispatches` table)");
    }
    if (!s.coverage.threads) {
      out.push_back("waves: unknown (no `info threads`): wave PCs and positions cannot be checked; "
                    "add `info threads` to the command file");
    } else if (!s.waves.empty()) {
      const auto no_pc = std::count_if(s.waves.begin(), s.waves.end(),
                                       [](const Wave& w) { return !w.pc.has_value(); });
      if (no_pc > 0) {
        out.push_back(fmt::format(
            "waves: {} of {} have no PC in the text (GDB prints none for a frame at the start "
            "of a line); their line is from the text",
            no_pc, s.waves.size()));
      }
    }
    for (const auto& q : s.queues) {
      if (q.type == QueueType::Hsa && (!q.read || !q.write)) {
        out.push_back("queues: some HSA rows have no Read/Write values");
        break;
      }
    }
  }
  if (info.bt_thread_assumed) {
    out.push_back("the backtrace names no thread; it is taken as thread 1, the thread GDB selects "
                  "on attach");
  }
  if (s.host_threads.empty()) {
    out.push_back("host threads: unknown (no `info threads` or backtrace)");
  }
  return out;
}

} // namespace rocplay::console_log
