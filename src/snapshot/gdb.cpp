// The gdb dialect: what every GDB-family debugger prints for the host side. Host threads
// (-thread-info, `info threads`), stacks (-stack-list-frames, `bt`, `thread apply all bt`), thread
// selection, `info line` and `info symbol` answers, and the version banner. GPU threads
// (`AMDGPU ...` target ids) are left to the GPU dialects.
#include "snapshot/dialect.hpp"
#include "snapshot/text.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>
#include <unordered_map>
#include <unordered_set>

namespace rocplay::snapshot {
namespace {

bool is_gpu_target_id(std::string_view target_id) {
  return text::starts_with(target_id, "AMDGPU ");
}

// `Thread 0x7ffff6288180 (LWP 645917)` or `LWP 645917` or `process 4242`.
std::optional<std::uint64_t> lwp_of(std::string_view target_id) {
  auto p = target_id.find("LWP ");
  if (p == std::string_view::npos) {
    if (text::starts_with(target_id, "process ")) {
      return text::parse_u64(text::trim(target_id.substr(8)));
    }
    return std::nullopt;
  }
  auto rest = target_id.substr(p + 4);
  auto end = rest.find_first_not_of("0123456789");
  return text::parse_u64(rest.substr(0, end));
}

// A wave added by a GPU dialect that does not keep BuildState::wave_index.
bool is_wave_thread(const Snapshot& s, const std::string& tid) {
  return std::any_of(s.waves.begin(), s.waves.end(),
                     [&](const Wave& w) { return w.thread_id == tid; });
}

// Merges frames into a stack by level: a later answer replaces the frames at the levels it names
// and keeps the rest, so `-stack-list-frames 4 4` after a full listing adds to it (and a full
// listing after a partial one fills it in). Innermost first.
void merge_frames(std::vector<Frame>& into, std::vector<Frame> from) {
  for (auto& frame : from) {
    auto at = std::lower_bound(into.begin(), into.end(), frame.level,
                               [](const Frame& f, std::uint32_t level) { return f.level < level; });
    if (at != into.end() && at->level == frame.level) {
      *at = std::move(frame);
    } else {
      into.insert(at, std::move(frame));
    }
  }
}

void upsert_host_thread(Snapshot& s, HostThread t) {
  for (auto& existing : s.host_threads) {
    if (existing.id == t.id) {
      // Keep the frames already known at other levels.
      auto frames = std::move(existing.frames);
      merge_frames(frames, std::move(t.frames));
      t.frames = std::move(frames);
      existing = std::move(t);
      return;
    }
  }
  s.host_threads.push_back(std::move(t));
}

class GdbDialect final : public Dialect {
public:
  std::string_view name() const override { return "gdb"; }

  bool recognises(const mi::Exchange& /*exchange*/) const override { return true; }

  bool consume(const mi::Exchange& ex, BuildState& st) override {
    bool claimed = track_selection(ex, st);
    const mi::Record* result = ex.result();
    std::string_view op = text::mi_operation(ex.command);
    std::string cli = text::cli_command(ex.command);
    if (result && result->klass() == "done") {
      auto r = result->results();
      if (auto threads = r["threads"]; threads.is_list()) {
        take_thread_list(threads, r, st);
        claimed = true;
      }
      if (auto stack = r["stack"]; stack.is_list()) {
        std::string tid = text::option_value(ex.command, "--thread").value_or(st.current_thread);
        std::vector<Frame> frames;
        for (auto f : stack) {
          frames.push_back(text::frame_from_mi(f));
        }
        if (!tid.empty()) {
          merge_frames(st.stacks[tid], std::move(frames));
        }
        claimed = true;
      }
      if (auto insns = r["asm_insns"]; insns.is_list()) { // only -data-disassemble answers so
        take_disassembly(insns, ex.command, st);
        claimed = true;
      }
      if (auto value = r["value"]; value.is_string() && op == "-data-evaluate-expression") {
        claimed |= take_mutex_read(ex.command, value.text(), st);
        if (auto note = text::parse_address_note(value.text()); note && note->has_symbol) {
          remember_symbol(st, note->address - note->offset, note->symbol);
          claimed = true;
        }
      }
    }
    const std::string& console = st.console(ex);
    if (!console.empty()) {
      claimed |= take_console(console, cli, st);
    }
    return claimed;
  }

  void finish(BuildState& st) override {
    Snapshot& s = st.snapshot;
    // Each stack onto its thread: the last thread of that id lends the fields, the first takes
    // them with the frames merged (ids repeat only in a malformed list). Found by id through an
    // index, not a scan per stack: 1,000 threads made it a million string compares, and a live
    // run finishes the sample so far at each step that reads it.
    std::unordered_map<std::string, std::pair<std::size_t, std::size_t>> by_id; // first, last
    by_id.reserve(s.host_threads.size());
    for (std::size_t i = 0; i < s.host_threads.size(); ++i) {
      auto [it, inserted] = by_id.try_emplace(s.host_threads[i].id, i, i);
      it->second.second = i;
    }
    for (auto& [tid, frames] : st.stacks) {
      if (frames.empty() || st.wave_index.count(tid) || is_wave_thread(s, tid)) {
        continue;
      }
      auto at = by_id.find(tid);
      if (at == by_id.end()) {
        HostThread t;
        t.id = tid;
        t.frames = frames;
        by_id.try_emplace(tid, s.host_threads.size(), s.host_threads.size());
        s.host_threads.push_back(std::move(t));
        continue;
      }
      const auto [first, last] = at->second;
      HostThread t = s.host_threads[last];
      auto merged = std::move(s.host_threads[first].frames);
      merge_frames(merged, frames);
      t.frames = std::move(merged);
      s.host_threads[first] = std::move(t);
    }

    for (auto& t : s.host_threads) {
      if (auto it = mutex_reads_.find(t.id); it != mutex_reads_.end()) {
        t.mutex_wait = it->second;
      }
    }

    // One SourceLine per unique wave PC (and per PC asked about explicitly).
    std::vector<std::uint64_t> pcs = queried_pcs_;
    std::optional<std::uint64_t> last;
    for (const auto& w : s.waves) {
      if (w.pc && w.pc != last) { // consecutive waves mostly share a PC
        pcs.push_back(*w.pc);
        last = w.pc;
      }
    }
    for (const auto& l : s.lanes) {
      if (l.pc) {
        pcs.push_back(*l.pc);
      }
    }
    // Host frames without a line: the innermost at its PC, callers at the call (PC - 1).
    for (const auto& t : s.host_threads) {
      for (std::size_t i = 0; i < t.frames.size(); ++i) {
        if (auto pc = t.lookup_pc(i); pc && !t.frames[i].line) {
          pcs.push_back(*pc);
        }
      }
    }
    std::sort(pcs.begin(), pcs.end());
    pcs.erase(std::unique(pcs.begin(), pcs.end()), pcs.end());
    std::set<std::uint64_t> have;
    for (const auto& l : s.source_lines) {
      have.insert(l.pc);
    }
    for (std::uint64_t pc : pcs) {
      if (have.count(pc)) {
        continue;
      }
      const LineRange* best = nullptr;
      for (const auto& r : st.line_ranges) {
        bool hit = r.start == pc || (r.start <= pc && pc < r.end);
        if (hit && (!best || (r.end - r.start) < (best->end - best->start))) {
          best = &r;
        }
      }
      if (!best) {
        continue;
      }
      SourceLine l = best->line;
      l.pc = pc;
      if (l.offset) {
        *l.offset += pc - best->start;
      }
      s.source_lines.push_back(std::move(l));
    }
    std::sort(s.source_lines.begin(), s.source_lines.end(),
              [](const SourceLine& a, const SourceLine& b) { return a.pc < b.pc; });
    for (auto& t : s.host_threads) {
      for (std::size_t i = 0; i < t.frames.size(); ++i) {
        Frame& f = t.frames[i];
        const SourceLine* sl = f.line ? nullptr : s.frame_line(t, i);
        if (sl && sl->line && sl->has_code) {
          f.file = sl->file;
          f.line = sl->line;
        }
      }
    }
  }

private:
  // `-data-disassemble` answers: `asm_insns=[{address,func-name,offset,inst[,opcodes]},...]`,
  // or with source (modes 1, 3, 4, 5) `[src_and_asm_line={line,file,line_asm_insn=[...]},...]`.
  static void take_disassembly(const mi::Value& insns, const std::string& command, BuildState& st) {
    constexpr std::size_t kMaxWindows = 256;
    constexpr std::size_t kMaxInstructions = 4096;
    auto& windows = st.snapshot.code_windows;
    if (windows.size() >= kMaxWindows) {
      return;
    }
    CodeWindow w;
    w.thread = text::option_value(command, "--thread").value_or(st.current_thread);
    auto take = [&](const mi::Value& in, std::string_view file, std::optional<std::uint32_t> line) {
      if (w.instructions.size() >= kMaxInstructions || !in.is_tuple()) {
        return;
      }
      auto address = text::parse_hex(in["address"].raw());
      if (!address) {
        return;
      }
      isa::Instruction i;
      i.address = *address;
      i.text = text::cut_utf8(in["inst"].text(), 512);
      i.function = text::cut_utf8(in["func-name"].text(), 1024);
      if (auto off = in["offset"].as_u64()) {
        i.offset = *off;
      }
      i.bytes = text::cut_utf8(in["opcodes"].text(), 128);
      i.file = text::cut_utf8(std::string(file), 1024);
      if (line) {
        i.line = static_cast<int>(*line);
      }
      w.instructions.push_back(std::move(i));
    };
    for (auto item : insns) {
      if (auto group = item["line_asm_insn"]; group.is_list()) {
        const std::string file = item["file"].text();
        const auto line = text::parse_u32(item["line"].raw());
        for (auto in : group) {
          take(in, file, line);
        }
      } else {
        take(item, {}, std::nullopt);
      }
    }
    if (!w.instructions.empty()) {
      windows.push_back(std::move(w));
    }
  }

  static void remember_symbol(BuildState& st, std::uint64_t base, const std::string& symbol) {
    if (!symbol.empty()) {
      st.symbols.emplace(base, symbol);
    }
  }

  static bool track_selection(const mi::Exchange& ex, BuildState& st) {
    bool seen = false;
    for (const auto& rec : ex.records) {
      bool stopped = rec.kind() == mi::RecordKind::Exec && rec.klass() == "stopped";
      bool selected = rec.kind() == mi::RecordKind::Notify && rec.klass() == "thread-selected";
      bool select_done = rec.kind() == mi::RecordKind::Result && rec.klass() == "done" &&
                         rec["new-thread-id"].is_string();
      if (!stopped && !selected && !select_done) {
        continue;
      }
      auto r = rec.results();
      auto id = stopped ? r["thread-id"] : selected ? r["id"] : r["new-thread-id"];
      if (id.is_string()) {
        st.current_thread = id.text();
        seen = true;
      }
      if (auto lane = r["lane-id"].as_u64(); lane && *lane <= UINT32_MAX) {
        st.current_lane = static_cast<std::uint32_t>(*lane);
      } else {
        st.current_lane.reset();
      }
    }
    return seen;
  }

  static void take_thread_list(const mi::Value& threads, const mi::Value& result, BuildState& st) {
    st.snapshot.coverage.threads = true;
    for (auto t : threads) {
      auto target_value = t["target-id"];
      if (is_gpu_target_id(target_value.raw())) {
        continue;
      }
      HostThread h;
      h.id = t["id"].text();
      h.target_id = target_value.text();
      h.lwp = lwp_of(h.target_id);
      h.name = t["name"].text();
      h.state = t["state"].text();
      if (auto f = t["frame"]; f.is_tuple()) {
        h.frames.push_back(text::frame_from_mi(f));
      }
      upsert_host_thread(st.snapshot, std::move(h));
    }
    if (auto cur = result["current-thread-id"]; cur.is_string()) {
      st.current_thread = cur.text();
    }
  }

  bool take_console(const std::string& console, const std::string& cli, BuildState& st) {
    bool claimed = false;
    auto lines = text::split_lines(console);
    if (!lines.empty()) {
      auto first = text::trim(lines.front());
      if (text::starts_with(first, "GNU gdb") || first.find("cuda-gdb") != std::string::npos ||
          first.find("CUDA Debugger") != std::string::npos) {
        if (st.snapshot.debugger_version.empty()) {
          st.snapshot.debugger_version = std::string(first);
        }
        claimed = true;
      }
    }
    for (auto line : lines) {
      auto t = text::trim(line);
      // [Switching to thread 7, lane 0 (AMDGPU Lane ...)] / [Current thread is 7 (...)]
      for (std::string_view prefix : {"[Switching to thread ", "[Current thread is "}) {
        if (text::starts_with(t, prefix)) {
          auto rest = t.substr(prefix.size());
          auto end = rest.find_first_of(" ,]");
          st.current_thread = std::string(rest.substr(0, end));
          claimed = true;
        }
      }
    }
    auto ranges = text::parse_info_line(console);
    if (!ranges.empty()) {
      // `info line *0xADDR`: the address asked about is a PC someone cared about.
      if (text::starts_with(cli, "info line *")) {
        if (auto pc = text::parse_u64(text::trim(std::string_view(cli).substr(11)))) {
          queried_pcs_.push_back(*pc);
        }
      }
      for (auto& r : ranges) {
        if (!r.line.function.empty() && r.line.offset) {
          remember_symbol(st, r.start - *r.line.offset, r.line.function);
        }
        st.line_ranges.push_back(std::move(r));
      }
      claimed = true;
    }
    if (text::starts_with(cli, "info symbol ")) {
      auto addr = text::parse_u64(text::trim(std::string_view(cli).substr(12)));
      auto sym = text::parse_info_symbol(console);
      if (addr && sym && sym->second <= *addr) {
        remember_symbol(st, *addr - sym->second, sym->first);
        claimed = true;
      }
    }
    if (console.find("#0 ") != std::string::npos) {
      for (auto& [tid, frames] : text::parse_backtraces(console, st.current_thread)) {
        if (!tid.empty() && !frames.empty()) {
          merge_frames(st.stacks[tid], std::move(frames));
          claimed = true;
        }
      }
    }
    // `info threads`: host rows only; the MI answer, when there is one, is richer.
    for (std::size_t i = 0; i < lines.size(); ++i) {
      std::size_t next = i;
      auto table = text::parse_cli_table(lines, i, {"Id", "Target Id", "Frame"}, next);
      if (!table) {
        continue;
      }
      st.snapshot.coverage.threads = true;
      for (const auto& row : table->rows) {
        auto target = table->cell(row, "Target Id");
        if (is_gpu_target_id(target)) {
          continue;
        }
        HostThread h;
        h.id = std::string(table->cell(row, "Id"));
        // `Thread 0x... (LWP 1) "name"`: the quoted name follows the target id.
        auto quote = target.find(" \"");
        if (quote != std::string_view::npos && target.back() == '"') {
          h.name = std::string(target.substr(quote + 2, target.size() - quote - 3));
          target = target.substr(0, quote);
        }
        h.target_id = std::string(target);
        h.lwp = lwp_of(h.target_id);
        h.frames.push_back(text::parse_frame_text(table->cell(row, "Frame")));
        if (row.current) {
          st.current_thread = h.id;
        }
        bool known = std::any_of(st.snapshot.host_threads.begin(), st.snapshot.host_threads.end(),
                                 [&](const HostThread& x) { return x.id == h.id; });
        if (!known) {
          st.snapshot.host_threads.push_back(std::move(h));
        }
      }
      claimed = true;
      i = next > i ? next - 1 : i;
    }
    return claimed;
  }

  // The expressions the built-in playbooks evaluate on a thread blocked in a mutex (innermost
  // frame, first syscall argument register: x86-64 `$rdi`, AArch64 `$x0`); see
  // playbooks/hang-triage.yaml. Reading them is all the builder needs, live or from a recording.
  bool take_mutex_read(std::string_view command, std::string_view value, BuildState& st) {
    auto tid = text::option_value(command, "--thread");
    auto open = command.find('"');
    auto close = command.rfind('"');
    if (!tid || open == std::string_view::npos || close <= open) {
      return false;
    }
    std::string expr;
    for (char c : command.substr(open + 1, close - open - 1)) {
      if (c != ' ') {
        expr += c;
      }
    }
    const bool address = expr == "(void*)$rdi" || expr == "(void*)$x0";
    const bool owner = expr == "*(int*)($rdi+8)" || expr == "*(int*)($x0+8)";
    if (!address && !owner) {
      return false;
    }
    MutexWait& w = mutex_reads_[*tid];
    if (address) {
      auto note = text::parse_address_note(value);
      if (!note) {
        return false;
      }
      w.address = note->address;
      if (note->has_symbol) {
        w.symbol = note->offset ? fmt::format("{}+{}", note->symbol, note->offset) : note->symbol;
      }
    } else {
      auto v = text::trim(value);
      bool negative = !v.empty() && v.front() == '-';
      auto n = text::parse_u64(negative ? v.substr(1) : v);
      if (!n || *n > 0x7fffffffULL) {
        return false;
      }
      w.owner = negative ? -static_cast<std::int64_t>(*n) : static_cast<std::int64_t>(*n);
    }
    (void)st;
    return true;
  }

  std::vector<std::uint64_t> queried_pcs_;
  std::map<std::string, MutexWait> mutex_reads_;
};

} // namespace

std::unique_ptr<Dialect> make_gdb_dialect() {
  return std::make_unique<GdbDialect>();
}

} // namespace rocplay::snapshot
