// STAT-style grouping of waves by (agent, dispatch, PC).
#include "rocplay/snapshot/grouping.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <set>
#include <tuple>
#include <unordered_map>

namespace rocplay::snapshot {
namespace {

struct Key {
  std::optional<std::uint32_t> agent;
  std::optional<std::uint32_t> queue;
  std::optional<std::uint64_t> dispatch;
  std::optional<std::uint64_t> pc;
  bool operator==(const Key&) const = default;
};

struct KeyHash {
  std::size_t operator()(const Key& k) const {
    auto mix = [](std::size_t h, std::uint64_t v) {
      return h ^ (v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2));
    };
    std::size_t h = 0;
    h = mix(h, k.agent ? *k.agent + 1 : 0);
    h = mix(h, k.queue ? *k.queue + 1 : 0);
    h = mix(h, k.dispatch ? *k.dispatch + 1 : 0);
    h = mix(h, k.pc ? *k.pc : 0);
    return h;
  }
};

struct Acc {
  WaveClass c;
  // Sorted and made unique once at the end: cheaper than a node-based set per wave.
  std::vector<std::tuple<std::int64_t, std::int64_t, std::int64_t>> groups;
  std::vector<std::uint32_t> slots; // few distinct values: kept unique on insert
};

void widen(std::optional<Range>& r, std::int64_t v) {
  if (!r) {
    r = Range{v, v};
  } else {
    r->first = std::min(r->first, v);
    r->last = std::max(r->last, v);
  }
}

// One more wave of the class.
void accumulate(Acc& a, const Wave& w) {
  a.c.waves += 1;
  a.c.threads += w.count;
  // A cuda-gdb range has no wave slot but a work-item range: not unknown for that.
  bool unknown = !w.workgroup[0] || (!w.wave_in_group && !w.first_work_item);
  if (w.workgroup[0]) {
    std::int64_t x = *w.workgroup[0];
    std::int64_t y = w.workgroup[1].value_or(0);
    std::int64_t z = w.workgroup[2].value_or(0);
    if (a.groups.empty() || a.groups.back() != std::tuple{x, y, z}) {
      a.groups.emplace_back(x, y, z);
    }
    for (std::size_t i = 0; i < 3; ++i) {
      if (w.workgroup[i]) {
        widen(a.c.workgroup[i], *w.workgroup[i]);
      }
      if (w.workgroup_last[i]) {
        widen(a.c.workgroup[i], *w.workgroup_last[i]);
      }
    }
  }
  if (w.wave_in_group &&
      std::find(a.slots.begin(), a.slots.end(), *w.wave_in_group) == a.slots.end()) {
    a.slots.push_back(*w.wave_in_group);
  }
  if (w.first_work_item) {
    widen(a.c.work_items, *w.first_work_item);
    widen(a.c.work_items, w.last_work_item.value_or(*w.first_work_item));
  }
  if (unknown) {
    a.c.unknown_coordinates += 1;
  }
  if (w.unattributed) {
    a.c.unattributed += 1;
  }
}

template <class T> bool less_opt(const std::optional<T>& a, const std::optional<T>& b) {
  // Unknown sorts last.
  if (a.has_value() != b.has_value()) {
    return a.has_value();
  }
  return a && *a < *b;
}

} // namespace

std::vector<WaveClass> group_waves(const Snapshot& snapshot) {
  std::unordered_map<Key, std::size_t, KeyHash> index;
  std::vector<Acc> accs;
  index.reserve(64);
  // Neighbouring waves mostly share a class (one work-group's waves, one PC): the last class
  // is checked before the hash table.
  std::optional<Key> last_key;
  std::size_t last_class = 0;
  for (const auto& w : snapshot.waves) {
    Key k{w.agent, w.queue, w.dispatch, w.pc};
    if (last_key == k) {
      accumulate(accs[last_class], w);
      continue;
    }
    auto [it, inserted] = index.try_emplace(k, accs.size());
    if (inserted) {
      Acc a;
      a.c.agent = w.agent;
      a.c.queue = w.queue;
      a.c.dispatch = w.dispatch;
      a.c.pc = w.pc;
      a.c.function = w.function;
      a.c.inline_function = w.inline_function;
      a.c.file = w.file;
      a.c.line = w.line;
      a.c.first_thread = w.thread_id;
      if (const Dispatch* d = snapshot.dispatch_of(w)) {
        a.c.kernel_name = d->kernel_name;
      }
      accs.push_back(std::move(a));
    }
    last_key = k;
    last_class = it->second;
    accumulate(accs[last_class], w);
  }

  std::vector<WaveClass> out;
  out.reserve(accs.size());
  for (auto& a : accs) {
    std::sort(a.groups.begin(), a.groups.end());
    a.groups.erase(std::unique(a.groups.begin(), a.groups.end()), a.groups.end());
    a.c.workgroups = a.groups.size();
    std::sort(a.slots.begin(), a.slots.end());
    for (std::uint32_t s : a.slots) {
      if (!a.c.wave_in_group.empty() && a.c.wave_in_group.back().last + 1 == s) {
        a.c.wave_in_group.back().last = s;
      } else {
        a.c.wave_in_group.push_back(Range{s, s});
      }
    }
    out.push_back(std::move(a.c));
  }
  std::stable_sort(out.begin(), out.end(), [](const WaveClass& x, const WaveClass& y) {
    if (x.agent != y.agent) {
      return less_opt(x.agent, y.agent);
    }
    if (x.dispatch != y.dispatch) {
      return less_opt(x.dispatch, y.dispatch);
    }
    if (x.threads != y.threads) {
      return x.threads > y.threads;
    }
    return less_opt(x.pc, y.pc);
  });
  return out;
}

std::string format_ranges(const std::vector<Range>& ranges) {
  std::string out;
  for (const auto& r : ranges) {
    if (!out.empty()) {
      out += ',';
    }
    out += r.first == r.last ? fmt::format("{}", r.first) : fmt::format("{}-{}", r.first, r.last);
  }
  return out;
}

std::string format_workgroups(const WaveClass& c) {
  if (!c.workgroup[0]) {
    return "(?,?,?)";
  }
  std::string out = "(";
  for (std::size_t i = 0; i < 3; ++i) {
    if (i) {
      out += ',';
    }
    const auto& r = c.workgroup[i];
    if (!r) {
      out += '?';
    } else if (r->first == r->last) {
      out += fmt::format("{}", r->first);
    } else {
      out += fmt::format("{}-{}", r->first, r->last);
    }
  }
  return out + ")";
}

nlohmann::json to_json(const WaveClass& c) {
  nlohmann::json j = nlohmann::json::object();
  auto opt = [&](const char* k, const auto& v) {
    if (v) {
      j[k] = *v;
    }
  };
  opt("agent", c.agent);
  opt("queue", c.queue);
  opt("dispatch", c.dispatch);
  if (c.pc) {
    j["pc"] = fmt::format("{:#x}", *c.pc);
  }
  auto str = [&](const char* k, const std::string& v) {
    if (!v.empty()) {
      j[k] = v;
    }
  };
  str("kernel_name", c.kernel_name);
  str("function", c.function);
  str("inline_function", c.inline_function);
  str("file", c.file);
  opt("line", c.line);
  j["waves"] = c.waves;
  j["threads"] = c.threads;
  j["workgroups"] = c.workgroups;
  if (c.workgroup[0]) {
    nlohmann::json box = nlohmann::json::array();
    for (const auto& r : c.workgroup) {
      box.push_back(r ? nlohmann::json::array({r->first, r->last}) : nlohmann::json(nullptr));
    }
    j["workgroup_box"] = std::move(box);
  }
  if (!c.wave_in_group.empty()) {
    j["wave_in_group"] = format_ranges(c.wave_in_group);
  }
  if (c.work_items) {
    j["work_items"] = {c.work_items->first, c.work_items->last};
  }
  if (c.unknown_coordinates) {
    j["unknown_coordinates"] = c.unknown_coordinates;
  }
  if (c.unattributed) {
    j["unattributed"] = c.unattributed;
  }
  str("first_thread", c.first_thread);
  return j;
}

nlohmann::json to_json(const std::vector<WaveClass>& classes) {
  nlohmann::json a = nlohmann::json::array();
  for (const auto& c : classes) {
    a.push_back(to_json(c));
  }
  return a;
}

} // namespace rocplay::snapshot
