// The rocgdb dialect: agents, queues, dispatches, waves and lanes, from the MI commands
// (-agent-info, -queue-info, -dispatch-info, -lane-info, -wave-info, -thread-info) or, for older
// rocgdb and raw logs, the console tables of `info agents|queues|dispatches|threads|lanes|waves`.
// Accepted shapes are listed in docs/rocgdb-dialect.md; the format notes are in
// shared/reference/rocgdb-formats.md (the code wins where the manual differs).
#include "snapshot/amd_ids.hpp"
#include "snapshot/dialect.hpp"
#include "snapshot/text.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <unordered_map>

namespace rocplay::snapshot {
namespace {

using text::field;
using text::shared_field;

std::optional<std::uint32_t> u32(const mi::Value& v) {
  auto x = v.as_u64();
  if (!x || *x > UINT32_MAX) {
    return std::nullopt;
  }
  return static_cast<std::uint32_t>(*x);
}

std::optional<std::uint32_t> u32(std::string_view s) {
  return text::parse_u32(s);
}

// The bare handle of `1.2` or `2`.
std::optional<std::uint32_t> handle_of(std::string_view id) {
  if (auto dot = id.rfind('.'); dot != std::string_view::npos) {
    id.remove_prefix(dot + 1);
  }
  return u32(id);
}

// A current-*-id matches a list id either exactly (manual: `1.1`) or by handle (code: `1`).
bool same_entity(std::string_view list_id, std::string_view current) {
  if (list_id == current) {
    return true;
  }
  return current.find('.') == std::string_view::npos && handle_of(list_id) == handle_of(current);
}

template <class T> T& upsert(std::vector<T>& items, const std::string& id) {
  for (auto& x : items) {
    if (x.id == id) {
      x = T{};
      x.id = id;
      return x;
    }
  }
  items.emplace_back();
  items.back().id = id;
  return items.back();
}

bool is_rocgdb_operation(std::string_view op) {
  return op == "-agent-info" || op == "-queue-info" || op == "-dispatch-info" ||
         op == "-lane-info" || op == "-wave-info" || op == "-wave-count";
}

bool is_rocgdb_cli(std::string_view cli) {
  for (std::string_view c : {"info agents", "info queues", "info dispatches", "info lanes",
                             "info waves", "queue find", "dispatch find"}) {
    if (text::starts_with(cli, c)) {
      return true;
    }
  }
  return false;
}

constexpr std::string_view kNoneActive[] = {"No agents are currently active.",
                                            "No queues are currently active.",
                                            "No dispatches are currently active."};

// A rocgdb record in a raw log: AMDGPU threads and the agent, dispatch and wave lists.
constexpr std::array<std::string_view, 4> kRocgdbResultMarkers = {
    "target-id=\"AMDGPU ", "agents=[", "dispatches=[", "single-stepping="};
constexpr std::array<std::string_view, 4> kRocgdbConsoleMarkers = {
    "AMDGPU ", "are currently active.", "(rocm", "ROCgdb"};
constexpr Markers kRocgdbMarkers{kRocgdbResultMarkers, false, kRocgdbConsoleMarkers};

class RocgdbDialect final : public Dialect {
public:
  std::string_view name() const override { return "rocgdb"; }

  bool recognises(const mi::Exchange& ex) const override {
    if (is_rocgdb_operation(text::mi_operation(ex.command)) ||
        is_rocgdb_cli(text::cli_command(ex.command))) {
      return true;
    }
    return has_marker(ex, kRocgdbMarkers);
  }

  bool consume(const mi::Exchange& ex, BuildState& st) override {
    bool claimed = false;
    const mi::Record* result = ex.result();
    std::string_view op = text::mi_operation(ex.command);
    if (result && result->klass() == "done") {
      auto r = result->results();
      if (auto v = r["agents"]; v.is_list()) {
        take_agents(v, r["current-agent-id"], st);
        claimed = true;
      }
      if (auto v = r["queues"]; v.is_list()) {
        take_queues(v, r["current-queue-id"], st);
        claimed = true;
      }
      if (auto v = r["dispatches"]; v.is_list()) {
        take_dispatches(v, r["current-dispatch-id"], st);
        claimed = true;
      }
      if (auto v = r["threads"]; v.is_list()) {
        claimed |= take_thread_list(v, st);
      }
      if (auto v = r["lanes"]; v.is_list()) {
        std::string wave = text::option_value(ex.command, "--thread").value_or(st.current_thread);
        take_lanes_mi(v, wave, st);
        claimed = true;
      }
      if (r["single-stepping"].is_string() && r["total"].is_string()) {
        WaveCounts c;
        c.total = r["total"].as_u64().value_or(0);
        c.running = r["running"].as_u64().value_or(0);
        c.single_stepping = r["single-stepping"].as_u64().value_or(0);
        c.stopped = r["stopped"].as_u64().value_or(0);
        st.snapshot.wave_counts = c;
        claimed = true;
      } else if (op == "-wave-count" && r["count"].is_string()) {
        if (!st.snapshot.wave_counts) {
          st.snapshot.wave_counts = WaveCounts{};
        }
        st.snapshot.wave_counts->total = r["count"].as_u64().value_or(0);
        claimed = true;
      }
    }
    // The selected wave's lane, reported by *stopped / =thread-selected / -thread-select.
    for (const auto& rec : ex.records) {
      if (rec.kind() == mi::RecordKind::Console || rec.kind() == mi::RecordKind::Error) {
        continue;
      }
      auto r = rec.results();
      auto lane = r["lane-id"].as_u64();
      if (!lane || *lane > UINT32_MAX) {
        continue;
      }
      std::string tid = field(r["thread-id"]);
      if (tid.empty()) {
        tid = field(r["new-thread-id"]);
      }
      if (tid.empty() && rec.klass() == "thread-selected") {
        tid = field(r["id"]);
      }
      if (!tid.empty()) {
        pending_lanes_[tid] = static_cast<std::uint32_t>(*lane);
      }
    }
    const std::string& console = st.console(ex);
    if (!console.empty()) {
      claimed |= take_console(console, text::cli_command(ex.command), st);
    }
    return claimed;
  }

  void finish(BuildState& st) override {
    Snapshot& s = st.snapshot;
    // Lanes per wave from the agent's architecture.
    std::unordered_map<std::uint32_t, std::uint32_t> lanes;
    for (auto& a : s.agents) {
      if (!a.number) {
        a.number = handle_of(a.id);
      }
      if (auto n = amd::lanes_for_architecture(a.architecture); n && a.number) {
        lanes[*a.number] = *n;
      }
    }
    for (auto& w : s.waves) {
      if (!w.lane_count && w.agent) {
        if (auto it = lanes.find(*w.agent); it != lanes.end()) {
          w.lane_count = it->second;
        }
      }
    }
    if (pending_lanes_.size() > kLaneScanLimit) {
      index_waves(st);
      for (const auto& [tid, lane] : pending_lanes_) {
        if (auto it = st.wave_index.find(tid); it != st.wave_index.end()) {
          s.waves[it->second].lane = lane;
        }
      }
    } else if (!pending_lanes_.empty()) {
      // A playbook selects a wave or two: one pass beats indexing tens of thousands of waves.
      for (auto& w : s.waves) {
        for (const auto& [tid, lane] : pending_lanes_) {
          if (w.thread_id == tid) {
            w.lane = lane;
          }
        }
      }
    }
    resolve_kernel_names(st);
  }

private:
  // Kernel function addresses to names, once per address: the symbol at that address
  // (`info symbol`, `<sym+off>` of `info line`/`$pc`), else the outermost frame of a stack taken
  // on one of the dispatch's waves.
  static void resolve_kernel_names(BuildState& st) {
    Snapshot& s = st.snapshot;
    std::unordered_map<std::uint64_t, std::string> resolved;
    for (auto& d : s.dispatches) {
      if (!d.kernel_name.empty() || !d.kernel_address) {
        continue;
      }
      auto [it, inserted] = resolved.try_emplace(*d.kernel_address);
      if (inserted) {
        if (auto sym = st.symbols.find(*d.kernel_address); sym != st.symbols.end()) {
          it->second = text::kernel_symbol(sym->second);
        }
      }
      if (it->second.empty()) {
        for (const auto& w : s.waves) {
          if (w.dispatch != d.dispatch_no || (w.agent && d.agent && *w.agent != *d.agent) ||
              (w.queue && d.queue && *w.queue != *d.queue)) {
            continue;
          }
          auto stack = st.stacks.find(w.thread_id);
          if (stack != st.stacks.end() && !stack->second.empty() &&
              !stack->second.back().function.empty()) {
            d.kernel_name = text::kernel_symbol(stack->second.back().function);
            break;
          }
        }
        if (d.kernel_name.empty()) {
          if (auto f = common_frame_function(s, d)) {
            d.kernel_name = *f;
            s.notes.push_back(fmt::format(
                "dispatch {}: kernel name `{}` inferred from its waves' frames (confirm with "
                "`info symbol {:#x}`)",
                d.id, *f, *d.kernel_address));
          }
        }
        if (d.kernel_name.empty()) {
          s.notes.push_back(fmt::format(
              "dispatch {}: kernel function {:#x} not resolved to a name (run `info symbol "
              "{:#x}`)",
              d.id, *d.kernel_address, *d.kernel_address));
        }
        continue;
      }
      d.kernel_name = it->second;
    }
  }

  // The frame function every wave of the dispatch shows, when it can only be the kernel: no wave
  // is in an inline frame, and each wave's thread name (kernel-derived in rocgdb 14+, capped at
  // 16 characters as 11 + `-xxxx`) agrees with it or is absent. An inlined or called device
  // function (`start_sync`) fails the name check and is not taken for the kernel.
  static std::optional<std::string> common_frame_function(const Snapshot& s, const Dispatch& d) {
    std::optional<std::string> func;
    std::optional<std::string> short_name; // of func: every wave agrees on it, so once
    for (const auto& w : s.waves) {
      if (w.dispatch != d.dispatch_no || (w.agent && d.agent && *w.agent != *d.agent) ||
          (w.queue && d.queue && *w.queue != *d.queue)) {
        continue;
      }
      if (w.function.empty() || !w.inline_function.empty() || (func && *func != w.function)) {
        return std::nullopt;
      }
      func = w.function;
      if (!w.name.empty()) {
        // What rocgdb 14+ names a wave thread after (rocgdb-formats.md 2.2).
        if (!short_name) {
          short_name = short_function_name(w.function);
        }
        bool truncated = w.name.size() == 16 && w.name[11] == '-';
        bool agrees =
            truncated ? short_name->compare(0, 11, w.name, 0, 11) == 0 : *short_name == w.name;
        if (!agrees) {
          return std::nullopt;
        }
      }
    }
    return func;
  }

  static void take_agents(const mi::Value& list, const mi::Value& current, BuildState& st) {
    st.snapshot.coverage.agents = true;
    for (auto t : list) {
      Agent& a = upsert(st.snapshot.agents, field(t["id"]));
      a.number = handle_of(a.id);
      a.state = field(t["state"]);
      a.target_id = field(t["target-id"]);
      a.gpu_id = amd::parse_agent_gpu_id(a.target_id);
      a.architecture = field(t["architecture"]);
      a.name = field(t["name"]);
      if (a.name.empty()) {
        a.name = field(t["device-name"]); // the manual's schema
      }
      a.cores = u32(t["cores"]);
      a.threads = u32(t["threads"]);
      a.location = field(t["location"]);
    }
    if (current.is_string()) {
      auto cur = field(current);
      for (auto& a : st.snapshot.agents) {
        a.current = same_entity(a.id, cur);
      }
    }
  }

  static void take_queues(const mi::Value& list, const mi::Value& current, BuildState& st) {
    st.snapshot.coverage.queues = true;
    for (auto t : list) {
      Queue& q = upsert(st.snapshot.queues, field(t["id"]));
      q.target_id = field(t["target-id"]);
      if (auto id = amd::parse_queue_id(q.target_id)) {
        q.agent = id->agent;
        q.queue_no = id->queue;
        q.os_qid = id->os_qid;
      }
      q.type = amd::parse_queue_type(field(t["type"]));
      // read/write are absent when dbgapi cannot tell (NOT_SUPPORTED).
      q.read = t["read"].as_u64().to_optional();
      q.write = t["write"].as_u64().to_optional();
      q.size = t["size"].as_u64().to_optional();
      q.address = t["addr"].as_address().to_optional();
      if (!q.address) {
        q.address = t["address"].as_address().to_optional();
      }
    }
    if (current.is_string()) {
      auto cur = field(current);
      for (auto& q : st.snapshot.queues) {
        q.current = same_entity(q.id, cur);
      }
    }
  }

  static void set_fence(Dispatch& d, std::string text, BuildState& st) {
    d.fence_text = std::move(text);
    if (auto f = amd::parse_fence(d.fence_text)) {
      d.fence = *f;
    } else {
      st.snapshot.warnings.push_back(
          fmt::format("dispatch {}: fence `{}` not understood", d.id, d.fence_text));
    }
  }

  static void set_kernel_function(Dispatch& d, std::string_view cell) {
    cell = text::trim(cell);
    if (text::starts_with(cell, "0x")) {
      if (auto note = text::parse_address_note(cell)) {
        d.kernel_address = note->address;
        if (note->has_symbol) {
          d.kernel_name = text::kernel_symbol(note->symbol);
        }
        return;
      }
    }
    d.kernel_name = text::kernel_symbol(cell);
  }

  static void take_dispatches(const mi::Value& list, const mi::Value& current, BuildState& st) {
    st.snapshot.coverage.dispatches = true;
    for (auto t : list) {
      Dispatch& d = upsert(st.snapshot.dispatches, field(t["id"]));
      d.target_id = field(t["target-id"]);
      if (auto id = amd::parse_dispatch_id(d.target_id)) {
        d.agent = id->agent;
        d.queue = id->queue;
        d.dispatch_no = id->dispatch;
        d.packet_id = id->packet_id;
      }
      if (auto q = t["queue-id"]; q.is_string() && !d.queue) { // the manual's schema
        d.queue = handle_of(field(q));
      }
      if (auto g = amd::parse_dims(field(t["grid"]))) {
        d.grid = *g;
      }
      if (auto w = amd::parse_dims(field(t["workgroup"]))) {
        d.workgroup = *w;
      }
      if (auto f = t["fence"]; f.is_string()) {
        set_fence(d, field(f), st);
      } else if (auto fl = t["fences"]; fl.is_list()) {
        // The manual's list of {name,value,abbrev}: the abbreviations make the CLI string.
        std::string joined;
        for (auto e : fl) {
          auto ab = field(e["abbrev"]);
          if (ab.empty()) {
            continue;
          }
          if (!joined.empty()) {
            joined += '|';
          }
          joined += ab;
        }
        set_fence(d, joined, st);
      }
      if (auto as = t["address-spaces"]; as.is_string()) {
        d.address_spaces = field(as);
      } else if (as.is_list()) {
        std::string joined;
        for (auto e : as) {
          if (!joined.empty()) {
            joined += ", ";
          }
          joined += fmt::format("{}({})", field(e["name"]), field(e["size"]));
        }
        d.address_spaces = joined;
      }
      d.kernel_desc = t["kernel-desc"].as_address().to_optional();
      d.kernel_args = t["kernel-args"].as_address().to_optional();
      d.completion = t["completion"].as_address().to_optional();
      if (auto kf = t["kernel-function"]; kf.is_string()) {
        set_kernel_function(d, field(kf));
      }
    }
    if (current.is_string()) {
      auto cur = field(current);
      for (auto& d : st.snapshot.dispatches) {
        d.current = same_entity(d.id, cur);
      }
    }
  }

  // BuildState::wave_index is built only when needed: a single node-wide -thread-info list (the
  // common case, 78,000 waves) has unique ids and needs no map.
  static void index_waves(BuildState& st) {
    if (st.wave_index.size() == st.snapshot.waves.size()) {
      return;
    }
    st.wave_index.clear();
    st.wave_index.reserve(st.snapshot.waves.size());
    for (std::size_t i = 0; i < st.snapshot.waves.size(); ++i) {
      st.wave_index.emplace(st.snapshot.waves[i].thread_id, i);
    }
  }

  static Wave& wave_slot(BuildState& st, const std::string& thread_id) {
    index_waves(st);
    auto it = st.wave_index.find(thread_id);
    if (it != st.wave_index.end()) {
      Wave& w = st.snapshot.waves[it->second];
      w = Wave{};
      w.thread_id = thread_id;
      return w;
    }
    st.wave_index.emplace(thread_id, st.snapshot.waves.size());
    st.snapshot.waves.emplace_back();
    st.snapshot.waves.back().thread_id = thread_id;
    return st.snapshot.waves.back();
  }

  static void set_coordinates(Wave& w, const amd::WaveId& id) {
    w.agent = id.agent;
    w.queue = id.queue;
    w.dispatch = id.dispatch;
    w.wave_no = id.wave;
    w.workgroup = id.workgroup;
    w.wave_in_group = id.wave_in_group;
  }

  // One thread tuple's fields, in a single pass over its children: at 78,000 waves a lookup
  // by name per field is the hot spot.
  struct ThreadFields {
    mi::Value id, target, name, state, frame;
  };
  static ThreadFields thread_fields(const mi::Value& t) {
    ThreadFields f;
    for (auto c : t) {
      auto n = c.name();
      if (text::is(n, "id")) {
        f.id = c;
      } else if (text::is(n, "target-id")) {
        f.target = c;
      } else if (text::is(n, "name")) {
        f.name = c;
      } else if (text::is(n, "state")) {
        f.state = c;
      } else if (text::is(n, "frame")) {
        f.frame = c;
      }
    }
    return f;
  }

  static void take_frame(Wave& w, const mi::Value& frame, Interner& strings) {
    for (auto c : frame) {
      auto n = c.name();
      if (text::is(n, "addr")) {
        w.pc = c.as_address().to_optional();
      } else if (text::is(n, "func")) {
        if (!text::is(c.raw(), "??")) {
          w.function = shared_field(c, strings);
        }
      } else if (text::is(n, "file")) {
        w.file = shared_field(c, strings);
      } else if (text::is(n, "line")) {
        w.line = u32(c);
      } else if (text::is(n, "inline_function")) { // cuda-gdb style, if a build ever emits it
        w.inline_function = shared_field(c, strings);
      }
    }
  }

  static bool take_thread_list(const mi::Value& list, BuildState& st) {
    bool any = false;
    st.snapshot.coverage.threads = true;
    // A node-wide list holds tens of thousands of waves: size the vector once, and skip the
    // dedupe map when this is the first list (GDB's thread ids are unique within one).
    const bool first_list = st.snapshot.waves.empty();
    st.snapshot.waves.reserve(st.snapshot.waves.size() + list.size());
    std::size_t bad_ids = 0;
    std::string first_bad;
    for (auto t : list) {
      ThreadFields tf = thread_fields(t);
      if (!amd::is_wave_id(tf.target.raw())) {
        continue;
      }
      any = true;
      Wave* slot = nullptr;
      if (first_list) {
        slot = &st.snapshot.waves.emplace_back();
        slot->thread_id = field(tf.id);
      } else {
        slot = &wave_slot(st, field(tf.id));
      }
      Wave& w = *slot;
      w.target_id = shared_field(tf.target);
      if (auto id = amd::parse_wave_id(w.target_id)) {
        set_coordinates(w, *id);
      } else if (bad_ids++ == 0) {
        first_bad = fmt::format("thread {}: `{}`", w.thread_id, w.target_id);
      }
      w.name = shared_field(tf.name, st.strings);
      w.state = field(tf.state);
      if (tf.frame.is_tuple()) {
        take_frame(w, tf.frame, st.strings);
      }
    }
    if (bad_ids) {
      st.snapshot.warnings.push_back(
          fmt::format("{} wave target id(s) not understood, kept without coordinates (first: {})",
                      bad_ids, first_bad));
    }
    return any;
  }

  static void take_lanes_mi(const mi::Value& list, const std::string& wave, BuildState& st) {
    for (auto t : list) {
      Lane l;
      l.id = u32(t["id"]).value_or(0);
      l.state = field(t["state"]);
      l.target_id = field(t["target-id"]);
      l.wave_thread = wave;
      if (auto id = amd::parse_lane_id(l.target_id)) {
        l.work_item = id->work_item;
      }
      if (auto f = t["frame"]; f.is_tuple()) {
        Frame fr = text::frame_from_mi(f);
        l.pc = fr.pc;
        l.function = fr.function;
        l.file = fr.file;
        l.line = fr.line;
      }
      upsert_lane(st, std::move(l));
    }
  }

  static void upsert_lane(BuildState& st, Lane l) {
    for (auto& x : st.snapshot.lanes) {
      if (x.id == l.id && x.wave_thread == l.wave_thread) {
        x = std::move(l);
        return;
      }
    }
    st.snapshot.lanes.push_back(std::move(l));
  }

  bool take_console(const std::string& console, const std::string& cli, BuildState& st) {
    bool claimed = false;
    auto lines = text::split_lines(console);
    for (std::size_t i = 0; i < lines.size(); ++i) {
      auto t = text::trim(lines[i]);
      if (t.empty()) {
        continue;
      }
      if (t == kNoneActive[0]) {
        st.snapshot.coverage.agents = true;
        claimed = true;
        continue;
      }
      if (t == kNoneActive[1]) {
        st.snapshot.coverage.queues = true;
        claimed = true;
        continue;
      }
      if (t == kNoneActive[2]) {
        st.snapshot.coverage.dispatches = true;
        claimed = true;
        continue;
      }
      // `2 waves (0 running, 0 single-stepping, 2 stopped)`
      if (auto p = t.find(" waves ("); p != std::string_view::npos && t.back() == ')') {
        if (auto counts = parse_wave_summary(t)) {
          st.snapshot.wave_counts = counts;
          claimed = true;
          continue;
        }
      }
      std::size_t next = i;
      if (take_table(lines, i, st, next)) {
        claimed = true;
        i = next > i ? next - 1 : i;
      }
    }
    (void)cli;
    return claimed;
  }

  static std::optional<WaveCounts> parse_wave_summary(std::string_view t) {
    auto p = t.find(" waves (");
    WaveCounts c;
    auto total = text::parse_u64(t.substr(0, p));
    if (!total) {
      return std::nullopt;
    }
    c.total = *total;
    auto inner = t.substr(p + 8, t.size() - p - 9);
    for (std::string_view part : {"running", "single-stepping", "stopped"}) {
      auto q = inner.find(std::string(" ") + std::string(part));
      if (q == std::string_view::npos) {
        return std::nullopt;
      }
      auto start = inner.rfind(' ', q - 1);
      start = start == std::string_view::npos ? 0 : start + 1;
      auto n = text::parse_u64(inner.substr(start, q - start));
      if (!n) {
        return std::nullopt;
      }
      if (part == "running") {
        c.running = *n;
      } else if (part == "single-stepping") {
        c.single_stepping = *n;
      } else {
        c.stopped = *n;
      }
    }
    return c;
  }

  bool take_table(const std::vector<std::string_view>& lines, std::size_t i, BuildState& st,
                  std::size_t& next) {
    using H = std::vector<std::string_view>;
    static const H kAgents = {"Id",          "State", "Target Id", "Architecture",
                              "Device Name", "Cores", "Threads",   "Location"};
    static const H kQueues = {"Id", "Target Id", "Type", "Read", "Write", "Size", "Address"};
    static const H kDispatches = {"Id",        "Target Id", "Grid",
                                  "Workgroup", "Fence",     "Kernel Function"};
    static const H kDispatchesFull = {"Id",
                                      "Target Id",
                                      "Grid",
                                      "Workgroup",
                                      "Fence",
                                      "Address Spaces",
                                      "Kernel Descriptor",
                                      "Kernel Args",
                                      "Completion Signal",
                                      "Kernel Function"};
    static const H kThreads = {"Id", "Target Id", "Frame"};
    static const H kLanes = {"Id", "State", "Target Id", "Frame"};

    // 2019-2021 ROCgdb had no Architecture column (show-info.exp @ 5049e94).
    static const H kAgentsOld = {"Id",    "State",   "Target Id", "Device Name",
                                 "Cores", "Threads", "Location"};
    std::optional<text::CliTable> agents = text::parse_cli_table(lines, i, kAgents, next);
    if (!agents) {
      agents = text::parse_cli_table(lines, i, kAgentsOld, next);
    }
    if (auto& t = agents) {
      st.snapshot.coverage.agents = true;
      for (const auto& row : t->rows) {
        Agent& a = upsert(st.snapshot.agents, std::string(t->cell(row, "Id")));
        a.number = handle_of(a.id);
        a.state = std::string(t->cell(row, "State"));
        a.target_id = std::string(t->cell(row, "Target Id"));
        a.gpu_id = amd::parse_agent_gpu_id(a.target_id);
        a.architecture = std::string(t->cell(row, "Architecture"));
        a.name = std::string(t->cell(row, "Device Name"));
        a.cores = u32(t->cell(row, "Cores"));
        a.threads = u32(t->cell(row, "Threads"));
        a.location = std::string(t->cell(row, "Location"));
        a.current = row.current;
      }
      return true;
    }
    if (auto t = text::parse_cli_table(lines, i, kQueues, next)) {
      st.snapshot.coverage.queues = true;
      for (const auto& row : t->rows) {
        Queue& q = upsert(st.snapshot.queues, std::string(t->cell(row, "Id")));
        q.target_id = std::string(t->cell(row, "Target Id"));
        if (auto id = amd::parse_queue_id(q.target_id)) {
          q.agent = id->agent;
          q.queue_no = id->queue;
          q.os_qid = id->os_qid;
        }
        q.type = amd::parse_queue_type(t->cell(row, "Type"));
        q.read = text::parse_u64(t->cell(row, "Read"));
        q.write = text::parse_u64(t->cell(row, "Write"));
        q.size = text::parse_u64(t->cell(row, "Size"));
        q.address = text::parse_hex(t->cell(row, "Address"));
        q.current = row.current;
      }
      return true;
    }
    std::optional<text::CliTable> disp = text::parse_cli_table(lines, i, kDispatchesFull, next);
    if (!disp) {
      disp = text::parse_cli_table(lines, i, kDispatches, next);
    }
    if (disp) {
      st.snapshot.coverage.dispatches = true;
      for (const auto& row : disp->rows) {
        Dispatch& d = upsert(st.snapshot.dispatches, std::string(disp->cell(row, "Id")));
        d.target_id = std::string(disp->cell(row, "Target Id"));
        if (auto id = amd::parse_dispatch_id(d.target_id)) {
          d.agent = id->agent;
          d.queue = id->queue;
          d.dispatch_no = id->dispatch;
          d.packet_id = id->packet_id;
        }
        if (auto g = amd::parse_dims(disp->cell(row, "Grid"))) {
          d.grid = *g;
        }
        if (auto w = amd::parse_dims(disp->cell(row, "Workgroup"))) {
          d.workgroup = *w;
        }
        set_fence(d, std::string(disp->cell(row, "Fence")), st);
        d.address_spaces = std::string(disp->cell(row, "Address Spaces"));
        d.kernel_desc = text::parse_hex(disp->cell(row, "Kernel Descriptor"));
        d.kernel_args = text::parse_hex(disp->cell(row, "Kernel Args"));
        auto completion = disp->cell(row, "Completion Signal");
        d.completion =
            completion == "(nil)" ? std::optional<std::uint64_t>(0) : text::parse_hex(completion);
        set_kernel_function(d, disp->cell(row, "Kernel Function"));
        d.current = row.current;
      }
      return true;
    }
    if (auto t = text::parse_cli_table(lines, i, kLanes, next)) {
      for (const auto& row : t->rows) {
        Lane l;
        l.id = u32(t->cell(row, "Id")).value_or(0);
        l.state = std::string(t->cell(row, "State"));
        l.target_id = std::string(t->cell(row, "Target Id"));
        l.wave_thread = st.current_thread;
        if (auto id = amd::parse_lane_id(l.target_id)) {
          l.work_item = id->work_item;
        }
        auto frame = t->cell(row, "Frame");
        if (!frame.empty() && frame.front() != '(') { // not (inactive)/(unused)/(running)
          Frame f = text::parse_frame_text(frame);
          l.pc = f.pc;
          l.function = f.function;
          l.file = f.file;
          l.line = f.line;
        }
        upsert_lane(st, std::move(l));
      }
      return true;
    }
    if (auto t = text::parse_cli_table(lines, i, kThreads, next)) {
      bool any = false;
      st.snapshot.coverage.threads = true;
      for (const auto& row : t->rows) {
        auto target = t->cell(row, "Target Id");
        if (!amd::is_wave_id(target)) {
          continue;
        }
        any = true;
        std::string id(t->cell(row, "Id"));
        index_waves(st);
        if (st.wave_index.count(id)) {
          continue; // -thread-info already gave this wave, with its PC
        }
        Wave& w = wave_slot(st, id);
        // `AMDGPU Wave 1:2:1:1 (0,0,0)/0 "saxpy"`: the quoted name follows the target id.
        auto quote = target.find(" \"");
        if (quote != std::string_view::npos && target.back() == '"') {
          w.name = st.strings.get(target.substr(quote + 2, target.size() - quote - 3));
          target = target.substr(0, quote);
        }
        w.target_id = target;
        if (auto wid = amd::parse_wave_id(w.target_id)) {
          set_coordinates(w, *wid);
        }
        Frame f = text::parse_frame_text(t->cell(row, "Frame"));
        w.pc = f.pc;
        w.function = st.strings.get(f.function);
        w.file = st.strings.get(f.file);
        w.line = f.line;
        w.state = "stopped";
      }
      return any;
    }
    return false;
  }

  std::unordered_map<std::string, std::uint32_t> pending_lanes_;
  static constexpr std::size_t kLaneScanLimit = 8;
};

} // namespace

std::unique_ptr<Dialect> make_rocgdb_dialect() {
  return std::make_unique<RocgdbDialect>();
}

} // namespace rocplay::snapshot
