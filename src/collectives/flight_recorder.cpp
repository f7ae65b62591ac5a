// PyTorch Flight Recorder dumps, pickle and JSON (rocplay/collectives/collectives.hpp). The
// schema is PyTorch's: torch/csrc/distributed/c10d/FlightRecorder.hpp names the keys and the
// format version ("2.3" in PyTorch 2.5 to "2.10" in 2.11), FlightRecorderDetail.hpp writes them
// (dump_dict: pickle through the jit Pickler; dump_json: nlohmann, keys sorted, no frames, the
// pg_status values as strings), and torch/distributed/flight_recorder/components/loader.py reads
// the rank from the file name's trailing number.
#include "internal.hpp"

#include "rocplay/collectives/pickle.hpp"

#include <fmt/format.h>

#include <charconv>

namespace rocplay::collectives {

namespace {

// The pickle as a JSON tree, so both forms share one reader. The walk is bounded by a budget
// proportional to the input (memo references let a few bytes stand for many values).
class ToJson {
public:
  explicit ToJson(std::size_t budget) { walk_.visits_left = budget; }

  nlohmann::json convert(const pickle::Value* v, std::size_t depth = 0) {
    if (!v || !walk_.visit() || depth > walk_.max_depth) {
      cut_ = true;
      return nullptr;
    }
    using K = pickle::Value::Kind;
    switch (v->kind) {
    case K::None:
      return nullptr;
    case K::Bool:
      return v->boolean;
    case K::Int:
      return v->integer;
    case K::Float:
      return v->real;
    case K::Str:
    case K::Bytes:
      return v->text;
    case K::List:
    case K::Tuple:
    case K::Set: {
      auto a = nlohmann::json::array();
      for (const auto* item : v->items) {
        if (cut_) {
          break;
        }
        a.push_back(convert(item, depth + 1));
      }
      return a;
    }
    case K::Dict: {
      auto o = nlohmann::json::object();
      for (const auto& [k, val] : v->entries) {
        if (cut_) {
          break;
        }
        std::string key;
        if (k && (k->kind == K::Str || k->kind == K::Bytes)) {
          key = k->text;
        } else if (k && k->kind == K::Int) {
          key = std::to_string(k->integer);
        } else {
          continue; // no Flight Recorder key is anything else
        }
        o[key] = convert(val, depth + 1);
      }
      return o;
    }
    }
    return nullptr;
  }
  bool cut() const { return cut_; }

private:
  pickle::Walk walk_;
  bool cut_ = false;
};

std::optional<std::int64_t> int_of(const nlohmann::json& j) {
  if (j.is_number_integer()) {
    return j.get<std::int64_t>();
  }
  if (j.is_number_unsigned()) {
    const auto u = j.get<std::uint64_t>();
    if (u <= static_cast<std::uint64_t>(INT64_MAX)) {
      return static_cast<std::int64_t>(u);
    }
  }
  if (j.is_string()) { // pg_status in the JSON form
    std::int64_t n = 0;
    const auto& s = j.get_ref<const std::string&>();
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
    if (ec == std::errc() && p == s.data() + s.size()) {
      return n;
    }
  }
  return std::nullopt;
}

const nlohmann::json* field(const nlohmann::json& o, const char* key) {
  if (!o.is_object()) {
    return nullptr;
  }
  auto it = o.find(key);
  return it == o.end() ? nullptr : &*it;
}

std::string text_of(const nlohmann::json* j, std::size_t max) {
  if (!j || !j->is_string()) {
    return {};
  }
  return detail::clean(j->get_ref<const std::string&>(), max);
}

std::vector<std::vector<std::int64_t>> sizes_of(const nlohmann::json* j, std::size_t max_dims) {
  std::vector<std::vector<std::int64_t>> out;
  if (!j || !j->is_array()) {
    return out;
  }
  for (const auto& t : *j) {
    if (out.size() >= max_dims) {
      break;
    }
    std::vector<std::int64_t> dims;
    if (t.is_array()) {
      for (const auto& d : t) {
        if (auto n = int_of(d); n && dims.size() < max_dims) {
          dims.push_back(*n);
        }
      }
    }
    out.push_back(std::move(dims));
  }
  return out;
}

std::optional<std::int64_t> numel_of(const std::vector<std::vector<std::int64_t>>& sizes) {
  if (sizes.empty()) {
    return std::nullopt;
  }
  std::int64_t total = 0;
  for (const auto& dims : sizes) {
    std::int64_t n = 1;
    for (auto d : dims) {
      if (__builtin_mul_overflow(n, d < 0 ? 0 : d, &n)) {
        return std::nullopt;
      }
    }
    if (__builtin_add_overflow(total, n, &total)) {
      return std::nullopt;
    }
  }
  return total;
}

State state_of(const std::string& s) {
  if (s == "completed") {
    return State::Completed;
  }
  if (s == "started") {
    return State::Started;
  }
  if (s == "scheduled") {
    return State::Scheduled;
  }
  return State::Unknown;
}

void read_tree(const nlohmann::json& root, Input& in, const Limits& limits) {
  if (!root.is_object()) {
    in.damaged = true;
    in.notes.push_back("not a Flight Recorder dump: the top level is not a dict");
    return;
  }
  in.version = text_of(field(root, "version"), 32);
  in.comm_lib_version = text_of(field(root, "comm_lib_version"), 64);
  if (in.version.empty()) {
    in.notes.push_back("no `version` key: not a Flight Recorder dump PyTorch 2.5 or later wrote "
                       "(read as one anyway)");
  } else if (!in.version.starts_with("2.")) {
    in.notes.push_back("dump format version " + in.version +
                       ": rocplay knows 2.x (PyTorch 2.5 to 2.11); read as 2.x");
  }
  if (const auto* cfg = field(root, "pg_config"); cfg && cfg->is_object()) {
    for (const auto& [name, info] : cfg->items()) {
      if (in.groups.size() >= limits.max_groups) {
        break;
      }
      Group g;
      g.name = detail::clean(name, limits.max_text);
      g.desc = text_of(field(info, "desc"), limits.max_text);
      if (const auto* r = field(info, "ranks")) {
        if (r->is_string()) {
          g.ranks = detail::parse_rank_list(r->get_ref<const std::string&>(), 1u << 16);
        } else if (r->is_array()) {
          for (const auto& x : *r) {
            if (auto n = int_of(x); n && *n >= 0 && *n < (1 << 24) && g.ranks.size() < (1u << 16)) {
              g.ranks.push_back(static_cast<int>(*n));
            }
          }
        }
      }
      in.groups.push_back(std::move(g));
    }
  }
  const auto* entries = field(root, "entries");
  if (!entries) {
    // A dump of a run with no collective yet, or with includeCollectives off: no hang in it.
    return;
  }
  if (!entries->is_array()) {
    in.damaged = true;
    in.notes.push_back("`entries` is not a list");
    return;
  }
  std::size_t index = 0;
  for (const auto& e : *entries) {
    ++index;
    if (!e.is_object()) {
      in.notes.push_back(fmt::format("entry {}: not a dict; skipped", index));
      continue;
    }
    if (in.records.size() >= limits.max_records) {
      ++in.records_dropped;
      continue;
    }
    Record r;
    r.rank = in.rank.value_or(-1);
    r.source = in.source;
    r.file = in.file;
    if (const auto* pg = field(e, "process_group"); pg && pg->is_array() && !pg->empty()) {
      r.group.name = text_of(&(*pg)[0], limits.max_text);
      if (pg->size() > 1) {
        r.group.desc = text_of(&(*pg)[1], limits.max_text);
      }
    }
    if (const auto* id = field(e, "pg_id")) {
      r.pg_id = int_of(*id);
    }
    const auto* seq = field(e, "collective_seq_id");
    if (!seq) {
      seq = field(e, "seq_id"); // dump formats before 2.2
    }
    const auto* p2p_seq = field(e, "p2p_seq_id");
    r.op = text_of(field(e, "profiling_name"), limits.max_text);
    if (const auto* p = field(e, "is_p2p"); p && p->is_boolean()) {
      r.p2p = p->get<bool>();
    } else {
      const std::string name = r.op_name();
      r.p2p = name.starts_with("send") || name.starts_with("recv");
    }
    const auto* use = r.p2p && p2p_seq ? p2p_seq : seq;
    auto n = use ? int_of(*use) : std::nullopt;
    if (!n || *n < 0 || r.op.empty()) {
      in.notes.push_back(fmt::format("entry {}: no sequence id or profiling_name; skipped", index));
      continue;
    }
    r.seq = static_cast<std::uint64_t>(*n);
    if (const auto* rid = field(e, "record_id")) {
      r.record_id = static_cast<std::uint64_t>(int_of(*rid).value_or(0));
    }
    r.input_sizes = sizes_of(field(e, "input_sizes"), 64);
    r.output_sizes = sizes_of(field(e, "output_sizes"), 64);
    r.numel_in = numel_of(r.input_sizes);
    r.numel_out = numel_of(r.output_sizes);
    for (const char* key : {"input_dtypes", "output_dtypes"}) {
      if (const auto* d = field(e, key); r.dtype.empty() && d && d->is_array() && !d->empty()) {
        r.dtype = text_of(&(*d)[0], 32);
      }
    }
    r.state = state_of(text_of(field(e, "state"), 16));
    // FlightRecorder.hpp: "a retired but not completed event has timed out".
    if (const auto* retired = field(e, "retired");
        retired && retired->is_boolean() && retired->get<bool>() && r.state != State::Completed) {
      r.state = State::TimedOut;
    }
    if (const auto* t = field(e, "timeout_ms")) {
      r.timeout_ms = int_of(*t);
    }
    if (const auto* frames = field(e, "frames"); frames && frames->is_array()) {
      // The innermost max_frames, and the user's first line wherever it is (deep library stacks).
      bool user_kept = false;
      for (const auto& f : *frames) {
        if (r.frames.size() >= limits.max_frames && user_kept) {
          break;
        }
        const std::string file = text_of(field(f, "filename"), limits.max_text);
        const bool user = !detail::library_frame(file);
        if (r.frames.size() >= limits.max_frames && !user) {
          continue;
        }
        user_kept = user_kept || user;
        Frame fr;
        fr.function = text_of(field(f, "name"), limits.max_text);
        fr.file = file;
        if (const auto* l = field(f, "line")) {
          const auto ln = int_of(*l).value_or(0);
          fr.line = ln > 0 && ln < (1LL << 31) ? static_cast<std::uint32_t>(ln) : 0;
        }
        r.frames.push_back(std::move(fr));
      }
    }
    in.records.push_back(std::move(r));
  }
  // Each record gets its group's ranks from pg_config.
  for (auto& r : in.records) {
    for (const auto& g : in.groups) {
      if (g.name == r.group.name) {
        r.group.ranks = g.ranks;
        if (r.group.desc.empty()) {
          r.group.desc = g.desc;
        }
        break;
      }
    }
  }
}

} // namespace

std::optional<int> rank_from_file_name(std::string_view file) {
  const auto slash = file.find_last_of('/');
  std::string_view base = slash == std::string_view::npos ? file : file.substr(slash + 1);
  // PyTorch writes PREFIX<rank> (`nccl_trace_rank_3`, `trace.3`): the name's trailing digits, as
  // fr_trace reads them; else the digits before an extension (`ondemand_hang_rank1.pkl`).
  if (base.empty() || !text_scan::is_digit(base.back())) {
    if (const auto dot = base.rfind('.'); dot != std::string_view::npos) {
      base = base.substr(0, dot);
    }
  }
  std::size_t end = base.size();
  std::size_t begin = end;
  while (begin > 0 && base[begin - 1] >= '0' && base[begin - 1] <= '9') {
    --begin;
  }
  if (begin == end || end - begin > 6) {
    return std::nullopt;
  }
  int n = 0;
  std::from_chars(base.data() + begin, base.data() + end, n);
  return n;
}

Input read_flight_recorder(std::string_view data, const std::string& file, std::optional<int> rank,
                           const Limits& limits) {
  Input in;
  in.file = file;
  in.rank = rank ? rank : rank_from_file_name(file);
  const bool is_pickle = pickle::looks_like_pickle(data);
  in.source = is_pickle ? Source::FlightRecorderPickle : Source::FlightRecorderJson;
  if (!in.rank) {
    in.notes.push_back("no rank in the file name (PyTorch names dumps PREFIX<rank>): its records "
                       "cannot be matched with other ranks'");
  }
  nlohmann::json root;
  if (is_pickle) {
    pickle::Limits pl;
    const auto parsed = pickle::read(data, pl);
    if (!parsed.ok()) {
      in.damaged = true;
      in.notes.push_back("unreadable pickle: " + parsed.error);
      return in;
    }
    ToJson conv(16 * data.size() + 4096);
    root = conv.convert(parsed.root);
    if (conv.cut()) {
      in.damaged = true;
      in.notes.push_back("the pickle refers to its own values more than a Flight Recorder dump "
                         "does (nesting or sharing past the reader's bounds); read in part");
    }
  } else {
    if (!detail::json_nesting_within(data, 64)) {
      in.damaged = true;
      in.notes.push_back("JSON nested deeper than 64 levels: not a Flight Recorder dump");
      return in;
    }
    root = nlohmann::json::parse(data, nullptr, false);
    if (root.is_discarded()) {
      in.damaged = true;
      in.notes.push_back("unreadable JSON (cut off or not JSON)");
      return in;
    }
  }
  read_tree(root, in, limits);
  if (in.notes.size() > limits.max_notes) {
    in.notes.resize(limits.max_notes);
  }
  return in;
}

} // namespace rocplay::collectives
