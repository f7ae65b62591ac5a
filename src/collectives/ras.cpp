// Saved `ncclras` answers (NCCL 2.24+ RAS), text and JSON (rocplay/collectives/collectives.hpp).
// Formats from NCCL src/ras/client_support.cc: the text's Warnings section names each
// communicator whose ranks disagree, `#G-C (HASH) MISMATCH` or `INCOMPLETE`, then lines such as
// `  Communicator ranks have different AllReduce operation counts`, `  Rank 1 has launched up to
// operation 3 -- GPU 1 managed by process 4242 on node HOST`, `  2 ranks have launched up to
// operation 4` (followed, when verbose, by `  Rank N -- GPU ...` for each), `  Rank 1 has not
// launched any operations -- ...`; the JSON (`-f json`) lists every communicator's ranks with
// their `collective_counts` and its `missing_ranks`.
#include "internal.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

namespace rocplay::collectives {

namespace {

using detail::number_after;
using detail::word_after;

// `-- GPU 1 managed by process 4242 on node HOST`: pid and host.
void who(std::string_view line, RasComm::RankCount& rc, std::size_t max_text) {
  if (auto pid = number_after(line, "managed by process "); pid && *pid < (1u << 31)) {
    rc.pid = static_cast<std::int64_t>(*pid);
  }
  if (const auto p = line.find(" on node "); p != std::string_view::npos) {
    rc.host = detail::clean(text_scan::trim(line.substr(p + 9)), max_text);
  }
}

void read_text(std::string_view text, Input& in, const Limits& limits) {
  RasComm* comm = nullptr;
  std::string op;                           // the op whose counts differ
  std::optional<std::uint64_t> group_count; // `N ranks have launched up to operation C`
  bool in_warnings = false;
  std::size_t pos = 0;
  while (pos < text.size()) {
    auto nl = text.find('\n', pos);
    if (nl == std::string_view::npos) {
      nl = text.size();
    }
    std::string_view line = text.substr(pos, std::min(nl - pos, limits.max_line_bytes));
    pos = nl + 1;
    if (line.starts_with("NCCL version ") && in.version.empty()) {
      in.version = detail::clean(line.substr(13, line.find(' ', 13) - 13), 32);
      continue;
    }
    if (line.starts_with("Errors") || line.starts_with("Warnings")) {
      in_warnings = true;
      continue;
    }
    if (!in_warnings) {
      continue;
    }
    if (line.starts_with("#")) { // `#0-0 (0123456789abcdef) MISMATCH`
      const auto open = line.find('(');
      const auto close = line.find(')');
      if (open == std::string_view::npos || close == std::string_view::npos || close < open ||
          in.ras.size() >= limits.max_groups) {
        comm = nullptr;
        continue;
      }
      RasComm c;
      c.comm_hash = detail::clean(line.substr(open + 1, close - open - 1), 32);
      c.status = detail::clean(text_scan::trim(line.substr(close + 1)), 32);
      in.ras.push_back(std::move(c));
      comm = &in.ras.back();
      op.clear();
      group_count.reset();
      continue;
    }
    if (!comm || !line.starts_with("  ")) {
      continue;
    }
    const std::string_view body = text_scan::trim(line);
    if (body.starts_with("Communicator ranks have different ")) {
      const auto rest = body.substr(34);
      op = detail::clean(rest.substr(0, rest.find(' ')), 40);
      group_count.reset();
      continue;
    }
    if (body.find(" ranks have launched up to operation ") != std::string_view::npos) {
      group_count = number_after(body, "launched up to operation ");
      continue;
    }
    if (body.find(" ranks have not launched any operations") != std::string_view::npos) {
      group_count = 0;
      continue;
    }
    if (body.starts_with("Rank ") && comm->ranks.size() < (1u << 16)) {
      RasComm::RankCount rc;
      auto r = number_after(body, "Rank ");
      if (!r || *r >= (1u << 24)) {
        continue;
      }
      rc.rank = static_cast<int>(*r);
      who(body, rc, limits.max_text);
      if (auto c = number_after(body, "has launched up to operation ")) {
        rc.op = op;
        rc.count = c;
      } else if (body.find("has not launched any operations") != std::string_view::npos) {
        rc.op = op;
        rc.count = 0;
      } else if (!op.empty() && group_count) {
        rc.op = op;
        rc.count = group_count;
      } else if (comm->status == "INCOMPLETE" || comm->status == "DEAD") {
        rc.missing = true;
      } else {
        continue; // a status line (`has status ...`): not a count
      }
      comm->ranks.push_back(std::move(rc));
    }
  }
}

void read_json(std::string_view text, Input& in, const Limits& limits) {
  if (!detail::json_nesting_within(text, 32)) {
    in.damaged = true;
    in.notes.push_back("JSON nested deeper than 32 levels: not an ncclras answer");
    return;
  }
  const auto root = nlohmann::json::parse(text, nullptr, false);
  if (root.is_discarded() || !root.is_object()) {
    in.damaged = true;
    in.notes.push_back("unreadable ncclras JSON (cut off or not JSON)");
    return;
  }
  if (auto v = root.find("nccl_version"); v != root.end() && v->is_string()) {
    in.version = detail::clean(v->get_ref<const std::string&>(), 32);
  }
  auto comms = root.find("communicators");
  if (comms == root.end() || !comms->is_array()) {
    return;
  }
  for (const auto& c : *comms) {
    if (!c.is_object() || in.ras.size() >= limits.max_groups) {
      continue;
    }
    RasComm rc;
    if (auto h = c.find("hash"); h != c.end() && h->is_string()) {
      rc.comm_hash = detail::clean(h->get_ref<const std::string&>(), 32);
    }
    if (auto s = c.find("size"); s != c.end() && s->is_number_integer()) {
      rc.nranks = static_cast<int>(std::clamp<std::int64_t>(s->get<std::int64_t>(), 0, 1 << 24));
    }
    auto rank_of = [&](const nlohmann::json& r, RasComm::RankCount& out) {
      if (auto n = r.find("rank"); n != r.end() && n->is_number_integer()) {
        out.rank = static_cast<int>(std::clamp<std::int64_t>(n->get<std::int64_t>(), -1, 1 << 24));
      }
      if (auto h = r.find("host"); h != r.end() && h->is_string()) {
        out.host = detail::clean(h->get_ref<const std::string&>(), limits.max_text);
      }
      if (auto p = r.find("pid"); p != r.end() && p->is_number_integer()) {
        out.pid = p->get<std::int64_t>();
      }
    };
    if (auto ranks = c.find("ranks"); ranks != c.end() && ranks->is_array()) {
      for (const auto& r : *ranks) {
        if (!r.is_object() || rc.ranks.size() >= (1u << 16)) {
          continue;
        }
        RasComm::RankCount base;
        rank_of(r, base);
        if (auto counts = r.find("collective_counts"); counts != r.end() && counts->is_object()) {
          for (const auto& [name, n] : counts->items()) {
            if (!n.is_number_unsigned() && !n.is_number_integer()) {
              continue;
            }
            RasComm::RankCount rcnt = base;
            rcnt.op = detail::clean(name, 40);
            rcnt.count =
                n.is_number_unsigned()
                    ? n.get<std::uint64_t>()
                    : static_cast<std::uint64_t>(std::max<std::int64_t>(0, n.get<std::int64_t>()));
            rc.ranks.push_back(std::move(rcnt));
          }
        }
      }
    }
    if (auto missing = c.find("missing_ranks"); missing != c.end() && missing->is_array()) {
      for (const auto& r : *missing) {
        if (!r.is_object()) {
          continue;
        }
        RasComm::RankCount m;
        rank_of(r, m);
        m.missing = true;
        rc.ranks.push_back(std::move(m));
      }
    }
    // A communicator whose ranks agree is OK; one with different counts or missing ranks is
    // what the text calls MISMATCH / INCOMPLETE.
    rc.status = "OK";
    for (const auto& r : rc.ranks) {
      if (r.missing) {
        rc.status = "INCOMPLETE";
      }
    }
    in.ras.push_back(std::move(rc));
  }
}

} // namespace

Input read_ras(std::string_view text, const std::string& file, const Limits& limits) {
  Input in;
  in.file = file;
  const auto first = text.find_first_not_of(" \t\r\n");
  const bool json = first != std::string_view::npos && text[first] == '{';
  in.source = json ? Source::RasJson : Source::RasText;
  if (json) {
    read_json(text, in, limits);
  } else {
    read_text(text, in, limits);
  }
  return in;
}

std::vector<std::string> set_aside_unanswered(Input& ras,
                                              const std::vector<std::int64_t>& examined) {
  std::vector<std::string> out;
  const auto is_examined = [&](std::int64_t pid) {
    return std::find(examined.begin(), examined.end(), pid) != examined.end();
  };
  std::vector<std::int64_t> named;
  for (const auto& c : ras.ras) {
    for (const auto& r : c.ranks) {
      if (r.pid && std::find(named.begin(), named.end(), *r.pid) == named.end()) {
        named.push_back(*r.pid);
      }
    }
  }
  if (!named.empty() && std::none_of(named.begin(), named.end(), is_examined)) {
    std::sort(named.begin(), named.end());
    out.push_back(fmt::format("NCCL RAS answered about process(es) {}, none of them examined: "
                              "another job's (two jobs on one host share the default RAS port); "
                              "not used",
                              fmt::join(named, ", ")));
    ras.ras.clear();
    return out;
  }
  for (auto& c : ras.ras) {
    std::vector<std::string> ours;
    std::erase_if(c.ranks, [&](const RasComm::RankCount& r) {
      if (!r.missing || (r.pid && !is_examined(*r.pid))) {
        return false;
      }
      ours.push_back(r.pid ? fmt::format("rank {} (pid {})", r.rank, *r.pid)
                           : fmt::format("rank {} (process not named)", r.rank));
      return true;
    });
    if (!ours.empty()) {
      out.push_back(fmt::format("NCCL communicator {}: {} did not answer RAS while rocplay's "
                                "debuggers held the job's ranks stopped: not counted as missing",
                                c.comm_hash, fmt::join(ours, ", ")));
    }
  }
  return out;
}

} // namespace rocplay::collectives
