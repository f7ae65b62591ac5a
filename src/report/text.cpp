// The person's report: the verdict first (stuck kernel, where, what it means, next step), then
// the evidence tables (agents, queues, dispatches, wave classes, source lines, host threads).
#include "rocplay/report/report.hpp"
#include "rocplay/snapshot/code_loops.hpp"
#include "rocplay/snapshot/frames.hpp"
#include "rocplay/snapshot/grouping.hpp"

#include <fmt/format.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <iterator>

namespace rocplay::report {
namespace {

constexpr std::size_t kDefaultWidth = 100;
// Where a cell, a stack or a line was cut to fit the width (`--wide` prints it whole).
constexpr std::string_view kCut = "...";

struct Style {
  bool color = false;
  std::size_t width = kDefaultWidth;
  bool wide = false;
  std::string bold(std::string_view s) const {
    return color ? fmt::format("\x1b[1m{}\x1b[0m", s) : std::string(s);
  }
  std::string severity(Severity sev, std::string_view s) const {
    if (!color) {
      return std::string(s);
    }
    std::string_view code = sev >= Severity::Error ? "31" : sev == Severity::Warning ? "33" : "36";
    return fmt::format("\x1b[1;{}m{}\x1b[0m", code, s);
  }
};

// The index of an escape sequence's final byte (`ESC [ ... letter`), `start` its ESC.
std::size_t escape_end(std::string_view s, std::size_t start) {
  std::size_t i = start + 2;
  while (i < s.size() &&
         (static_cast<unsigned char>(s[i]) < 0x40 || static_cast<unsigned char>(s[i]) > 0x7e)) {
    ++i;
  }
  return i;
}

// Columns `s` takes on a terminal: escape sequences (`ESC [ ... letter`, colours) take none, a
// UTF-8 character one.
std::size_t columns_of(std::string_view s) {
  std::size_t n = 0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c == 0x1b && i + 1 < s.size() && s[i + 1] == '[') {
      i = escape_end(s, i);
      continue;
    }
    if ((c & 0xc0) != 0x80) {
      ++n;
    }
  }
  return n;
}

// The first `cols` columns of `s` (escape sequences kept whole, characters never split), and the
// rest.
std::pair<std::string_view, std::string_view> split_at_column(std::string_view s,
                                                              std::size_t cols) {
  std::size_t n = 0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c == 0x1b && i + 1 < s.size() && s[i + 1] == '[') {
      i = escape_end(s, i);
      continue;
    }
    if ((c & 0xc0) != 0x80) {
      if (n == cols) {
        return {s.substr(0, i), s.substr(i)};
      }
      ++n;
    }
  }
  return {s, {}};
}

// Word-wraps `text` to `width` after a label, continuation lines indented to the label's width.
// Widths are terminal columns: colour codes in the label or the text take none. A word longer than
// a whole line (a path, a command) is broken where the line ends rather than running past it.
void wrapped(std::ostream& out, std::size_t width, std::string_view label, std::string_view text) {
  const std::size_t kWidth = width;
  std::size_t indent = columns_of(label);
  // A label that leaves less than a third of the line would stack the text one word per line:
  // the text starts on the next line instead, a little deeper than the label.
  if (indent + indent / 2 > width && !text.empty()) {
    std::size_t lead = std::min(label.find_first_not_of(' '), label.size());
    if (lead + lead / 2 > width) {
      lead = 0;
    }
    // The label is text too: wrapped on its own lines (it may be wider than the line itself).
    const auto last = label.find_last_not_of(' ');
    wrapped(out, width, label.substr(0, lead),
            last == std::string_view::npos || last < lead ? std::string_view()
                                                          : label.substr(lead, last + 1 - lead));
    indent = lead + 4;
    out << std::string(indent, ' ');
  } else {
    out << label;
  }
  std::size_t col = indent;
  bool first = true;
  std::size_t pos = 0;
  while (pos < text.size()) {
    auto sp = text.find(' ', pos);
    auto word = text.substr(pos, sp == std::string_view::npos ? std::string_view::npos : sp - pos);
    pos = sp == std::string_view::npos ? text.size() : sp + 1;
    if (word.empty()) {
      continue;
    }
    std::size_t word_cols = columns_of(word);
    if (!first && col + 1 + word_cols > kWidth) {
      out << '\n' << std::string(indent, ' ');
      col = indent;
      first = true;
    }
    if (!first) {
      out << ' ';
      ++col;
    }
    // Too long for any line: as much as fits here, the rest on the lines below.
    while (col + word_cols > kWidth && kWidth > col) {
      auto [head, rest] = split_at_column(word, kWidth - col);
      out << head << '\n' << std::string(indent, ' ');
      col = indent;
      word = rest;
      word_cols -= columns_of(head); // not the rest again: a long word would be quadratic
    }
    out << word;
    col += word_cols;
    first = false;
  }
  out << '\n';
}

class Table {
public:
  explicit Table(std::vector<std::string> headers) : headers_(std::move(headers)) {}
  void row(std::vector<std::string> cells) {
    cells.resize(headers_.size());
    rows_.push_back(std::move(cells));
  }
  std::size_t size() const { return rows_.size(); }
  void print(std::ostream& out, std::size_t max_rows, const Style& st) const {
    std::vector<std::size_t> w(headers_.size());
    std::size_t shown = st.wide ? rows_.size() : std::min(max_rows, rows_.size());
    for (std::size_t c = 0; c < headers_.size(); ++c) {
      w[c] = headers_[c].size();
      for (std::size_t r = 0; r < shown; ++r) {
        w[c] = std::max(w[c], rows_[r][c].size());
      }
    }
    // Too wide for the terminal: the widest column gives way (never below 16), its cells cut and
    // marked; the last column is not padded, so it is cut to what is left of the line.
    if (!st.wide && !w.empty()) {
      std::size_t total = 2;
      for (std::size_t c = 0; c < w.size(); ++c) {
        total += w[c] + (c + 1 < w.size() ? 2 : 0);
      }
      // Then, still too wide (a table of many columns at 80), the last column (free text: a
      // stack, a kernel, a place) gives way down to 8, then the widest down to 8.
      constexpr std::size_t kFloor = 16;
      constexpr std::size_t kLastFloor = 8;
      while (total > st.width) {
        auto widest = std::max_element(w.begin(), w.end());
        std::size_t floor = kFloor;
        if (*widest <= kFloor && w.back() > kLastFloor) {
          widest = std::prev(w.end());
          floor = kLastFloor;
        } else if (*widest <= kFloor) {
          floor = kLastFloor;
        }
        if (*widest <= floor) {
          break;
        }
        const std::size_t cut = std::min(total - st.width, *widest - floor);
        *widest -= cut;
        total -= cut;
      }
    }
    auto fit = [&](const std::string& cell, std::size_t c) {
      if (st.wide || cell.size() <= w[c]) {
        return cell;
      }
      return cell.substr(0, w[c] - kCut.size()) + std::string(kCut);
    };
    auto line = [&](const std::vector<std::string>& raw) {
      std::vector<std::string> cells;
      for (std::size_t c = 0; c < raw.size(); ++c) {
        cells.push_back(fit(raw[c], c));
      }
      std::string s = "  ";
      for (std::size_t c = 0; c < cells.size(); ++c) {
        s += cells[c];
        if (c + 1 < cells.size()) {
          s += std::string(w[c] - cells[c].size() + 2, ' ');
        }
      }
      while (!s.empty() && s.back() == ' ') {
        s.pop_back();
      }
      out << s << '\n';
    };
    line(headers_);
    for (std::size_t r = 0; r < shown; ++r) {
      line(rows_[r]);
    }
    if (rows_.size() > shown) {
      out << fmt::format("  ... and {} more (--wide or --format json for all)\n",
                         rows_.size() - shown);
    }
  }

private:
  std::vector<std::string> headers_;
  std::vector<std::vector<std::string>> rows_;
};

// `* 1.2` for the entity the selected wave belongs to, as rocgdb marks it.
std::string mark(bool current, const std::string& id) {
  return (current ? "* " : "  ") + id;
}

template <class T> std::string opt(const std::optional<T>& v) {
  return v ? fmt::format("{}", *v) : std::string("?");
}
std::string hex(const std::optional<std::uint64_t>& v) {
  return v ? fmt::format("{:#x}", *v) : std::string("?");
}
std::string dims(const std::vector<std::uint64_t>& d) {
  return d.empty() ? std::string("?") : fmt::format("[{}]", fmt::join(d, ","));
}
std::string queue_type(QueueType t) {
  return t == QueueType::Unknown ? "?" : std::string(to_string(t));
}

// The stuck kernel a finding names: its dispatches, else its kernel.
std::string stuck_kernel(const Finding& f) {
  if (f.dispatches.empty()) {
    return f.kernel;
  }
  std::vector<std::string> ks;
  for (const auto& d : f.dispatches) {
    ks.push_back(fmt::format("{} (dispatch {})", d.kernel, d.id));
  }
  return fmt::format("{}", fmt::join(ks, "; "));
}

std::string where_of(const Finding& f) {
  if (f.locations.empty()) {
    return {};
  }
  const Location& l = f.locations.front();
  std::string out = l.function.empty() ? std::string("??") : l.function;
  if (!l.file.empty()) {
    out += fmt::format(" at {}{}", l.file, l.line ? fmt::format(":{}", *l.line) : "");
  }
  if (l.pc) {
    out += fmt::format(" (pc {:#x})", *l.pc);
  }
  if (f.locations.size() > 1) {
    out += fmt::format(" and {} more location(s)", f.locations.size() - 1);
  }
  return out;
}

// What failed and the target's state, before anything else; true when there was a failure.
bool write_failure(std::ostream& out, const TextOptions& options, const Style& st) {
  if (options.failure.empty()) {
    return false;
  }
  const std::string label = options.failure_label.empty() ? "RUN FAILED" : options.failure_label;
  out << st.severity(Severity::Error, label) << '\n';
  wrapped(out, st.width, "  What:    ", options.failure);
  if (!options.target.empty()) {
    wrapped(out, st.width, "  Target:  ", options.target);
  }
  out << "  This report is PARTIAL: it holds what was seen before the run ended.\n\n";
  return true;
}

// The wait-for graph's causes, right under the VERDICT line: the root and its line first.
void write_cause(std::ostream& out, const std::vector<std::string>& cause, const Style& st) {
  for (const auto& line : cause) {
    wrapped(out, st.width, "  Cause:   ", line);
  }
}

void write_verdict(std::ostream& out, const std::vector<Finding>& findings, const Style& st,
                   bool gpu_seen = true, bool partial = false,
                   const std::vector<std::string>& cause = {}) {
  if (findings.empty() && partial) {
    out << st.bold("VERDICT") << "  none: the run ended early, so what was seen is incomplete\n";
    write_cause(out, cause, st);
    return;
  }
  if (findings.empty()) {
    out << st.bold("VERDICT") << "  no known stuck-kernel pattern in this snapshot\n";
    write_cause(out, cause, st);
    wrapped(out, st.width, "  Next:    ",
            gpu_seen ? "Read the wave classes below: waves that sit at one PC across two "
                       "snapshots taken a few seconds apart are stuck; map that PC to its source "
                       "line and read the loop."
                     : "No GPU work is visible here: read the host threads below, innermost "
                       "frame of your own code first; a thread that sits in the same place "
                       "across two snapshots taken a few seconds apart is stuck there.");
    return;
  }
  const Finding& v = findings.front();
  // Below warning it is a note, not a finding (exit 0): it is not called a verdict.
  wrapped(out, st.width, st.bold(v.severity >= Severity::Warning ? "VERDICT" : "NOTE   ") + "  ",
          st.severity(v.severity, fmt::format("[{} {:.2f}]", to_string(v.severity), v.confidence)) +
              " " + st.bold(v.title));
  write_cause(out, cause, st);
  if (auto k = stuck_kernel(v); !k.empty()) {
    // A fault names the kernel that faulted, not one that is stuck.
    const bool fault = v.id == heuristics::kGpuFault || v.id == heuristics::kHostFault;
    wrapped(out, st.width, fault ? "  Kernel:  " : "  Stuck:   ", k);
  }
  if (auto w = where_of(v); !w.empty()) {
    wrapped(out, st.width, "  Where:   ", w);
  }
  if (!v.summary.empty()) {
    wrapped(out, st.width, "  Meaning: ", v.summary);
  }
  if (!v.next_step.empty()) {
    wrapped(out, st.width, "  Next:    ", v.next_step);
  }
  if (v.rank) {
    out << "  Rank:    " << *v.rank << '\n';
  }
  out << "  Finding: " << v.id << '\n';
}

void write_findings(std::ostream& out, const std::vector<Finding>& findings, const Style& st) {
  if (findings.empty()) {
    return;
  }
  out << '\n' << st.bold("Evidence for the verdict") << '\n';
  for (const auto& e : findings.front().evidence) {
    wrapped(out, st.width, "  - ", e);
  }
  if (findings.size() < 2) {
    return;
  }
  out << '\n' << st.bold(fmt::format("Other findings ({})", findings.size() - 1)) << '\n';
  for (std::size_t i = 1; i < findings.size(); ++i) {
    const Finding& f = findings[i];
    wrapped(
        out, st.width, "  ",
        st.severity(f.severity, fmt::format("[{} {:.2f}]", to_string(f.severity), f.confidence)) +
            " " + f.id + (f.rank ? fmt::format(" (rank {})", *f.rank) : "") + ": " + f.title);
    if (!f.summary.empty()) {
      wrapped(out, st.width, "      ", f.summary);
    }
    for (const auto& e : f.evidence) {
      wrapped(out, st.width, "      - ", e);
    }
    if (!f.next_step.empty()) {
      wrapped(out, st.width, "      Next: ", f.next_step);
    }
  }
}

void write_header(std::ostream& out, const Snapshot& s, const Style& st) {
  std::vector<std::string> parts;
  parts.push_back(std::string(to_string(s.debugger)));
  if (!s.debugger_version.empty()) {
    parts.back() += fmt::format(" ({})", s.debugger_version);
  }
  if (s.pid) {
    parts.push_back(fmt::format("PID {}", *s.pid));
  }
  if (s.rank) {
    parts.push_back(fmt::format("rank {}", *s.rank));
  }
  if (!s.label.empty()) {
    parts.push_back(s.label);
  }
  if (!s.taken_at.empty()) {
    parts.push_back(fmt::format("taken {}", s.taken_at));
  }
  if (s.stop_seconds) {
    parts.push_back("stopped " + stop_time_text(*s.stop_seconds, 2, ""));
  }
  wrapped(out, st.width, st.bold("Snapshot") + "  ", fmt::format("{}", fmt::join(parts, ", ")));
  out << fmt::format("  {} agents, {} queues, {} dispatches, {} waves, {} host threads\n",
                     s.agents.size(), s.queues.size(), s.dispatches.size(), s.waves.size(),
                     s.host_threads.size());
}

// One host thread's stack on one line, starting at the innermost frame of the user's own code:
// the system and driver frames inside it are folded into `(N system frames inside)`, runs of them
// further out into `[N system]`. Without any user frame, every frame is shown. The table cuts it
// to the width (marked) unless --wide.
// A Python frame of the interpreter's standard library (threading.py's join and wait, queue.py):
// where the user's code waits, not the user's code. Installed packages are not in it.
bool standard_library_frame(const Frame& f) {
  if (!f.python) {
    return false;
  }
  if (f.file.starts_with("<frozen ")) {
    return true;
  }
  const auto lib = f.file.find("/lib/python3");
  return lib != std::string::npos && f.file.find("-packages/", lib) == std::string::npos;
}

// The frame a stack line starts at: the innermost of the user's own code, Python's standard
// library counted with the system (so `<module> (app.py:12)` leads, not `join (threading.py:..)`);
// a stack of nothing else starts at its innermost frame that is not the system's.
const Frame* own_frame(const HostThread& h) {
  for (const auto& f : h.frames) {
    if (!is_system_frame(f) && !standard_library_frame(f)) {
      return &f;
    }
  }
  return innermost_user_frame(h);
}

std::string stack_summary(const HostThread& h) {
  std::vector<std::string> parts;
  const Frame* user = own_frame(h);
  std::size_t folded = 0;
  auto fold = [&] {
    if (folded > 0) {
      parts.push_back(fmt::format("[{} system]", folded));
      folded = 0;
    }
  };
  for (const auto& f : h.frames) {
    if (user != nullptr && &f < user) {
      ++folded; // inside the user frame
      continue;
    }
    if (&f == user) {
      parts.push_back(frame_where(f) +
                      (folded > 0 ? fmt::format(" ({} system frames inside)", folded) : ""));
      folded = 0;
      continue;
    }
    if (user != nullptr && (is_system_frame(f) || standard_library_frame(f))) {
      ++folded;
      continue;
    }
    fold();
    parts.push_back(frame_where(f));
  }
  fold();
  return parts.empty() ? std::string("?") : fmt::format("{}", fmt::join(parts, " <- "));
}

void write_tables(std::ostream& out, const Snapshot& s, const TextOptions& o, const Style& st) {
  if (!s.agents.empty()) {
    Table t({"", "Id", "State", "Target Id", "Arch", "Name", "Location"});
    for (const auto& a : s.agents) {
      t.row({a.current ? "*" : "", a.id, a.state, a.target_id, a.architecture, a.name, a.location});
    }
    out << '\n' << st.bold(fmt::format("Agents ({})", s.agents.size())) << '\n';
    t.print(out, o.max_rows, st);
  }
  if (!s.queues.empty()) {
    Table t({"  Id", "Target Id", "Type", "Read", "Write", "Pending"});
    for (const auto& q : s.queues) {
      std::string pending =
          q.read && q.write ? fmt::format("{}", *q.write - std::min(*q.write, *q.read)) : "?";
      t.row({mark(q.current, q.id), q.target_id, queue_type(q.type), opt(q.read), opt(q.write),
             pending});
    }
    out << '\n' << st.bold(fmt::format("Queues ({})", s.queues.size())) << '\n';
    t.print(out, o.max_rows, st);
  }
  if (!s.dispatches.empty()) {
    Table t({"  Id", "Target Id", "Grid", "Workgroup", "Fence", "Kernel"});
    for (const auto& d : s.dispatches) {
      std::string kernel = !d.kernel_name.empty() ? d.kernel_name : hex(d.kernel_address);
      t.row({mark(d.current, d.id), d.target_id, dims(d.grid), dims(d.workgroup),
             d.fence_text.empty() ? "-" : d.fence_text, kernel});
    }
    out << '\n' << st.bold(fmt::format("Dispatches in flight ({})", s.dispatches.size())) << '\n';
    t.print(out, o.max_rows, st);
  }
  if (!s.waves.empty()) {
    auto classes = snapshot::group_waves(s);
    Table t({"Agent", "Dispatch", "PC", "Waves", "Work-groups", "Slots", "Where"});
    for (const auto& c : classes) {
      std::string count =
          c.threads != c.waves ? fmt::format("{} thr", c.threads) : fmt::format("{}", c.waves);
      std::string slots = !c.wave_in_group.empty() ? "/" + snapshot::format_ranges(c.wave_in_group)
                          : c.work_items
                              ? fmt::format("[{}-{}]", c.work_items->first, c.work_items->last)
                              : "?";
      std::string where = !c.inline_function.empty() ? c.inline_function : c.function;
      if (where.empty()) {
        where = "??";
      }
      if (!c.file.empty()) {
        where += fmt::format(" {}{}", c.file, c.line ? fmt::format(":{}", *c.line) : "");
      }
      if (c.unattributed) {
        where += fmt::format(" [{} unattributed]", c.unattributed);
      }
      t.row({opt(c.agent), opt(c.dispatch), hex(c.pc), count,
             fmt::format("{} {}", c.workgroups, snapshot::format_workgroups(c)), slots, where});
    }
    out << '\n'
        << st.bold(
               fmt::format("Wave classes ({} classes, {} waves)", classes.size(), s.waves.size()))
        << '\n';
    t.print(out, o.max_rows, st);
  }
  if (!s.source_lines.empty()) {
    Table t({"PC", "Source", "Symbol"});
    for (const auto& l : s.source_lines) {
      std::string src = l.file.empty() ? "?" : l.file;
      if (l.line) {
        src += fmt::format(":{}", *l.line);
      }
      if (!l.has_code) {
        src += " (no code)";
      }
      if (!l.inlined_from.empty()) {
        src += fmt::format(" (inlined from {})", l.inlined_from);
      }
      std::string sym = l.function;
      if (l.offset) {
        sym += fmt::format("+{}", *l.offset);
      }
      t.row({fmt::format("{:#x}", l.pc), src, sym});
    }
    out << '\n' << st.bold(fmt::format("Source lines ({})", s.source_lines.size())) << '\n';
    t.print(out, o.max_rows, st);
  }
  if (auto loops = snapshot::code_loops(s); !loops.empty()) {
    out << '\n' << st.bold(fmt::format("Code at the PCs ({})", loops.size())) << '\n';
    const auto deferred = std::find_if(s.code_windows.begin(), s.code_windows.end(),
                                       [](const CodeWindow& w) { return !w.decoded_by.empty(); });
    if (deferred != s.code_windows.end()) {
      wrapped(out, st.width, "  ",
              fmt::format("device code decoded after the detach by {}, from the code the debugger "
                          "named in the stop",
                          deferred->decoded_by));
    }
    for (const auto& l : loops) {
      // The subject on its own line when it would push the description past half the line.
      const std::string label = "  " + l.subject + ": ";
      if (columns_of(label) > st.width / 2) {
        wrapped(out, st.width, "  ", l.subject + ":");
        wrapped(out, st.width, "      ", l.describe());
      } else {
        wrapped(out, st.width, label, l.describe());
      }
      if (!l.loop || !l.gpu) {
        continue;
      }
      for (std::size_t i = l.loop->first; i <= l.loop->last && i < l.window.size(); ++i) {
        const auto& in = l.window[i];
        out << fmt::format("    {} {:#x}  {}\n", in.address == l.pc ? "=>" : "  ", in.address,
                           in.text);
      }
    }
  }
  if (!s.host_threads.empty()) {
    Table t({"Id", "Name", "LWP", "Stack (your innermost frame first)"});
    for (const auto& h : s.host_threads) {
      t.row({h.id, h.name, h.lwp ? fmt::format("{}", *h.lwp) : h.target_id, stack_summary(h)});
    }
    out << '\n' << st.bold(fmt::format("Host threads ({})", s.host_threads.size())) << '\n';
    t.print(out, o.max_rows, st);
  }
  if (s.wave_counts) {
    out << fmt::format("\nDebugger wave count: {} ({} running, {} single-stepping, {} stopped)\n",
                       s.wave_counts->total, s.wave_counts->running, s.wave_counts->single_stepping,
                       s.wave_counts->stopped);
  }
  if (!s.notes.empty() || !s.warnings.empty()) {
    out << '\n' << st.bold("Notes and warnings") << '\n';
    for (const auto& n : s.notes) {
      wrapped(out, st.width, "  note: ", n);
    }
    for (const auto& w : s.warnings) {
      wrapped(out, st.width, "  warning: ", w);
    }
  }
}

} // namespace

void write_text(std::ostream& out, const Snapshot& snapshot, const std::vector<Finding>& findings,
                const TextOptions& options) {
  Style st{options.color, options.width, options.wide};
  const bool partial = write_failure(out, options, st);
  write_verdict(out, findings, st, !snapshot.waves.empty() || !snapshot.dispatches.empty(), partial,
                options.cause);
  write_findings(out, findings, st);
  out << '\n';
  write_header(out, snapshot, st);
  write_tables(out, snapshot, options, st);
}

void write_text(std::ostream& out, const std::vector<Snapshot>& snapshots,
                const std::vector<Finding>& findings, const TextOptions& options) {
  Style st{options.color, options.width, options.wide};
  const bool partial = write_failure(out, options, st);
  bool gpu_seen = false;
  for (const auto& s : snapshots) {
    gpu_seen |= !s.waves.empty() || !s.dispatches.empty();
  }
  write_verdict(out, findings, st, gpu_seen, partial, options.cause);
  write_findings(out, findings, st);
  for (const auto& s : snapshots) {
    out << '\n' << std::string(st.width, '-') << '\n';
    write_header(out, s, st);
    write_tables(out, s, options, st);
  }
}

std::size_t text_width(int fd) {
  std::size_t width = 0;
  if (const char* columns = std::getenv("COLUMNS"); columns != nullptr && *columns != '\0') {
    char* end = nullptr;
    const unsigned long n = std::strtoul(columns, &end, 10);
    if (end != nullptr && *end == '\0') {
      width = n;
    }
  }
  if (width == 0 && ::isatty(fd) == 1) {
    winsize ws{};
    if (::ioctl(fd, TIOCGWINSZ, &ws) == 0) {
      width = ws.ws_col;
    }
  }
  if (width == 0) {
    width = kDefaultWidth;
  }
  return std::clamp<std::size_t>(width, 40, 1000);
}

std::string stop_time_text(double seconds, int digits, std::string_view gap) {
  return seconds < 0.01 ? fmt::format("{:.2f}{}ms", seconds * 1000, gap)
                        : fmt::format("{:.{}f}{}s", seconds, digits, gap);
}

std::size_t text_columns(std::string_view line) {
  return columns_of(line);
}

void write_wrapped(std::ostream& out, std::size_t width, std::string_view label,
                   std::string_view text) {
  wrapped(out, width, label, text);
}

void write_finding_entry(std::ostream& out, const Finding& finding, std::size_t width,
                         std::size_t indent) {
  const std::string lead(indent, ' ');
  const std::string body(indent + 2, ' ');
  wrapped(out, width, lead, "[" + finding.id + "] " + finding.title);
  if (!finding.summary.empty()) {
    wrapped(out, width, body, finding.summary);
  }
  for (const auto& e : finding.evidence) {
    wrapped(out, width, body + "- ", e);
  }
  if (!finding.next_step.empty()) {
    wrapped(out, width, body + "next: ", finding.next_step);
  }
}

} // namespace rocplay::report
