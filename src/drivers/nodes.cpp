// Past one node (rocplay/drivers/nodes.hpp): the frames a node's report travels in, a node's
// report back to its cases, and the one join of several nodes' parts into an incident.
// Tested in tests/unit/drivers/test_nodes.cpp (frames, reports, the join) and
// tests/live/slurm_run.cpp (a real Slurm cluster).
#include "rocplay/drivers/nodes.hpp"

#include "rocplay/case/analyse.hpp"
#include "rocplay/case/run_result.hpp"
#include "rocplay/drivers/drivers.hpp"
#include "rocplay/heuristics/heuristics.hpp"
#include "rocplay/report/run.hpp"
#include "rocplay/snapshot/snapshot.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <map>
#include <memory>

namespace rocplay::drivers {
namespace {

constexpr std::string_view kBase64 =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
constexpr std::size_t kMaxReportDepth = 128; // JSON nesting in a node's report

std::string base64(std::string_view bytes) {
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  for (std::size_t i = 0; i < bytes.size(); i += 3) {
    const std::size_t n = std::min<std::size_t>(3, bytes.size() - i);
    std::uint32_t v = 0;
    for (std::size_t k = 0; k < 3; ++k) {
      v = (v << 8) | (k < n ? static_cast<unsigned char>(bytes[i + k]) : 0u);
    }
    for (std::size_t k = 0; k < 4; ++k) {
      out += k <= n ? kBase64[(v >> (18 - 6 * k)) & 63u] : '=';
    }
  }
  return out;
}

// Appends the decoded bytes; the column (0-based) of the first bad character, or npos.
std::size_t unbase64(std::string_view text, std::string& out) {
  static const std::array<int, 256> table = [] {
    std::array<int, 256> t{};
    t.fill(-1);
    for (std::size_t i = 0; i < kBase64.size(); ++i) {
      t[static_cast<unsigned char>(kBase64[i])] = static_cast<int>(i);
    }
    return t;
  }();
  if (text.size() % 4 != 0) {
    return text.size();
  }
  for (std::size_t i = 0; i < text.size(); i += 4) {
    std::uint32_t v = 0;
    int pad = 0;
    for (std::size_t k = 0; k < 4; ++k) {
      const char c = text[i + k];
      if (c == '=' && k >= 2 && i + 4 == text.size()) {
        ++pad;
        v <<= 6;
        continue;
      }
      const int d = table[static_cast<unsigned char>(c)];
      if (d < 0 || pad > 0) {
        return i + k;
      }
      v = (v << 6) | static_cast<std::uint32_t>(d);
    }
    for (int k = 0; k < 3 - pad; ++k) {
      out += static_cast<char>((v >> (16 - 8 * k)) & 0xffu);
    }
  }
  return std::string_view::npos;
}

std::uint64_t fnv1a64(std::string_view bytes) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (const char c : bytes) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ULL;
  }
  return h;
}

// The words of a frame line after the marker.
std::vector<std::string_view> words(std::string_view text) {
  std::vector<std::string_view> out;
  std::size_t pos = 0;
  while (pos < text.size()) {
    const std::size_t end = std::min(text.find(' ', pos), text.size());
    out.push_back(text.substr(pos, end - pos));
    pos = end + 1;
  }
  return out;
}

const nlohmann::json& member(const nlohmann::json& j, const char* key, const std::string& path) {
  if (!j.is_object() || !j.contains(key)) {
    throw Error(ExitCode::DataError, fmt::format("`{}.{}` is missing", path, key));
  }
  return j.at(key);
}

template <typename T> T value_of(const nlohmann::json& v, const std::string& path) {
  try {
    return v.get<T>();
  } catch (const nlohmann::json::exception&) {
    throw Error(ExitCode::DataError,
                fmt::format("`{}` has the wrong type ({})", path, v.type_name()));
  }
}

// One target of a node's report to its case: the samples' snapshots through the one analysis
// step, the run's account and the case's own fields as the node reported them.
Case case_of_target(const std::string& host, const nlohmann::json& t, const std::string& path) {
  source::Source src;
  src.host = host;
  src.pid = value_of<std::int64_t>(member(t, "pid", path), path + ".pid");
  if (*src.pid <= 0 || *src.pid > (std::int64_t{1} << 32)) {
    throw Error(ExitCode::DataError,
                fmt::format("`{}.pid` {} is not a process id", path, *src.pid));
  }
  if (t.contains("rank") && !t.at("rank").is_null()) {
    const auto rank = value_of<std::int64_t>(t.at("rank"), path + ".rank");
    if (rank < 0 || rank > 999'999) { // the one rank rule's range (source::parse_rank)
      throw Error(ExitCode::DataError, fmt::format("`{}.rank` {} is not a rank", path, rank));
    }
    src.rank = static_cast<int>(rank);
    src.rank_rule = source::RankRule::Environment; // Slurm's task id: SLURM_PROCID
  }
  Case c;
  const bool has_report = t.contains("report") && t.at("report").is_object();
  if (has_report) {
    const auto& r = t.at("report");
    std::vector<Sample> samples(1);
    samples.front().snapshot = snapshot_from_json(member(r, "snapshot", path + ".report"));
    if (r.contains("samples") && r.at("samples").is_array() && !r.at("samples").empty()) {
      const auto& list = r.at("samples");
      samples.resize(list.size());
      for (std::size_t i = 0; i < list.size(); ++i) {
        const std::string sp = fmt::format("{}.report.samples[{}]", path, i);
        Sample& s = samples[i];
        s.index = value_of<std::uint32_t>(member(list[i], "index", sp), sp + ".index");
        s.at = value_of<double>(member(list[i], "at", sp), sp + ".at");
        s.stop_seconds =
            value_of<double>(member(list[i], "stop_seconds", sp), sp + ".stop_seconds");
        s.wall_time = value_of<double>(member(list[i], "wall_time", sp), sp + ".wall_time");
        if (i > 0) {
          s.snapshot = snapshot_from_json(member(list[i], "snapshot", sp));
        }
      }
    }
    incident::AnalyseOptions ao;
    ao.keep_one_sample = r.contains("samples");
    c = incident::analyse(std::move(samples), src, ao);
    if (r.contains("run") && r.at("run").is_object()) {
      auto run = std::make_shared<playbook::RunResult>(report::run_section_from_json(r.at("run")));
      run->findings = c.findings;
      c.warnings = run->warnings;
      if (!run->attached) {
        c.status = CaseStatus::NotExamined;
      } else if (run->fatal || run->aborted) {
        c.status = CaseStatus::Partial;
      }
      c.run = std::move(run);
    }
  } else {
    c.source = src;
    c.status = CaseStatus::NotExamined;
  }
  const auto code = value_of<std::int64_t>(member(t, "exit_code", path), path + ".exit_code");
  if (code < 0 || code > 255) {
    throw Error(ExitCode::DataError,
                fmt::format("`{}.exit_code` {} is not an exit code", path, code));
  }
  c.exit_code = static_cast<ExitCode>(code);
  c.seconds = t.contains("seconds") ? value_of<double>(t.at("seconds"), path + ".seconds") : 0;
  if (t.contains("error") && t.at("error").is_object()) {
    const auto& e = t.at("error");
    c.status = CaseStatus::NotExamined;
    c.error = e.contains("message")
                  ? value_of<std::string>(e.at("message"), path + ".error.message")
                  : std::string("not examined");
    c.error_hint = e.contains("hint") ? value_of<std::string>(e.at("hint"), path + ".error.hint")
                                      : std::string();
  } else if (c.status == CaseStatus::NotExamined && c.error.empty()) {
    c.error = c.run && c.run->fatal ? c.run->fatal->what() : "never attached";
  }
  return c;
}

// Per sample index: the spread of the instants the cases' stops began (every node's clock is the
// system clock; Slurm clusters keep them in step with NTP or PTP). The same measure as
// playbook::run_targets' over one node's targets, here over every case of every node.
std::vector<std::pair<std::uint32_t, double>> skew_of(const Incident& inc) {
  std::vector<const std::vector<Sample>*> processes;
  for (const auto& c : inc.cases) {
    if (c.examined()) {
      processes.push_back(&c.samples);
    }
  }
  return snapshot::sample_skew(processes);
}

} // namespace

bool valid_frame_name(std::string_view name) {
  if (name.empty() || name.size() > 200 || name.front() == '/') {
    return false;
  }
  for (const char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '_' || c == '-' || c == '/';
    if (!ok) {
      return false;
    }
  }
  std::size_t pos = 0;
  while (pos <= name.size()) {
    const std::size_t end = std::min(name.find('/', pos), name.size());
    const std::string_view part = name.substr(pos, end - pos);
    if (part.empty() || part == "..") {
      return false;
    }
    pos = end + 1;
  }
  return true;
}

void write_frame(std::ostream& out, std::string_view name, std::string_view bytes) {
  if (!valid_frame_name(name)) {
    throw Error(ExitCode::Usage, fmt::format("frame name `{}` is not a plain relative path", name));
  }
  out << kFrameMarker << "begin " << name << ' ' << bytes.size() << '\n';
  const std::size_t chunk = kFrameDataChars / 4 * 3;
  for (std::size_t i = 0; i < bytes.size(); i += chunk) {
    out << kFrameMarker << "data " << base64(bytes.substr(i, chunk)) << '\n';
  }
  out << kFrameMarker << "end " << fmt::format("{:016x}", fnv1a64(bytes)) << '\n';
  out.flush();
}

void FrameReader::fail(std::size_t column, const std::string& what) {
  if (errors_.size() < kMaxOtherLines) {
    errors_.push_back(
        fmt::format("{}: line {}, column {}: {}", source_, line_no_, column + 1, what));
  }
}

void FrameReader::line(std::string_view text) {
  ++line_no_;
  const std::size_t at = text.find(kFrameMarker);
  if (at == std::string_view::npos) {
    if (text.size() > kMaxFrameLine) {
      text = text.substr(0, kMaxFrameLine);
    }
    other_.emplace_back(text);
    if (other_.size() > kMaxOtherLines) {
      other_.erase(other_.begin());
    }
    return;
  }
  if (text.size() > kMaxFrameLine) {
    fail(kMaxFrameLine, fmt::format("frame line longer than {} bytes", kMaxFrameLine));
    open_ = false;
    return;
  }
  const std::size_t body = at + kFrameMarker.size();
  const auto w = words(text.substr(body));
  if (w.empty()) {
    fail(body, "frame line without a kind (begin, data, end)");
    return;
  }
  if (w[0] == "begin") {
    if (open_) {
      fail(body, fmt::format("`{}` begins before `{}` ended", w.size() > 1 ? w[1] : "", name_));
    }
    open_ = false;
    if (w.size() != 3 || !valid_frame_name(w[1])) {
      fail(body + 6, "expected `begin NAME BYTES` with a plain relative NAME");
      return;
    }
    std::size_t bytes = 0;
    for (const char c : w[2]) {
      if (c < '0' || c > '9' || bytes > kMaxFrameFileBytes) {
        fail(body + 7 + w[1].size(),
             fmt::format("BYTES is not a size up to {}", kMaxFrameFileBytes));
        return;
      }
      bytes = bytes * 10 + static_cast<std::size_t>(c - '0');
    }
    if (bytes > kMaxFrameFileBytes || w[2].empty()) {
      fail(body + 7 + w[1].size(), fmt::format("BYTES is not a size up to {}", kMaxFrameFileBytes));
      return;
    }
    if (files_.size() >= kMaxFrameFiles) {
      fail(body, fmt::format("more than {} files", kMaxFrameFiles));
      return;
    }
    open_ = true;
    name_ = std::string(w[1]);
    expected_ = bytes;
    data_.clear();
    return;
  }
  if (!open_) {
    fail(body, fmt::format("`{}` outside a file (no `begin` before it)", w[0]));
    return;
  }
  if (w[0] == "data") {
    if (w.size() != 2 || w[1].size() > kFrameDataChars) {
      fail(body + 5,
           fmt::format("expected `data BASE64` of at most {} characters", kFrameDataChars));
      open_ = false;
      return;
    }
    const std::size_t bad = unbase64(w[1], data_);
    if (bad != std::string_view::npos) {
      fail(body + 5 + bad, "not base64");
      open_ = false;
      return;
    }
    if (data_.size() > expected_) {
      fail(body, fmt::format("`{}` is longer than its {} bytes", name_, expected_));
      open_ = false;
    }
    return;
  }
  if (w[0] == "end") {
    open_ = false;
    if (w.size() != 2) {
      fail(body + 4, "expected `end CHECKSUM`");
      return;
    }
    if (data_.size() != expected_) {
      fail(body,
           fmt::format("`{}` has {} bytes, its begin said {}", name_, data_.size(), expected_));
      return;
    }
    if (w[1] != fmt::format("{:016x}", fnv1a64(data_))) {
      fail(body + 4, fmt::format("`{}`: checksum does not match its bytes", name_));
      return;
    }
    files_[name_] = std::move(data_);
    data_.clear();
    return;
  }
  fail(body, fmt::format("unknown frame kind `{}`", w[0]));
}

NodePart node_part_from_report(const std::string& host, std::string_view json_text) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(
        json_text, [](int depth, nlohmann::json::parse_event_t, nlohmann::json&) {
          if (depth > static_cast<int>(kMaxReportDepth)) {
            throw Error(ExitCode::DataError,
                        fmt::format("nested deeper than {} levels", kMaxReportDepth));
          }
          return true;
        });
  } catch (const nlohmann::json::parse_error& e) {
    throw Error(ExitCode::DataError,
                fmt::format("{}'s report is not JSON at byte {}: {}", host, e.byte, e.what()));
  }
  if (!j.is_object() || j.value("schema", "") != "rocplay.run.multi") {
    throw Error(ExitCode::DataError,
                fmt::format("{}'s report is not a rocplay.run.multi document", host));
  }
  NodePart part;
  part.host = host;
  Incident inc;
  inc.title = j.value("playbook", "");
  inc.several = true;
  const auto& targets = member(j, "targets", "report");
  if (!targets.is_array()) {
    throw Error(ExitCode::DataError, "`report.targets` is not an array");
  }
  for (std::size_t i = 0; i < targets.size(); ++i) {
    inc.cases.push_back(case_of_target(host, targets[i], fmt::format("report.targets[{}]", i)));
  }
  if (j.contains("incident") && j.at("incident").contains("notes")) {
    inc.notes =
        value_of<std::vector<std::string>>(j.at("incident").at("notes"), "report.incident.notes");
  }
  if (j.contains("sample_skew") && j.at("sample_skew").is_array()) {
    for (const auto& s : j.at("sample_skew")) {
      inc.lockstep = inc.lockstep || s.value("lockstep", false);
    }
  }
  part.incident = std::move(inc);
  return part;
}

Incident join_nodes(const std::string& title, std::vector<NodePart> parts) {
  // What a node's own collective records said (NCCL RAS, asked by drivers::examine): kept as they
  // are, since the cross-rank heuristics below see only the snapshots.
  std::vector<Finding> records;
  for (const auto& p : parts) {
    if (p.incident) {
      for (const auto& f : p.incident->cross_rank) {
        if (f.id.starts_with("collective-") && f.id != heuristics::kCollectiveWait) {
          records.push_back(f);
        }
      }
    }
  }
  Incident inc;
  inc.title = title;
  inc.several = true;
  inc.lockstep = !parts.empty();
  for (auto& p : parts) {
    if (!p.incident) {
      Case c;
      c.source.host = p.host;
      c.status = CaseStatus::NotExamined;
      c.error = p.error;
      c.error_hint = p.hint;
      c.exit_code = p.code == ExitCode::Ok ? ExitCode::PartialInput : p.code;
      inc.cases.push_back(std::move(c));
      inc.lockstep = false;
      continue;
    }
    inc.lockstep = inc.lockstep && p.incident->lockstep;
    for (auto& c : p.incident->cases) {
      if (!p.host.empty()) {
        c.source.host = p.host;
      }
      inc.cases.push_back(std::move(c));
    }
    for (auto& n : p.incident->notes) {
      inc.notes.push_back(parts.size() == 1 || p.host.empty() ? std::move(n)
                                                              : fmt::format("{}: {}", p.host, n));
    }
  }
  std::vector<Snapshot> ranked;
  std::vector<heuristics::RankHistory> history;
  for (const auto& c : inc.cases) {
    if (c.examined()) {
      // The last sample: every node's were taken in the same agreed window.
      ranked.push_back(c.samples.size() > 1 ? c.samples.back().snapshot : c.snapshot);
      ranked.back().rank = c.source.rank;
      history.push_back(heuristics::rank_history(c.samples));
    }
  }
  if (ranked.size() >= 2) {
    try {
      inc.cross_rank = heuristics::run_ranks(ranked, history);
    } catch (const std::exception& e) {
      inc.notes.push_back(fmt::format("the cross-rank analysis failed ({}): a bug in rocplay, "
                                      "please report it; each rank's own findings still stand",
                                      e.what()));
    }
  }
  inc.cross_rank.insert(inc.cross_rank.end(), records.begin(), records.end());
  inc.sample_skew = skew_of(inc);
  return inc;
}

std::vector<playbook::Target> node_targets(const std::vector<std::int64_t>& pids,
                                           const std::string& record_pattern) {
  std::vector<playbook::Target> targets = playbook::ranked_targets(pids);
  for (auto& t : targets) {
    t.record_path = record_path_for(record_pattern, t.pid, t.rank);
  }
  return targets;
}

} // namespace rocplay::drivers
