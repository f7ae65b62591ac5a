// The one-line summary `rocplay watch` writes beside each capture's report.
#include "rocplay/report/watch.hpp"

#include <fmt/format.h>

#include <map>

namespace rocplay::report {

namespace {

// Text from the target, fit for one line: no control characters, at most `limit` bytes.
std::string one_line(std::string_view text, std::size_t limit = 120) {
  std::string out;
  for (const char c : text) {
    if (out.size() >= limit) {
      out += "...";
      break;
    }
    out += static_cast<unsigned char>(c) < 0x20 || c == 0x7f ? ' ' : c;
  }
  return out;
}

std::string who(const Case& t) {
  const std::int64_t pid = t.source.pid.value_or(0);
  return t.source.rank ? fmt::format("rank {} pid {}", *t.source.rank, pid)
                       : fmt::format("pid {}", pid);
}

// Stuck things of one target, grouped by where they are: `2 threads in f() at x.cpp:9`.
std::string stuck_of(const Case& t) {
  std::map<std::string, std::size_t> where;
  std::vector<std::string> order;
  for (const auto& e : t.progress.entries) {
    if (e.motion != Motion::Stuck) {
      continue;
    }
    const std::string& place = e.frame0.empty() ? e.label : e.frame0;
    const std::string key = e.kind + "\x1f" + place;
    if (where[key]++ == 0) {
      order.push_back(key);
    }
  }
  std::string out;
  std::size_t shown = 0;
  for (const auto& key : order) {
    if (++shown > 3) {
      out += fmt::format(", {} more places", order.size() - 3);
      break;
    }
    const auto sep = key.find('\x1f');
    const std::string kind = key.substr(0, sep);
    const std::size_t n = where[key];
    const std::string noun = kind == "thread"  ? (n == 1 ? "thread" : "threads")
                             : kind == "waves" ? (n == 1 ? "wave class" : "wave classes")
                                               : (n == 1 ? kind : kind + "s");
    out += fmt::format("{}{} {} in {}", out.empty() ? "" : ", ", n, noun,
                       one_line(key.substr(sep + 1)));
  }
  return out;
}

} // namespace

std::string capture_summary_line(const CaptureHeader& c, const Incident& incident,
                                 std::size_t max_chars) {
  std::size_t examined = 0;
  for (const auto& t : incident.cases) {
    examined += t.examined() ? 1 : 0;
  }
  std::string line = fmt::format(
      "rocplay watch: {} {}: hang captured{} ({}): {}/{} targets examined", c.host, c.time,
      c.interrupted ? " (interrupted: partial)" : "", c.why, examined, incident.cases.size());
  std::string stuck;
  std::map<std::string, std::size_t> finding_count;
  std::vector<std::string> finding_order;
  for (const auto& t : incident.cases) {
    if (!t.examined()) {
      stuck += fmt::format("{}{}: not examined ({})", stuck.empty() ? "" : "; ", who(t),
                           one_line(t.error, 80));
      continue;
    }
    if (const auto s = stuck_of(t); !s.empty()) {
      stuck += fmt::format("{}{} {}", stuck.empty() ? "" : "; ", who(t), s);
    }
    for (const auto& f : t.findings) {
      if (finding_count[f.id]++ == 0) {
        finding_order.push_back(f.id);
      }
    }
  }
  for (const auto& f : incident.cross_rank) {
    if (finding_count[f.id]++ == 0) {
      finding_order.push_back(f.id);
    }
  }
  line += "; stuck: " + (stuck.empty() ? std::string("nothing seen stuck") : stuck);
  std::string findings;
  for (const auto& id : finding_order) {
    findings += (findings.empty() ? "" : ", ") + one_line(id, 60);
    if (finding_count[id] > 1) {
      findings += fmt::format(" x{}", finding_count[id]);
    }
  }
  line += "; findings: " + (findings.empty() ? std::string("none") : findings);
  const std::string tail = "; report: " + c.report_path;
  if (line.size() + tail.size() > max_chars && max_chars > tail.size() + 3) {
    line.resize(max_chars - tail.size() - 3);
    line += "...";
  }
  return line + tail;
}

} // namespace rocplay::report
