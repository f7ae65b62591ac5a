// Snapshot <-> JSON (docs/json-schema.md, "Snapshot").
//
// Absent optionals and empty strings are left out, so 78,000 waves stay compact and a value read
// back is equal to the one written. Addresses are `0x` hex strings: readable, and safe from
// JavaScript's 53-bit numbers.
#include "rocplay/error.hpp"
#include "rocplay/snapshot.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <charconv>

namespace rocplay {
namespace {

using nlohmann::json;

constexpr std::string_view kSchema = "rocplay.snapshot";

std::string hex(std::uint64_t v) {
  return fmt::format("{:#x}", v);
}

void put(json& j, const char* key, std::string_view s) {
  if (!s.empty()) {
    j[key] = s;
  }
}
template <class T> void put(json& j, const char* key, const std::optional<T>& v) {
  if (v) {
    j[key] = *v;
  }
}
void put_addr(json& j, const char* key, const std::optional<std::uint64_t>& v) {
  if (v) {
    j[key] = hex(*v);
  }
}
void put_flag(json& j, const char* key, bool v) {
  if (v) {
    j[key] = true;
  }
}
void put_coords(json& j, const char* key, const std::array<std::optional<std::int64_t>, 3>& c) {
  if (!c[0] && !c[1] && !c[2]) {
    return;
  }
  json a = json::array();
  for (const auto& v : c) {
    a.push_back(v ? json(*v) : json(nullptr));
  }
  j[key] = std::move(a);
}

// Reading: every accessor names the field it failed on.
class Reader {
public:
  Reader(const json& j, std::string path) : j_(j), path_(std::move(path)) {}

  [[noreturn]] void fail(const std::string& key, std::string_view expected) const {
    throw Error(ExitCode::DataError,
                fmt::format("snapshot JSON: field `{}{}{}` is not {}", path_,
                            path_.empty() || key.empty() ? "" : ".", key, expected),
                "the file was not written by `rocplay` or was edited; re-create it with "
                "`rocplay postmortem --format json`");
  }
  const json* find(const char* key) const {
    auto it = j_.find(key);
    if (it == j_.end() || it->is_null()) {
      return nullptr;
    }
    return &*it;
  }
  std::string str(const char* key) const {
    const json* v = find(key);
    if (!v) {
      return {};
    }
    if (!v->is_string()) {
      fail(key, "a string");
    }
    return v->get<std::string>();
  }
  bool flag(const char* key) const {
    const json* v = find(key);
    if (!v) {
      return false;
    }
    if (!v->is_boolean()) {
      fail(key, "a boolean");
    }
    return v->get<bool>();
  }
  template <class T> std::optional<T> num(const char* key) const {
    const json* v = find(key);
    if (!v) {
      return std::nullopt;
    }
    return as_num<T>(*v, key);
  }
  template <class T> T as_num(const json& v, const std::string& key) const {
    if constexpr (std::is_floating_point_v<T>) {
      if (!v.is_number()) {
        fail(key, "a number");
      }
      return v.get<T>();
    } else {
      if (!v.is_number_integer()) {
        fail(key, "an integer");
      }
      if constexpr (std::is_signed_v<T>) {
        auto x = v.get<std::int64_t>();
        if (v.is_number_unsigned() && v.get<std::uint64_t>() > std::uint64_t(INT64_MAX)) {
          fail(key, "an integer in range");
        }
        if (x < std::numeric_limits<T>::min() || x > std::numeric_limits<T>::max()) {
          fail(key, "an integer in range");
        }
        return static_cast<T>(x);
      } else {
        if (!v.is_number_unsigned()) {
          fail(key, "a non-negative integer");
        }
        auto x = v.get<std::uint64_t>();
        if (x > std::numeric_limits<T>::max()) {
          fail(key, "an integer in range");
        }
        return static_cast<T>(x);
      }
    }
  }
  std::optional<std::uint64_t> addr(const char* key) const {
    const json* v = find(key);
    if (!v) {
      return std::nullopt;
    }
    if (v->is_number_unsigned()) {
      return v->get<std::uint64_t>();
    }
    if (!v->is_string()) {
      fail(key, "a 0x address");
    }
    const auto& s = v->get_ref<const std::string&>();
    std::uint64_t out = 0;
    if (s.size() < 3 || s[0] != '0' || (s[1] != 'x' && s[1] != 'X')) {
      fail(key, "a 0x address");
    }
    auto [end, ec] = std::from_chars(s.data() + 2, s.data() + s.size(), out, 16);
    if (ec != std::errc() || end != s.data() + s.size()) {
      fail(key, "a 0x address");
    }
    return out;
  }
  std::array<std::optional<std::int64_t>, 3> coords(const char* key) const {
    std::array<std::optional<std::int64_t>, 3> out{};
    const json* v = find(key);
    if (!v) {
      return out;
    }
    if (!v->is_array() || v->size() != 3) {
      fail(key, "an array of 3 integers or nulls");
    }
    for (std::size_t i = 0; i < 3; ++i) {
      if (!(*v)[i].is_null()) {
        out[i] = as_num<std::int64_t>((*v)[i], fmt::format("{}[{}]", key, i));
      }
    }
    return out;
  }
  std::vector<std::uint64_t> dims(const char* key) const {
    std::vector<std::uint64_t> out;
    const json* v = find(key);
    if (!v) {
      return out;
    }
    if (!v->is_array() || v->size() > 3) {
      fail(key, "an array of at most 3 integers");
    }
    for (std::size_t i = 0; i < v->size(); ++i) {
      out.push_back(as_num<std::uint64_t>((*v)[i], fmt::format("{}[{}]", key, i)));
    }
    return out;
  }
  // Calls f(Reader) for each element of an array of objects.
  template <class F> void each(const char* key, F&& f) const {
    const json* v = find(key);
    if (!v) {
      return;
    }
    if (!v->is_array()) {
      fail(key, "an array");
    }
    for (std::size_t i = 0; i < v->size(); ++i) {
      const json& e = (*v)[i];
      std::string p = fmt::format("{}{}{}[{}]", path_, path_.empty() ? "" : ".", key, i);
      if (!e.is_object()) {
        Reader(e, p).fail("", "an object");
      }
      f(Reader(e, p));
    }
  }
  const json& raw() const { return j_; }
  const std::string& path() const { return path_; }

private:
  const json& j_;
  std::string path_;
};

std::string_view to_string(QueueType t) {
  switch (t) {
  case QueueType::Hsa:
    return "HSA";
  case QueueType::Pm4:
    return "PM4";
  case QueueType::Dma:
    return "DMA";
  case QueueType::Xgmi:
    return "XGMI";
  case QueueType::Unknown:
    break;
  }
  return "Unknown";
}
QueueType queue_type(std::string_view s) {
  if (s == "HSA") {
    return QueueType::Hsa;
  }
  if (s == "PM4") {
    return QueueType::Pm4;
  }
  if (s == "DMA") {
    return QueueType::Dma;
  }
  if (s == "XGMI") {
    return QueueType::Xgmi;
  }
  return QueueType::Unknown;
}
std::string_view to_string(FenceScope s) {
  switch (s) {
  case FenceScope::Agent:
    return "agent";
  case FenceScope::System:
    return "system";
  case FenceScope::None:
    break;
  }
  return "none";
}
FenceScope fence_scope(const Reader& r, const char* key) {
  std::string s = r.str(key);
  if (s.empty() || s == "none") {
    return FenceScope::None;
  }
  if (s == "agent") {
    return FenceScope::Agent;
  }
  if (s == "system") {
    return FenceScope::System;
  }
  r.fail(key, "`none`, `agent` or `system`");
}

json frame_json(const Frame& f) {
  json j = json::object();
  j["level"] = f.level;
  put_addr(j, "pc", f.pc);
  put(j, "function", f.function);
  put(j, "linkage_name", f.linkage_name);
  put(j, "file", f.file);
  put(j, "line", f.line);
  put(j, "from", f.from);
  return j;
}

Frame frame_from_json(const Reader& r) {
  Frame f;
  f.level = r.num<std::uint32_t>("level").value_or(0);
  f.pc = r.addr("pc");
  f.function = r.str("function");
  f.linkage_name = r.str("linkage_name");
  f.file = r.str("file");
  f.line = r.num<std::uint32_t>("line");
  f.from = r.str("from");
  return f;
}

} // namespace

nlohmann::json to_json(const Snapshot& s) {
  json j = json::object();
  j["schema"] = kSchema;
  j["format_version"] = Snapshot::kFormatVersion;
  j["debugger"] = to_string(s.debugger);
  put(j, "debugger_version", s.debugger_version);
  put(j, "pid", s.pid);
  put(j, "rank", s.rank);
  put(j, "label", s.label);
  put(j, "taken_at", s.taken_at);
  put(j, "stop_seconds", s.stop_seconds);
  json cov = json::object();
  cov["agents"] = s.coverage.agents;
  cov["queues"] = s.coverage.queues;
  cov["dispatches"] = s.coverage.dispatches;
  cov["threads"] = s.coverage.threads;
  j["coverage"] = std::move(cov);

  json agents = json::array();
  for (const auto& a : s.agents) {
    json e = json::object();
    e["id"] = a.id;
    put(e, "number", a.number);
    put(e, "state", a.state);
    put(e, "target_id", a.target_id);
    put(e, "gpu_id", a.gpu_id);
    put(e, "architecture", a.architecture);
    put(e, "name", a.name);
    put(e, "cores", a.cores);
    put(e, "threads", a.threads);
    put(e, "location", a.location);
    put_flag(e, "current", a.current);
    agents.push_back(std::move(e));
  }
  j["agents"] = std::move(agents);

  json queues = json::array();
  for (const auto& q : s.queues) {
    json e = json::object();
    e["id"] = q.id;
    put(e, "target_id", q.target_id);
    put(e, "agent", q.agent);
    put(e, "queue_no", q.queue_no);
    put(e, "os_qid", q.os_qid);
    e["type"] = to_string(q.type);
    put(e, "read", q.read);
    put(e, "write", q.write);
    put(e, "size", q.size);
    put_addr(e, "address", q.address);
    put_flag(e, "current", q.current);
    queues.push_back(std::move(e));
  }
  j["queues"] = std::move(queues);

  json dispatches = json::array();
  for (const auto& d : s.dispatches) {
    json e = json::object();
    e["id"] = d.id;
    put(e, "target_id", d.target_id);
    put(e, "agent", d.agent);
    put(e, "queue", d.queue);
    put(e, "dispatch_no", d.dispatch_no);
    put(e, "packet_id", d.packet_id);
    if (!d.grid.empty()) {
      e["grid"] = d.grid;
    }
    if (!d.workgroup.empty()) {
      e["workgroup"] = d.workgroup;
    }
    json fence = json::object();
    fence["barrier"] = d.fence.barrier;
    fence["acquire"] = to_string(d.fence.acquire);
    fence["release"] = to_string(d.fence.release);
    e["fence"] = std::move(fence);
    put(e, "fence_text", d.fence_text);
    put(e, "address_spaces", d.address_spaces);
    put_addr(e, "kernel_desc", d.kernel_desc);
    put_addr(e, "kernel_args", d.kernel_args);
    put_addr(e, "completion", d.completion);
    put_addr(e, "kernel_address", d.kernel_address);
    put(e, "kernel_name", d.kernel_name);
    put(e, "linkage_name", d.linkage_name);
    put(e, "status", d.status);
    put_flag(e, "current", d.current);
    dispatches.push_back(std::move(e));
  }
  j["dispatches"] = std::move(dispatches);

  json waves = json::array();
  for (const auto& w : s.waves) {
    json e = json::object();
    e["thread_id"] = w.thread_id;
    put(e, "target_id", w.target_id);
    put(e, "name", w.name);
    put(e, "agent", w.agent);
    put(e, "queue", w.queue);
    put(e, "dispatch", w.dispatch);
    put(e, "wave_no", w.wave_no);
    put_coords(e, "workgroup", w.workgroup);
    put_coords(e, "workgroup_last", w.workgroup_last);
    put(e, "wave_in_group", w.wave_in_group);
    put(e, "lane_count", w.lane_count);
    put(e, "first_work_item", w.first_work_item);
    put(e, "last_work_item", w.last_work_item);
    if (w.count != 1) {
      e["count"] = w.count;
    }
    put_addr(e, "pc", w.pc);
    put(e, "function", w.function);
    put(e, "file", w.file);
    put(e, "line", w.line);
    put(e, "inline_function", w.inline_function);
    put(e, "state", w.state);
    put(e, "lane", w.lane);
    put_flag(e, "unattributed", w.unattributed);
    waves.push_back(std::move(e));
  }
  j["waves"] = std::move(waves);

  json threads = json::array();
  for (const auto& t : s.host_threads) {
    json e = json::object();
    e["id"] = t.id;
    put(e, "lwp", t.lwp);
    put(e, "name", t.name);
    put(e, "target_id", t.target_id);
    put(e, "state", t.state);
    json frames = json::array();
    for (const auto& f : t.frames) {
      frames.push_back(frame_json(f));
    }
    e["frames"] = std::move(frames);
    if (t.mutex_wait) {
      json m = json::object();
      put_addr(m, "address", t.mutex_wait->address);
      put(m, "symbol", t.mutex_wait->symbol);
      put(m, "owner_lwp", t.mutex_wait->owner);
      e["mutex_wait"] = std::move(m);
    }
    threads.push_back(std::move(e));
  }
  j["host_threads"] = std::move(threads);

  json lines = json::array();
  for (const auto& l : s.source_lines) {
    json e = json::object();
    e["pc"] = hex(l.pc);
    put(e, "file", l.file);
    put(e, "line", l.line);
    put(e, "function", l.function);
    put(e, "linkage_name", l.linkage_name);
    put(e, "offset", l.offset);
    put(e, "inlined_from", l.inlined_from);
    e["has_code"] = l.has_code;
    lines.push_back(std::move(e));
  }
  j["source_lines"] = std::move(lines);

  if (!s.code_windows.empty()) {
    json windows = json::array();
    for (const auto& w : s.code_windows) {
      json ins = json::array();
      for (const auto& i : w.instructions) {
        json e = json::object();
        e["address"] = hex(i.address);
        e["text"] = i.text;
        put(e, "function", i.function);
        put(e, "offset", i.offset);
        put(e, "bytes", i.bytes);
        put(e, "file", i.file);
        put(e, "line", i.line);
        ins.push_back(std::move(e));
      }
      json e = json::object();
      put(e, "thread", w.thread);
      e["instructions"] = std::move(ins);
      windows.push_back(std::move(e));
    }
    j["code_windows"] = std::move(windows);
  }

  if (!s.lanes.empty()) {
    json lanes = json::array();
    for (const auto& l : s.lanes) {
      json e = json::object();
      e["id"] = l.id;
      put(e, "state", l.state);
      put(e, "target_id", l.target_id);
      put(e, "wave_thread", l.wave_thread);
      put_coords(e, "work_item", l.work_item);
      put_addr(e, "pc", l.pc);
      put(e, "function", l.function);
      put(e, "file", l.file);
      put(e, "line", l.line);
      lanes.push_back(std::move(e));
    }
    j["lanes"] = std::move(lanes);
  }
  if (s.wave_counts) {
    j["wave_counts"] = {{"total", s.wave_counts->total},
                        {"running", s.wave_counts->running},
                        {"single_stepping", s.wave_counts->single_stepping},
                        {"stopped", s.wave_counts->stopped}};
  }
  if (s.fault) {
    const Fault& f = *s.fault;
    json e = json::object();
    e["kind"] = std::string(to_string(f.kind));
    put(e, "signal", f.signal);
    put(e, "meaning", f.meaning);
    put(e, "thread_id", f.thread_id);
    e["on_gpu"] = f.on_gpu;
    put(e, "lane", f.lane);
    put_addr(e, "pc", f.pc);
    put(e, "function", f.function);
    put(e, "file", f.file);
    put(e, "line", f.line);
    put_addr(e, "address", f.address);
    put(e, "kernel", f.kernel);
    put(e, "block", f.block);
    put(e, "thread", f.thread);
    put(e, "detail", f.detail);
    if (!f.frames.empty()) { // absent, not [], keeps older snapshots' JSON as it was
      json frames = json::array();
      for (const auto& fr : f.frames) {
        frames.push_back(frame_json(fr));
      }
      e["frames"] = std::move(frames);
    }
    j["fault"] = std::move(e);
  }
  j["warnings"] = s.warnings;
  j["notes"] = s.notes;
  j["env"] = s.env;
  return j;
}

Snapshot snapshot_from_json(const nlohmann::json& root) {
  if (!root.is_object()) {
    Reader(root, "").fail("", "a snapshot object");
  }
  Reader r(root, "");
  if (r.str("schema") != kSchema) {
    r.fail("schema", "\"rocplay.snapshot\"");
  }
  auto version = r.num<int>("format_version");
  if (!version) {
    r.fail("format_version", "present");
  }
  if (*version > Snapshot::kFormatVersion || *version < 1) {
    throw Error(ExitCode::DataError,
                fmt::format("snapshot JSON has format_version {}; this rocplay reads up to {}",
                            *version, Snapshot::kFormatVersion),
                "upgrade rocplay to read snapshots written by a newer version");
  }
  Snapshot s;
  s.debugger = debugger_kind_from_string(r.str("debugger"));
  s.debugger_version = r.str("debugger_version");
  s.pid = r.num<std::int64_t>("pid");
  s.rank = r.num<int>("rank");
  s.label = r.str("label");
  s.taken_at = r.str("taken_at");
  s.stop_seconds = r.num<double>("stop_seconds");
  if (const json* cov = r.find("coverage")) {
    if (!cov->is_object()) {
      r.fail("coverage", "an object");
    }
    Reader c(*cov, "coverage");
    s.coverage.agents = c.flag("agents");
    s.coverage.queues = c.flag("queues");
    s.coverage.dispatches = c.flag("dispatches");
    s.coverage.threads = c.flag("threads");
  }

  r.each("agents", [&](const Reader& e) {
    Agent a;
    a.id = e.str("id");
    a.number = e.num<std::uint32_t>("number");
    a.state = e.str("state");
    a.target_id = e.str("target_id");
    a.gpu_id = e.num<std::uint64_t>("gpu_id");
    a.architecture = e.str("architecture");
    a.name = e.str("name");
    a.cores = e.num<std::uint32_t>("cores");
    a.threads = e.num<std::uint32_t>("threads");
    a.location = e.str("location");
    a.current = e.flag("current");
    s.agents.push_back(std::move(a));
  });
  r.each("queues", [&](const Reader& e) {
    Queue q;
    q.id = e.str("id");
    q.target_id = e.str("target_id");
    q.agent = e.num<std::uint32_t>("agent");
    q.queue_no = e.num<std::uint32_t>("queue_no");
    q.os_qid = e.num<std::uint64_t>("os_qid");
    q.type = queue_type(e.str("type"));
    q.read = e.num<std::uint64_t>("read");
    q.write = e.num<std::uint64_t>("write");
    q.size = e.num<std::uint64_t>("size");
    q.address = e.addr("address");
    q.current = e.flag("current");
    s.queues.push_back(std::move(q));
  });
  r.each("dispatches", [&](const Reader& e) {
    Dispatch d;
    d.id = e.str("id");
    d.target_id = e.str("target_id");
    d.agent = e.num<std::uint32_t>("agent");
    d.queue = e.num<std::uint32_t>("queue");
    d.dispatch_no = e.num<std::uint64_t>("dispatch_no");
    d.packet_id = e.num<std::uint64_t>("packet_id");
    d.grid = e.dims("grid");
    d.workgroup = e.dims("workgroup");
    if (const json* f = e.find("fence")) {
      if (!f->is_object()) {
        e.fail("fence", "an object");
      }
      Reader fr(*f, e.path() + ".fence");
      d.fence.barrier = fr.flag("barrier");
      d.fence.acquire = fence_scope(fr, "acquire");
      d.fence.release = fence_scope(fr, "release");
    }
    d.fence_text = e.str("fence_text");
    d.address_spaces = e.str("address_spaces");
    d.kernel_desc = e.addr("kernel_desc");
    d.kernel_args = e.addr("kernel_args");
    d.completion = e.addr("completion");
    d.kernel_address = e.addr("kernel_address");
    d.kernel_name = e.str("kernel_name");
    d.linkage_name = e.str("linkage_name");
    d.status = e.str("status");
    d.current = e.flag("current");
    s.dispatches.push_back(std::move(d));
  });
  Interner shared; // the waves' repeated texts, one copy each
  r.each("waves", [&](const Reader& e) {
    Wave w;
    w.thread_id = e.str("thread_id");
    w.target_id = e.str("target_id");
    w.name = shared.get(e.str("name"));
    w.agent = e.num<std::uint32_t>("agent");
    w.queue = e.num<std::uint32_t>("queue");
    w.dispatch = e.num<std::uint64_t>("dispatch");
    w.wave_no = e.num<std::uint64_t>("wave_no");
    w.workgroup = e.coords("workgroup");
    w.workgroup_last = e.coords("workgroup_last");
    w.wave_in_group = e.num<std::uint32_t>("wave_in_group");
    w.lane_count = e.num<std::uint32_t>("lane_count");
    w.first_work_item = e.num<std::uint32_t>("first_work_item");
    w.last_work_item = e.num<std::uint32_t>("last_work_item");
    w.count = e.num<std::uint64_t>("count").value_or(1);
    w.pc = e.addr("pc");
    w.function = shared.get(e.str("function"));
    w.file = shared.get(e.str("file"));
    w.line = e.num<std::uint32_t>("line");
    w.inline_function = shared.get(e.str("inline_function"));
    w.state = e.str("state");
    w.lane = e.num<std::uint32_t>("lane");
    w.unattributed = e.flag("unattributed");
    s.waves.push_back(std::move(w));
  });
  r.each("host_threads", [&](const Reader& e) {
    HostThread t;
    t.id = e.str("id");
    t.lwp = e.num<std::uint64_t>("lwp");
    t.name = e.str("name");
    t.target_id = e.str("target_id");
    t.state = e.str("state");
    e.each("frames", [&](const Reader& fe) { t.frames.push_back(frame_from_json(fe)); });
    if (const json* m = e.find("mutex_wait")) {
      if (!m->is_object()) {
        e.fail("mutex_wait", "an object");
      }
      Reader mr(*m, e.path() + ".mutex_wait");
      MutexWait w;
      w.address = mr.addr("address");
      w.symbol = mr.str("symbol");
      w.owner = mr.num<std::int64_t>("owner_lwp");
      t.mutex_wait = std::move(w);
    }
    s.host_threads.push_back(std::move(t));
  });
  r.each("source_lines", [&](const Reader& e) {
    SourceLine l;
    auto pc = e.addr("pc");
    if (!pc) {
      e.fail("pc", "present");
    }
    l.pc = *pc;
    l.file = e.str("file");
    l.line = e.num<std::uint32_t>("line");
    l.function = e.str("function");
    l.linkage_name = e.str("linkage_name");
    l.offset = e.num<std::uint64_t>("offset");
    l.inlined_from = e.str("inlined_from");
    l.has_code = e.find("has_code") ? e.flag("has_code") : true;
    s.source_lines.push_back(std::move(l));
  });
  r.each("code_windows", [&](const Reader& e) {
    CodeWindow w;
    w.thread = e.str("thread");
    e.each("instructions", [&](const Reader& ie) {
      isa::Instruction i;
      auto address = ie.addr("address");
      if (!address) {
        ie.fail("address", "present");
      }
      i.address = *address;
      i.text = ie.str("text");
      i.function = ie.str("function");
      i.offset = ie.num<std::uint64_t>("offset");
      i.bytes = ie.str("bytes");
      i.file = ie.str("file");
      i.line = ie.num<int>("line");
      w.instructions.push_back(std::move(i));
    });
    s.code_windows.push_back(std::move(w));
  });
  r.each("lanes", [&](const Reader& e) {
    Lane l;
    l.id = e.num<std::uint32_t>("id").value_or(0);
    l.state = e.str("state");
    l.target_id = e.str("target_id");
    l.wave_thread = e.str("wave_thread");
    l.work_item = e.coords("work_item");
    l.pc = e.addr("pc");
    l.function = e.str("function");
    l.file = e.str("file");
    l.line = e.num<std::uint32_t>("line");
    s.lanes.push_back(std::move(l));
  });
  if (const json* wc = r.find("wave_counts")) {
    if (!wc->is_object()) {
      r.fail("wave_counts", "an object");
    }
    Reader c(*wc, "wave_counts");
    WaveCounts counts;
    counts.total = c.num<std::uint64_t>("total").value_or(0);
    counts.running = c.num<std::uint64_t>("running").value_or(0);
    counts.single_stepping = c.num<std::uint64_t>("single_stepping").value_or(0);
    counts.stopped = c.num<std::uint64_t>("stopped").value_or(0);
    s.wave_counts = counts;
  }
  auto strings = [&](const char* key, std::vector<std::string>& out) {
    const json* v = r.find(key);
    if (!v) {
      return;
    }
    if (!v->is_array()) {
      r.fail(key, "an array of strings");
    }
    for (const auto& e : *v) {
      if (!e.is_string()) {
        r.fail(key, "an array of strings");
      }
      out.push_back(e.get<std::string>());
    }
  };
  if (const json* fj = r.find("fault")) {
    if (!fj->is_object()) {
      r.fail("fault", "an object");
    }
    Reader fr(*fj, "fault");
    Fault f;
    const auto kind = fault_kind_from_string(fr.str("kind"));
    if (!kind) {
      fr.fail("kind", "a fault kind (memory-violation, assert, illegal-instruction, arithmetic, "
                      "bus-error, trap, exception, signal)");
    }
    f.kind = *kind;
    f.signal = fr.str("signal");
    f.meaning = fr.str("meaning");
    f.thread_id = fr.str("thread_id");
    f.on_gpu = fr.flag("on_gpu");
    f.lane = fr.num<std::uint32_t>("lane");
    f.pc = fr.addr("pc");
    f.function = fr.str("function");
    f.file = fr.str("file");
    f.line = fr.num<std::uint32_t>("line");
    f.address = fr.addr("address");
    f.kernel = fr.num<std::uint64_t>("kernel");
    f.block = fr.str("block");
    f.thread = fr.str("thread");
    f.detail = fr.str("detail");
    fr.each("frames", [&](const Reader& fe) { f.frames.push_back(frame_from_json(fe)); });
    s.fault = std::move(f);
  }
  strings("warnings", s.warnings);
  strings("notes", s.notes);
  if (const json* env = r.find("env")) {
    if (!env->is_object()) {
      r.fail("env", "an object of strings");
    }
    for (const auto& [k, v] : env->items()) {
      if (!v.is_string()) {
        r.fail("env." + k, "a string");
      }
      s.env[k] = v.get<std::string>();
    }
  }
  snapshot::demangle_names(s); // a snapshot written by another tool may carry linkage names
  return s;
}

} // namespace rocplay
