// Text inputs, one pass, line by line: API-call logs (levels 1/3/5), kernel logs and runtime
// messages in any mix. One cheap scan per line decides which parsers look at it; lines inside an
// API-call block are parsed by their shape alone.
#include "rocplay/crash/crash.hpp"

#include "crash/util.hpp"
#include "rocplay/core/names.hpp"
#include "rocplay/core/source.hpp"
#include "rocplay/mi/value.hpp"

#include <algorithm>
#include <array>
#include <cstring>
#include <filesystem>
#include <istream>
#include <map>

namespace rocplay::crash {

using detail::digit_token;
using detail::hex_token;
using detail::indent_of;
using detail::is_digit;
using detail::number_after;
using detail::parse_dec;
using detail::parse_hex;
using detail::sanitize;
using detail::trim;
using detail::word_after;

namespace {

// Bits of what a line may hold, from one scan over it.
enum Marker : unsigned {
  kApiCall = 1u << 0,
  kApiSystem = 1u << 1,
  kGpuLower = 1u << 2, // `amdgpu`
  kGpuUpper = 1u << 3, // `GPU`
  kNvrm = 1u << 4,
  kError = 1u << 5, // `rror`: hipError, cudaError, HIP error, OutOfMemoryError
  kExit = 1u << 6,
  kWatchdog = 1u << 7,
  kSegv = 1u << 8,
  kKilled = 1u << 9,
  kWave = 1u << 10,
  kLoggerError = 1u << 11,
  kOom = 1u << 12,    // `out of memory`
  kDbgapi = 1u << 13, // amd-dbgapi / ROCgdb diagnostics
  kAbort = 1u << 14,  // `aborting with error` (CLR)
};

// A literal's length is known here, so the compare is a few loads, not a libc call: this runs
// at every trigger character of every line.
template <std::size_t N> bool at(std::string_view s, std::size_t i, const char (&word)[N]) {
  return s.size() - i >= N - 1 && std::memcmp(s.data() + i, word, N - 1) == 0;
}
template <std::size_t N> bool starts(std::string_view s, const char (&word)[N]) {
  return at(s, 0, word);
}

struct Scan {
  unsigned markers = 0;
  bool binary = false; // NUL, or many control bytes
  bool high = false;   // a byte >= 0x80: the line may not be UTF-8
};

// The bytes that start a marker, and control bytes: everything else is skipped with one load.
constexpr std::array<bool, 256> kTrigger = [] {
  std::array<bool, 256> t{};
  for (int c = 0; c < 0x20; ++c) {
    t[static_cast<std::size_t>(c)] = true;
  }
  for (const char c : std::string_view("AgGNrxWwSKLoPCqb")) {
    t[static_cast<unsigned char>(c)] = true;
  }
  for (int c = 0x80; c < 0x100; ++c) {
    t[static_cast<std::size_t>(c)] = true;
  }
  return t;
}();

// One pass over the line: which markers it may hold, and whether it is text at all.
Scan scan_line(std::string_view s) {
  Scan out;
  unsigned& m = out.markers;
  std::size_t control = 0;
  const std::size_t n = s.size();
  for (std::size_t i = 0; i < n; ++i) {
    const auto u = static_cast<unsigned char>(s[i]);
    if (!kTrigger[u]) {
      continue;
    }
    if (u >= 0x80) {
      out.high = true;
      continue;
    }
    if (u < 0x20) {
      if (u == 0) {
        out.binary = true;
        return out;
      }
      control += (u != '\t' && u != 0x1b) ? 1 : 0;
      continue;
    }
    switch (s[i]) {
    case 'A':
      if (at(s, i, "API Call:")) {
        m |= kApiCall;
      } else if (at(s, i, "API Logging - System")) {
        m |= kApiSystem;
      } else if (at(s, i, "At least one agent is busy")) {
        m |= kDbgapi;
      }
      break;
    case 'P':
      if (at(s, i, "Per-queue memory")) {
        m |= kDbgapi;
      }
      break;
    case 'C':
      if (at(s, i, "Could not attach to process")) {
        m |= kDbgapi;
      }
      break;
    case 'q':
      if (at(s, i, "queue_snapshot failed")) {
        m |= kDbgapi;
      }
      break;
    case 'b':
      if (at(s, i, "borting with error") || at(s, i, "borting with status")) {
        m |= kAbort;
      }
      break;
    case 'g':
      if (at(s, i, "gpu")) {
        m |= kGpuLower;
      }
      break;
    case 'G':
      if (at(s, i, "GPU")) {
        m |= kGpuUpper;
      }
      break;
    case 'N':
      if (at(s, i, "NVRM")) {
        m |= kNvrm;
      }
      break;
    case 'r':
      if (at(s, i, "rror")) {
        m |= kError;
      }
      break;
    case 'x':
      if (at(s, i, "xit")) {
        m |= kExit;
      }
      break;
    case 'W':
    case 'w':
      if (at(s, i + 1, "atchdog")) {
        m |= kWatchdog;
      } else if (at(s, i, "wave_")) {
        m |= kWave;
      }
      break;
    case 'S':
      if (at(s, i, "Segmentation fault")) {
        m |= kSegv;
      }
      break;
    case 'K':
      if (at(s, i, "Killed")) {
        m |= kKilled;
      }
      break;
    case 'L':
      if (at(s, i, "LOGGING ERROR")) {
        m |= kLoggerError;
      }
      break;
    case 'o':
      if (at(s, i, "out of memory")) {
        m |= kOom;
      }
      break;
    default:
      break;
    }
  }
  out.binary = control * 8 > n;
  return out;
}

bool is_rule(std::string_view s, char c) {
  if (s.size() < 40 || s.size() > 200) {
    return false;
  }
  for (char ch : s) {
    if (ch != c) {
      return false;
    }
  }
  return true;
}

std::vector<std::int64_t> parse_tuple(std::string_view s) {
  std::vector<std::int64_t> out;
  s = trim(s);
  if (starts(s, "(") || starts(s, "[")) {
    s.remove_prefix(1);
  }
  while (!s.empty() && out.size() < 16) {
    s = trim(s);
    const auto tok = digit_token(s);
    if (tok.empty()) {
      break;
    }
    if (auto v = parse_dec(tok)) {
      out.push_back(static_cast<std::int64_t>(*v));
    }
    s.remove_prefix(tok.size());
    s = trim(s);
    if (!starts(s, ",")) {
      break;
    }
    s.remove_prefix(1);
  }
  return out;
}

// `[ 1203.118204] `, `[Wed Oct  8 17:27:57 2026] `, `Mar 11 02:13:40 node7 kernel: `,
// `2026-03-11T02:13:40+0000 node7 kernel: `: the kernel log's own prefix, and its time.
std::string_view strip_log_prefix(std::string_view s, std::string& time) {
  if (starts(s, "[")) {
    const auto close = s.find(']');
    if (close != std::string_view::npos && close < 40) {
      const auto inner = trim(s.substr(1, close - 1));
      const bool uptime = !inner.empty() && is_digit(inner.front()) &&
                          inner.find('.') != std::string_view::npos &&
                          inner.find(' ') == std::string_view::npos;
      const bool wall =
          inner.size() >= 20 && inner[3] == ' ' && inner.find(':') != std::string_view::npos;
      if (uptime || wall) {
        time = std::string(inner);
        s.remove_prefix(close + 1);
        return trim(s);
      }
    }
  }
  const auto kernel = s.find(" kernel: ");
  if (kernel != std::string_view::npos && kernel < 80) {
    const auto head = s.substr(0, kernel);
    const auto sp = head.rfind(' ');
    if (sp != std::string_view::npos) {
      time = std::string(head.substr(0, sp));
    }
    s.remove_prefix(kernel + 9);
  }
  return s;
}

} // namespace

constexpr NameTable<Format, 4> kCrashFormatNames{{
    {Format::Text, "text"},
    {Format::DumpMetadata, "dump-metadata"},
    {Format::Diagnostics, "diagnostics"},
    {Format::DumpTensors, "dump-tensors"},
}};
static_assert(names_cover(kCrashFormatNames, Format::DumpTensors));

std::string_view to_string(Format format) {
  return name_of(kCrashFormatNames, format, "text");
}

constexpr NameTable<EventKind, 15> kEventKindNames{{
    {EventKind::PageFault, "page-fault"},
    {EventKind::RingTimeout, "ring-timeout"},
    {EventKind::GpuReset, "gpu-reset"},
    {EventKind::Xid, "xid"},
    {EventKind::MemoryAccessFault, "memory-access-fault"},
    {EventKind::CoreDump, "core-dump"},
    {EventKind::GpuError, "gpu-error"},
    {EventKind::OutOfMemory, "out-of-memory"},
    {EventKind::CollectiveTimeout, "collective-timeout"},
    {EventKind::ExitStatus, "exit-status"},
    {EventKind::GpuHang, "gpu-hang"},
    {EventKind::QueueAbort, "queue-abort"},
    {EventKind::QueueEvictFailure, "queue-evict-failure"},
    {EventKind::MesFailure, "mes-failure"},
    {EventKind::DebuggerDiagnostic, "debugger-diagnostic"},
}};
static_assert(names_cover(kEventKindNames, EventKind::DebuggerDiagnostic));

std::string_view to_string(EventKind kind) {
  return name_of(kEventKindNames, kind, "gpu-error");
}

bool is_hang(EventKind kind) {
  return kind == EventKind::GpuHang || kind == EventKind::QueueEvictFailure ||
         kind == EventKind::MesFailure || kind == EventKind::RingTimeout ||
         kind == EventKind::GpuReset;
}

bool Evidence::empty() const {
  return api.calls == 0 && events.empty() && dumps.empty() && !exit_code && gpu_arch.empty() &&
         last_kernel_boundary.empty();
}

struct TextReader::Impl {
  ReadOptions options;
  Evidence ev;
  std::string carry; // a line split across feeds (bounded by max_line_bytes)
  bool carry_cut = false;

  enum class BlockState : std::uint8_t { None, AfterHeader, Inputs, Output, SystemInfo };
  struct Stream {
    std::string key;
    std::optional<int> rank;
    std::optional<std::int64_t> pid; // `(Worker_TP3 pid=7)`
    BlockState state = BlockState::None;
    std::vector<ApiCall> open; // calls begun and not yet returned, innermost last
    std::uint64_t calls = 0;
    std::string last_completed;
    Argument* arg = nullptr; // the argument being read
    Tensor* tensor = nullptr;
    std::string list_path; // `[2]` inside a list argument
    std::string section;
    std::size_t last_line = 0;
    bool system_text = false; // the system-information block has shown its text
  };
  std::vector<Stream> streams;
  std::map<std::string, std::size_t, std::less<>> stream_index;
  std::map<std::string, std::size_t, std::less<>> open_fault; // device -> event index
  std::optional<std::size_t> last_ring_timeout;
  std::optional<std::size_t> abort_continues; // a CLR abort line cut after its `error :`
  std::size_t line_no = 0;
  int max_level = 0;

  explicit Impl(ReadOptions o) : options(std::move(o)) {
    ev.source = mi::lossy_utf8(options.source); // a path may hold any bytes
    ev.rank = options.rank;
    ev.formats.push_back(Format::Text);
    streams.push_back(Stream{});
    stream_index.emplace("", 0);
  }

  void warn(std::string message) {
    if (ev.warnings.size() < options.limits.max_warnings) {
      ev.warnings.push_back("line " + std::to_string(line_no) + ": " + std::move(message));
    } else {
      ++ev.counters.warnings_dropped;
    }
  }

  Event* add_event(EventKind kind, std::string_view text, std::optional<int> rank) {
    if (ev.events.size() >= options.limits.max_events) {
      ++ev.counters.events_dropped;
      return nullptr;
    }
    Event e;
    e.kind = kind;
    e.line = line_no;
    e.text = sanitize(trim(text));
    e.rank = rank;
    ev.events.push_back(std::move(e));
    return &ev.events.back();
  }

  // `[rank3]:` (torchrun), `(VllmWorker rank=3 pid=7) `, `(Worker_TP3 pid=7) `, `[1,3]<stderr>:`
  // (OpenMPI): a stream, by the one launcher-prefix rule the agent-log reader uses too
  // (source::launcher_prefix).
  Stream& stream_of(std::string_view& line) {
    std::string_view key;
    std::optional<int> rank;
    std::optional<std::int64_t> pid;
    std::size_t length = 0;
    if (auto p = source::launcher_prefix(line)) {
      key = p->key;
      rank = p->rank;
      pid = p->pid;
      length = p->length;
    }
    if (key.empty()) {
      return streams.front();
    }
    line.remove_prefix(length);
    auto it = stream_index.find(key);
    if (it != stream_index.end()) {
      return streams[it->second];
    }
    if (streams.size() >= options.limits.max_streams) {
      return streams.front();
    }
    Stream s;
    s.key = std::string(key);
    s.rank = rank;
    s.pid = pid;
    stream_index.emplace(s.key, streams.size());
    streams.push_back(std::move(s));
    return streams.back();
  }

  void feed(std::string_view bytes) {
    ev.counters.bytes += bytes.size();
    const std::size_t max = options.limits.max_line_bytes;
    while (!bytes.empty()) {
      const void* nl = std::memchr(bytes.data(), '\n', bytes.size());
      const std::size_t n =
          nl ? static_cast<std::size_t>(static_cast<const char*>(nl) - bytes.data()) : bytes.size();
      std::string_view piece = bytes.substr(0, n);
      if (!nl) {
        // No newline yet: keep what fits for the next feed.
        if (carry.size() < max) {
          carry.append(piece.substr(0, std::min(piece.size(), max - carry.size())));
        }
        carry_cut = carry_cut || carry.size() + piece.size() > max;
        return;
      }
      bytes.remove_prefix(n + 1);
      if (!carry.empty() || carry_cut) {
        if (carry.size() < max) {
          carry.append(piece.substr(0, std::min(piece.size(), max - carry.size())));
        }
        const bool cut = carry_cut || carry.size() + piece.size() > max;
        std::string whole = std::move(carry);
        carry.clear();
        carry_cut = false;
        line(whole, cut);
      } else {
        line(piece.substr(0, std::min(piece.size(), max)), piece.size() > max);
      }
    }
  }

  void line(std::string_view s, bool cut) {
    ++line_no;
    ++ev.counters.lines;
    if (cut) {
      ++ev.counters.long_lines;
      if (ev.counters.long_lines == 1) {
        warn("a line longer than " + std::to_string(options.limits.max_line_bytes) +
             " bytes was cut there (later ones are only counted)");
      }
    }
    if (!s.empty() && s.back() == '\r') {
      s.remove_suffix(1);
    }
    if (s.empty()) {
      return;
    }
    const Scan scan = scan_line(s);
    if (scan.binary) {
      ++ev.counters.binary_lines;
      return;
    }
    // Everything kept from a line ends up in JSON, which must be UTF-8; a log may hold any bytes
    // (and a cut line may end inside a character). ASCII markers survive the repair unchanged.
    std::string repaired;
    if (scan.high) {
      repaired = mi::lossy_utf8(s);
      s = repaired;
    }
    Stream& st = stream_of(s);
    if (st.state != BlockState::None && block_line(st, s)) {
      return;
    }
    if (abort_continues && abort_continuation(s)) {
      return;
    }
    const unsigned m = scan.markers;
    if (m == 0) {
      return;
    }
    if (m & kApiCall) {
      api_header(st, s);
      return;
    }
    if (m & kApiSystem) {
      st.state = BlockState::SystemInfo;
      st.system_text = false;
      return;
    }
    if (m & kLoggerError) {
      ++ev.api.logger_errors;
      return;
    }
    if (m & kWave) {
      const auto t = trim(s);
      if (starts(t, "wave_") && t.find("pc=0x") != std::string_view::npos) {
        ev.has_agent_dumps = true;
      }
    }
    if (m & kDbgapi) {
      debugger_line(s, st.rank);
      return;
    }
    if (m & kAbort) {
      if (queue_abort_line(s, st.rank)) {
        return;
      }
    }
    if (m & (kGpuLower | kNvrm)) {
      if (kernel_line(s, st.rank)) {
        return;
      }
    }
    runtime_line(s, m, st.rank);
  }

  // ---- API-call logs ----------------------------------------------------------------------

  void api_header(Stream& st, std::string_view s) {
    const auto call_at = s.find("API Call:");
    ApiCall call;
    call.function = sanitize(trim(s.substr(call_at + 9)), 256);
    call.line = line_no;
    call.stream = st.key;
    auto head = trim(s.substr(0, call_at));
    const auto open = head.find('[');
    const auto close = head.find(']');
    if (open != std::string_view::npos && close != std::string_view::npos && open < close &&
        close - open < 40) {
      call.timestamp = sanitize(head.substr(open + 1, close - open - 1), 40);
      head = trim(head.substr(close + 1));
    }
    call.library = sanitize(head, 64);
    if (call.function.empty()) {
      ++ev.counters.malformed;
      warn("an `API Call:` line without a function name; skipped");
      return;
    }
    call.sequence = ++st.calls;
    ++ev.api.calls;
    // A level-1 call is over once the next one begins; block calls stay open until their output.
    while (!st.open.empty() && st.open.back().level == 1) {
      st.last_completed = st.open.back().function;
      st.open.pop_back();
    }
    if (st.open.size() >= options.limits.max_open_calls) {
      st.open.erase(st.open.begin());
    }
    st.open.push_back(std::move(call));
    st.state = BlockState::AfterHeader;
    st.arg = nullptr;
    st.tensor = nullptr;
    st.last_line = line_no;
    max_level = std::max(max_level, 1);
  }

  // A line while a block is open. False: not part of the block (read it as an ordinary line).
  bool block_line(Stream& st, std::string_view s) {
    if (is_rule(s, '=')) {
      if (st.state == BlockState::SystemInfo && !st.system_text) {
        return true; // the rule between the block's title and its text
      }
      st.state = BlockState::None;
      st.arg = nullptr;
      st.tensor = nullptr;
      return true;
    }
    if (st.state == BlockState::SystemInfo) {
      st.system_text = true;
      if (ev.api.system_info.size() < 2048) {
        ev.api.system_info += sanitize(trim(s), 200);
        ev.api.system_info += '\n';
      }
      return true;
    }
    if (st.state == BlockState::AfterHeader) {
      if (is_rule(s, '-') && !st.open.empty()) {
        st.open.back().level = std::max(st.open.back().level, 3);
        max_level = std::max(max_level, 3);
        st.state = BlockState::Inputs;
        return true;
      }
      st.state = BlockState::None; // level 1: the header stands alone
      return false;
    }
    const std::size_t indent = indent_of(s);
    if (indent == 0) {
      if (starts(s, "Positional input arguments")) {
        st.section = "positional";
        st.state = BlockState::Inputs;
        return true;
      }
      if (starts(s, "Keyword input arguments")) {
        st.section = "keyword";
        st.state = BlockState::Inputs;
        return true;
      }
      if (starts(s, "Default parameters")) {
        st.section = "default";
        st.state = BlockState::Inputs;
        return true;
      }
      if (starts(s, "Output value")) {
        st.state = BlockState::Output;
        st.arg = nullptr;
        st.tensor = nullptr;
        if (!st.open.empty()) {
          st.last_completed = st.open.back().function;
          st.open.pop_back();
          ++ev.api.returned;
        }
        return true;
      }
      if (starts(s, "(no ") || starts(s, "No ")) {
        return true;
      }
      // Anything else at column 0 ends the block: a header, a traceback, another library's log.
      st.state = BlockState::None;
      st.arg = nullptr;
      st.tensor = nullptr;
      return false;
    }
    if (st.state == BlockState::Output || st.open.empty()) {
      return true;
    }
    ApiCall& call = st.open.back();
    const auto t = trim(s);
    if (indent <= 2) {
      // An argument: `arg[0]:`, `causal=`, `window_left= [DEFAULT]`, `scale=0.5`.
      if (call.inputs.size() >= options.limits.max_arguments) {
        ++call.inputs_dropped;
        st.arg = nullptr;
        st.tensor = nullptr;
        return true;
      }
      Argument a;
      a.section = st.section.empty() ? "positional" : st.section;
      const auto eq = t.find('=');
      if (t.ends_with(":") && eq == std::string_view::npos) {
        a.name = sanitize(t.substr(0, t.size() - 1), 128);
      } else if (eq != std::string_view::npos) {
        a.name = sanitize(trim(t.substr(0, eq)), 128);
        auto v = trim(t.substr(eq + 1));
        if (starts(v, "[DEFAULT]")) {
          v = trim(v.substr(9));
        }
        a.value = sanitize(v, 200);
      } else {
        a.name = sanitize(t, 128);
      }
      call.inputs.push_back(std::move(a));
      st.arg = &call.inputs.back();
      st.tensor = nullptr;
      st.list_path.clear();
      return true;
    }
    if (st.arg == nullptr) {
      return true;
    }
    Argument& a = *st.arg;
    if (starts(t, "Tensor(")) {
      if (a.tensors.size() >= options.limits.max_tensors) {
        st.tensor = nullptr;
        return true;
      }
      a.tensors.emplace_back();
      st.tensor = &a.tensors.back();
      st.tensor->path = st.list_path;
      if (t.size() > 7 && t != "Tensor(...)" && !t.ends_with("(")) {
        st.tensor = nullptr; // one-line form (level 1 style): nothing more to read
      }
      return true;
    }
    if (st.tensor != nullptr) {
      Tensor& x = *st.tensor;
      if (t == ")") {
        st.tensor = nullptr;
      } else if (starts(t, "shape=")) {
        x.shape = parse_tuple(t.substr(6));
      } else if (starts(t, "stride=")) {
        x.stride = parse_tuple(t.substr(7));
      } else if (starts(t, "dtype=")) {
        x.dtype = sanitize(t.substr(6), 64);
      } else if (starts(t, "device=")) {
        x.device = sanitize(t.substr(7), 32);
        if (ev.gpu.empty() && starts(x.device, "cuda:")) {
          ev.gpu = x.device;
        }
      } else if (starts(t, "is_contiguous=")) {
        x.contiguous = t.substr(14).starts_with("True");
      } else if (starts(t, "data_ptr=")) {
        x.data_ptr = parse_hex(hex_token(t.substr(9)));
      } else if (starts(t, "nan_count=")) {
        x.nan_count = parse_dec(digit_token(t.substr(10)));
      } else if (starts(t, "inf_count=")) {
        x.inf_count = parse_dec(digit_token(t.substr(10)));
      } else if (starts(t, "min=") || starts(t, "max=") || starts(t, "mean=")) {
        if (x.stats.size() < 160) {
          x.stats += (x.stats.empty() ? "" : " ") + sanitize(t.substr(0, t.find(' ')), 40);
        }
        call.level = std::max(call.level, 5);
        max_level = std::max(max_level, 5);
      } else if (starts(t, "[statistics skipped")) {
        x.graph_capture = t.find("graph capture") != std::string_view::npos;
        ev.api.graph_capture = ev.api.graph_capture || x.graph_capture;
        call.level = std::max(call.level, 5);
        max_level = std::max(max_level, 5);
      }
      return true;
    }
    if (starts(t, "[") && t.find("]:") != std::string_view::npos && t.find("]:") < 12) {
      st.list_path = sanitize(t.substr(0, t.find("]:") + 1), 16);
      const auto rest = trim(t.substr(t.find("]:") + 2));
      if (starts(rest, "Tensor(")) {
        return block_line(st, std::string(indent + 2, ' ') + std::string(rest));
      }
      return true;
    }
    if (starts(t, "'") && t.find("':") != std::string_view::npos) {
      st.list_path = "[" + sanitize(t.substr(0, t.find("':") + 1), 64) + "]";
      return true;
    }
    if (a.value.empty() && a.tensors.empty()) {
      a.value = sanitize(t, 200);
    }
    return true;
  }

  // ---- kernel logs ------------------------------------------------------------------------

  bool kernel_line(std::string_view s, std::optional<int> rank) {
    std::string time;
    const auto payload = strip_log_prefix(s, time);
    if (auto x = payload.find("NVRM: Xid ("); x != std::string_view::npos) {
      xid_line(payload.substr(x), time, rank);
      return true;
    }
    // `amdgpu 0000:83:00.0: amdgpu: MESSAGE` (or `[drm:amdgpu_job_timedout [amdgpu]] *ERROR* ...`)
    std::string device;
    std::string_view msg = payload;
    if (auto a = payload.find("amdgpu "); a != std::string_view::npos) {
      auto rest = payload.substr(a + 7);
      const auto colon = rest.find(": ");
      if (colon != std::string_view::npos && colon < 16 && rest.find(':') < colon) {
        device = std::string(rest.substr(0, colon));
        msg = rest.substr(colon + 2);
        if (starts(msg, "amdgpu: ")) {
          msg.remove_prefix(8);
        }
      }
    }
    if (msg.find("page fault") != std::string_view::npos &&
        (msg.find("[gfxhub") != std::string_view::npos ||
         msg.find("[mmhub") != std::string_view::npos)) {
      page_fault_header(msg, device, time, rank);
      return true;
    }
    if (auto it = open_fault.find(device); it != open_fault.end() && !device.empty()) {
      if (page_fault_detail(ev.events[it->second], msg)) {
        return true;
      }
      open_fault.erase(it);
    }
    if (msg.find("timeout") != std::string_view::npos &&
        (msg.find("ring ") != std::string_view::npos ||
         msg.find("amdgpu_job_timedout") != std::string_view::npos)) {
      if (Event* e = add_event(EventKind::RingTimeout, msg, rank)) {
        e->time = time;
        e->device = device;
        e->name = std::string(word_after(msg, "ring "));
        e->reason = "a GPU job did not finish within the driver's timeout";
        e->meaning = "the GPU stopped making progress on that ring (a hung or faulted kernel); "
                     "the driver will try a reset";
        last_ring_timeout = ev.events.size() - 1;
      }
      return true;
    }
    if (msg.find("Process information:") != std::string_view::npos && last_ring_timeout) {
      Event& e = ev.events[*last_ring_timeout];
      if (auto pid = number_after(msg, " pid ")) {
        e.pid = static_cast<std::int64_t>(*pid);
      }
      e.process = sanitize(word_after(msg, "process "), 64);
      return true;
    }
    if (kfd_mes_line(msg, device, time, rank)) {
      return true;
    }
    const bool reset = msg.find("GPU reset") != std::string_view::npos ||
                       msg.find("GPU recovery") != std::string_view::npos ||
                       msg.find(" is hung") != std::string_view::npos;
    if (reset) {
      if (Event* e = add_event(EventKind::GpuReset, msg, rank)) {
        e->time = time;
        e->device = device;
        e->name = msg.find("succeeded") != std::string_view::npos ? "reset succeeded"
                  : msg.find("failed") != std::string_view::npos  ? "reset failed"
                  : msg.find("begin") != std::string_view::npos   ? "reset begin"
                  : msg.find("is hung") != std::string_view::npos ? "hung"
                                                                  : "reset";
        e->meaning = "the driver reset the GPU: every process with work on it lost its context";
      }
      return true;
    }
    return false;
  }

  void page_fault_header(std::string_view msg, const std::string& device, const std::string& time,
                         std::optional<int> rank) {
    Event* e = add_event(EventKind::PageFault, msg, rank);
    if (e == nullptr) {
      open_fault.erase(device);
      return;
    }
    e->time = time;
    e->device = device;
    PageFaultDetail f;
    const auto hub_at = msg.find('[');
    const auto hub_end = msg.find(']', hub_at);
    if (hub_end != std::string_view::npos && hub_end - hub_at < 16) {
      f.hub = std::string(msg.substr(hub_at + 1, hub_end - hub_at - 1));
    }
    f.retry = msg.find("retry") != std::string_view::npos;
    f.src_id = number_after(msg, "src_id:");
    f.ring = number_after(msg, "ring:");
    f.vmid = number_after(msg, "vmid:");
    f.pasid = number_after(msg, "pasid:");
    e->fault = std::move(f);
    page_fault_detail(*e, msg); // `, for process NAME pid N thread NAME pid M)` on the header
    e->name = e->fault->hub + (e->fault->retry ? " retry page fault" : " page fault");
    open_fault[device] = ev.events.size() - 1;
  }

  // One detail line of an open page-fault block. False: not one of its lines.
  bool page_fault_detail(Event& e, std::string_view msg) {
    PageFaultDetail& f = *e.fault;
    const auto t = trim(msg);
    auto proc = t.find("rocess ");
    if (proc != std::string_view::npos && t.find(" pid ") != std::string_view::npos) {
      // ` Process NAME pid N thread NAME pid M`, `in process ...`, `for process ...`
      auto rest = t.substr(proc + 7);
      const auto pid_at = rest.find(" pid ");
      e.process = sanitize(rest.substr(0, pid_at), 64);
      if (auto pid = parse_dec(digit_token(rest.substr(pid_at + 5)))) {
        e.pid = static_cast<std::int64_t>(*pid);
      } else {
        ++ev.counters.malformed;
      }
      const auto thread = rest.find("thread ");
      if (thread != std::string_view::npos) {
        auto trest = rest.substr(thread + 7);
        const auto tpid = trest.find(" pid ");
        f.thread = sanitize(trest.substr(0, tpid), 64);
        if (tpid != std::string_view::npos) {
          if (auto tid = parse_dec(digit_token(trest.substr(tpid + 5)))) {
            f.tid = static_cast<std::int64_t>(*tid);
          }
        }
      }
      if (t.find("page starting") == std::string_view::npos) {
        return true;
      }
    }
    if (auto p = t.find("address 0x"); p != std::string_view::npos) {
      e.address = parse_hex(hex_token(t.substr(p + 8)));
      if (!e.address) {
        ++ev.counters.malformed;
      }
      if (auto c = t.find("from client "); c != std::string_view::npos) {
        f.client = sanitize(trim(t.substr(c + 12)), 64);
      }
      return true;
    }
    if (auto p = t.find("_PROTECTION_FAULT_STATUS:"); p != std::string_view::npos) {
      const auto start = t.rfind(' ', p);
      f.status_register =
          sanitize(t.substr(start == std::string_view::npos ? 0 : start + 1,
                            p + 24 - (start == std::string_view::npos ? 0 : start + 1)),
                   64);
      if (auto v = parse_hex(hex_token(trim(t.substr(p + 25))))) {
        f.status = static_cast<std::uint32_t>(*v);
      }
      return true;
    }
    if (auto p = t.find("Faulty UTCL2 client ID:"); p != std::string_view::npos) {
      f.utcl2_client = sanitize(trim(t.substr(p + 23)), 64);
      return true;
    }
    struct Field {
      std::string_view key;
      std::optional<std::uint32_t> PageFaultDetail::*member;
    };
    static constexpr Field kFields[] = {{"MORE_FAULTS:", &PageFaultDetail::more_faults},
                                        {"WALKER_ERROR:", &PageFaultDetail::walker_error},
                                        {"PERMISSION_FAULTS:", &PageFaultDetail::permission_faults},
                                        {"MAPPING_ERROR:", &PageFaultDetail::mapping_error},
                                        {"RW:", &PageFaultDetail::rw}};
    for (const auto& field : kFields) {
      if (t.starts_with(field.key)) {
        if (auto v = parse_hex(hex_token(trim(t.substr(field.key.size()))))) {
          f.*field.member = static_cast<std::uint32_t>(*v);
        }
        return true;
      }
    }
    return false;
  }

  void xid_line(std::string_view s, const std::string& time, std::optional<int> rank) {
    Event* e = add_event(EventKind::Xid, s, rank);
    if (e == nullptr) {
      return;
    }
    e->time = time;
    if (auto pci = s.find("(PCI:"); pci != std::string_view::npos) {
      const auto close = s.find(')', pci);
      if (close != std::string_view::npos && close - pci < 32) {
        e->device = sanitize(s.substr(pci + 5, close - pci - 5), 32);
      }
    }
    const auto colon = s.find("): ");
    if (colon != std::string_view::npos) {
      if (auto n = parse_dec(digit_token(s.substr(colon + 3)))) {
        e->number = static_cast<std::int64_t>(*n);
        e->name = "Xid " + std::to_string(*n);
        e->meaning = std::string(explain_xid(static_cast<std::int64_t>(*n)));
      }
    }
    if (!e->number) {
      ++ev.counters.malformed;
      e->name = "Xid";
    }
    if (auto pid = number_after(s, "pid=")) {
      e->pid = static_cast<std::int64_t>(*pid);
    }
    e->process = sanitize(word_after(s, "name="), 64);
    if (auto m = s.find(". "); m != std::string_view::npos && m > colon) {
      e->reason = sanitize(trim(s.substr(m + 2)), 200);
    }
  }

  // ---- GPU hangs, queue aborts, KFD/MES, debugger diagnostics --------------------------------

  // A loop of the same kernel message (KFD retries every few seconds): one event, counted.
  Event* repeat_or_add(EventKind kind, std::string_view text, std::string_view name,
                       const std::string& device, std::optional<int> rank) {
    for (auto it = ev.events.rbegin(); it != ev.events.rend() && it - ev.events.rbegin() < 8;
         ++it) {
      if (it->kind == kind && it->name == name && it->device == device) {
        it->number = it->number.value_or(1) + 1;
        return nullptr;
      }
    }
    Event* e = add_event(kind, text, rank);
    if (e != nullptr) {
      e->name = std::string(name);
      e->device = device;
      e->number = 1;
    }
    return e;
  }

  // KFD's preemption time-outs and MES queue-removal failures: the GPU no longer takes queues
  // off; no process is named (amdgpu/amdkfd, shared/reference/rocgdb-real-formats.md).
  bool kfd_mes_line(std::string_view msg, const std::string& device, const std::string& time,
                    std::optional<int> rank) {
    struct Pattern {
      std::string_view text;
      EventKind kind;
      std::string_view name;
    };
    static constexpr Pattern kPatterns[] = {
        {"Queue preemption time out", EventKind::QueueEvictFailure, "queue preemption time out"},
        {"Failed to evict process queues", EventKind::QueueEvictFailure,
         "failed to evict process queues"},
        {"Failed to evict queue", EventKind::QueueEvictFailure, "failed to evict queue"},
        {"Failed to quiesce KFD", EventKind::QueueEvictFailure, "failed to quiesce KFD"},
        {"Failed to restore process queues", EventKind::QueueEvictFailure,
         "failed to restore process queues"},
        {"MES failed to respond to msg=", EventKind::MesFailure, "MES did not respond"},
        {"failed to remove hardware queue from MES", EventKind::MesFailure,
         "MES failed to remove a hardware queue"},
        {"MES might be in unrecoverable state", EventKind::MesFailure,
         "MES in an unrecoverable state"},
    };
    for (const auto& p : kPatterns) {
      const auto found = msg.find(p.text);
      if (found == std::string_view::npos) {
        continue;
      }
      std::string name(p.name);
      if (p.kind == EventKind::MesFailure) {
        if (msg.find("msg=") != std::string_view::npos) {
          name = "MES did not respond to " + sanitize(word_after(msg, "msg="), 32);
        }
      }
      if (Event* e = repeat_or_add(p.kind, msg, name, device, rank)) {
        e->time = time;
        e->reason = sanitize(trim(msg.substr(found)), 200);
        e->meaning =
            p.kind == EventKind::MesFailure
                ? "the GPU's scheduler firmware (MES) stopped answering the driver: the GPU is "
                  "hung and the driver will reset it; every process on it loses its work"
                : "the driver could not take a process's queues off the GPU (a kernel that never "
                  "yields, or a hung GPU): the GPU is stuck and a reset usually follows";
      }
      return true;
    }
    return false;
  }

  // `:0:rocdevice.cpp :2984: 1234567 us: 4411: [tid:0x7f...] Device::callbackQueue aborting with
  // error : HSA_STATUS_ERROR_EXCEPTION: An HSAIL operation ... code: 0x1016` (older) and
  // `... [pid:4411 tid:0x7f...] Callback: Queue 0x7f... aborting with error : ... code: 0x29`.
  bool queue_abort_line(std::string_view s, std::optional<int> rank) {
    auto ab = s.find("aborting with error");
    std::size_t skip = 19;
    if (ab == std::string_view::npos) {
      ab = s.find("aborting with status"); // ROCm 4: `... aborting with status: 0x100f`
      skip = 20;
    }
    if (ab == std::string_view::npos) {
      return false;
    }
    Event* e = add_event(EventKind::QueueAbort, s, rank);
    if (e == nullptr) {
      return true;
    }
    if (auto pid = number_after(s, "[pid:")) {
      e->pid = static_cast<std::int64_t>(*pid);
    } else if (auto us = s.find(" us: "); us != std::string_view::npos && us < ab) {
      if (auto p = parse_dec(digit_token(s.substr(us + 5)))) {
        e->pid = static_cast<std::int64_t>(*p);
      }
    }
    if (auto q = s.find("Queue 0x"); q != std::string_view::npos && q < ab) {
      e->device = "queue " + sanitize(word_after(s.substr(q), "Queue "), 24);
    }
    std::string_view rest = s.substr(ab + skip);
    while (!rest.empty() && (rest.front() == ' ' || rest.front() == ':')) {
      rest.remove_prefix(1);
    }
    const auto code = rest.rfind(" code: ");
    std::string_view text = code == std::string_view::npos ? rest : rest.substr(0, code);
    const auto colon = text.find(':');
    e->name = sanitize(trim(text.substr(0, colon)), 64);
    e->reason = sanitize(trim(text), 200);
    if (code != std::string_view::npos) {
      if (auto c = parse_hex(hex_token(rest.substr(code + 7)))) {
        e->number = static_cast<std::int64_t>(*c);
      }
    }
    if (skip == 20 && !text.empty() && text.front() == '0') { // `with status: 0x100f`
      if (auto v = parse_hex(hex_token(text))) {
        e->number = static_cast<std::int64_t>(*v);
      }
      e->name = "status " + e->name;
    }
    e->meaning = "the HIP runtime aborted the process because a GPU queue reported an error (a "
                 "fault or a hardware exception in a kernel on that queue)";
    // A terminal overlay can cut the line after `aborting with error :`: the next line has it.
    if (text.empty()) {
      abort_continues = ev.events.size() - 1;
    }
    return true;
  }

  // The second half of a cut CLR abort line: `HSA_STATUS_ERROR_EXCEPTION: ... code: 0x1016`.
  bool abort_continuation(std::string_view s) {
    const std::size_t index = *abort_continues;
    abort_continues.reset();
    const auto t = trim(s);
    if (!starts(t, "HSA_STATUS_") || index >= ev.events.size()) {
      return false;
    }
    Event& e = ev.events[index];
    const auto code = t.rfind(" code: ");
    const std::string_view text = code == std::string_view::npos ? t : t.substr(0, code);
    e.name = sanitize(trim(text.substr(0, text.find(':'))), 64);
    e.reason = sanitize(trim(text), 200);
    if (code != std::string_view::npos) {
      if (auto c = parse_hex(hex_token(t.substr(code + 7)))) {
        e.number = static_cast<std::int64_t>(*c);
      }
    }
    return true;
  }

  // amd-dbgapi and ROCgdb, whatever prefix printed them (`amd-dbgapi: warning:`, `rocm-dbgapi:`,
  // `warning:`, `fatal error:`).
  void debugger_line(std::string_view s, std::optional<int> rank) {
    struct Pattern {
      std::string_view text;
      std::string_view name;
      std::string_view meaning;
    };
    static constexpr Pattern kPatterns[] = {
        {"At least one agent is busy", "agent busy",
         "another tool holds the GPU debugger hook (rocm-debug-agent via HSA_TOOLS_LIB, another "
         "debugger or profiler): run rocgdb without it"},
        {"Per-queue memory", "per-queue memory missing",
         "the amdgpu driver or its firmware was loaded without debugger support: update the "
         "driver (or enable it) before debugging GPU waves"},
        {"Could not attach to process", "could not attach",
         "the debugger library could not attach to the process's GPU state (its ROCr runtime not "
         "loaded yet, another tool attached, or too old a driver)"},
        {"queue_snapshot failed", "queue snapshot failed",
         "the debugger could not list the GPU queues: the GPU or the driver may be hung"},
    };
    for (const auto& p : kPatterns) {
      if (s.find(p.text) == std::string_view::npos) {
        continue;
      }
      for (auto it = ev.events.rbegin(); it != ev.events.rend(); ++it) {
        if (it->kind == EventKind::DebuggerDiagnostic && it->name == p.name) {
          it->number = it->number.value_or(1) + 1;
          return;
        }
      }
      if (Event* e = add_event(EventKind::DebuggerDiagnostic, s, rank)) {
        e->name = std::string(p.name);
        e->meaning = std::string(p.meaning);
        e->number = 1;
        if (auto pid = number_after(s, "attach to process ")) {
          e->pid = static_cast<std::int64_t>(*pid);
        }
        if (auto rc = s.find("(rc="); rc != std::string_view::npos) {
          e->reason = sanitize(s.substr(rc, std::min<std::size_t>(16, s.size() - rc)), 32);
        }
      }
      return;
    }
  }

  // ---- runtime messages -------------------------------------------------------------------

  void runtime_line(std::string_view s, unsigned m, std::optional<int> rank) {
    if (m & kGpuUpper) {
      // Repeated once per process, sometimes glued to other output (progress bars).
      if (auto p = s.find("HW Exception by GPU"); p != std::string_view::npos) {
        auto rest = s.substr(p);
        if (Event* e = add_event(EventKind::GpuHang, rest, rank)) {
          e->device = sanitize(word_after(rest, "by GPU "), 32);
          if (auto r = rest.find("reason :"); r != std::string_view::npos) {
            e->reason = sanitize(trim(rest.substr(r + 8)), 120);
          } else if (auto r2 = rest.find("reason:"); r2 != std::string_view::npos) {
            e->reason = sanitize(trim(rest.substr(r2 + 7)), 120);
          }
          e->name = e->reason.find("Hang") != std::string::npos ? "GPU hang" : "HW exception";
          e->meaning = "the HSA runtime saw the GPU stop responding (a hardware exception or a "
                       "kernel that never finished) and aborted the process; the driver resets "
                       "the GPU";
          if (ev.gpu.empty() && !e->device.empty()) {
            ev.gpu = e->device;
          }
        }
        return;
      }
      // libomptarget: `OFFLOAD ERROR: memory access fault by GPU 4 (agent 0x...) at virtual
      // address 0x...`
      if (auto p = s.find("memory access fault by GPU"); p != std::string_view::npos) {
        auto rest = s.substr(p);
        if (Event* e = add_event(EventKind::MemoryAccessFault,
                                 s.substr(s.find("OFFLOAD") < p ? s.find("OFFLOAD") : p), rank)) {
          e->device = "GPU " + sanitize(word_after(rest, "by GPU "), 16);
          if (auto a = rest.find("virtual address "); a != std::string_view::npos) {
            e->address = parse_hex(hex_token(rest.substr(a + 16)));
          }
          if (auto r = rest.find("Reasons: "); r != std::string_view::npos) {
            e->reason = sanitize(trim(rest.substr(r + 9)), 200);
          }
          e->name = "memory access fault";
          e->meaning = "a kernel made an access the GPU's memory manager refused (libomptarget)";
          if (ev.gpu.empty()) {
            ev.gpu = e->device;
          }
        }
        return;
      }
      if (auto p = s.find("Memory access fault by GPU"); p != std::string_view::npos) {
        auto rest = s.substr(p);
        Event* e = add_event(EventKind::MemoryAccessFault, rest, rank);
        if (e == nullptr) {
          return;
        }
        e->device = sanitize(word_after(rest, "by GPU "), 32);
        if (auto a = rest.find("on address "); a != std::string_view::npos) {
          e->address = parse_hex(hex_token(rest.substr(a + 11)));
        }
        if (!e->address) {
          ++ev.counters.malformed;
          warn("a memory-access-fault line without its address");
        }
        if (auto r = rest.find("Reason: "); r != std::string_view::npos) {
          e->reason = sanitize(trim(rest.substr(r + 8)), 200);
        }
        e->name = "memory access fault";
        e->meaning = starts(e->reason, "Write access to a read-only")
                         ? "a kernel wrote to memory mapped read-only"
                     : starts(e->reason, "Page not present")
                         ? "a kernel touched an address with no memory behind it: out of bounds, "
                           "freed, or a bad pointer"
                         : "a kernel made an access the GPU's memory manager refused";
        if (ev.gpu.empty() && !e->device.empty()) {
          ev.gpu = e->device;
        }
        return;
      }
      if (auto p = s.find("GPU core dump");
          p != std::string_view::npos && (s.find("created", p) != std::string_view::npos ||
                                          s.find("failed", p) != std::string_view::npos)) {
        auto rest = s.substr(p);
        if (Event* e = add_event(EventKind::CoreDump, rest, rank)) {
          const bool failed = rest.find("failed") != std::string_view::npos;
          e->name = failed ? "core dump failed" : "core dump created";
          if (auto c = rest.find("gpucore."); c != std::string_view::npos) {
            e->reason = sanitize(word_after(rest, "created: "), 128);
            if (auto pid = parse_dec(digit_token(rest.substr(c + 8)))) {
              e->pid = static_cast<std::int64_t>(*pid);
            }
          }
        }
        return;
      }
    }
    if (m & kWatchdog) {
      if (auto p = s.find("atchdog caught collective operation timeout");
          p != std::string_view::npos) {
        if (Event* e = add_event(EventKind::CollectiveTimeout, s.substr(p > 0 ? p - 1 : 0), rank)) {
          e->name = sanitize(word_after(s, "OpType="), 32);
          if (auto seq = number_after(s, "SeqNum=")) {
            e->number = static_cast<std::int64_t>(*seq);
          }
          if (auto r = number_after(s, "[Rank "); r && *r < 1u << 20) {
            e->rank = static_cast<int>(*r);
          }
          if (auto ms = number_after(s, "ran for ")) {
            e->reason = "ran for " + std::to_string(*ms) + " ms before timing out";
          }
          e->meaning = "this rank waited in a collective for a peer that never arrived: the "
                       "peer failed or hung first; this rank is a victim, not the cause";
        }
        return;
      }
    }
    if (m & (kError | kOom)) {
      if (gpu_error(s, rank)) {
        return;
      }
    }
    if (m & (kExit | kSegv | kKilled)) {
      exit_line(s, m, rank);
    }
  }

  bool gpu_error(std::string_view s, std::optional<int> rank) {
    std::string name;
    std::string reason;
    for (std::string_view prefix : {std::string_view("hipError"), std::string_view("cudaError")}) {
      if (auto p = s.find(prefix); p != std::string_view::npos && name.empty()) {
        std::size_t end = p;
        while (end < s.size() && detail::is_ident(s[end]) && end - p < 64) {
          ++end;
        }
        if (end > p + prefix.size()) {
          name = std::string(s.substr(p, end - p));
        }
      }
    }
    for (std::string_view prefix :
         {std::string_view("HIP error: "), std::string_view("CUDA error: "),
          std::string_view("hip error: ")}) {
      if (auto p = s.find(prefix); p != std::string_view::npos) {
        reason = sanitize(trim(s.substr(p + prefix.size())), 200);
        if (name.empty()) {
          name = name_of_message(reason, starts(prefix, "CUDA"));
        }
        break;
      }
    }
    const bool torch_oom =
        s.find("OutOfMemoryError") != std::string_view::npos ||
        (s.find(" out of memory") != std::string_view::npos &&
         (s.find("HIP") != std::string_view::npos || s.find("CUDA") != std::string_view::npos));
    if (torch_oom || name == "hipErrorOutOfMemory" || name == "cudaErrorMemoryAllocation") {
      Event* e = add_event(EventKind::OutOfMemory, s, rank);
      if (e != nullptr) {
        e->name = name.empty() ? "OutOfMemoryError" : name;
        if (auto t = s.find("Tried to allocate "); t != std::string_view::npos) {
          auto rest = s.substr(t + 18);
          e->reason = "tried to allocate " + sanitize(rest.substr(0, rest.find(". ")), 40);
        }
        if (auto g = number_after(s, "GPU "); g && *g < 4096) {
          e->device = "GPU " + std::to_string(*g);
        }
        e->meaning = std::string(explain_gpu_error("hipErrorOutOfMemory"));
      }
      return true;
    }
    if (name.empty()) {
      if (s.find("no kernel image is available") != std::string_view::npos) {
        name = "cudaErrorNoKernelImageForDevice";
      } else {
        return false;
      }
    }
    Event* e = add_event(EventKind::GpuError, s, rank);
    if (e != nullptr) {
      e->name = name;
      e->reason = reason;
      e->meaning = std::string(explain_gpu_error(name));
    }
    return true;
  }

  static std::string name_of_message(std::string_view msg, bool cuda) {
    struct Known {
      std::string_view text;
      std::string_view hip;
      std::string_view cuda;
    };
    static constexpr Known kKnown[] = {
        {"illegal memory access", "hipErrorIllegalAddress", "cudaErrorIllegalAddress"},
        {"device-side assert", "hipErrorAssert", "cudaErrorAssert"},
        {"out of memory", "hipErrorOutOfMemory", "cudaErrorMemoryAllocation"},
        {"no kernel image", "hipErrorNoBinaryForGpu", "cudaErrorNoKernelImageForDevice"},
        {"no binary for gpu", "hipErrorNoBinaryForGpu", "cudaErrorNoKernelImageForDevice"},
        {"invalid device function", "hipErrorInvalidDeviceFunction",
         "cudaErrorInvalidDeviceFunction"},
        {"unspecified launch failure", "hipErrorLaunchFailure", "cudaErrorLaunchFailure"},
        {"launch failure", "hipErrorLaunchFailure", "cudaErrorLaunchFailure"},
        {"too many resources requested", "hipErrorLaunchOutOfResources",
         "cudaErrorLaunchOutOfResources"},
        {"illegal instruction", "hipErrorIllegalInstruction", "cudaErrorIllegalInstruction"},
        {"misaligned address", "hipErrorMisalignedAddress", "cudaErrorMisalignedAddress"},
        {"the launch timed out", "hipErrorLaunchTimeOut", "cudaErrorLaunchTimeout"},
    };
    std::string lower(msg);
    for (char& c : lower) {
      c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
    }
    for (const auto& k : kKnown) {
      if (lower.find(k.text) != std::string::npos) {
        return std::string(cuda ? k.cuda : k.hip);
      }
    }
    return cuda ? "CUDA error" : "HIP error";
  }

  void exit_line(std::string_view s, unsigned m, std::optional<int> rank) {
    std::optional<std::int64_t> status;
    std::string name;
    if (m & kSegv) {
      status = 139;
      name = "SIGSEGV";
    } else if ((m & kKilled) && trim(s) == "Killed") {
      status = 137;
      name = "SIGKILL";
    } else if (m & kExit) {
      // `exit code 139`, `exited with code 137`, torchrun's `exitcode  : -11 (pid: 4411)`
      for (std::string_view key :
           {std::string_view("exitcode"), std::string_view("exit code"),
            std::string_view("exit status"), std::string_view("exited with code")}) {
        const auto p = s.find(key);
        if (p == std::string_view::npos) {
          continue;
        }
        auto rest = s.substr(p + key.size());
        while (!rest.empty() && (rest.front() == ' ' || rest.front() == ':' ||
                                 rest.front() == '=' || rest.front() == '\t')) {
          rest.remove_prefix(1);
        }
        const bool negative = starts(rest, "-");
        if (negative) {
          rest.remove_prefix(1);
        }
        if (auto v = parse_dec(digit_token(rest)); v && *v < 512) {
          // A negative exit code is the signal (torch.multiprocessing): -11 is SIGSEGV = 139.
          status = negative ? 128 + static_cast<std::int64_t>(*v) : static_cast<std::int64_t>(*v);
        }
        break;
      }
      if (!status || *status == 0) {
        return;
      }
    } else {
      return;
    }
    Event* e = add_event(EventKind::ExitStatus, s, rank);
    if (e == nullptr) {
      return;
    }
    e->number = *status;
    e->name = name.empty() ? "exit " + std::to_string(*status) : name;
    e->meaning = std::string(explain_exit_status(static_cast<int>(*status)));
    if (auto pid = number_after(s, "pid: ")) {
      e->pid = static_cast<std::int64_t>(*pid);
    }
    if (!ev.exit_code) {
      ev.exit_code = static_cast<int>(*status);
    }
  }

  Evidence finish() {
    if (!carry.empty() || carry_cut) {
      std::string last = std::move(carry);
      carry.clear();
      line(last, carry_cut);
    }
    // The suspect: the innermost call still open in the stream that logged last.
    const Stream* last = nullptr;
    for (const Stream& st : streams) {
      if (!st.open.empty() && (last == nullptr || st.open.back().line > last->open.back().line)) {
        last = &st;
      }
    }
    ev.api.level = max_level;
    if (last != nullptr) {
      ev.api.suspect = last->open.back();
      for (std::size_t i = 0; i + 1 < last->open.size(); ++i) {
        ev.api.open_callers.push_back(last->open[i].function);
      }
      ev.api.library = ev.api.suspect->library;
      ev.api.last_completed = last->last_completed;
      if (!ev.rank && last->rank) {
        ev.rank = last->rank;
      }
      if (!ev.pid && last->pid) {
        ev.pid = last->pid;
      }
    } else {
      for (const Stream& st : streams) {
        if (!st.last_completed.empty()) {
          ev.api.last_completed = st.last_completed;
        }
      }
    }
    if (ev.api.calls > 0 && !ev.pid && !ev.rank) {
      // `%i` in the log destination is the process id: `kernel_api_rank%i.log`.
      const std::string stem = std::filesystem::path(ev.source).stem().string();
      std::size_t end = stem.size();
      while (end > 0 && !is_digit(stem[end - 1])) {
        --end;
      }
      std::size_t begin = end;
      while (begin > 0 && is_digit(stem[begin - 1]) && end - begin < 9) {
        --begin;
      }
      if (auto v = parse_dec(std::string_view(stem).substr(begin, end - begin))) {
        ev.pid = static_cast<std::int64_t>(*v);
      }
    }
    if (ev.counters.binary_lines > 0) {
      warn(std::to_string(ev.counters.binary_lines) + " binary line(s) skipped");
    }
    return std::move(ev);
  }
};

TextReader::TextReader(ReadOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {}
TextReader::~TextReader() = default;
void TextReader::feed(std::string_view bytes) {
  impl_->feed(bytes);
}
Evidence TextReader::finish() {
  return impl_->finish();
}

Evidence read_text(std::string_view text, const ReadOptions& options) {
  TextReader reader(options);
  reader.feed(text);
  return reader.finish();
}

} // namespace rocplay::crash
