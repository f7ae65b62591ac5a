// Snapshot <-> JSON (docs/json-schema.md, "Snapshot").
//
// Absent optionals and empty strings are left out, so 78,000 waves stay compact and a value read
// back is equal to the one written. Addresses are `0x` hex strings: readable, and safe from
// JavaScript's 53-bit numbers.
#include "rocplay/core/error.hpp"
#include "rocplay/core/names.hpp"
#include "rocplay/snapshot/snapshot.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <charconv>
#include <concepts>
#include <map>
#include <type_traits>

namespace rocplay {
namespace {

using nlohmann::json;

constexpr std::string_view kSchema = "rocplay.snapshot";
constexpr std::size_t kMaxHeldLocks = 16; // a Python frame's `with` locks

std::string hex(std::uint64_t v) {
  return fmt::format("{:#x}", v);
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
    return address(*v, key);
  }
  std::vector<std::uint64_t> addrs(const char* key, std::size_t max) const {
    std::vector<std::uint64_t> out;
    const json* v = find(key);
    if (!v) {
      return out;
    }
    if (!v->is_array() || v->size() > max) {
      fail(key, fmt::format("an array of at most {} 0x addresses", max));
    }
    for (const auto& e : *v) {
      out.push_back(address(e, key));
    }
    return out;
  }
  std::uint64_t address(const json& v, const char* key) const {
    if (v.is_number_unsigned()) {
      return v.get<std::uint64_t>();
    }
    if (!v.is_string()) {
      fail(key, "a 0x address");
    }
    const auto& s = v.get_ref<const std::string&>();
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
  // The path of an object or array nested under `key`, for the errors read there.
  std::string child(const char* key) const {
    return path_.empty() ? std::string(key) : fmt::format("{}.{}", path_, key);
  }

private:
  const json& j_;
  std::string path_;
};

// ---- One field list per struct -------------------------------------------------------------
//
// Each `fields` names a struct's members once, with how each is written; Writer walks it to make
// JSON and Loader walks it to read JSON back, so the two directions cannot drift. The calls:
//   always    a string, written even when empty
//   text      a string, left out when empty (`shared`: read through the waves' Interner)
//   opt       an optional number, left out when absent
//   addr      an optional address, as a `0x` hex string; `required_addr` must be present
//   flag      true, or left out
//   boolean   a bool always written; `fallback` when a reader finds none
//   number    a number always written; `fallback` when a reader finds none
//   count     a number left out when it equals `fallback`
//   coords    three optional coordinates, `null` for an unknown one; left out when all are
//   dims      up to three sizes; left out when empty
//   choice    an enum by its name
//   object    a nested struct, always written; `optional_object` when present
//   list      an array of structs (Presence says whether an empty one is written)

template <class T, class U>
concept Like = std::same_as<std::remove_const_t<T>, U>;

enum class Presence : std::uint8_t { Always, WhenNonEmpty };

std::string_view queue_type_text(QueueType t) {
  return to_string(t);
}
std::optional<QueueType> parse_queue_type(std::string_view s) {
  return queue_type_from_string(s); // another name is an Unknown queue type, never an error
}
constexpr NameTable<FenceScope, 3> kFenceScopeNames{{
    {FenceScope::None, "none"},
    {FenceScope::Agent, "agent"},
    {FenceScope::System, "system"},
}};
static_assert(names_cover(kFenceScopeNames, FenceScope::System));
std::string_view fence_scope_text(FenceScope s) {
  return name_of(kFenceScopeNames, s, "none");
}
std::optional<FenceScope> parse_fence_scope(std::string_view s) {
  return s.empty() ? FenceScope::None : value_of(kFenceScopeNames, s);
}
std::string_view debugger_text(DebuggerKind kind) {
  return to_string(kind);
}
std::optional<DebuggerKind> parse_debugger(std::string_view s) {
  return debugger_kind_from_string(s); // another name is an Unknown debugger
}
std::string_view fault_kind_text(FaultKind kind) {
  return to_string(kind);
}
constexpr const char* kFenceScopes = "`none`, `agent` or `system`";
constexpr const char* kFaultKinds = "a fault kind (memory-violation, assert, illegal-instruction, "
                                    "arithmetic, bus-error, trap, exception, signal)";

template <class Io, Like<Coverage> C> void fields(Io& io, C& c) {
  io.boolean("agents", c.agents, false);
  io.boolean("queues", c.queues, false);
  io.boolean("dispatches", c.dispatches, false);
  io.boolean("threads", c.threads, false);
}

template <class Io, Like<Agent> A> void fields(Io& io, A& a) {
  io.always("id", a.id);
  io.opt("number", a.number);
  io.text("state", a.state);
  io.text("target_id", a.target_id);
  io.opt("gpu_id", a.gpu_id);
  io.text("architecture", a.architecture);
  io.text("name", a.name);
  io.opt("cores", a.cores);
  io.opt("threads", a.threads);
  io.text("location", a.location);
  io.flag("current", a.current);
}

template <class Io, Like<Queue> Q> void fields(Io& io, Q& q) {
  io.always("id", q.id);
  io.text("target_id", q.target_id);
  io.opt("agent", q.agent);
  io.opt("queue_no", q.queue_no);
  io.opt("os_qid", q.os_qid);
  io.choice("type", q.type, queue_type_text, parse_queue_type, "");
  io.opt("read", q.read);
  io.opt("write", q.write);
  io.opt("size", q.size);
  io.addr("address", q.address);
  io.flag("current", q.current);
}

template <class Io, Like<Fence> F> void fields(Io& io, F& f) {
  io.boolean("barrier", f.barrier, false);
  io.choice("acquire", f.acquire, fence_scope_text, parse_fence_scope, kFenceScopes);
  io.choice("release", f.release, fence_scope_text, parse_fence_scope, kFenceScopes);
}

template <class Io, Like<Dispatch> D> void fields(Io& io, D& d) {
  io.always("id", d.id);
  io.text("target_id", d.target_id);
  io.opt("agent", d.agent);
  io.opt("queue", d.queue);
  io.opt("dispatch_no", d.dispatch_no);
  io.opt("packet_id", d.packet_id);
  io.dims("grid", d.grid);
  io.dims("workgroup", d.workgroup);
  io.object("fence", d.fence);
  io.text("fence_text", d.fence_text);
  io.text("address_spaces", d.address_spaces);
  io.addr("kernel_desc", d.kernel_desc);
  io.addr("kernel_args", d.kernel_args);
  io.addr("completion", d.completion);
  io.addr("kernel_address", d.kernel_address);
  io.text("kernel_name", d.kernel_name);
  io.text("linkage_name", d.linkage_name);
  io.text("status", d.status);
  io.flag("current", d.current);
}

template <class Io, Like<Wave> W> void fields(Io& io, W& w) {
  io.always("thread_id", w.thread_id);
  io.text("target_id", w.target_id); // unique per wave: not worth interning
  io.shared("name", w.name);
  io.opt("agent", w.agent);
  io.opt("queue", w.queue);
  io.opt("dispatch", w.dispatch);
  io.opt("wave_no", w.wave_no);
  io.coords("workgroup", w.workgroup);
  io.coords("workgroup_last", w.workgroup_last);
  io.opt("wave_in_group", w.wave_in_group);
  io.opt("lane_count", w.lane_count);
  io.opt("first_work_item", w.first_work_item);
  io.opt("last_work_item", w.last_work_item);
  io.count("count", w.count, std::uint64_t{1});
  io.addr("pc", w.pc);
  io.shared("function", w.function);
  io.shared("file", w.file);
  io.opt("line", w.line);
  io.shared("inline_function", w.inline_function);
  io.text("state", w.state);
  io.opt("lane", w.lane);
  io.flag("unattributed", w.unattributed);
}

template <class Io, Like<Frame> F> void fields(Io& io, F& f) {
  io.number("level", f.level, std::uint32_t{0});
  io.addr("pc", f.pc);
  io.text("function", f.function);
  io.text("linkage_name", f.linkage_name);
  io.text("file", f.file);
  io.opt("line", f.line);
  io.text("from", f.from);
  io.flag("python", f.python);
  io.addrs("held_locks", f.held_locks);
}

template <class Io, Like<MutexWait> M> void fields(Io& io, M& m) {
  io.addr("address", m.address);
  io.text("symbol", m.symbol);
  io.opt("owner_lwp", m.owner);
}

template <class Io, Like<ThreadFigures> F> void fields(Io& io, F& f) {
  io.text("state", f.state);
  io.number("cpu_seconds", f.cpu_seconds, 0.0);
  io.number("run_seconds", f.run_seconds, 0.0);
}

template <class Io, Like<KernelWait> W> void fields(Io& io, W& w) {
  io.number("tid", w.tid, std::int64_t{0});
  io.text("call", w.call);
  io.opt("fd", w.fd);
  io.text("file", w.file);
  io.text("access", w.access);
  io.opt("child", w.child);
  io.addr("futex", w.futex);
  io.flag("timed", w.timed);
  io.flag("shared", w.shared);
}

template <class Io, Like<ProcessWaits> P> void fields(Io& io, P& p) {
  io.number("pid", p.pid, std::int64_t{0});
  io.number("ppid", p.ppid, std::int64_t{0});
  io.text("comm", p.comm);
  io.text("cmdline", p.cmdline);
  io.text("state", p.state);
  io.text("role", p.role);
  io.list("threads", p.threads, Presence::Always);
}

template <class Io, Like<PipeHolders> P> void fields(Io& io, P& p) {
  io.number("inode", p.inode, std::uint64_t{0});
  io.ints("writers", p.writers);
  io.ints("readers", p.readers);
  io.flag("complete", p.complete);
}

template <class Io, Like<HostThread> T> void fields(Io& io, T& t) {
  io.always("id", t.id);
  io.opt("lwp", t.lwp);
  io.text("name", t.name);
  io.text("target_id", t.target_id);
  io.text("state", t.state);
  io.list("frames", t.frames, Presence::Always);
  io.optional_object("mutex_wait", t.mutex_wait);
  io.flag("holds_gil", t.holds_gil);
  io.text("python_note", t.python_note);
  io.addr("python_lock_wait", t.python_lock_wait);
  io.optional_object("figures", t.figures);
}

template <class Io, Like<SourceLine> L> void fields(Io& io, L& l) {
  io.required_addr("pc", l.pc);
  io.text("file", l.file);
  io.opt("line", l.line);
  io.text("function", l.function);
  io.text("linkage_name", l.linkage_name);
  io.opt("offset", l.offset);
  io.text("inlined_from", l.inlined_from);
  io.boolean("has_code", l.has_code, true);
}

template <class Io, Like<isa::Instruction> I> void fields(Io& io, I& i) {
  io.required_addr("address", i.address);
  io.always("text", i.text);
  io.text("function", i.function);
  io.opt("offset", i.offset);
  io.text("bytes", i.bytes);
  io.text("file", i.file);
  io.opt("line", i.line);
}

template <class Io, Like<CodeWindow> C> void fields(Io& io, C& c) {
  io.text("thread", c.thread);
  io.list("instructions", c.instructions, Presence::Always);
  io.text("decoded_by", c.decoded_by);
}

template <class Io, Like<Lane> L> void fields(Io& io, L& l) {
  io.number("id", l.id, std::uint32_t{0});
  io.text("state", l.state);
  io.text("target_id", l.target_id);
  io.text("wave_thread", l.wave_thread);
  io.coords("work_item", l.work_item);
  io.addr("pc", l.pc);
  io.text("function", l.function);
  io.text("file", l.file);
  io.opt("line", l.line);
}

template <class Io, Like<WaveCounts> C> void fields(Io& io, C& c) {
  io.number("total", c.total, std::uint64_t{0});
  io.number("running", c.running, std::uint64_t{0});
  io.number("single_stepping", c.single_stepping, std::uint64_t{0});
  io.number("stopped", c.stopped, std::uint64_t{0});
}

template <class Io, Like<Fault> F> void fields(Io& io, F& f) {
  io.choice("kind", f.kind, fault_kind_text, fault_kind_from_string, kFaultKinds);
  io.text("signal", f.signal);
  io.text("meaning", f.meaning);
  io.text("thread_id", f.thread_id);
  io.boolean("on_gpu", f.on_gpu, false);
  io.opt("lane", f.lane);
  io.addr("pc", f.pc);
  io.text("function", f.function);
  io.text("file", f.file);
  io.opt("line", f.line);
  io.addr("address", f.address);
  io.opt("signal_code", f.signal_code);
  io.opt("sender_pid", f.sender_pid);
  io.opt("kernel", f.kernel);
  io.text("block", f.block);
  io.text("thread", f.thread);
  io.text("detail", f.detail);
  io.list("frames", f.frames, Presence::WhenNonEmpty); // absent, not []: older JSON stays as it was
}

template <class Io, Like<LaunchSite> L> void fields(Io& io, L& l) {
  io.text("kernel", l.kernel);
  io.text("where", l.where);
}

template <class Io, Like<LaunchRun> R> void fields(Io& io, R& r) {
  io.number("index", r.index, std::uint32_t{0});
  io.number("of", r.of, std::uint32_t{0});
  io.text("experiment", r.experiment);
  io.env("env", r.env);
  io.strings("argv", r.argv, Presence::WhenNonEmpty);
  io.text("outcome", r.outcome);
  io.opt("exit_code", r.exit_code);
  io.text("exit_signal", r.exit_signal);
  io.number("seconds", r.seconds, 0.0);
  io.opt("traced_launches", r.traced_launches);
  io.list("launch_sites", r.launch_sites, Presence::WhenNonEmpty);
}

// Everything but `schema` and `format_version`, which the two entry points handle.
template <class Io, Like<Snapshot> S> void fields(Io& io, S& s) {
  io.choice("debugger", s.debugger, debugger_text, parse_debugger, "");
  io.text("debugger_version", s.debugger_version);
  io.opt("pid", s.pid);
  io.opt("rank", s.rank);
  io.text("label", s.label);
  io.text("taken_at", s.taken_at);
  io.opt("stop_seconds", s.stop_seconds);
  io.object("coverage", s.coverage);
  io.list("agents", s.agents, Presence::Always);
  io.list("queues", s.queues, Presence::Always);
  io.list("dispatches", s.dispatches, Presence::Always);
  io.list("waves", s.waves, Presence::Always);
  io.list("host_threads", s.host_threads, Presence::Always);
  io.list("source_lines", s.source_lines, Presence::Always);
  io.list("code_windows", s.code_windows, Presence::WhenNonEmpty);
  io.list("lanes", s.lanes, Presence::WhenNonEmpty);
  io.optional_object("wave_counts", s.wave_counts);
  io.optional_object("fault", s.fault);
  io.optional_object("launch_run", s.launch_run);
  io.strings("warnings", s.warnings);
  io.strings("notes", s.notes);
  io.env("env", s.env);
  io.strings("api_errors", s.api_errors, Presence::WhenNonEmpty);
  io.text("gpu_attach_error", s.gpu_attach_error);
  io.list("kernel_waits", s.kernel_waits.processes, Presence::WhenNonEmpty);
  io.list("pipes", s.kernel_waits.pipes, Presence::WhenNonEmpty);
}

// Walks a field list to fill a JSON object.
class Writer {
public:
  explicit Writer(json& j) : j_(j) {}

  void always(const char* key, std::string_view v) { j_[key] = v; }
  void text(const char* key, std::string_view v) {
    if (!v.empty()) {
      j_[key] = v;
    }
  }
  void shared(const char* key, std::string_view v) { text(key, v); }
  template <class T> void opt(const char* key, const std::optional<T>& v) {
    if (v) {
      j_[key] = *v;
    }
  }
  void addr(const char* key, const std::optional<std::uint64_t>& v) {
    if (v) {
      j_[key] = hex(*v);
    }
  }
  void required_addr(const char* key, std::uint64_t v) { j_[key] = hex(v); }
  void addrs(const char* key, const std::vector<std::uint64_t>& v) {
    if (!v.empty()) {
      json a = json::array();
      for (const std::uint64_t x : v) {
        a.push_back(hex(x));
      }
      j_[key] = std::move(a);
    }
  }
  void flag(const char* key, bool v) {
    if (v) {
      j_[key] = true;
    }
  }
  void boolean(const char* key, bool v, bool /*fallback*/) { j_[key] = v; }
  template <class T> void number(const char* key, T v, T /*fallback*/) { j_[key] = v; }
  template <class T> void count(const char* key, T v, T fallback) {
    if (v != fallback) {
      j_[key] = v;
    }
  }
  void coords(const char* key, const std::array<std::optional<std::int64_t>, 3>& c) {
    if (!c[0] && !c[1] && !c[2]) {
      return;
    }
    json a = json::array();
    for (const auto& v : c) {
      a.push_back(v ? json(*v) : json(nullptr));
    }
    j_[key] = std::move(a);
  }
  void dims(const char* key, const std::vector<std::uint64_t>& v) {
    if (!v.empty()) {
      j_[key] = v;
    }
  }
  template <class E, class Text, class Parse>
  void choice(const char* key, E v, Text text, Parse /*parse*/, const char* /*expected*/) {
    j_[key] = text(v);
  }
  template <class S> void object(const char* key, const S& s) { j_[key] = make(s); }
  template <class S> void optional_object(const char* key, const std::optional<S>& s) {
    if (s) {
      object(key, *s);
    }
  }
  template <class S> void list(const char* key, const std::vector<S>& items, Presence presence) {
    if (items.empty() && presence == Presence::WhenNonEmpty) {
      return;
    }
    json a = json::array();
    a.get_ref<json::array_t&>().reserve(items.size());
    for (const auto& item : items) {
      a.push_back(make(item));
    }
    j_[key] = std::move(a);
  }
  void ints(const char* key, const std::vector<std::int64_t>& v) { j_[key] = v; }
  void strings(const char* key, const std::vector<std::string>& v,
               Presence presence = Presence::Always) {
    if (presence == Presence::Always || !v.empty()) {
      j_[key] = v;
    }
  }
  void env(const char* key, const std::map<std::string, std::string>& v) { j_[key] = v; }

  template <class S> static json make(const S& s) {
    json j = json::object();
    Writer w(j);
    fields(w, s);
    return j;
  }

private:
  json& j_;
};

// Walks a field list to fill a struct from JSON, naming the field of any value it rejects.
class Loader {
public:
  Loader(const Reader& r, Interner& shared) : r_(r), shared_(shared) {}

  void always(const char* key, std::string& v) { v = r_.str(key); }
  void text(const char* key, std::string& v) { v = r_.str(key); }
  void text(const char* key, SharedString& v) { v = r_.str(key); }
  void shared(const char* key, SharedString& v) { v = shared_.get(r_.str(key)); }
  template <class T> void opt(const char* key, std::optional<T>& v) { v = r_.num<T>(key); }
  void addr(const char* key, std::optional<std::uint64_t>& v) { v = r_.addr(key); }
  void addrs(const char* key, std::vector<std::uint64_t>& v) { v = r_.addrs(key, kMaxHeldLocks); }
  void required_addr(const char* key, std::uint64_t& v) {
    auto a = r_.addr(key);
    if (!a) {
      r_.fail(key, "present");
    }
    v = *a;
  }
  void flag(const char* key, bool& v) { v = r_.flag(key); }
  void boolean(const char* key, bool& v, bool fallback) {
    v = r_.find(key) ? r_.flag(key) : fallback;
  }
  template <class T> void number(const char* key, T& v, T fallback) {
    v = r_.num<T>(key).value_or(fallback);
  }
  template <class T> void count(const char* key, T& v, T fallback) { number(key, v, fallback); }
  void coords(const char* key, std::array<std::optional<std::int64_t>, 3>& v) {
    v = r_.coords(key);
  }
  void dims(const char* key, std::vector<std::uint64_t>& v) { v = r_.dims(key); }
  template <class E, class Text, class Parse>
  void choice(const char* key, E& v, Text /*text*/, Parse parse, const char* expected) {
    const std::optional<E> parsed = parse(r_.str(key));
    if (!parsed) {
      r_.fail(key, expected);
    }
    v = *parsed;
  }
  template <class S> void object(const char* key, S& s) {
    if (const json* v = r_.find(key)) {
      if (!v->is_object()) {
        r_.fail(key, "an object");
      }
      Reader nested(*v, r_.child(key));
      Loader loader(nested, shared_);
      fields(loader, s);
    }
  }
  template <class S> void optional_object(const char* key, std::optional<S>& s) {
    if (r_.find(key)) {
      S value;
      object(key, value);
      s = std::move(value);
    }
  }
  template <class S> void list(const char* key, std::vector<S>& items, Presence /*presence*/) {
    r_.each(key, [&](const Reader& e) {
      S item;
      Loader loader(e, shared_);
      fields(loader, item);
      items.push_back(std::move(item));
    });
  }
  void ints(const char* key, std::vector<std::int64_t>& out) {
    const json* v = r_.find(key);
    if (!v) {
      return;
    }
    if (!v->is_array()) {
      r_.fail(key, "an array of integers");
    }
    for (const auto& e : *v) {
      if (!e.is_number_integer()) {
        r_.fail(key, "an array of integers");
      }
      out.push_back(e.get<std::int64_t>());
    }
  }
  void strings(const char* key, std::vector<std::string>& out,
               Presence /*presence*/ = Presence::Always) {
    const json* v = r_.find(key);
    if (!v) {
      return;
    }
    if (!v->is_array()) {
      r_.fail(key, "an array of strings");
    }
    for (const auto& e : *v) {
      if (!e.is_string()) {
        r_.fail(key, "an array of strings");
      }
      out.push_back(e.get<std::string>());
    }
  }
  void env(const char* key, std::map<std::string, std::string>& out) {
    const json* v = r_.find(key);
    if (!v) {
      return;
    }
    if (!v->is_object()) {
      r_.fail(key, "an object of strings");
    }
    for (const auto& [k, value] : v->items()) {
      if (!value.is_string()) {
        r_.fail(fmt::format("{}.{}", key, k), "a string");
      }
      out[k] = value.get<std::string>();
    }
  }

private:
  const Reader& r_;
  Interner& shared_;
};

} // namespace

nlohmann::json to_json(const Snapshot& s) {
  json j = Writer::make(s);
  j["schema"] = kSchema;
  j["format_version"] = Snapshot::kFormatVersion;
  return j;
}

namespace snapshot {

std::string launch_run_note(const LaunchRun& run) {
  return std::string(kLaunchRunNote) +
         Writer::make(run).dump(-1, ' ', false, json::error_handler_t::replace);
}

std::optional<LaunchRun> read_launch_run_note(std::string_view note) {
  if (!note.starts_with(kLaunchRunNote)) {
    return std::nullopt;
  }
  // A recording is untrusted: a note too long for ours, or not of its shape, is read as far as
  // it goes (a run with no index), never an error.
  constexpr std::size_t kMaxNote = 64 * 1024;
  LaunchRun run;
  note.remove_prefix(kLaunchRunNote.size());
  if (note.size() > kMaxNote) {
    return run;
  }
  const json j = json::parse(note, nullptr, false);
  if (!j.is_object()) {
    return run;
  }
  try {
    Reader r(j, "launch_run");
    Interner shared;
    Loader loader(r, shared);
    fields(loader, run);
  } catch (const Error&) {
    return LaunchRun{};
  }
  return run;
}

} // namespace snapshot

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
  Interner shared; // the waves' repeated texts, one copy each
  Loader loader(r, shared);
  fields(loader, s);
  snapshot::demangle_names(s); // a snapshot written by another tool may carry linkage names
  return s;
}

} // namespace rocplay
