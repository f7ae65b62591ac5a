// snapshot::Builder: exchanges in, one Snapshot out (see dialect.hpp for the protocol).
#include "rocplay/snapshot/deferred_code.hpp"
#include "rocplay/snapshot/python_stacks.hpp"
#include "rocplay/snapshot/snapshot.hpp"
#include "snapshot/cuda_api_errors.hpp"
#include "snapshot/dialect.hpp"
#include "snapshot/fault.hpp"
#include "snapshot/text.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <charconv>
#include <map>
#include <set>
#include <unordered_map>
#include <unordered_set>

namespace rocplay::snapshot {

bool has_marker(const mi::Exchange& exchange, const Markers& markers) {
  const auto holds_one = [](std::string_view line, std::span<const std::string_view> texts) {
    return std::any_of(texts.begin(), texts.end(),
                       [&](std::string_view t) { return line.find(t) != std::string_view::npos; });
  };
  for (const auto& rec : exchange.records) {
    switch (rec.kind()) {
    case mi::RecordKind::Exec:
      if (markers.in_exec && holds_one(rec.line(), markers.results)) {
        return true;
      }
      break;
    case mi::RecordKind::Result:
      if (holds_one(rec.line(), markers.results)) {
        return true;
      }
      break;
    case mi::RecordKind::Console:
      if (holds_one(rec.line(), markers.console)) {
        return true;
      }
      break;
    default:
      break;
    }
  }
  return false;
}
namespace {

struct Counters {
  std::atomic<std::uint64_t> builders{0}, added{0}, finished{0}, peeked{0};
};
Counters& counters() {
  static Counters c;
  return c;
}

bool contains_nocase(std::string_view hay, std::string_view needle) {
  auto it = std::search(hay.begin(), hay.end(), needle.begin(), needle.end(), [](char a, char b) {
    return std::tolower(static_cast<unsigned char>(a)) ==
           std::tolower(static_cast<unsigned char>(b));
  });
  return it != hay.end();
}

// A meta `debugger` value: a kind name, or the path of the binary that ran.
DebuggerKind kind_of_meta(std::string_view v) {
  auto slash = v.rfind('/');
  auto base = slash == std::string_view::npos ? v : v.substr(slash + 1);
  if (base == "rocgdb" || base == "rocm-gdb") {
    return DebuggerKind::RocGdb;
  }
  if (base == "cuda-gdb") {
    return DebuggerKind::CudaGdb;
  }
  if (text::starts_with(base, "gdb")) {
    return DebuggerKind::Gdb;
  }
  return debugger_kind_from_string(base);
}

} // namespace

const std::string& BuildState::console(const mi::Exchange& exchange) {
  if (console_of_ != &exchange) {
    console_ = text::console(exchange);
    console_of_ = &exchange;
  }
  return console_;
}

void apply_meta(Snapshot& s, std::string_view meta_json) {
  if (text::trim(meta_json).empty()) {
    return;
  }
  auto j = nlohmann::json::parse(meta_json, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    s.warnings.push_back("recording meta is not a JSON object; ignored");
    return;
  }
  auto bad = [&](const char* key) {
    s.warnings.push_back(fmt::format("recording meta: `{}` has the wrong type; ignored", key));
  };
  if (auto it = j.find("pid"); it != j.end()) {
    if (it->is_number_integer()) {
      s.pid = it->get<std::int64_t>();
    } else if (it->is_string()) {
      if (auto v = text::parse_i64(it->get<std::string>())) {
        s.pid = *v;
      } else {
        bad("pid");
      }
    } else {
      bad("pid");
    }
  }
  if (auto it = j.find("rank"); it != j.end()) {
    if (it->is_number_integer() && it->get<std::int64_t>() >= 0 &&
        it->get<std::int64_t>() < (1 << 24)) {
      s.rank = static_cast<int>(it->get<std::int64_t>());
    } else {
      bad("rank");
    }
  }
  auto str = [&](const char* key, std::string& out) {
    if (auto it = j.find(key); it != j.end()) {
      if (it->is_string()) {
        out = it->get<std::string>();
      } else {
        bad(key);
      }
    }
  };
  str("label", s.label);
  str("taken_at", s.taken_at);
  if (s.taken_at.empty()) {
    str("started_at", s.taken_at);
  }
  str("debugger_version", s.debugger_version);
  // docs/transcript-format.md: `debugger` is {kind, path, version, mi}; a bare kind name or path
  // is accepted too.
  if (auto it = j.find("debugger"); it != j.end()) {
    auto take_kind = [&](const std::string& v) {
      if (auto k = kind_of_meta(v); k != DebuggerKind::Unknown) {
        s.debugger = k;
      }
    };
    if (it->is_string()) {
      take_kind(it->get<std::string>());
    } else if (it->is_object()) {
      for (const char* key : {"path", "kind"}) { // kind wins over what the path suggests
        if (auto k = it->find(key); k != it->end() && k->is_string()) {
          take_kind(k->get<std::string>());
        }
      }
      if (auto v = it->find("version");
          v != it->end() && v->is_string() && s.debugger_version.empty()) {
        s.debugger_version = v->get<std::string>();
      }
    } else {
      bad("debugger");
    }
  }
  if (auto it = j.find("stop_seconds"); it != j.end()) {
    if (it->is_number()) {
      s.stop_seconds = it->get<double>();
    } else {
      bad("stop_seconds");
    }
  }
  if (auto it = j.find("env"); it != j.end()) {
    if (it->is_object()) {
      for (const auto& [k, v] : it->items()) {
        if (v.is_string()) {
          s.env[k] = v.get<std::string>();
        } else {
          bad("env");
        }
      }
    } else {
      bad("env");
    }
  }
}

struct Builder::Impl {
  BuildOptions options;
  BuildState state;
  std::unique_ptr<Dialect> gdb = make_gdb_dialect();
  std::unique_ptr<Dialect> rocgdb = make_rocgdb_dialect();
  std::unique_ptr<Dialect> cuda = make_cuda_gdb_dialect();
  FaultReader faults;
  CodeNoteReader code_notes; // windows decoded after the detach
  PythonNoteReader python;   // Python frames read in the stop (rocplay/snapshot/python_stacks.hpp)
  // Thread names from the session's `thread names:` notes: a stop by copy's core file carries
  // none, so the session writes /proc's (session_copy.cpp). By LWP; bounded.
  std::map<std::uint64_t, std::string> copied_names;
  DebuggerKind kind = DebuggerKind::Unknown;
  bool rocgdb_used = false;
  bool cuda_used = false;

  explicit Impl(BuildOptions o) : options(std::move(o)) {
    counters().builders.fetch_add(1, std::memory_order_relaxed);
    apply_meta(state.snapshot, options.meta_json);
    kind = options.debugger != DebuggerKind::Unknown ? options.debugger : state.snapshot.debugger;
    if (!options.label.empty()) {
      state.snapshot.label = options.label;
    }
  }

  // Only rocgdb and cuda-gdb are sticky: a plain `GNU gdb` banner may still show AMD waves
  // (upstream GDB 13+ debugs AMD GPUs).
  bool kind_settled() const {
    return kind == DebuggerKind::RocGdb || kind == DebuggerKind::CudaGdb;
  }

  void detect_banner(const mi::Exchange& ex) {
    for (const auto& rec : ex.records) {
      if (rec.kind() != mi::RecordKind::Console) {
        continue;
      }
      auto text = rec.stream_text();
      auto first = text::trim(std::string_view(text).substr(0, text.find('\n')));
      bool banner = text::starts_with(first, "GNU gdb") || contains_nocase(first, "cuda-gdb") ||
                    contains_nocase(first, "CUDA Debugger");
      auto k = debugger_kind_from_banner(first);
      if (!banner || k == DebuggerKind::Unknown) {
        continue;
      }
      if (state.snapshot.debugger_version.empty()) {
        state.snapshot.debugger_version = mi::lossy_utf8(first); // a report shows it
      }
      if (!kind_settled()) {
        kind = k;
      }
      return;
    }
  }

  void add(const mi::Exchange& ex) {
    if (state.snapshot.debugger_version.empty() || !kind_settled()) {
      detect_banner(ex);
    }
    Dialect* primary = nullptr;
    if (kind == DebuggerKind::RocGdb) {
      primary = rocgdb.get();
    } else if (kind == DebuggerKind::CudaGdb) {
      primary = cuda.get();
    } else if (rocgdb->recognises(ex)) {
      primary = rocgdb.get();
      kind = DebuggerKind::RocGdb;
    } else if (cuda->recognises(ex)) {
      primary = cuda.get();
      kind = DebuggerKind::CudaGdb;
    }
    if (primary) {
      primary->consume(ex, state);
      rocgdb_used |= primary == rocgdb.get();
      cuda_used |= primary == cuda.get();
    }
    gdb->consume(ex, state);
    state.forget_console();
    faults.add(ex);
    take_cuda_api_errors(ex, state.snapshot.api_errors);
    take_gpu_attach_error(ex, state.snapshot.gpu_attach_error);
    take_expected_cuda_api_failures(ex, state.snapshot.notes);
    if (!state.snapshot.pid) {
      // A launched program's pid is known only once it runs: no meta, no attach names it.
      for (const auto& rec : ex.records) {
        if (rec.kind() == mi::RecordKind::Notify && rec.klass() == "thread-group-started") {
          state.snapshot.pid = text::parse_i64(rec["pid"].raw());
          break;
        }
      }
    }
    for (const auto& note : ex.notes) {
      auto& notes = state.snapshot.notes;
      if (code_notes.take(note, state.snapshot.code_windows) || python.take(note) ||
          take_thread_names(note) || read_kernel_wait_note(note, state.snapshot.kernel_waits)) {
        continue;
      }
      if (auto run = read_launch_run_note(note)) {
        state.snapshot.launch_run = std::move(*run);
        continue;
      }
      if (note.starts_with(kLaunchTracedNote)) {
        state.snapshot.host_threads.clear();
        state.stacks.clear();
        state.current_thread.clear();
        continue;
      }
      if (note.starts_with(kLightSymbolsNote)) {
        auto text = mi::lossy_utf8(note);
        if (std::find(notes.begin(), notes.end(), text) == notes.end()) {
          notes.push_back(std::move(text));
        }
      }
    }
    if (auto msg = ex.error_message()) {
      // The command and its message are the transcript's bytes; the warning is shown in reports.
      state.snapshot.warnings.push_back(mi::lossy_utf8(fmt::format(
          "`{}` failed: {}", ex.command.empty() ? std::string("a command") : ex.command, *msg)));
    }
  }

  bool take_thread_names(std::string_view note) {
    constexpr std::string_view kPrefix = "thread names: ";
    constexpr std::size_t kMaxNames = 65'536;
    constexpr std::size_t kMaxName = 64;
    if (!note.starts_with(kPrefix)) {
      return false;
    }
    const auto j = nlohmann::json::parse(note.substr(kPrefix.size()), nullptr, false);
    if (!j.is_object()) {
      return true; // ours, but not readable
    }
    for (const auto& [tid, name] : j.items()) {
      const auto lwp = text::parse_u64(tid);
      if (!lwp || !name.is_string() || copied_names.size() >= kMaxNames) {
        continue;
      }
      copied_names[*lwp] =
          mi::lossy_utf8(std::string_view(name.get_ref<const std::string&>()).substr(0, kMaxName));
    }
    return true;
  }

  Snapshot finish() {
    counters().finished.fetch_add(1, std::memory_order_relaxed);
    return finish_state(state, faults, kind);
  }

  // finish() over copies: the builder's own state stays as it was. The dialects' finish() reads
  // their own members and writes only the state it is given.
  Snapshot peek() const {
    counters().peeked.fetch_add(1, std::memory_order_relaxed);
    BuildState copy = state;
    copy.strings = Interner{}; // the copied table's keys would view the original's texts
    copy.forget_console();
    FaultReader fault_copy = faults;
    DebuggerKind kind_copy = kind;
    return finish_state(copy, fault_copy, kind_copy);
  }

  // The host thread ids after finish(): the gdb dialect appends the threads known only by their
  // stacks (not waves) in id order, and the cuda-gdb dialect drops its focus stack.
  std::vector<std::string> host_thread_ids() const {
    const Snapshot& s = state.snapshot;
    std::vector<std::string> ids;
    ids.reserve(s.host_threads.size());
    for (const auto& t : s.host_threads) {
      ids.push_back(t.id);
    }
    for (const auto& stack : state.stacks) {
      const std::string& tid = stack.first; // a name, not a binding: clang 14 captures it
      if (stack.second.empty() || state.wave_index.count(tid) ||
          std::any_of(s.waves.begin(), s.waves.end(),
                      [&](const Wave& w) { return w.thread_id == tid; }) ||
          std::find(ids.begin(), ids.end(), tid) != ids.end()) {
        continue;
      }
      ids.push_back(tid);
    }
    if (cuda_used) {
      std::erase(ids, std::string(kCudaFocusThread));
    }
    return ids;
  }

  // What finish() does, over `st`.
  Snapshot finish_state(BuildState& st, FaultReader& fault_reader, DebuggerKind& k) const {
    fault_reader.take_frames(st.stacks); // before the dialects file the stacks away
    gdb->finish(st);
    if (rocgdb_used) {
      rocgdb->finish(st);
    }
    if (cuda_used) {
      cuda->finish(st);
    }
    Snapshot& s = st.snapshot;
    if (!copied_names.empty()) {
      for (auto& t : s.host_threads) {
        if (t.name.empty() && t.lwp) {
          if (const auto it = copied_names.find(*t.lwp); it != copied_names.end()) {
            t.name = it->second;
          }
        }
      }
    }
    if (k == DebuggerKind::Unknown && !s.host_threads.empty()) {
      k = DebuggerKind::Gdb;
    }
    s.debugger = k;
    fault_reader.finish(s);
    snapshot::demangle_names(s);
    python.apply(s); // after the demangling: Python names are not C++ names
    check_attribution(s);
    check_unique_ids(s);
    return std::move(s);
  }

  // Nothing is dropped: a wave whose dispatch or agent is missing stays, flagged.
  static void check_attribution(Snapshot& s) {
    std::size_t count = 0;
    std::vector<std::string> examples;
    for (auto& w : s.waves) {
      bool agent_ok = !w.agent || s.agents.empty() || s.agent(*w.agent) != nullptr;
      bool dispatch_ok = s.dispatch_of(w) != nullptr;
      w.unattributed = !(agent_ok && dispatch_ok);
      if (w.unattributed) {
        ++count;
        if (examples.size() < 3) {
          examples.push_back(w.target_id.empty() ? w.thread_id : w.target_id.str());
        }
      }
    }
    if (count) {
      std::string why = s.dispatches.empty() ? "no dispatch list was taken"
                                             : "their dispatch is not in the dispatch list "
                                               "(late attach, or it completed in between)";
      s.warnings.push_back(fmt::format("{} wave(s) are unattributed: {} (e.g. {})", count, why,
                                       fmt::join(examples, "; ")));
    }
  }

  static void check_unique_ids(Snapshot& s) {
    // Sorting views is cheaper than hashing 78,000 wave ids into a node-based set.
    // GDB's thread ids are decimal: compared as integers when they all are.
    auto count_dups = [](auto& ids) {
      std::sort(ids.begin(), ids.end());
      std::size_t dup = 0;
      for (std::size_t i = 1; i < ids.size(); ++i) {
        dup += ids[i] == ids[i - 1] ? 1 : 0;
      }
      return dup;
    };
    auto check = [&](const char* what, const auto& items, auto id_of) {
      std::vector<std::uint64_t> numbers;
      numbers.reserve(items.size());
      for (const auto& x : items) {
        auto id = id_of(x);
        std::uint64_t n = 0;
        auto [end, ec] = std::from_chars(id.data(), id.data() + id.size(), n);
        if (ec != std::errc() || end != id.data() + id.size() || id.empty() || id[0] == '0') {
          break;
        }
        numbers.push_back(n);
      }
      std::size_t dup = 0;
      if (numbers.size() == items.size()) {
        dup = count_dups(numbers);
      } else {
        std::vector<std::string_view> ids;
        ids.reserve(items.size());
        for (const auto& x : items) {
          ids.push_back(id_of(x));
        }
        dup = count_dups(ids);
      }
      if (dup) {
        s.warnings.push_back(fmt::format("{} {} id(s) appear twice", dup, what));
      }
    };
    check("agent", s.agents, [](const Agent& a) { return std::string_view(a.id); });
    check("queue", s.queues, [](const Queue& q) { return std::string_view(q.id); });
    check("dispatch", s.dispatches, [](const Dispatch& d) { return std::string_view(d.id); });
    check("wave thread", s.waves, [](const Wave& w) { return std::string_view(w.thread_id); });
    check("host thread", s.host_threads,
          [](const HostThread& t) { return std::string_view(t.id); });
  }
};

Builder::Builder(BuildOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {}
Builder::~Builder() = default;
Builder::Builder(Builder&&) noexcept = default;
Builder& Builder::operator=(Builder&&) noexcept = default;

void Builder::add(const mi::Exchange& exchange) {
  counters().added.fetch_add(1, std::memory_order_relaxed);
  impl_->add(exchange);
}

Snapshot Builder::finish() {
  return impl_->finish();
}

Snapshot Builder::peek() const {
  return impl_->peek();
}

std::vector<std::string> Builder::host_thread_ids() const {
  return impl_->host_thread_ids();
}

std::vector<std::pair<std::string, std::uint64_t>> Builder::host_thread_lwps() const {
  std::vector<std::pair<std::string, std::uint64_t>> out;
  for (const auto& t : impl_->state.snapshot.host_threads) {
    if (t.lwp) {
      out.emplace_back(t.id, *t.lwp);
    }
  }
  return out;
}

void Builder::inherit_stacks(const Builder& previous, const std::vector<std::uint64_t>& lwps) {
  const BuildState& before = previous.impl_->state;
  BuildState& now = impl_->state;
  std::unordered_map<std::uint64_t, const std::string*> id_before;
  std::unordered_map<std::uint64_t, const std::string*> id_now;
  for (const auto& t : before.snapshot.host_threads) {
    if (t.lwp) {
      id_before.emplace(*t.lwp, &t.id);
    }
  }
  for (const auto& t : now.snapshot.host_threads) {
    if (t.lwp) {
      id_now.emplace(*t.lwp, &t.id);
    }
  }
  for (const std::uint64_t lwp : lwps) {
    const auto b = id_before.find(lwp);
    const auto n = id_now.find(lwp);
    if (b == id_before.end() || n == id_now.end()) {
      continue;
    }
    const auto stack = before.stacks.find(*b->second);
    if (stack != before.stacks.end() && !now.stacks.count(*n->second)) {
      now.stacks.emplace(*n->second, stack->second);
    }
  }
}

BuilderCounts builder_counts() {
  const Counters& c = counters();
  BuilderCounts out;
  out.builders = c.builders.load(std::memory_order_relaxed);
  out.added = c.added.load(std::memory_order_relaxed);
  out.finished = c.finished.load(std::memory_order_relaxed);
  out.peeked = c.peeked.load(std::memory_order_relaxed);
  return out;
}

Snapshot build(const std::vector<mi::Exchange>& exchanges, BuildOptions options) {
  Builder b(std::move(options));
  for (const auto& ex : exchanges) {
    b.add(ex);
  }
  return b.finish();
}

Snapshot build_from_transcript(std::string_view text, BuildOptions options,
                               mi::TranscriptInfo* info_out) {
  mi::TranscriptReader reader;
  std::optional<Builder> builder;
  // The text is in memory already: fed whole, lines are parsed in place (a node-wide
  // -thread-info line is not copied into a carry buffer), and the reader still hands out one
  // exchange at a time.
  auto drain = [&] {
    while (auto ex = reader.next()) {
      if (!builder) {
        if (options.meta_json.empty()) {
          options.meta_json = reader.info().meta_json;
        }
        builder.emplace(options);
      }
      builder->add(*ex);
    }
  };
  reader.feed(text);
  drain();
  reader.finish();
  drain();
  if (!builder) {
    if (options.meta_json.empty()) {
      options.meta_json = reader.info().meta_json;
    }
    builder.emplace(options);
  }
  Snapshot s = builder->finish();
  const auto& info = reader.info();
  if (info.parse_errors) {
    std::string first = info.first_errors.empty() ? "" : info.first_errors.front().message();
    s.warnings.push_back(fmt::format("transcript: {} line(s) were not MI and were skipped ({})",
                                     info.parse_errors, first));
  }
  if (info.truncated) {
    s.warnings.push_back("transcript ends inside an exchange (truncated recording)");
  }
  if (info_out) {
    *info_out = info;
  }
  return s;
}

} // namespace rocplay::snapshot
