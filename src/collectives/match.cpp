// Cross-rank matching of collective records (rocplay/collectives/collectives.hpp): per process
// group, the ranks' records lined up by sequence id, as PyTorch's fr_trace matcher does, and the
// first sequence id where they differ; then, across groups, the cycles of ranks each waiting in a
// collective another has not entered (an order deadlock).
#include "internal.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

namespace rocplay::collectives {

namespace {

int source_rank(Source s) { // which record wins when two say the same: the richer one
  switch (s) {
  case Source::FlightRecorderPickle:
    return 0;
  case Source::FlightRecorderJson:
    return 1;
  case Source::NcclLog:
    return 2;
  case Source::RasText:
  case Source::RasJson:
    return 3;
  }
  return 4;
}

std::string source_label(Source s) {
  switch (s) {
  case Source::FlightRecorderPickle:
    return "Flight Recorder dump";
  case Source::FlightRecorderJson:
    return "Flight Recorder JSON dump";
  case Source::NcclLog:
    return "NCCL/PyTorch log";
  case Source::RasText:
  case Source::RasJson:
    return "NCCL RAS answer";
  }
  return "?";
}

std::string base_name(const std::string& path) {
  const auto slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// Ops compared across ranks and sources: `nccl:all_reduce`, `ALLREDUCE`, `AllReduce` alike.
std::string op_key(const Record& r) {
  std::string out;
  for (char c : r.op_name()) {
    if (c != '_' && c != ' ') {
      out.push_back(c);
    }
  }
  return out;
}

std::string shape_text(const Record& r) {
  auto one = [](const std::vector<std::vector<std::int64_t>>& sizes) {
    std::string s = "[";
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      s += (i ? ", [" : "[");
      for (std::size_t j = 0; j < sizes[i].size(); ++j) {
        s += (j ? ", " : "") + std::to_string(sizes[i][j]);
      }
      s += "]";
    }
    return s + "]";
  };
  if (r.input_sizes.empty() && r.output_sizes.empty()) {
    return {};
  }
  return one(r.input_sizes) + " -> " + one(r.output_sizes);
}

std::string group_label(const Group& g) {
  if (g.name.empty()) {
    return "an unnamed group";
  }
  if (!g.desc.empty() && g.desc != "undefined") {
    return fmt::format("group {} ({})", g.name, g.desc);
  }
  return "group " + g.name;
}

std::string ranks_text(const std::vector<int>& ranks) {
  if (ranks.empty()) {
    return "no rank";
  }
  std::string s = ranks.size() == 1 ? "rank " : "ranks ";
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    s += (i ? (i + 1 == ranks.size() ? " and " : ", ") : "") + std::to_string(ranks[i]);
  }
  return s;
}

Side side_of(const Record& r, bool entered) {
  Side s;
  s.rank = r.rank;
  s.group = r.group;
  s.seq = r.seq;
  s.entered = entered;
  s.op = r.op_name();
  s.numel = r.numel_in ? r.numel_in : r.numel_out;
  s.shape = shape_text(r);
  s.dtype = r.dtype;
  s.state = r.state;
  if (const Frame* f = r.call_site()) {
    s.call_site = *f;
  }
  s.file = r.file;
  s.source = r.source;
  return s;
}

struct GroupRecords {
  Group group;
  std::set<int> expected;                                 // from pg_config, when recorded
  std::map<int, std::map<std::uint64_t, Record>> by_rank; // rank -> seq -> record
};

// Keeps the richer of two records of one rank's seq; a timeout seen anywhere wins the state.
void merge(std::map<std::uint64_t, Record>& seqs, const Record& r) {
  auto [it, fresh] = seqs.try_emplace(r.seq, r);
  if (fresh) {
    return;
  }
  Record& have = it->second;
  const bool timed_out = have.state == State::TimedOut || r.state == State::TimedOut;
  const bool complete = have.complete_history || r.complete_history;
  if (source_rank(r.source) < source_rank(have.source)) {
    have = r;
  }
  have.complete_history = complete;
  if (timed_out && have.state != State::Completed) {
    have.state = State::TimedOut;
  }
}

bool waiting(const Record& r) {
  return r.state != State::Completed;
}

std::optional<Divergence> first_divergence(const GroupRecords& g, const std::set<int>& observed) {
  std::set<int> ranks;
  std::set<int> complete; // ranks whose records here say what they never entered
  for (const auto& [rank, seqs] : g.by_rank) {
    ranks.insert(rank);
    for (const auto& [seq, r] : seqs) {
      if (r.complete_history) {
        complete.insert(rank);
        break;
      }
    }
  }
  // Ranks of the group with records elsewhere but none here never entered any of its collectives,
  // if their record goes back to their first collective (a ring buffer that wrapped may have
  // dropped this group's).
  for (int r : g.expected) {
    if (observed.contains(r) && !ranks.contains(r)) {
      ranks.insert(r);
      complete.insert(r);
    }
  }
  if (ranks.size() < 2) {
    return std::nullopt;
  }
  // The window every rank's ring buffer still holds: from the latest first seq.
  std::uint64_t from = 0;
  for (const auto& [rank, seqs] : g.by_rank) {
    if (complete.contains(rank)) {
      from = std::max(from, seqs.begin()->first);
    }
  }
  // Every seq some rank recorded from there (not the numeric range: ids are the input's word).
  std::set<std::uint64_t> recorded;
  for (const auto& [rank, seqs] : g.by_rank) {
    for (auto it = seqs.lower_bound(from); it != seqs.end(); ++it) {
      recorded.insert(it->first);
    }
  }
  for (const std::uint64_t s : recorded) {
    std::vector<const Record*> present;
    std::vector<int> absent;
    for (int rank : ranks) {
      auto it = g.by_rank.find(rank);
      const Record* r = nullptr;
      if (it != g.by_rank.end()) {
        if (auto jt = it->second.find(s); jt != it->second.end()) {
          r = &jt->second;
        }
      }
      if (r) {
        present.push_back(r);
      } else if (complete.contains(rank)) {
        absent.push_back(rank);
      }
    }
    if (present.empty()) {
      continue;
    }
    Divergence d;
    d.group = present.front()->group;
    d.seq = s;
    if (!absent.empty()) {
      d.kind = DivergenceKind::MissingRank;
      for (const Record* r : present) {
        if (waiting(*r)) {
          d.waiting.push_back(r->rank);
        }
        d.sides.push_back(side_of(*r, true));
      }
      if (d.waiting.empty()) {
        for (const Record* r : present) {
          d.waiting.push_back(r->rank);
        }
      }
      d.absent = absent;
      for (int rank : absent) {
        auto it = g.by_rank.find(rank);
        if (it != g.by_rank.end() && !it->second.empty() && it->second.begin()->first < s) {
          auto last = it->second.lower_bound(s);
          --last;
          d.sides.push_back(side_of(last->second, false));
        } else {
          Side none;
          none.rank = rank;
          none.group = g.group;
          none.entered = false;
          d.sides.push_back(none);
        }
      }
      const Record& lead = *present.front();
      d.what = fmt::format("{} entered {} seq {} ({}); {} never did", ranks_text(d.waiting),
                           group_label(d.group), s, lead.op_name(), ranks_text(absent));
    } else {
      const Record& a = *present.front();
      const Record* differ = nullptr;
      DivergenceKind kind = DivergenceKind::OpMismatch;
      for (const Record* r : present) {
        if (op_key(*r) != op_key(a)) {
          differ = r;
          kind = DivergenceKind::OpMismatch;
          break;
        }
      }
      if (!differ) {
        for (const Record* r : present) {
          const bool numel_differs = (r->numel_in && a.numel_in && *r->numel_in != *a.numel_in) ||
                                     (r->numel_out && a.numel_out && *r->numel_out != *a.numel_out);
          const bool shape_differs =
              !r->input_sizes.empty() && !a.input_sizes.empty() && r->input_sizes != a.input_sizes;
          if (numel_differs || shape_differs) {
            differ = r;
            kind = DivergenceKind::SizeMismatch;
            break;
          }
        }
      }
      if (!differ) {
        for (const Record* r : present) {
          if (!r->dtype.empty() && !a.dtype.empty() && r->dtype != a.dtype) {
            differ = r;
            kind = DivergenceKind::DtypeMismatch;
            break;
          }
        }
      }
      if (!differ) {
        continue;
      }
      d.kind = kind;
      for (const Record* r : present) {
        d.sides.push_back(side_of(*r, true));
        if (waiting(*r)) {
          d.waiting.push_back(r->rank);
        }
      }
      auto describe = [kind](const Record& r) {
        if (kind == DivergenceKind::OpMismatch) {
          return r.op_name();
        }
        if (kind == DivergenceKind::DtypeMismatch) {
          return r.op_name() + " of " + r.dtype;
        }
        const auto n = r.numel_in ? r.numel_in : r.numel_out;
        return r.op_name() + (n ? fmt::format(" of {} elements", *n) : " " + shape_text(r));
      };
      d.what = fmt::format("{} seq {}: rank {} called {}, rank {} called {}", group_label(d.group),
                           s, a.rank, describe(a), differ->rank, describe(*differ));
    }
    return d;
  }
  return std::nullopt;
}

// Two or more ranks each waiting in a collective that the next has not entered, over two or more
// groups: rank A waits in group G's seq N for rank B, which waits in group H's seq M for rank A.
std::optional<Divergence> order_deadlock(const std::vector<Divergence>& missing) {
  // rank -> (divergence index) it waits in; edges to the ranks absent there.
  std::map<int, std::size_t> waits_in;
  for (std::size_t i = 0; i < missing.size(); ++i) {
    for (int r : missing[i].waiting) {
      waits_in.try_emplace(r, i);
    }
  }
  for (const auto& [start, first] : waits_in) {
    // Follow rank -> an absent rank of the divergence it waits in, until a rank repeats.
    std::vector<std::pair<int, std::size_t>> path;
    std::set<int> seen;
    int at = start;
    while (!seen.contains(at)) {
      auto it = waits_in.find(at);
      if (it == waits_in.end()) {
        break;
      }
      seen.insert(at);
      path.emplace_back(at, it->second);
      const Divergence& d = missing[it->second];
      int next = -1;
      for (int a : d.absent) {
        if (waits_in.contains(a)) {
          next = a;
          break;
        }
      }
      if (next < 0) {
        break;
      }
      at = next;
    }
    if (!seen.contains(at) || path.size() < 2) {
      continue;
    }
    // The cycle is the part of the path from `at`.
    auto begin =
        std::find_if(path.begin(), path.end(), [at](const auto& p) { return p.first == at; });
    std::vector<std::pair<int, std::size_t>> cycle(begin, path.end());
    std::set<std::string> groups;
    for (const auto& [rank, idx] : cycle) {
      groups.insert(missing[idx].group.name);
    }
    if (groups.size() < 2) {
      continue; // one group: a missing rank, not an order problem
    }
    std::sort(cycle.begin(), cycle.end());
    Divergence d;
    d.kind = DivergenceKind::OrderDeadlock;
    d.group = missing[cycle.front().second].group;
    d.seq = missing[cycle.front().second].seq;
    std::vector<std::string> parts;
    for (std::size_t i = 0; i < cycle.size(); ++i) {
      const auto& [rank, idx] = cycle[i];
      const Divergence& m = missing[idx];
      d.waiting.push_back(rank);
      for (const Side& s : m.sides) {
        if (s.rank == rank && s.entered) {
          d.sides.push_back(s);
        }
      }
      std::vector<int> others;
      for (int a : m.absent) {
        if (waits_in.contains(a)) {
          others.push_back(a);
        }
      }
      std::string op;
      for (const Side& s : m.sides) {
        if (s.rank == rank) {
          op = s.op;
        }
      }
      parts.push_back(fmt::format("rank {} waits in {} seq {} ({}), which {} never entered", rank,
                                  group_label(m.group), m.seq, op, ranks_text(others)));
    }
    d.what = fmt::format("{}: the groups' collectives were entered in different orders on "
                         "different ranks",
                         fmt::join(parts, "; "));
    return d;
  }
  return std::nullopt;
}

// NCCL RAS: per communicator, the ops whose launch counts differ between ranks.
void ras_divergences(const Input& in, std::vector<Divergence>& out) {
  for (const auto& c : in.ras) {
    std::map<std::string, std::map<int, std::uint64_t>> counts; // op -> rank -> count
    std::vector<int> missing;
    for (const auto& r : c.ranks) {
      if (r.missing) {
        missing.push_back(r.rank);
      } else if (r.count && !r.op.empty()) {
        counts[r.op][r.rank] = *r.count;
      }
    }
    Group g;
    g.name = c.comm_hash;
    g.desc = "NCCL communicator";
    struct Lead {
      std::string op;
      std::uint64_t max = 0;
      std::vector<int> ahead, behind;
    };
    std::vector<Lead> leads;
    for (const auto& [op, per_rank] : counts) {
      Lead l;
      l.op = op;
      std::uint64_t lo = UINT64_MAX;
      for (const auto& [rank, n] : per_rank) {
        l.max = std::max(l.max, n);
        lo = std::min(lo, n);
      }
      if (lo == l.max) {
        continue;
      }
      for (const auto& [rank, n] : per_rank) {
        (n == l.max ? l.ahead : l.behind).push_back(rank);
      }
      leads.push_back(std::move(l));
    }
    std::stable_sort(leads.begin(), leads.end(),
                     [](const Lead& a, const Lead& b) { return a.max > b.max; });
    auto side = [&](int rank, const std::string& op, std::uint64_t n, bool entered) {
      Side s;
      s.rank = rank;
      s.group = g;
      s.seq = n;
      s.entered = entered;
      s.op = op;
      s.file = in.file;
      s.source = in.source;
      return s;
    };
    // Two ops each led by a different set of ranks: the ranks called different collectives.
    if (leads.size() >= 2) {
      const Lead& a = leads[0];
      const Lead& b = leads[1];
      std::set<int> sa(a.ahead.begin(), a.ahead.end());
      bool disjoint = true;
      for (int r : b.ahead) {
        disjoint = disjoint && !sa.contains(r);
      }
      if (disjoint) {
        Divergence d;
        d.kind = DivergenceKind::OpMismatch;
        d.group = g;
        d.seq = a.max;
        for (int r : a.ahead) {
          d.sides.push_back(side(r, a.op, a.max, true));
        }
        for (int r : b.ahead) {
          d.sides.push_back(side(r, b.op, b.max, true));
        }
        d.waiting = a.ahead;
        d.what =
            fmt::format("NCCL communicator {}: {} launched {} #{} while {} launched {} #{} "
                        "instead",
                        g.name, ranks_text(a.ahead), a.op, a.max, ranks_text(b.ahead), b.op, b.max);
        d.sources.push_back(fmt::format("NCCL RAS answer {}", base_name(in.file)));
        out.push_back(std::move(d));
        continue;
      }
    }
    for (const auto& l : leads) {
      Divergence d;
      d.kind = DivergenceKind::MissingRank;
      d.group = g;
      d.seq = l.max;
      d.waiting = l.ahead;
      d.absent = l.behind;
      for (int r : l.ahead) {
        d.sides.push_back(side(r, l.op, l.max, true));
      }
      for (int r : l.behind) {
        d.sides.push_back(side(r, l.op, counts[l.op][r], false));
      }
      d.what = fmt::format("NCCL communicator {}: {} launched {} #{}; {} did not", g.name,
                           l.ahead.empty() ? "the other ranks" : ranks_text(l.ahead), l.op, l.max,
                           ranks_text(l.behind));
      d.sources.push_back(fmt::format("NCCL RAS answer {}", base_name(in.file)));
      out.push_back(std::move(d));
      break;
    }
    if (!missing.empty() && leads.empty()) {
      Divergence d;
      d.kind = DivergenceKind::MissingRank;
      d.group = g;
      d.absent = missing;
      d.what = fmt::format("NCCL communicator {}: {} did not answer RAS (process gone or stuck "
                           "outside NCCL)",
                           g.name, ranks_text(missing));
      d.sources.push_back(fmt::format("NCCL RAS answer {}", base_name(in.file)));
      out.push_back(std::move(d));
    }
  }
}

void add_sources(Divergence& d) {
  for (const Side& s : d.sides) {
    if (s.file.empty()) {
      d.sources.push_back(fmt::format("rank {}: no record read", s.rank));
      continue;
    }
    std::string said = fmt::format("rank {}: {} {} says {} seq {}", s.rank, source_label(s.source),
                                   base_name(s.file), group_label(s.group), s.seq);
    said += s.entered ? fmt::format(" {} {}", s.op, to_string(s.state)) : " was its last";
    d.sources.push_back(std::move(said));
  }
}

} // namespace

Matched match(const std::vector<Input>& inputs, const MatchOptions& options) {
  Matched out;
  std::map<std::string, GroupRecords> groups; // by group name
  // Ranks whose records go back to their first collective (a Flight Recorder buffer that never
  // wrapped: record_id 0 is still there; NCCL COLL lines from opCount 0): a group missing from
  // them was never entered.
  std::set<int> observed;
  std::set<int> seen;
  for (const auto& in : inputs) {
    for (const auto& r : in.records) {
      const bool first = r.source == Source::NcclLog ? r.seq == 1 : r.record_id == 0;
      if (r.rank >= 0 && r.complete_history && first) {
        observed.insert(r.rank);
      }
    }
  }
  for (const auto& in : inputs) {
    for (const auto& r : in.records) {
      if (r.rank < 0 || r.p2p) {
        continue;
      }
      seen.insert(r.rank);
      ++out.records;
      auto& g = groups[r.group.name];
      if (g.group.name.empty() && g.by_rank.empty()) {
        g.group = r.group;
      }
      if (g.group.ranks.empty() && !r.group.ranks.empty()) {
        g.group.ranks = r.group.ranks;
      }
      merge(g.by_rank[r.rank], r);
    }
  }
  for (auto& [name, g] : groups) {
    g.expected.insert(g.group.ranks.begin(), g.group.ranks.end());
  }
  out.ranks.assign(seen.begin(), seen.end());
  out.groups = groups.size();
  std::vector<Divergence> found;
  for (const auto& [name, g] : groups) {
    if (auto d = first_divergence(g, observed)) {
      found.push_back(std::move(*d));
    }
  }
  std::vector<Divergence> missing;
  for (const auto& d : found) {
    if (d.kind == DivergenceKind::MissingRank) {
      missing.push_back(d);
    }
  }
  if (auto cycle = order_deadlock(missing)) {
    add_sources(*cycle);
    out.divergences.push_back(std::move(*cycle));
  }
  for (auto& d : found) {
    add_sources(d);
    out.divergences.push_back(std::move(d));
  }
  for (const auto& in : inputs) {
    ras_divergences(in, out.divergences);
  }
  // The records PyTorch and NCCL wrote about each call (Flight Recorder, then logs) lead; an
  // order deadlock, which explains the missing ranks of its groups, leads them.
  std::stable_sort(out.divergences.begin(), out.divergences.end(),
                   [](const Divergence& a, const Divergence& b) {
                     auto rank_of = [](const Divergence& d) {
                       int best = 9;
                       for (const auto& s : d.sides) {
                         best = std::min(best, source_rank(s.source));
                       }
                       return best * 2 + (d.kind == DivergenceKind::OrderDeadlock ? 0 : 1);
                     };
                     return rank_of(a) < rank_of(b);
                   });
  if (out.divergences.size() > options.max_divergences) {
    out.divergences.resize(options.max_divergences);
  }
  return out;
}

} // namespace rocplay::collectives
