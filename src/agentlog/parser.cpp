// rocm-debug-agent wave dumps inside ordinary logs: a line-driven state machine per output
// stream. The agent writes straight to fd 2, so its lines interleave with the server's; lines a
// launcher prefixed (`[1,3]<stderr>:`, `(VllmWorker rank=3 pid=7)`) are demultiplexed by prefix.
// Each line is lexed in lines.cpp; the model's accessors are in model.cpp.
#include "rocplay/agentlog/agentlog.hpp"

#include "agentlog/lines.hpp"
#include "agentlog/util.hpp"
#include "core/read_chunks.hpp"

#include <algorithm>
#include <istream>
#include <map>

namespace rocplay::agentlog {

using detail::find_ci;
using detail::find_wave_line;
using detail::has_wave_tail;
using detail::is_digit;
using detail::is_separator;
using detail::parse_dec;
using detail::parse_hex;
using detail::parse_instruction;
using detail::parse_loaded_at;
using detail::parse_number;
using detail::Prefix;
using detail::rank_from_name;
using detail::register_class_header;
using detail::sanitize;
using detail::split_prefix;
using detail::split_ws;
using detail::take_hex;
using detail::trim;
using detail::valid_register_name;

namespace {

constexpr std::size_t kMaxForeignInDump = 64;  // ordinary lines tolerated inside a dump
constexpr std::size_t kMaxForeignInDisasm = 3; // unrecognised lines that end a disassembly
constexpr std::size_t kMaxHeaderLines = 64;    // a wave line wrapped over several lines
constexpr std::size_t kMaxSourceLines = 64;    // per disassembly
constexpr std::size_t kMaxHostFaults = 10000;
constexpr std::size_t kMaxMemoryBlocks = 16; // per wave
constexpr std::size_t kMaxClasses = 32;      // per wave

} // namespace

// ---------------------------------------------------------------------------------------------

struct Parser::Impl {
  struct Stream {
    std::string key;
    std::optional<int> rank;
    std::optional<std::int64_t> pid;
    bool dump_open = false;
    Dump dump;
    bool wave_open = false;
    Wave wave;
    bool header_pending = false;
    std::string header_text;
    std::size_t header_lines = 0;
    int cls = -1;
    int mem = -1;
    bool disasm_open = false;
    bool disasm_for_wave = false;
    Disassembly disasm;
    std::size_t disasm_foreign = 0;
    std::size_t foreign = 0;
    bool wave_done = false; // the open wave's disassembly ended: the agent is done with it
    std::size_t last_line = 0;
    std::size_t last_class_line = 0;
  };

  ParseOptions opt;
  AgentLog log;
  std::size_t line_no = 0;
  std::size_t lane_values = 0;
  std::size_t stored_waves = 0;
  bool lane_budget_warned = false;
  bool stream_limit_warned = false;
  bool lane_limit_warned = false;
  std::map<std::int64_t, int> pid_rank;
  std::map<std::string, Stream> streams;

  explicit Impl(ParseOptions o) : opt(std::move(o)) { log.source = opt.source; }

  void warn(std::size_t line, std::string message) {
    if (log.warnings.size() >= opt.limits.max_warnings) {
      ++log.warnings_dropped;
      return;
    }
    log.warnings.push_back({line, std::move(message)});
  }

  Stream& stream_for(const Prefix& p) {
    auto it = streams.find(p.key);
    if (it == streams.end()) {
      if (streams.size() >= opt.limits.max_streams) {
        if (!stream_limit_warned) {
          stream_limit_warned = true;
          warn(line_no, "more than " + std::to_string(opt.limits.max_streams) +
                            " distinct line prefixes; the rest are read as one stream");
        }
        it = streams.try_emplace("").first;
      } else {
        it = streams.try_emplace(p.key).first;
        it->second.key = p.key;
      }
    }
    auto& s = it->second;
    if (p.rank) {
      s.rank = p.rank;
    }
    if (p.pid) {
      s.pid = p.pid;
    }
    return s;
  }

  void feed(std::string_view raw) {
    ++line_no;
    log.bytes += raw.size() + 1;
    if (raw.size() > opt.limits.max_line_bytes) {
      warn(line_no, "line is longer than " + std::to_string(opt.limits.max_line_bytes) +
                        " bytes; only the first " + std::to_string(opt.limits.max_line_bytes) +
                        " are read");
      raw = raw.substr(0, opt.limits.max_line_bytes);
    }
    while (!raw.empty() && (raw.back() == '\r' || raw.back() == '\n')) {
      raw.remove_suffix(1);
    }
    const Prefix p = split_prefix(raw);
    if (p.pid && p.rank) {
      pid_rank[*p.pid] = *p.rank;
    }
    const std::string_view content = p.rest;
    if (host_fault(content, p)) {
      return;
    }
    // Most lines of a server log are nothing to us; keep them off the stream map.
    auto it = streams.find(p.key);
    const bool known_stream = it != streams.end();
    if (!known_stream && find_wave_line(content) == std::string_view::npos &&
        !trim(content).starts_with("Disassembly for function ")) {
      return;
    }
    Stream& s = stream_for(p);
    handle(s, content);
  }

  bool host_fault(std::string_view content, const Prefix& p) {
    const auto mem = find_ci(content, "memory access fault by gpu");
    const bool queue = content.find("HSA_STATUS_ERROR") != std::string_view::npos;
    if (!mem && !queue) {
      return false;
    }
    if (log.host_faults.size() >= kMaxHostFaults) {
      return true;
    }
    HostFault f;
    f.line = line_no;
    f.stream = p.key;
    f.text = sanitize(trim(content), 512);
    if (mem) {
      f.kind = "memory-access-fault";
      auto after = content.substr(*mem + std::string_view("memory access fault by gpu").size());
      after = trim(after);
      f.gpu = sanitize(after.substr(0, std::min(after.find(' '), std::size_t{32})), 32);
      for (std::string_view key :
           {std::string_view("on address "), std::string_view("at virtual address ")}) {
        if (auto a = find_ci(content, key)) {
          std::size_t used = 0;
          f.address = take_hex(content.substr(*a + key.size()), used);
          break;
        }
      }
      for (std::string_view key : {std::string_view("Reasons: "), std::string_view("Reason: ")}) {
        if (auto r = content.find(key); r != std::string_view::npos) {
          f.reason = sanitize(trim(content.substr(r + key.size())), 200);
          break;
        }
      }
    } else {
      f.kind = "queue-error";
      const auto pos = content.find("HSA_STATUS_ERROR");
      std::size_t end = pos;
      while (end < content.size() &&
             (std::isalnum(static_cast<unsigned char>(content[end])) != 0 || content[end] == '_')) {
        ++end;
      }
      f.reason = std::string(content.substr(pos, end - pos));
      if (auto c = content.find("code: 0x"); c != std::string_view::npos) {
        std::size_t used = 0;
        if (auto code = take_hex(content.substr(c + 6), used)) {
          f.reason += " (code " + detail::hex(*code) + ")";
        }
      }
    }
    log.host_faults.push_back(std::move(f));
    return true;
  }

  void open_dump(Stream& s) {
    if (s.dump_open) {
      return;
    }
    s.dump = Dump{};
    s.dump.first_line = line_no;
    s.dump.stream = s.key;
    s.dump.rank = s.rank;
    s.dump.pid = s.pid;
    s.dump_open = true;
  }

  void close_disasm(Stream& s) {
    if (!s.disasm_open) {
      return;
    }
    s.disasm_open = false;
    if (s.disasm.instructions.empty() && !s.disasm.complete && s.disasm_for_wave) {
      warn(s.disasm.line, "disassembly block has no instructions (cut off?)");
    }
    if (s.dump.disassemblies.size() >= opt.limits.max_waves) {
      return;
    }
    const std::size_t index = s.dump.disassemblies.size();
    s.dump.disassemblies.push_back(std::move(s.disasm));
    if (s.disasm_for_wave && s.wave_open && !s.wave.disassembly) {
      s.wave.disassembly = index;
    }
    s.disasm = Disassembly{};
  }

  void finish_header(Stream& s, bool complete) {
    s.header_pending = false;
    if (!complete) {
      warn(s.wave.line, "wave line has no `(stopped, reason: ...)`; read as far as it goes");
    }
    parse_wave_header(s.header_text, s.wave);
    s.header_text.clear();
  }

  void close_wave(Stream& s) {
    if (s.header_pending) {
      finish_header(s, false);
    }
    if (!s.wave_open) {
      return;
    }
    close_disasm(s);
    s.wave_open = false;
    s.cls = -1;
    s.mem = -1;
    Wave& w = s.wave;
    const std::string label = "wave_" + std::to_string(w.id);
    bool has_general = false;
    const Register* first_vector = nullptr;
    const Register* last_vector = nullptr;
    for (const auto& cls : w.registers) {
      has_general = has_general || cls.name == "general";
      for (const auto& r : cls.registers) {
        if (r.vector) {
          first_vector = first_vector == nullptr ? &r : first_vector;
          last_vector = &r;
        }
      }
    }
    // The agent prints the general registers last: a wave without them was cut off. (Lanes the
    // seed's trimmed samples elide with `...` are not truncation.)
    if (w.registers.empty() && !w.disassembly) {
      warn(w.line,
           label + " has no register dump (cut off at line " + std::to_string(s.last_line) + "?)");
      w.truncated = true;
    } else if (!w.registers.empty() && !has_general) {
      w.truncated = true;
      std::string where = "after the " + w.registers.back().name + " registers";
      if (last_vector != nullptr && first_vector != nullptr &&
          last_vector->lanes.size() < first_vector->lanes.size()) {
        where = "inside register " + last_vector->name + " (lane " +
                std::to_string(last_vector->lanes.size()) + " of " +
                std::to_string(first_vector->lanes.size()) + ")";
      }
      warn(s.last_class_line, label + " (line " + std::to_string(w.line) + "): dump cut off " +
                                  where +
                                  "; the general registers (pc, exec) and what follows "
                                  "are missing");
    }
    if (stored_waves >= opt.limits.max_waves) {
      ++log.waves_dropped;
      if (log.waves_dropped == 1) {
        warn(w.line, "more than " + std::to_string(opt.limits.max_waves) +
                         " waves; later ones are counted but not kept");
      }
      return;
    }
    ++stored_waves;
    s.dump.waves.push_back(std::move(w));
    s.wave = Wave{};
  }

  void close_dump(Stream& s) {
    close_wave(s);
    close_disasm(s);
    if (!s.dump_open) {
      return;
    }
    s.dump_open = false;
    s.dump.last_line = std::max(s.last_line, s.dump.first_line);
    s.foreign = 0;
    const bool any_instruction =
        std::any_of(s.dump.disassemblies.begin(), s.dump.disassemblies.end(),
                    [](const Disassembly& d) { return !d.instructions.empty(); });
    if (s.dump.waves.empty() && !any_instruction) {
      s.dump = Dump{}; // a stray `Disassembly ...:` line in ordinary output
      return;
    }
    split_by_pid(std::move(s.dump));
    s.dump = Dump{};
  }

  static std::optional<std::int64_t> pid_of(const Dump& d, const Wave& w) {
    if (w.disassembly && *w.disassembly < d.disassemblies.size()) {
      const auto& dis = d.disassemblies[*w.disassembly];
      if (dis.code_object && dis.code_object->pid) {
        return dis.code_object->pid;
      }
    }
    return std::nullopt;
  }

  // One agent invocation prints one process's waves; back-to-back dumps of several processes
  // (one per rank) are told apart by the memory://PID of their code objects.
  void split_by_pid(Dump dump) {
    std::vector<std::optional<std::int64_t>> wave_pid(dump.waves.size());
    std::optional<std::int64_t> current;
    for (std::size_t i = 0; i < dump.waves.size(); ++i) {
      if (auto p = pid_of(dump, dump.waves[i])) {
        current = p;
      }
      wave_pid[i] = current;
    }
    // Waves before the first named pid belong with it.
    std::optional<std::int64_t> first_known;
    for (const auto& p : wave_pid) {
      if (p) {
        first_known = p;
        break;
      }
    }
    for (auto& p : wave_pid) {
      if (!p) {
        p = first_known;
      } else {
        break;
      }
    }
    std::vector<std::optional<std::int64_t>> order;
    for (const auto& p : wave_pid) {
      if (std::find(order.begin(), order.end(), p) == order.end()) {
        order.push_back(p);
      }
    }
    if (order.size() <= 1) {
      if (!order.empty() && order.front()) {
        dump.pid = order.front();
      } else {
        for (const auto& d : dump.disassemblies) {
          if (d.code_object && d.code_object->pid) {
            dump.pid = d.code_object->pid;
            break;
          }
        }
      }
      log.dumps.push_back(std::move(dump));
      return;
    }
    std::vector<Dump> parts(order.size());
    std::vector<bool> used_disasm(dump.disassemblies.size(), false);
    for (std::size_t k = 0; k < order.size(); ++k) {
      parts[k].stream = dump.stream;
      parts[k].rank = dump.rank;
      parts[k].pid = order[k];
    }
    for (std::size_t i = 0; i < dump.waves.size(); ++i) {
      const auto k = static_cast<std::size_t>(std::find(order.begin(), order.end(), wave_pid[i]) -
                                              order.begin());
      Wave w = std::move(dump.waves[i]);
      if (w.disassembly && *w.disassembly < dump.disassemblies.size()) {
        used_disasm[*w.disassembly] = true;
        parts[k].disassemblies.push_back(dump.disassemblies[*w.disassembly]);
        w.disassembly = parts[k].disassemblies.size() - 1;
      }
      if (parts[k].waves.empty()) {
        parts[k].first_line = w.line;
      }
      parts[k].waves.push_back(std::move(w));
    }
    for (std::size_t j = 0; j < dump.disassemblies.size(); ++j) {
      if (used_disasm[j]) {
        continue;
      }
      std::size_t k = 0;
      const auto& co = dump.disassemblies[j].code_object;
      if (co && co->pid) {
        auto it = std::find(order.begin(), order.end(), co->pid);
        if (it != order.end()) {
          k = static_cast<std::size_t>(it - order.begin());
        }
      }
      parts[k].disassemblies.push_back(std::move(dump.disassemblies[j]));
    }
    for (std::size_t k = 0; k < parts.size(); ++k) {
      parts[k].last_line = k + 1 < parts.size() && parts[k + 1].first_line > 0
                               ? parts[k + 1].first_line - 1
                               : dump.last_line;
      if (k == 0) {
        parts[k].first_line = std::min(parts[k].first_line, dump.first_line);
      }
      log.dumps.push_back(std::move(parts[k]));
    }
  }

  // Fills id, pc, kernel, reasons from `wave_N: pc=0x... (...) (stopped, reason: R)`.
  void parse_wave_header(std::string_view text, Wave& w) {
    std::size_t i = 5; // after `wave_`
    const auto id = parse_dec(text.substr(i, std::min<std::size_t>(18, text.find(':') - i)));
    w.id = id.value_or(0);
    const auto pc_pos = text.find("pc=0x");
    std::size_t used = 0;
    if (pc_pos != std::string_view::npos) {
      w.pc = take_hex(text.substr(pc_pos + 3), used).value_or(0);
      i = pc_pos + 3 + used;
    }
    std::string_view rest = text.substr(std::min(i, text.size()));
    // The kernel name may contain anything, so the tail is found from the end.
    std::size_t tail = std::string_view::npos;
    constexpr std::string_view kStopped = "(stopped, reason:";
    constexpr std::string_view kRunning = "(running)";
    if (auto r = rest.rfind(kStopped); r != std::string_view::npos) {
      tail = r;
      auto reasons = rest.substr(r + kStopped.size());
      const auto close = reasons.find(')');
      reasons = trim(reasons.substr(0, close));
      while (!reasons.empty()) {
        const auto bar = reasons.find('|');
        const auto one = trim(reasons.substr(0, bar));
        if (!one.empty() && w.reasons.size() < 32) {
          w.reasons.push_back(sanitize(one, 64));
          if (!explain_reason(w.reasons.back()).known) {
            warn(w.line, "unknown stop reason `" + w.reasons.back() + "` on wave_" +
                             std::to_string(w.id) + "; reported as is");
          }
        }
        if (bar == std::string_view::npos) {
          break;
        }
        reasons.remove_prefix(bar + 1);
      }
      if (w.reasons.empty()) {
        warn(w.line, "wave_" + std::to_string(w.id) + " has an empty stop reason");
      }
    } else if (auto r2 = rest.rfind(kRunning); r2 != std::string_view::npos) {
      tail = r2;
      w.running = true;
    }
    auto middle = trim(rest.substr(0, tail));
    constexpr std::string_view kEntry = "(kernel_code_entry=";
    if (middle.starts_with(kEntry)) {
      middle.remove_prefix(kEntry.size());
      if (middle.ends_with(")")) {
        middle.remove_suffix(1);
      }
      middle = trim(middle);
      if (!middle.starts_with("not available")) {
        w.kernel_code_entry = take_hex(middle, used);
        middle = trim(middle.substr(used));
        if (auto k = middle.rfind(", kernargs="); k != std::string_view::npos) {
          std::size_t u2 = 0;
          w.kernargs = take_hex(middle.substr(k + 11), u2);
          middle = trim(middle.substr(0, k));
        }
        if (middle.starts_with("<")) {
          middle.remove_prefix(1);
          if (middle.ends_with(">")) {
            middle.remove_suffix(1);
          }
          w.kernel = sanitize(trim(middle), 64 * 1024);
        }
      }
    }
  }

  void start_wave(Stream& s, std::string_view text) {
    close_wave(s);
    close_disasm(s);
    open_dump(s);
    s.wave = Wave{};
    s.wave.line = line_no;
    s.wave_open = true;
    s.wave_done = false;
    s.cls = -1;
    s.mem = -1;
    if (has_wave_tail(text)) {
      parse_wave_header(text, s.wave);
    } else {
      s.header_pending = true;
      s.header_text = std::string(text);
      s.header_lines = 1;
    }
  }

  void add_register_line(Stream& s, std::string_view t) {
    auto& cls = s.wave.registers[static_cast<std::size_t>(s.cls)];
    const auto tokens = split_ws(t, 4096);
    std::size_t i = 0;
    while (i < tokens.size()) {
      const auto tok = tokens[i];
      if (!tok.ends_with(":") || !valid_register_name(tok.substr(0, tok.size() - 1))) {
        ++i;
        continue;
      }
      if (s.wave.registers.size() > kMaxClasses) {
        return;
      }
      std::size_t total = 0;
      for (const auto& c : s.wave.registers) {
        total += c.registers.size();
      }
      if (total >= opt.limits.max_registers) {
        return;
      }
      Register reg;
      reg.name = std::string(tok.substr(0, tok.size() - 1));
      ++i;
      if (i < tokens.size() && tokens[i].starts_with("[")) {
        reg.vector = true;
        // `[k] value` pairs; lanes the seed's trimmed dumps elide as `...` simply stay absent.
        std::size_t width = 0;
        while (i < tokens.size()) {
          if (tokens[i] == "...") {
            ++i;
            continue;
          }
          if (i + 1 >= tokens.size() || !tokens[i].starts_with("[") || !tokens[i].ends_with("]")) {
            break;
          }
          const auto lane = parse_dec(tokens[i].substr(1, tokens[i].size() - 2));
          const auto value = parse_hex(tokens[i + 1]);
          // Values are printed zero-padded to a fixed width; a shorter one was cut off.
          if (width == 0) {
            width = tokens[i + 1].size();
          }
          const bool whole = tokens[i + 1].size() == width;
          i += 2;
          if (!lane || !value || !whole) {
            continue;
          }
          if (*lane >= opt.limits.max_lanes) {
            if (!lane_limit_warned) {
              lane_limit_warned = true;
              warn(line_no, "lane " + std::to_string(*lane) + " is beyond the " +
                                std::to_string(opt.limits.max_lanes) + "-lane limit; ignored");
            }
            continue;
          }
          if (lane_values >= opt.limits.max_lane_values) {
            s.wave.vector_registers_dropped = true;
            if (!lane_budget_warned) {
              lane_budget_warned = true;
              warn(line_no, "vector registers of this and later waves are not kept (over " +
                                std::to_string(opt.limits.max_lane_values) +
                                " lane values); the per-lane summary covers earlier waves");
            }
            continue;
          }
          const auto l = static_cast<std::size_t>(*lane);
          if (reg.lanes.size() <= l) {
            reg.lanes.resize(l + 1, 0);
            reg.present.resize(l + 1, false);
          }
          reg.lanes[l] = static_cast<std::uint32_t>(*value);
          reg.present[l] = true;
          ++lane_values;
        }
      } else if (i < tokens.size()) {
        if (auto v = parse_hex(tokens[i])) {
          reg.value = *v;
          ++i;
        } else {
          continue; // `s0: ...` or junk: the register is not kept
        }
      } else {
        continue;
      }
      if (reg.vector && s.wave.vector_registers_dropped && reg.lanes.empty()) {
        continue;
      }
      cls.registers.push_back(std::move(reg));
    }
  }

  bool register_line(std::string_view t) {
    const auto colon = t.find(':');
    if (colon == std::string_view::npos || colon == 0 || !valid_register_name(t.substr(0, colon))) {
      return false;
    }
    const auto after = trim(t.substr(colon + 1));
    return after.starts_with("[") || after.starts_with("...") ||
           (!after.empty() && detail::is_hex(after.front()));
  }

  bool memory_row(Stream& s, std::string_view t) {
    if (!t.starts_with("0x")) {
      return false;
    }
    std::size_t used = 0;
    const auto addr = take_hex(t, used);
    if (!addr || used >= t.size() || t[used] != ':') {
      return false;
    }
    auto& block = s.wave.memory[static_cast<std::size_t>(s.mem)];
    if (block.rows.size() >= opt.limits.max_memory_rows) {
      return true;
    }
    MemoryRow row;
    row.address = *addr;
    for (auto tok : split_ws(t.substr(used + 1), 64)) {
      if (auto v = parse_hex(tok)) {
        row.words.push_back(static_cast<std::uint32_t>(*v));
      }
    }
    block.rows.push_back(std::move(row));
    return true;
  }

  void open_disasm(Stream& s, std::string_view t) {
    close_disasm(s);
    if (!s.wave_open) {
      open_dump(s); // older agents print the disassembly before the waves
    }
    s.disasm = Disassembly{};
    s.disasm.line = line_no;
    constexpr std::string_view kFor = "Disassembly for function ";
    if (t.starts_with(kFor)) {
      auto f = t.substr(kFor.size());
      if (f.ends_with(":")) {
        f.remove_suffix(1);
      }
      s.disasm.function = sanitize(trim(f), 64 * 1024);
    }
    s.disasm_open = true;
    s.disasm_for_wave = s.wave_open;
    s.disasm_foreign = 0;
    s.cls = -1;
    s.mem = -1;
  }

  // True when the line belonged to the disassembly block.
  bool disasm_line(Stream& s, std::string_view t) {
    auto& d = s.disasm;
    if (t == "End of disassembly.") {
      d.complete = true;
      s.wave_done = s.disasm_for_wave && s.wave_open;
      close_disasm(s);
      return true;
    }
    if (t.empty() || t == "...") {
      return true;
    }
    if (t.starts_with("code object:")) {
      d.code_object = parse_code_object_uri(sanitize(t.substr(12), 4096));
      if (!d.code_object) {
        warn(line_no, "code object URI not understood: " + sanitize(t.substr(12), 200));
      }
      return true;
    }
    if (t.starts_with("loaded at:")) {
      if (auto range = parse_loaded_at(t)) {
        d.load_begin = range->first;
        d.load_end = range->second;
      } else {
        warn(line_no, "`loaded at:` range not understood");
      }
      return true;
    }
    if (t.starts_with("=>") || t.starts_with("0x")) {
      if (auto ins = parse_instruction(t)) {
        ins->line = line_no;
        if (d.instructions.size() < opt.limits.max_instructions) {
          d.instructions.push_back(std::move(*ins));
        }
        return true;
      }
    }
    if (t.starts_with("Cannot access memory at address")) {
      if (d.source_lines.size() < kMaxSourceLines) {
        d.source_lines.push_back(sanitize(t, 200));
      }
      return true;
    }
    // Source context: `path/to/file.cpp:` and `123     source text`.
    const bool file_header = t.ends_with(":") && t.find(' ') == std::string_view::npos;
    const bool numbered = !t.empty() && is_digit(t.front());
    if (file_header || numbered) {
      if (d.source_lines.size() < kMaxSourceLines) {
        d.source_lines.push_back(sanitize(t, 300));
      }
      return true;
    }
    return false;
  }

  void handle(Stream& s, std::string_view content) {
    const auto t = trim(content);
    if (s.header_pending) {
      if (t.empty() || register_class_header(t) ||
          find_wave_line(content) != std::string_view::npos || s.header_lines >= kMaxHeaderLines) {
        finish_header(s, false);
      } else {
        if (!s.header_text.empty() && !s.header_text.ends_with("<") &&
            !s.header_text.ends_with("(") && !t.starts_with(">") && !t.starts_with(")")) {
          s.header_text.push_back(' ');
        }
        s.header_text.append(t.substr(0, opt.limits.max_line_bytes));
        ++s.header_lines;
        touch(s);
        if (has_wave_tail(t)) {
          finish_header(s, true);
        }
        return;
      }
    }
    if (const auto pos = find_wave_line(content); pos != std::string_view::npos) {
      start_wave(s, content.substr(pos));
      touch(s);
      return;
    }
    if (s.disasm_open) {
      if (t.starts_with("Disassembly for function ") || t == "Disassembly:") {
        open_disasm(s, t);
        touch(s);
        return;
      }
      if (disasm_line(s, t)) {
        s.disasm_foreign = 0;
        touch(s);
        return;
      }
      if (++s.disasm_foreign >= kMaxForeignInDisasm || is_separator(t)) {
        close_disasm(s);
      }
    }
    if (is_separator(t)) {
      if (s.dump_open) {
        close_wave(s);
        touch(s);
      }
      return;
    }
    if ((t.starts_with("Disassembly for function ") || t == "Disassembly:") && t.ends_with(":")) {
      open_disasm(s, t);
      touch(s);
      return;
    }
    if (s.wave_open) {
      if (auto name = register_class_header(t)) {
        if (s.wave.registers.size() < kMaxClasses) {
          s.wave.registers.push_back(RegisterClass{*name, {}});
          s.cls = static_cast<int>(s.wave.registers.size()) - 1;
        }
        s.mem = -1;
        s.last_class_line = line_no;
        touch(s);
        return;
      }
      if (t.starts_with("Local memory content") || t.starts_with("Global memory")) {
        if (s.wave.memory.size() < kMaxMemoryBlocks) {
          MemoryBlock block;
          block.title = sanitize(t.ends_with(":") ? t.substr(0, t.size() - 1) : t, 200);
          if (auto open = t.find('('); open != std::string_view::npos) {
            const auto inner = t.substr(open + 1);
            const auto bytes = inner.find(" bytes");
            if (bytes != std::string_view::npos) {
              auto num = inner.substr(0, bytes);
              if (auto comma = num.rfind(' '); comma != std::string_view::npos) {
                num = num.substr(comma + 1);
              }
              block.size_bytes = parse_dec(num);
            }
          }
          s.wave.memory.push_back(std::move(block));
          s.mem = static_cast<int>(s.wave.memory.size()) - 1;
        }
        s.cls = -1;
        touch(s);
        return;
      }
      if (s.cls >= 0 && register_line(t)) {
        add_register_line(s, t);
        s.last_class_line = line_no;
        touch(s);
        return;
      }
      if (s.mem >= 0 && memory_row(s, t)) {
        touch(s);
        return;
      }
    }
    if (t.empty()) {
      return;
    }
    // An ordinary log line. After a wave's `End of disassembly.` it ends the dump (the next
    // fault is another dump); inside a wave a few are tolerated (other writers share the log),
    // and a long run of them means the dump is over.
    if (s.dump_open && (s.wave_done || ++s.foreign > kMaxForeignInDump)) {
      close_dump(s);
    }
  }

  void touch(Stream& s) {
    s.foreign = 0;
    s.last_line = line_no;
  }

  // Waves without their own disassembly (older agents print it once, before the waves) get the
  // block whose arrow is at their PC, or whose code object contains it.
  static void associate(Dump& d) {
    for (auto& w : d.waves) {
      if (w.disassembly) {
        continue;
      }
      std::optional<std::size_t> by_range;
      for (std::size_t j = 0; j < d.disassemblies.size(); ++j) {
        const auto& dis = d.disassemblies[j];
        if (const auto* at = dis.at_pc(); at != nullptr && at->address == w.pc) {
          w.disassembly = j;
          w.disassembly_inferred = true;
          break;
        }
        if (!by_range && dis.load_begin && dis.load_end && w.pc >= *dis.load_begin &&
            w.pc < *dis.load_end) {
          by_range = j;
        }
      }
      if (!w.disassembly && by_range) {
        w.disassembly = by_range;
        w.disassembly_inferred = true;
      }
    }
  }

  AgentLog finish() {
    for (auto& [key, s] : streams) {
      if (s.header_pending) {
        finish_header(s, false);
      }
      close_dump(s);
    }
    std::stable_sort(log.dumps.begin(), log.dumps.end(),
                     [](const Dump& a, const Dump& b) { return a.first_line < b.first_line; });
    const auto file_rank = rank_from_name(opt.source);
    for (auto& d : log.dumps) {
      associate(d);
      if (opt.rank) {
        d.rank = opt.rank;
      } else if (!d.rank && d.pid) {
        if (auto it = pid_rank.find(*d.pid); it != pid_rank.end()) {
          d.rank = it->second;
        }
      }
      if (!d.rank) {
        d.rank = file_rank;
      }
    }
    log.lines = line_no;
    return std::move(log);
  }
};

Parser::Parser(ParseOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {}
Parser::~Parser() = default;
Parser::Parser(Parser&&) noexcept = default;
Parser& Parser::operator=(Parser&&) noexcept = default;

void Parser::feed_line(std::string_view line) {
  impl_->feed(line);
}

AgentLog Parser::finish() {
  return impl_->finish();
}

AgentLog parse(std::string_view text, const ParseOptions& options) {
  Parser parser(options);
  while (!text.empty()) {
    const auto nl = text.find('\n');
    parser.feed_line(text.substr(0, nl));
    if (nl == std::string_view::npos) {
      break;
    }
    text.remove_prefix(nl + 1);
  }
  return parser.finish();
}

AgentLog parse(std::istream& in, const ParseOptions& options) {
  Parser parser(options);
  const std::size_t cap = options.limits.max_line_bytes;
  std::string line;
  std::string chunk(64 * 1024, '\0');
  bool overlong = false; // the current line already went past the cap; skip to its end
  read_chunks(in, chunk, [&](std::string_view data) {
    while (!data.empty()) {
      const auto nl = data.find('\n');
      const auto piece = data.substr(0, nl);
      if (!overlong) {
        const auto room = cap + 1 - std::min(line.size(), cap + 1);
        line.append(piece.substr(0, room));
        overlong = line.size() > cap;
      }
      if (nl == std::string_view::npos) {
        break;
      }
      parser.feed_line(line); // over-long lines arrive one byte past the cap, so they warn
      line.clear();
      overlong = false;
      data.remove_prefix(nl + 1);
    }
  });
  if (!line.empty()) {
    parser.feed_line(line);
  }
  return parser.finish();
}

bool looks_like_agent_log(std::string_view text) {
  std::size_t pos = 0;
  while ((pos = text.find("wave_", pos)) != std::string_view::npos) {
    const auto end = text.find('\n', pos);
    const auto line =
        text.substr(pos, end == std::string_view::npos ? text.size() - pos : end - pos);
    if (find_wave_line(line) == 0 &&
        (has_wave_tail(line) || line.find("kernel_code_entry=") != std::string_view::npos)) {
      return true;
    }
    pos += 5;
  }
  return text.find("\nDisassembly for function ") != std::string_view::npos &&
         text.find("code object: ") != std::string_view::npos;
}

} // namespace rocplay::agentlog
