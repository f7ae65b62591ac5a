// Names, routing by content, the findings and the JSON of collective records
// (rocplay/collectives/collectives.hpp).
#include "internal.hpp"

#include "rocplay/collectives/pickle.hpp"

#include <fmt/format.h>

namespace rocplay::collectives {

std::string_view to_string(Source source) {
  switch (source) {
  case Source::FlightRecorderPickle:
    return "flight-recorder";
  case Source::FlightRecorderJson:
    return "flight-recorder-json";
  case Source::NcclLog:
    return "nccl-log";
  case Source::RasText:
    return "nccl-ras";
  case Source::RasJson:
    return "nccl-ras-json";
  }
  return "?";
}

std::string_view to_string(State state) {
  switch (state) {
  case State::Unknown:
    return "state unknown";
  case State::Scheduled:
    return "scheduled";
  case State::Started:
    return "started";
  case State::Completed:
    return "completed";
  case State::TimedOut:
    return "timed out";
  }
  return "?";
}

std::string_view to_string(DivergenceKind kind) {
  switch (kind) {
  case DivergenceKind::MissingRank:
    return "missing rank";
  case DivergenceKind::OpMismatch:
    return "op mismatch";
  case DivergenceKind::SizeMismatch:
    return "size mismatch";
  case DivergenceKind::DtypeMismatch:
    return "dtype mismatch";
  case DivergenceKind::OrderDeadlock:
    return "order deadlock";
  }
  return "?";
}

const Frame* Record::call_site() const {
  // PyTorch's own frames (the collective, its logging wrapper) and the interpreter's come first.
  for (const auto& f : frames) {
    if (!detail::library_frame(f.file)) {
      return &f;
    }
  }
  return frames.empty() ? nullptr : &frames.front();
}

std::string Record::op_name() const {
  std::string_view s = op;
  if (const auto colon = s.find(':'); colon != std::string_view::npos && colon < 8) {
    s.remove_prefix(colon + 1); // `nccl:`, `xccl:`, `gloo:`
  }
  return text_scan::lower(s);
}

std::optional<Source> detect(std::string_view head) {
  if (pickle::looks_like_pickle(head)) {
    // dump_dict's first keys: `version`, `pg_config`, `comm_lib_version`, `pg_status`, `entries`.
    const auto window = head.substr(0, 4096);
    if (window.find("version") != std::string_view::npos &&
        (window.find("pg_config") != std::string_view::npos ||
         window.find("entries") != std::string_view::npos)) {
      return Source::FlightRecorderPickle;
    }
    return std::nullopt;
  }
  const auto first = head.find_first_not_of(" \t\r\n");
  if (first != std::string_view::npos && head[first] == '{') {
    if (head.find("\"nccl_version\"") != std::string_view::npos &&
        head.find("\"communicators") != std::string_view::npos) {
      return Source::RasJson;
    }
    // dump_json sorts its keys: comm_lib_version, entries, nccl_comm_state, pg_config, ...
    if (head.find("\"comm_lib_version\"") != std::string_view::npos ||
        head.find("\"pg_config\"") != std::string_view::npos ||
        (head.find("\"collective_seq_id\"") != std::string_view::npos &&
         head.find("\"profiling_name\"") != std::string_view::npos)) {
      return Source::FlightRecorderJson;
    }
    return std::nullopt;
  }
  if (head.starts_with("NCCL version ") &&
      (head.find("Job summary") != std::string_view::npos ||
       head.find("Communicators") != std::string_view::npos ||
       head.find("Gathering data") != std::string_view::npos)) {
    return Source::RasText;
  }
  if (head.find(" NCCL INFO ") != std::string_view::npos ||
      head.find(" NCCL WARN ") != std::string_view::npos ||
      head.find("Watchdog caught collective operation timeout") != std::string_view::npos) {
    return Source::NcclLog;
  }
  return std::nullopt;
}

Input read(std::string_view data, Source source, const std::string& file, std::optional<int> rank,
           const Limits& limits) {
  switch (source) {
  case Source::FlightRecorderPickle:
  case Source::FlightRecorderJson:
    return read_flight_recorder(data, file, rank, limits);
  case Source::NcclLog:
    return read_nccl_log(data, file, rank, limits);
  case Source::RasText:
  case Source::RasJson:
    return read_ras(data, file, limits);
  }
  return {};
}

namespace {

std::string finding_id(DivergenceKind kind) {
  switch (kind) {
  case DivergenceKind::MissingRank:
    return "collective-missing-rank";
  case DivergenceKind::OpMismatch:
    return "collective-op-mismatch";
  case DivergenceKind::SizeMismatch:
    return "collective-size-mismatch";
  case DivergenceKind::DtypeMismatch:
    return "collective-dtype-mismatch";
  case DivergenceKind::OrderDeadlock:
    return "collective-order-deadlock";
  }
  return "collective";
}

std::string ranks_list(const std::vector<int>& ranks) {
  return fmt::format("{}", fmt::join(ranks, ","));
}

std::string title_of(const Divergence& d) {
  const std::string where =
      d.group.name.empty() ? std::string("an unnamed group") : "group " + d.group.name;
  switch (d.kind) {
  case DivergenceKind::OrderDeadlock:
    return fmt::format("collective order deadlock from seq {} of {}: ranks {} each wait in a "
                       "different group's collective the other never entered",
                       d.seq, where, ranks_list(d.waiting));
  case DivergenceKind::MissingRank:
    return fmt::format("collective missing rank at seq {} of {}: rank(s) {} never entered it; "
                       "rank(s) {} wait in it",
                       d.seq, where, d.absent.empty() ? "?" : ranks_list(d.absent),
                       d.waiting.empty() ? "?" : ranks_list(d.waiting));
  default: {
    std::vector<int> ranks;
    for (const auto& s : d.sides) {
      ranks.push_back(s.rank);
    }
    return fmt::format("collective {} at seq {} of {} between ranks {}", to_string(d.kind), d.seq,
                       where, ranks_list(ranks));
  }
  }
}

bool from_ras(const Divergence& d) {
  for (const auto& s : d.sides) {
    if (s.source != Source::RasText && s.source != Source::RasJson) {
      return false;
    }
  }
  return true;
}

} // namespace

std::vector<Finding> findings(const Matched& matched) {
  std::vector<Finding> out;
  for (const auto& d : matched.divergences) {
    Finding f;
    f.id = finding_id(d.kind);
    f.title = title_of(d);
    f.severity = Severity::Error;
    bool fr = false;
    for (const auto& s : d.sides) {
      fr = fr || s.source == Source::FlightRecorderPickle || s.source == Source::FlightRecorderJson;
    }
    f.confidence = fr ? 0.9 : from_ras(d) ? 0.6 : 0.75;
    f.summary = d.what + ".";
    switch (d.kind) {
    case DivergenceKind::MissingRank:
      f.summary += " The ranks that entered wait for the ones that did not: look at where those "
                   "ranks are instead (their last collective, their Python line).";
      f.next_step = "Find why the absent rank(s) skipped or have not reached this collective: a "
                    "branch taken differently on that rank, an exception, or a wait elsewhere.";
      break;
    case DivergenceKind::OpMismatch:
    case DivergenceKind::SizeMismatch:
    case DivergenceKind::DtypeMismatch:
      f.summary += " NCCL does not check that peers call the same collective: the ranks' "
                   "programs took different paths before this call.";
      f.next_step = "Compare each rank's Python line above: the ranks must issue the same "
                    "collectives with the same sizes and dtypes, in the same order.";
      break;
    case DivergenceKind::OrderDeadlock:
      f.summary += " Each rank waits for a peer that waits for it in another group.";
      f.next_step = "Issue collectives of different process groups in one order on every rank "
                    "(or do not block on one group's result before entering the other's).";
      break;
    }
    for (const auto& s : d.sides) {
      std::string line = fmt::format("rank {}: {} seq {}", s.rank,
                                     s.group.name.empty() ? "?" : "group " + s.group.name, s.seq);
      if (!s.entered) {
        line += " (its last; never entered the next)";
      } else {
        line += " " + s.op;
        if (s.numel) {
          line += fmt::format(" of {} elements", *s.numel);
        }
        if (!s.shape.empty()) {
          line += " " + s.shape;
        }
        if (!s.dtype.empty()) {
          line += " " + s.dtype;
        }
        line += fmt::format(", {}", to_string(s.state));
      }
      if (s.call_site) {
        line += fmt::format(", at {}:{} ({})", s.call_site->file, s.call_site->line,
                            s.call_site->function);
        Location loc;
        loc.file = s.call_site->file;
        loc.line = s.call_site->line;
        loc.function = s.call_site->function;
        f.locations.push_back(std::move(loc));
      }
      f.evidence.push_back(std::move(line));
    }
    for (const auto& src : d.sources) {
      f.evidence.push_back("record: " + src);
    }
    f.details = to_json(d);
    out.push_back(std::move(f));
  }
  return out;
}

nlohmann::json to_json(const Divergence& d) {
  nlohmann::json j;
  j["kind"] = std::string(to_string(d.kind));
  j["group"] = {{"name", d.group.name}, {"desc", d.group.desc}, {"ranks", d.group.ranks}};
  j["seq"] = d.seq;
  j["waiting"] = d.waiting;
  j["absent"] = d.absent;
  j["what"] = d.what;
  j["sources"] = d.sources;
  auto sides = nlohmann::json::array();
  for (const auto& s : d.sides) {
    nlohmann::json o{{"rank", s.rank},
                     {"group", s.group.name},
                     {"seq", s.seq},
                     {"entered", s.entered},
                     {"op", s.op},
                     {"state", std::string(to_string(s.state))},
                     {"source", std::string(to_string(s.source))},
                     {"file", s.file}};
    if (s.numel) {
      o["numel"] = *s.numel;
    }
    if (!s.shape.empty()) {
      o["shape"] = s.shape;
    }
    if (!s.dtype.empty()) {
      o["dtype"] = s.dtype;
    }
    if (s.call_site) {
      o["call_site"] = {{"file", s.call_site->file},
                        {"line", s.call_site->line},
                        {"function", s.call_site->function}};
    }
    sides.push_back(std::move(o));
  }
  j["sides"] = std::move(sides);
  return j;
}

nlohmann::json to_json(const Input& in) {
  nlohmann::json j;
  j["file"] = in.file;
  j["source"] = std::string(to_string(in.source));
  if (in.rank) {
    j["rank"] = *in.rank;
  }
  if (!in.version.empty()) {
    j["version"] = in.version;
  }
  j["records"] = in.records.size();
  j["communicators"] = in.communicators.size();
  j["ras_communicators"] = in.ras.size();
  j["damaged"] = in.damaged;
  j["notes"] = in.notes;
  return j;
}

} // namespace rocplay::collectives
