// `--format html` (rocplay/report/html.hpp): the page, its parts per case, and the escaping every
// untrusted string goes through. Graphviz is reached only through src/report/html_graphviz.cpp.
// Tested in tests/unit/report/test_html.cpp and tests/scripts/html_pages.sh (headless Chromium).
#include "rocplay/report/html.hpp"

#include "rocplay/case/run_result.hpp"
#include "rocplay/heuristics/wait_graph.hpp"
#include "rocplay/kernels/kernel_names.hpp"
#include "rocplay/report/crash.hpp"
#include "rocplay/report/incident.hpp"
#include "rocplay/report/launch.hpp"
#include "rocplay/report/run.hpp"
#include "rocplay/report/verify.hpp"
#include "rocplay/snapshot/grouping.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <climits>
#include <map>
#include <set>
#include <sstream>
#include <unordered_map>

namespace rocplay::report::html {

std::string escape(std::string_view text, std::size_t max_bytes) {
  std::string out;
  out.reserve(std::min(text.size(), max_bytes) + 16);
  const auto* p = reinterpret_cast<const unsigned char*>(text.data());
  const std::size_t n = std::min(text.size(), max_bytes);
  constexpr std::string_view kReplacement = "\xEF\xBF\xBD"; // U+FFFD
  std::size_t i = 0;
  while (i < n) {
    const unsigned char c = p[i];
    if (c < 0x80) {
      switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      case '\t':
      case '\n':
        out += static_cast<char>(c);
        break;
      default:
        if (c < 0x20 || c == 0x7F) {
          out += kReplacement; // NUL and other controls: never raw in a page
        } else {
          out += static_cast<char>(c);
        }
      }
      ++i;
      continue;
    }
    // A UTF-8 sequence, checked whole (no overlong forms, surrogates or values past U+10FFFF);
    // anything else is one U+FFFD per byte.
    std::size_t len = 0;
    std::uint32_t cp = 0;
    if (c >= 0xC2 && c <= 0xDF) {
      len = 2;
      cp = c & 0x1F;
    } else if (c >= 0xE0 && c <= 0xEF) {
      len = 3;
      cp = c & 0x0F;
    } else if (c >= 0xF0 && c <= 0xF4) {
      len = 4;
      cp = c & 0x07;
    }
    bool ok = len != 0 && i + len <= n;
    for (std::size_t k = 1; ok && k < len; ++k) {
      ok = (p[i + k] & 0xC0) == 0x80;
      cp = (cp << 6) | (p[i + k] & 0x3F);
    }
    ok = ok && !(len == 3 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) &&
         !(len == 4 && (cp < 0x10000 || cp > 0x10FFFF));
    if (ok) {
      out.append(text.data() + i, len);
      i += len;
    } else {
      out += kReplacement;
      ++i;
    }
  }
  if (text.size() > max_bytes) {
    out += "\xE2\x80\xA6"; // `…`: cut here
  }
  return out;
}

namespace {

// --- colours -----------------------------------------------------------------------------------
// Okabe and Ito's palette (safe for the common colour blindnesses); past seven lines the same
// colours come back striped, past fourteen every line is grey dots. Every use has a legend, and
// CSS asks printers to keep backgrounds.
constexpr std::size_t kHtmlSwatches = 15; // k0..k14; k14 = the rest

// State colours of the rank grid, the same names as the legend's.
struct HtmlRankState {
  std::string_view id;
  std::string_view name;
  std::string_view meaning;
};
constexpr HtmlRankState kHtmlRankStates[] = {
    {"collective", "in a collective", "a collective kernel (NCCL, RCCL, all-reduce) is in flight"},
    {"kernel", "in a kernel", "another kernel is in flight"},
    {"idle", "idle", "no kernel in flight: the host is elsewhere"},
    {"elsewhere", "elsewhere", "its peers wait for it in a collective it is not in"},
    {"unseen", "unseen", "no snapshot of it: not examined, unreadable, or a log"},
};

constexpr std::string_view kHtmlCss = R"css(
:root{--fg:#111;--mute:#555;--line:#ccc;--bg:#fff}
*{box-sizing:border-box}
body{font:14px/1.4 system-ui,-apple-system,"Segoe UI",Helvetica,Arial,sans-serif;color:var(--fg);
 background:var(--bg);margin:0 auto;padding:16px 24px;max-width:1400px;
 -webkit-print-color-adjust:exact;print-color-adjust:exact}
h1{font-size:20px;margin:0 0 4px}h2{font-size:17px;margin:24px 0 8px;border-bottom:2px solid #111}
h3{font-size:15px;margin:16px 0 6px}h4{font-size:14px;margin:10px 0 4px}
code,pre,.mono{font-family:ui-monospace,"DejaVu Sans Mono",Menlo,Consolas,monospace;font-size:12.5px}
pre{white-space:pre-wrap;word-break:break-word;margin:4px 0}
.meta{color:var(--mute)}
.lead{background:#fff4e5;border:2px solid #d55e00;padding:8px 12px;font-size:13.5px}
.harm{background:#fde;border:2px solid #000;padding:8px 12px}
.note{color:var(--mute);font-style:italic}
.graph svg{max-width:100%;height:auto}
.legend{display:flex;flex-wrap:wrap;gap:4px 16px;margin:6px 0;font-size:12.5px}
.legend span{display:inline-flex;align-items:center;gap:5px}
.sw{display:inline-block;width:16px;height:12px;border:1px solid #333;vertical-align:middle}
.grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(70px,1fr));gap:4px;max-width:1100px}
.grid a{display:block;padding:4px;border:1px solid #333;text-decoration:none;color:#000;
 text-align:center;font-size:11.5px;line-height:1.2;min-height:38px;overflow-wrap:anywhere}
.grid a b{display:block;font-size:14px}
.s-collective{background:#d55e00;color:#fff!important}.s-kernel{background:#e69f00}
.s-idle{background:#56b4e9}.s-elsewhere{background:#cc79a7;border:3px solid #000!important}
.s-unseen{background:repeating-linear-gradient(45deg,#ddd 0 4px,#fff 4px 8px)}
ul.tree,ul.tree ul{list-style:none;margin:0;padding-left:14px;border-left:1px dotted #999}
ul.tree{padding-left:4px;border:0}
ul.tree ul.run{padding-left:0;border:0}
li.br+li.br{border-top:1px dotted #bbb;margin-top:2px;padding-top:1px}
ul.tree li{margin:1px 0;white-space:nowrap}
.fn{font-family:ui-monospace,"DejaVu Sans Mono",Menlo,Consolas,monospace;font-size:12.5px}
.loc,.who{color:var(--mute);font-size:12px;margin-left:8px}
li.hot>.fn{font-weight:700;background:#fbe3d3;outline:1px solid #d55e00}
li.hot>.fn::before{content:"\25B6  "}
.tree-box{overflow-x:auto;max-height:70vh;border:1px solid var(--line);padding:6px}
.wm{margin:6px 0 18px}
.wmflex{display:flex;flex-wrap:wrap;gap:18px;align-items:flex-start}
.wmmap{flex:1 1 560px;min-width:360px}.wmhist{flex:0 1 520px}
.wr{display:flex;align-items:center;margin:1px 0}
.wl{width:220px;flex:none;font-size:11.5px;color:#333;overflow:hidden;text-overflow:ellipsis;
 white-space:nowrap;font-family:ui-monospace,"DejaVu Sans Mono",Menlo,Consolas,monospace}
.wb{display:flex;flex:1;height:14px;background:#f2f2f2;border:1px solid #999}
.wb i{display:block;height:100%}
.wb i.p,.sw.p{outline:2px solid #000;outline-offset:-2px}
.hist{border-collapse:collapse;font-size:12px}
.hist td{padding:1px 6px 1px 0;vertical-align:middle;white-space:nowrap}
.hb{width:160px;height:11px;background:#f2f2f2;border:1px solid #999}.hb i{display:block;height:100%}
.k0{background:#e69f00}.k1{background:#56b4e9}.k2{background:#009e73}.k3{background:#f0e442}
.k4{background:#0072b2}.k5{background:#d55e00}.k6{background:#cc79a7}
.k7{background:repeating-linear-gradient(135deg,#e69f00 0 3px,#fff 3px 5px)}
.k8{background:repeating-linear-gradient(135deg,#56b4e9 0 3px,#fff 3px 5px)}
.k9{background:repeating-linear-gradient(135deg,#009e73 0 3px,#fff 3px 5px)}
.k10{background:repeating-linear-gradient(135deg,#c9bd1a 0 3px,#fff 3px 5px)}
.k11{background:repeating-linear-gradient(135deg,#0072b2 0 3px,#fff 3px 5px)}
.k12{background:repeating-linear-gradient(135deg,#d55e00 0 3px,#fff 3px 5px)}
.k13{background:repeating-linear-gradient(135deg,#cc79a7 0 3px,#fff 3px 5px)}
.k14{background:radial-gradient(#777 30%,#ddd 31%);background-size:4px 4px}
table.t{border-collapse:collapse;font-size:12.5px;margin:4px 0}
table.t th,table.t td{border:1px solid var(--line);padding:2px 6px;text-align:left;vertical-align:top}
table.t th{background:#f4f4f4}
details{margin:4px 0}summary{cursor:pointer;font-weight:600}
section.case{border-top:1px solid var(--line);padding-top:4px}
.sev-error,.sev-critical{color:#a33a00;font-weight:700}.sev-warning{color:#7a5200;font-weight:700}
@media print{body{max-width:none;padding:0}.tree-box{max-height:none;overflow:visible}
 details:not([open])>summary::after{content:" (collapsed)"}h2{break-after:avoid}
 @supports selector(::details-content){details::details-content{content-visibility:visible;
 display:block}details:not([open])>summary::after{content:none}}}
)css";

// Caps that keep the page small whatever the incident (docs/benchmarks.md).
constexpr std::size_t kHtmlGraphNodes = 120;
constexpr std::size_t kHtmlMapRows = 40;      // distinct work-group patterns per dispatch
constexpr std::size_t kHtmlMapSegments = 256; // per row
constexpr std::size_t kHtmlHistBars = 16;
constexpr std::size_t kHtmlDispatches = 8; // wave maps per case
constexpr std::size_t kHtmlTreeNodes = 3000;
constexpr std::size_t kHtmlTreeDepth = 80;
constexpr std::size_t kHtmlTableRows = 200;
constexpr std::size_t kHtmlLeadLines = 40;

std::string_view html_base(std::string_view path) {
  const auto slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

std::string html_hex(std::uint64_t v) {
  return fmt::format("0x{:x}", v);
}

std::string html_file_line(std::string_view file, std::optional<std::uint32_t> line) {
  if (file.empty()) {
    return {};
  }
  return line ? fmt::format("{}:{}", html_base(file), *line) : std::string(html_base(file));
}

// --- the wave map ------------------------------------------------------------------------------

// The polling lanes, outlined in the wave map: a sync-lane spin's own locations (the lanes that
// poll their peers' flags, exactly), else for each dispatch whose `lanes:D:poll` node of the
// case's graph spins, the PCs of the lanes it stands for (heuristics::polling_pcs: the leaders
// of each work-group in one loop).
struct HtmlPollMarks {
  std::set<std::uint64_t> pcs;
  std::set<std::string> lines; // `k.cu:12`
};

HtmlPollMarks html_poll_marks(const Snapshot& s, const std::vector<snapshot::WaveClass>& classes,
                              const graph::Graph* g, const std::vector<Finding>* findings) {
  HtmlPollMarks marks;
  if (findings != nullptr) {
    for (const auto& f : *findings) {
      if (f.id != "sync-lane-barrier-spin" || f.severity < Severity::Warning) {
        continue;
      }
      for (const auto& l : f.locations) {
        if (l.pc) {
          marks.pcs.insert(*l.pc);
        }
      }
    }
  }
  const bool from_finding = !marks.pcs.empty();
  for (const auto& d : s.dispatches) {
    if (from_finding || g == nullptr) {
      break;
    }
    const auto n = g->find("lanes:" + d.id + ":poll");
    if (n == graph::Graph::npos || g->node(n).state != graph::State::Spinning) {
      continue;
    }
    for (const auto pc : heuristics::polling_pcs(s, classes, d)) {
      marks.pcs.insert(pc);
    }
  }
  for (const auto& c : classes) {
    if (c.pc && marks.pcs.contains(*c.pc) && !c.file.empty() && c.line) {
      marks.lines.insert(html_file_line(c.file, c.line));
    }
  }
  return marks;
}

struct HtmlLineClass {
  std::string key; // `k.cu:12`, `kern+0x1a0`, `?`
  std::string function;
  std::uint64_t threads = 0;
  bool poll = false;
};

struct HtmlSeg {
  std::uint64_t begin = 0;
  std::uint64_t end = 0;
  std::size_t cls = 0;
};

using HtmlRowKey = std::array<std::int64_t, 6>; // first (x,y,z), last (x,y,z); INT64_MIN unknown

struct HtmlDispatchMap {
  const Dispatch* dispatch = nullptr;
  std::string label;
  bool lanes = false; // columns are threads (cuda-gdb ranges), else wave slots
  std::uint64_t columns = 0;
  std::uint64_t waves = 0;
  std::uint64_t threads = 0;
  std::vector<HtmlLineClass> classes;
  std::unordered_map<std::string, std::size_t> class_of;
  std::map<HtmlRowKey, std::vector<HtmlSeg>> rows;
  std::map<std::uint64_t, std::pair<std::uint64_t, std::size_t>> pcs; // pc -> threads, class
  std::uint64_t unknown_pc_threads = 0;
};

std::string html_row_label(const HtmlRowKey& k) {
  auto one = [&](std::size_t at) {
    std::string s = "(";
    for (std::size_t d = 0; d < 3; ++d) {
      s += d ? "," : "";
      s += k[at + d] == INT64_MIN ? "?" : std::to_string(k[at + d]);
    }
    return s + ")";
  };
  const std::string first = one(0);
  const std::string last = one(3);
  return first == last ? first : first + "-" + last;
}

// Work-groups a row stands for: a cuda-gdb range of blocks runs in linear order over the grid.
std::uint64_t html_row_groups(const HtmlRowKey& k, const Dispatch* d) {
  for (const auto v : k) {
    if (v == INT64_MIN) {
      return 1;
    }
  }
  std::uint64_t gx = 1;
  std::uint64_t gy = 1;
  if (d != nullptr && d->grid.size() >= 2 && d->grid[0] > 0 && d->grid[1] > 0) {
    gx = d->grid[0];
    gy = d->grid[1];
  } else if (k[1] != k[4] || k[2] != k[5]) {
    return 1;
  }
  auto lin = [&](std::size_t at) {
    return static_cast<std::int64_t>(k[at] + k[at + 1] * static_cast<std::int64_t>(gx) +
                                     k[at + 2] * static_cast<std::int64_t>(gx * gy));
  };
  const std::int64_t n = lin(3) - lin(0) + 1;
  return n > 0 ? static_cast<std::uint64_t>(n) : 1;
}

std::vector<HtmlDispatchMap> html_wave_maps(const Snapshot& s, const HtmlPollMarks& marks) {
  using Key = std::pair<std::int64_t, std::int64_t>; // agent, dispatch (-1 unknown)
  std::map<Key, HtmlDispatchMap> maps;
  for (const auto& w : s.waves) {
    const Key key{w.agent ? static_cast<std::int64_t>(*w.agent) : -1,
                  w.dispatch && !w.unattributed ? static_cast<std::int64_t>(*w.dispatch) : -1};
    auto [it, fresh] = maps.try_emplace(key);
    HtmlDispatchMap& m = it->second;
    if (fresh) {
      for (const auto& d : s.dispatches) {
        if (key.second >= 0 && d.dispatch_no &&
            *d.dispatch_no == static_cast<std::uint64_t>(key.second) &&
            (!d.agent || !w.agent || *d.agent == *w.agent)) {
          m.dispatch = &d;
          break;
        }
      }
    }
    std::string line = html_file_line(w.file.view(), w.line);
    if (line.empty()) {
      line = w.function.empty() ? std::string("?")
             : w.pc             ? fmt::format("{}+{}", w.function.view(), html_hex(*w.pc))
                                : w.function.str();
    }
    auto [ci, new_class] = m.class_of.try_emplace(line, m.classes.size());
    if (new_class) {
      HtmlLineClass c;
      c.key = line;
      c.function = w.function.str();
      c.poll = marks.lines.contains(line) || (w.pc && marks.pcs.contains(*w.pc));
      m.classes.push_back(std::move(c));
    }
    HtmlLineClass& cls = m.classes[ci->second];
    cls.poll = cls.poll || (w.pc && marks.pcs.contains(*w.pc));
    cls.threads += w.count;
    m.waves += 1;
    m.threads += w.count;
    if (w.pc) {
      auto& pc = m.pcs[*w.pc];
      pc.first += w.count;
      pc.second = ci->second;
    } else {
      m.unknown_pc_threads += w.count;
    }
    HtmlSeg seg;
    seg.cls = ci->second;
    if (w.first_work_item) {
      m.lanes = true;
      seg.begin = *w.first_work_item;
      seg.end =
          std::max<std::uint64_t>(w.last_work_item.value_or(*w.first_work_item), seg.begin) + 1;
    } else if (w.wave_in_group) {
      seg.begin = *w.wave_in_group;
      seg.end = seg.begin + 1;
    } else {
      seg.begin = 0; // slot unknown: the wave shows as one cell at the row's start
      seg.end = 1;
    }
    m.columns = std::max(m.columns, seg.end);
    HtmlRowKey row;
    for (std::size_t d = 0; d < 3; ++d) {
      row[d] = w.workgroup[d].value_or(INT64_MIN);
      row[3 + d] = w.workgroup_last[d] ? *w.workgroup_last[d] : row[d];
    }
    m.rows[row].push_back(seg);
  }
  std::vector<HtmlDispatchMap> out;
  for (auto& [key, m] : maps) {
    if (m.lanes && m.dispatch != nullptr && !m.dispatch->workgroup.empty()) {
      std::uint64_t block = 1;
      for (const auto v : m.dispatch->workgroup) {
        block *= std::max<std::uint64_t>(v, 1);
      }
      m.columns = std::max(m.columns, block);
    }
    std::string kernel = m.dispatch != nullptr ? m.dispatch->kernel_name : std::string();
    if (kernel.empty() && !m.classes.empty()) {
      kernel = m.classes.front().function;
    }
    m.label = key.second < 0 ? "waves of no known dispatch"
                             : fmt::format("dispatch {}{}", key.second,
                                           kernel.empty() ? std::string() : ": " + kernel);
    out.push_back(std::move(m));
  }
  // The largest dispatches first: those are what a person looks for.
  std::stable_sort(out.begin(), out.end(),
                   [](const auto& a, const auto& b) { return a.threads > b.threads; });
  return out;
}

std::string html_swatch_class(std::size_t cls) {
  return fmt::format("k{}", std::min(cls, kHtmlSwatches - 1));
}

void html_write_map(std::string& h, const HtmlDispatchMap& m) {
  h += "<div class=\"wm\"><h4>" + escape(m.label, 300) + "</h4>";
  std::string dims;
  if (m.dispatch != nullptr) {
    auto join = [](const std::vector<std::uint64_t>& v) {
      std::string s;
      for (const auto x : v) {
        s += (s.empty() ? "" : ",") + std::to_string(x);
      }
      return s;
    };
    if (!m.dispatch->grid.empty()) {
      dims += " · grid (" + join(m.dispatch->grid) + ")";
    }
    if (!m.dispatch->workgroup.empty()) {
      dims += " · work-group (" + join(m.dispatch->workgroup) + ")";
    }
    if (!m.dispatch->fence_text.empty()) {
      dims += " · fence " + escape(m.dispatch->fence_text, 40);
    }
  }
  h += fmt::format("<p class=\"meta\">{} {} stopped{}, {} {}; rows are work-groups, columns "
                   "{} 0–{} of a work-group, coloured by the source line each sits on.</p>",
                   m.threads, m.lanes ? "threads" : "waves", m.lanes ? " (lanes)" : "", m.waves,
                   m.lanes ? "thread ranges" : "wave entries", m.lanes ? "threads" : "wave slots",
                   m.columns == 0 ? 0 : m.columns - 1, dims);
  // Work-groups whose waves sit alike are one row: a 100,000-wave kernel is a few rows.
  struct Pattern {
    std::string first;
    std::string last;
    std::uint64_t groups = 0;
    std::size_t rows = 0;
    std::vector<HtmlSeg> segs;
  };
  std::vector<Pattern> patterns;
  std::unordered_map<std::string, std::size_t> pattern_of;
  for (const auto& [row, raw] : m.rows) {
    std::vector<HtmlSeg> segs = raw;
    std::sort(segs.begin(), segs.end(), [](const HtmlSeg& a, const HtmlSeg& b) {
      return a.begin != b.begin ? a.begin < b.begin : a.cls < b.cls;
    });
    std::vector<HtmlSeg> merged;
    for (const auto& s : segs) {
      if (!merged.empty() && merged.back().cls == s.cls && s.begin <= merged.back().end) {
        merged.back().end = std::max(merged.back().end, s.end);
      } else {
        merged.push_back(s);
      }
    }
    std::string key;
    for (const auto& s : merged) {
      key += fmt::format("{}-{}:{};", s.begin, s.end, s.cls);
    }
    const std::string label = html_row_label(row);
    auto [it, fresh] = pattern_of.try_emplace(key, patterns.size());
    if (fresh) {
      Pattern p;
      p.first = label;
      p.segs = std::move(merged);
      patterns.push_back(std::move(p));
    }
    Pattern& p = patterns[it->second];
    p.last = label;
    p.rows += 1;
    p.groups += html_row_groups(row, m.dispatch);
  }
  h += "<div class=\"wmflex\"><div class=\"wmmap\">";
  const double columns = static_cast<double>(std::max<std::uint64_t>(m.columns, 1));
  std::size_t drawn = 0;
  std::uint64_t groups_left = 0;
  for (const auto& p : patterns) {
    if (drawn == kHtmlMapRows) {
      groups_left += p.groups;
      continue;
    }
    ++drawn;
    std::string label = p.first;
    if (p.rows > 1) {
      label = fmt::format("{} ×{} … {}", p.first, p.groups, p.last);
    } else if (p.groups > 1) {
      label = fmt::format("{} ×{}", p.first, p.groups);
    }
    h += "<div class=\"wr\"><span class=\"wl\" title=\"" + escape(label, 200) + "\">" +
         escape(label, 200) + "</span><span class=\"wb\">";
    std::uint64_t at = 0;
    std::size_t n = 0;
    for (const auto& s : p.segs) {
      if (n++ == kHtmlMapSegments) {
        break;
      }
      const std::uint64_t begin = std::max(s.begin, at);
      if (s.end <= begin) {
        continue;
      }
      if (begin > at) {
        h += fmt::format("<i style=\"width:{:.3f}%\"></i>",
                         100.0 * static_cast<double>(begin - at) / columns);
      }
      const HtmlLineClass& c = m.classes[s.cls];
      h += fmt::format(
          "<i class=\"{}{}\" style=\"width:{:.3f}%\" title=\"{} {}: {}\"></i>",
          html_swatch_class(s.cls), c.poll ? " p" : "",
          100.0 * static_cast<double>(s.end - begin) / columns, m.lanes ? "threads" : "slots",
          s.end - begin == 1 ? std::to_string(begin) : fmt::format("{}-{}", begin, s.end - 1),
          escape(c.key, 200));
      at = s.end;
    }
    h += "</span></div>";
  }
  if (drawn < patterns.size()) {
    h += fmt::format("<p class=\"note\">{} more row patterns ({} work-groups) not drawn; the "
                     "histogram counts them.</p>",
                     patterns.size() - drawn, groups_left);
  }
  // The legend: every colour the map uses.
  h += "<div class=\"legend\">";
  // Each line its own swatch while they last; the last swatch stands for every line past them.
  const std::size_t named =
      m.classes.size() <= kHtmlSwatches ? m.classes.size() : kHtmlSwatches - 1;
  for (std::size_t i = 0; i < named; ++i) {
    const auto& c = m.classes[i];
    h += fmt::format("<span><i class=\"sw {}{}\"></i><code>{}</code>{} · {}{}</span>",
                     html_swatch_class(i), c.poll ? " p" : "", escape(c.key, 200),
                     c.function.empty() || c.key.starts_with(c.function)
                         ? std::string()
                         : " " + escape(short_function_name(c.function), 120),
                     c.threads,
                     c.poll ? " · <b>outlined: the lanes polling (the cause's loop)</b>" : "");
  }
  if (named < m.classes.size()) {
    h += fmt::format("<span><i class=\"sw {}\"></i>{} more lines</span>",
                     html_swatch_class(kHtmlSwatches - 1), m.classes.size() - named);
  }
  h += "<span><i class=\"sw\" style=\"background:#f2f2f2\"></i>no wave seen there</span></div>";
  h += "</div><div class=\"wmhist\"><table class=\"hist\"><caption class=\"meta\">PC histogram "
       "(threads at each PC)</caption>";
  std::vector<std::pair<std::uint64_t, std::pair<std::uint64_t, std::size_t>>> pcs(m.pcs.begin(),
                                                                                   m.pcs.end());
  std::stable_sort(pcs.begin(), pcs.end(),
                   [](const auto& a, const auto& b) { return a.second.first > b.second.first; });
  const double most = pcs.empty() ? 1.0 : static_cast<double>(pcs.front().second.first);
  for (std::size_t i = 0; i < pcs.size() && i < kHtmlHistBars; ++i) {
    const auto& [pc, tc] = pcs[i];
    const auto& c = m.classes[tc.second];
    h += fmt::format(
        "<tr><td><code>{}</code></td><td><div class=\"hb\"><i class=\"{}{}\" "
        "style=\"width:{:.1f}%\"></i></div></td><td>{}</td><td><code>{}</code></td></tr>",
        html_hex(pc), html_swatch_class(tc.second), c.poll ? " p" : "",
        100.0 * static_cast<double>(tc.first) / most, tc.first, escape(c.key, 200));
  }
  if (pcs.size() > kHtmlHistBars) {
    h += fmt::format("<tr><td colspan=\"4\" class=\"note\">{} more PCs</td></tr>",
                     pcs.size() - kHtmlHistBars);
  }
  if (m.unknown_pc_threads > 0) {
    h += fmt::format("<tr><td colspan=\"4\" class=\"note\">{} threads at no known PC</td></tr>",
                     m.unknown_pc_threads);
  }
  h += "</table></div></div></div>";
}

// --- the case's state, stacks and section ------------------------------------------------------

std::string html_state(const CaseInput& in) {
  if (!in.examined || in.snapshot == nullptr) {
    return "unseen";
  }
  const Snapshot& s = *in.snapshot;
  if (s.agents.empty() && s.dispatches.empty() && s.waves.empty() && s.host_threads.empty()) {
    return "unseen"; // a log or crash evidence: read, but no process state in it
  }
  bool busy = false;
  for (const auto& d : in.snapshot->dispatches) {
    busy = true;
    if (classify_kernel(d.kernel_name).family == KernelFamily::Collective) {
      return "collective";
    }
  }
  if (!in.snapshot->waves.empty()) {
    // Waves without their dispatch (late attach): the first one's function names the kernel.
    busy = true;
    if (classify_kernel(in.snapshot->waves.front().function.view()).family ==
        KernelFamily::Collective) {
      return "collective";
    }
  }
  return busy ? "kernel" : "idle";
}

// Threads the cause's chains hold (`thread:LWP` nodes), root or open end.
std::set<std::string> html_hot_threads(const graph::Graph* g) {
  std::set<std::string> ids;
  if (g == nullptr || g->empty()) {
    return ids;
  }
  auto take = [&](graph::NodeId n) {
    const auto& node = g->node(n);
    if (node.kind == "thread") {
      ids.insert(node.id);
    }
  };
  for (const auto& r : graph::find_roots(*g)) {
    take(r.node);
    for (const auto n : r.cycle_nodes) {
      take(n);
    }
    for (const auto& c : r.chains) {
      for (const auto n : c) {
        take(n);
      }
    }
  }
  for (const auto& oe : graph::open_ends(*g)) {
    for (const auto n : oe.chain) {
      take(n);
    }
  }
  return ids;
}

void html_table_head(std::string& h, std::initializer_list<std::string_view> heads) {
  h += "<table class=\"t\"><tr>";
  for (const auto head : heads) {
    h += "<th>" + std::string(head) + "</th>";
  }
  h += "</tr>";
}

std::string html_opt(const std::optional<std::uint64_t>& v) {
  return v ? std::to_string(*v) : std::string("?");
}

void html_section(std::string& h, const CaseInput& in, const CaseParts& parts) {
  h += "<section class=\"case\" id=\"" + parts.anchor + "\"><h3>" + escape(parts.label, 400) +
       "</h3>";
  h += "<p><b>" + escape(parts.verdict, 600) + "</b>";
  if (!parts.where.empty()) {
    h += " — " + escape(parts.where, 600);
  }
  h += "</p>";
  if (!in.examined) {
    h += "<p class=\"note\">Not examined: " + escape(in.error, 2000) + "</p></section>";
    return;
  }
  if (in.findings != nullptr && !in.findings->empty()) {
    h += fmt::format("<details><summary>Findings ({})</summary>", in.findings->size());
    for (const auto& f : *in.findings) {
      h += fmt::format("<h4><span class=\"sev-{}\">[{} {:.2f}]</span> {} <code>{}</code></h4>",
                       to_string(f.severity), to_string(f.severity), f.confidence,
                       escape(f.title, 600), escape(f.id, 100));
      if (!f.summary.empty()) {
        h += "<p>" + escape(f.summary, 4000) + "</p>";
      }
      if (!f.evidence.empty()) {
        h += "<ul>";
        for (std::size_t i = 0; i < f.evidence.size() && i < kHtmlTableRows; ++i) {
          h += "<li><code>" + escape(f.evidence[i], 1000) + "</code></li>";
        }
        h += "</ul>";
      }
      if (!f.next_step.empty()) {
        h += "<p><b>Next:</b> " + escape(f.next_step, 4000) + "</p>";
      }
    }
    h += "</details>";
  }
  const Snapshot* s = in.snapshot;
  if (s != nullptr && !s->dispatches.empty()) {
    h += fmt::format("<details><summary>Dispatches ({})</summary>", s->dispatches.size());
    html_table_head(h, {"id", "agent", "queue", "kernel", "grid", "work-group", "fence"});
    for (std::size_t i = 0; i < s->dispatches.size() && i < kHtmlTableRows; ++i) {
      const auto& d = s->dispatches[i];
      auto dims = [](const std::vector<std::uint64_t>& v) {
        std::string t;
        for (const auto x : v) {
          t += (t.empty() ? "" : ",") + std::to_string(x);
        }
        return t;
      };
      h += fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td><td><code>{}</code></td><td>{}</td>"
                       "<td>{}</td><td>{}</td></tr>",
                       escape(d.id, 100), d.agent ? std::to_string(*d.agent) : "?",
                       d.queue ? std::to_string(*d.queue) : "?", escape(d.kernel_name, 400),
                       dims(d.grid), dims(d.workgroup), escape(d.fence_text, 60));
    }
    h += "</table></details>";
  }
  if (s != nullptr && !s->waves.empty()) {
    const auto classes = snapshot::group_waves(*s);
    h += fmt::format("<details><summary>Wave classes ({} waves in {} classes)</summary>",
                     s->waves.size(), classes.size());
    html_table_head(
        h, {"dispatch", "waves", "threads", "work-groups", "slots", "PC", "line", "function"});
    for (std::size_t i = 0; i < classes.size() && i < kHtmlTableRows; ++i) {
      const auto& c = classes[i];
      h += fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>"
                       "<td><code>{}</code></td><td><code>{}</code></td><td><code>{}</code></td>"
                       "</tr>",
                       html_opt(c.dispatch), c.waves, c.threads,
                       escape(snapshot::format_workgroups(c), 200),
                       escape(snapshot::format_ranges(c.wave_in_group), 200),
                       c.pc ? html_hex(*c.pc) : "?", escape(html_file_line(c.file, c.line), 300),
                       escape(short_function_name(c.function), 300));
    }
    if (classes.size() > kHtmlTableRows) {
      h += fmt::format("<tr><td colspan=\"8\" class=\"note\">{} more classes</td></tr>",
                       classes.size() - kHtmlTableRows);
    }
    h += "</table></details>";
  }
  if (s != nullptr && !s->host_threads.empty()) {
    h += fmt::format("<details><summary>Host threads ({})</summary>", s->host_threads.size());
    html_table_head(h, {"thread", "LWP", "name", "state", "stack (innermost first)"});
    for (std::size_t i = 0; i < s->host_threads.size() && i < kHtmlTableRows; ++i) {
      const auto& t = s->host_threads[i];
      std::string stack;
      for (std::size_t k = 0; k < t.frames.size() && k < 12; ++k) {
        const auto& f = t.frames[k];
        stack += (k ? "<br>" : "") + escape(f.python ? "py " + f.function : f.function, 200);
        const std::string at = html_file_line(f.file, f.line);
        if (!at.empty()) {
          stack += " <span class=\"loc\">" + escape(at, 200) + "</span>";
        }
      }
      if (t.frames.size() > 12) {
        stack += fmt::format("<br>… {} more frames", t.frames.size() - 12);
      }
      h += fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"fn\">{}</td>"
                       "</tr>",
                       escape(t.id, 60), html_opt(t.lwp), escape(t.name, 200), escape(t.state, 100),
                       stack);
    }
    h += "</table></details>";
  }
  if (!in.text_report.empty()) {
    h += "<details><summary>Text report</summary><pre>" + escape(in.text_report, 64 << 10) +
         "</pre></details>";
  }
  const auto* warnings = in.warnings;
  if (warnings != nullptr && !warnings->empty()) {
    h += fmt::format("<details><summary>Warnings ({})</summary><ul>", warnings->size());
    for (std::size_t i = 0; i < warnings->size() && i < kHtmlTableRows; ++i) {
      h += "<li>" + escape((*warnings)[i], 2000) + "</li>";
    }
    h += "</ul></details>";
  }
  h += "</section>";
}

// The first block of a text report (to its first empty line): the cause as the text says it.
std::string html_lead(const std::string& text) {
  std::string out;
  std::size_t lines = 0;
  std::size_t at = 0;
  while (at < text.size() && lines < kHtmlLeadLines) {
    auto end = text.find('\n', at);
    if (end == std::string::npos) {
      end = text.size();
    }
    const std::string_view line(text.data() + at, end - at);
    if (line.find_first_not_of(' ') == std::string_view::npos) {
      if (lines > 0) {
        break;
      }
    } else {
      out.append(line);
      out += '\n';
      ++lines;
    }
    at = end + 1;
  }
  return out;
}

} // namespace

CaseParts case_parts(const CaseInput& in, std::size_t index) {
  CaseParts p;
  p.label = in.label;
  p.anchor = fmt::format("case-{}", index);
  p.rank = in.rank;
  p.state = html_state(in);
  if (in.examined && in.snapshot != nullptr) {
    static const std::vector<Finding> kNone;
    const auto at =
        incident::whereabouts(*in.snapshot, in.findings != nullptr ? *in.findings : kNone);
    p.where = at.where;
    p.verdict = at.verdict;
  } else {
    p.verdict = in.error.empty() ? "not examined" : in.error;
  }
  p.lead = html_lead(in.text_report);
  if (in.examined && in.snapshot != nullptr) {
    const auto hot = html_hot_threads(in.graph);
    for (const auto& t : in.snapshot->host_threads) {
      CaseParts::Stack st;
      st.hot = (t.lwp && hot.contains(fmt::format("thread:{}", *t.lwp))) ||
               hot.contains("thread:" + t.id);
      for (auto f = t.frames.rbegin(); f != t.frames.rend(); ++f) {
        std::string name =
            f->function.empty() ? (f->from.empty() ? "??" : "?? in " + f->from) : f->function;
        st.frames.push_back(f->python ? "py " + name : std::move(name));
        st.lines.push_back(html_file_line(f->file, f->line));
      }
      p.stacks.push_back(std::move(st));
    }
    const auto maps = html_wave_maps(
        *in.snapshot,
        html_poll_marks(*in.snapshot, snapshot::group_waves(*in.snapshot), in.graph, in.findings));
    for (std::size_t i = 0; i < maps.size() && i < kHtmlDispatches; ++i) {
      html_write_map(p.wave_maps, maps[i]);
    }
    if (maps.size() > kHtmlDispatches) {
      p.wave_maps += fmt::format("<p class=\"note\">{} more dispatches: see the section's wave "
                                 "classes.</p>",
                                 maps.size() - kHtmlDispatches);
    }
  }
  html_section(p.section, in, p);
  return p;
}

namespace {

// --- the merged stack tree ---------------------------------------------------------------------

struct HtmlTreeNode {
  std::string name;
  std::string line; // the frame's file:line while every thread here agrees
  bool mixed_lines = false;
  std::set<std::size_t> cases;
  std::uint64_t threads = 0;
  bool hot = false;
  std::vector<std::size_t> children;
  std::unordered_map<std::string, std::size_t> child_of;
};

std::string html_who(const std::set<std::size_t>& cases, const std::vector<CaseParts>& parts) {
  std::vector<std::int64_t> ranks;
  bool all_ranked = true;
  for (const auto i : cases) {
    if (parts[i].rank) {
      ranks.push_back(*parts[i].rank);
    } else {
      all_ranked = false;
    }
  }
  if (all_ranked && !ranks.empty()) {
    return (ranks.size() == 1 ? "rank " : "ranks ") + incident::format_numbers(ranks);
  }
  if (cases.size() == 1) {
    return parts[*cases.begin()].label;
  }
  std::string s = fmt::format("{} cases", cases.size());
  std::size_t n = 0;
  for (const auto i : cases) {
    if (n++ == 3) {
      s += ", …";
      break;
    }
    s += (n == 1 ? ": " : ", ") + parts[i].label;
  }
  return s;
}

void html_write_tree(std::string& h, const std::vector<HtmlTreeNode>& nodes,
                     const std::vector<CaseParts>& parts) {
  std::size_t written = 0;
  // Depth-first; a node whose one child holds the same threads is written at its own level
  // (a straight run of frames reads down, not ever further right).
  struct Walk {
    const std::vector<HtmlTreeNode>& nodes;
    const std::vector<CaseParts>& parts;
    std::string& h;
    std::size_t& written;
    // One branch: its straight run of frames in a list of their own (a run reads down), then,
    // under its last frame, the branches it splits into, indented.
    void item(std::size_t n, std::size_t depth) {
      if (written >= kHtmlTreeNodes) {
        ++written;
        return;
      }
      h += "<li class=\"br\"><ul class=\"run\">";
      std::size_t at = n;
      for (;;) {
        const auto& node = nodes[at];
        if (written++ >= kHtmlTreeNodes) {
          break;
        }
        h += node.hot ? "<li class=\"hot\">" : "<li>";
        h += "<span class=\"fn\">" + escape(node.name, 240) + "</span>";
        if (!node.line.empty() && !node.mixed_lines) {
          h += "<span class=\"loc\">" + escape(node.line, 200) + "</span>";
        }
        // One case: whose it is goes without saying.
        h += fmt::format(
            "<span class=\"who\">{} thread{}{}</span>", node.threads, node.threads == 1 ? "" : "s",
            parts.size() == 1 ? std::string() : " · " + escape(html_who(node.cases, parts), 400));
        if (node.children.size() == 1 && nodes[node.children[0]].threads == node.threads &&
            depth < kHtmlTreeDepth) {
          h += "</li>";
          at = node.children[0];
          ++depth;
          continue;
        }
        if (!node.children.empty() && depth < kHtmlTreeDepth) {
          h += "<ul>";
          for (const auto c : node.children) {
            item(c, depth + 1);
          }
          h += "</ul>";
        }
        h += "</li>";
        break;
      }
      h += "</ul></li>";
    }
  } walk{nodes, parts, h, written};
  h += "<ul class=\"tree\">";
  for (const auto c : nodes[0].children) {
    walk.item(c, 1);
  }
  h += "</ul>";
  if (written > kHtmlTreeNodes) {
    h += fmt::format("<p class=\"note\">The tree stops at {} frames; each rank's section lists "
                     "its threads.</p>",
                     kHtmlTreeNodes);
  }
}

std::vector<HtmlTreeNode> html_tree(const std::vector<CaseParts>& parts) {
  std::vector<HtmlTreeNode> nodes(1);
  for (std::size_t ci = 0; ci < parts.size(); ++ci) {
    for (const auto& st : parts[ci].stacks) {
      std::size_t at = 0;
      nodes[0].threads += 1;
      for (std::size_t k = 0; k < st.frames.size() && k < kHtmlTreeDepth; ++k) {
        const auto found = nodes[at].child_of.find(st.frames[k]);
        std::size_t next = 0;
        if (found == nodes[at].child_of.end()) {
          next = nodes.size();
          nodes[at].child_of.emplace(st.frames[k], next);
          nodes[at].children.push_back(next);
          HtmlTreeNode fresh;
          fresh.name = st.frames[k];
          fresh.line = st.lines[k];
          nodes.push_back(std::move(fresh));
        } else {
          next = found->second;
        }
        HtmlTreeNode& node = nodes[next];
        if (node.line != st.lines[k]) {
          node.mixed_lines = true;
        }
        node.cases.insert(ci);
        node.threads += 1;
        node.hot = node.hot || st.hot;
        at = next;
      }
    }
  }
  return nodes;
}

// --- the page ----------------------------------------------------------------------------------

// `html` with every hexadecimal number (`0x7fe8a5c41b80`) taken out: what two ranks' wave maps
// share when only their load addresses differ.
std::string html_without_addresses(const std::string& html) {
  std::string out;
  out.reserve(html.size());
  for (std::size_t i = 0; i < html.size(); ++i) {
    if (html[i] == '0' && i + 2 < html.size() && html[i + 1] == 'x' &&
        std::isxdigit(static_cast<unsigned char>(html[i + 2])) != 0) {
      i += 2;
      while (i + 1 < html.size() && std::isxdigit(static_cast<unsigned char>(html[i + 1])) != 0) {
        ++i;
      }
      out += '#';
      continue;
    }
    out += html[i];
  }
  return out;
}

std::string html_case_label(const Case& c, std::size_t index) {
  const auto& s = c.source;
  std::string label;
  if (s.rank) {
    label = fmt::format("rank {}", *s.rank);
  }
  if (s.pid) {
    label += label.empty() ? fmt::format("pid {}", *s.pid) : fmt::format(" (pid {})", *s.pid);
  }
  if (!s.path.empty()) {
    label += (label.empty() ? "" : " · ") + s.path + s.member;
  }
  return label.empty() ? fmt::format("case {}", index) : label;
}

void html_write_graph(std::string& h, const graph::Graph& g, const std::vector<CaseParts>& parts) {
  h += "<section id=\"graph\"><h2>Wait-for graph</h2>";
  if (g.empty()) {
    h += "<p class=\"note\">No wait was seen: nothing in these snapshots waits for anything that "
         "could be drawn.</p></section>";
    return;
  }
  std::size_t left_out = 0;
  // A joined graph's nodes (`rank 3/...`) link to their rank's section.
  const auto link = [&](const graph::Node& node) -> std::string {
    if (!node.id.starts_with("rank ")) {
      return {};
    }
    const auto slash = node.id.find('/');
    const auto r = source::parse_rank(std::string_view(node.id).substr(5, slash - 5));
    for (const auto& p : parts) {
      if (r && p.rank == r) {
        return "#" + p.anchor;
      }
    }
    return {};
  };
  const std::string dot = to_dot(g, kHtmlGraphNodes, &left_out, link);
  std::string error;
  const auto svg = draw_svg(dot, error);
  h += "<p class=\"meta\">An arrow reads “waits for”: solid, for all of its targets; dashed, for "
       "any one; bold, for this one (a lock’s owner). The cause is outlined twice. Each node "
       "says what it is and the line it stands on.</p>";
  if (svg) {
    h += "<div class=\"graph\">" + *svg + "</div>";
  } else {
    // Not drawn: the nodes and edges as a list, and what to do for the drawing.
    h += "<p class=\"harm\">The graph is listed, not drawn: " + escape(error, 2000) + ".</p><ul>";
    for (const auto& e : g.edges()) {
      h += "<li>" + escape(graph::describe(g.node(e.from)), 400) + " <b>waits for</b> " +
           escape(graph::describe(g.node(e.to)), 400) + "</li>";
    }
    h += "</ul>";
  }
  h += "<div class=\"legend\">"
       "<span><i class=\"sw\" style=\"background:#f6c39f\"></i>spinning (runs in place)</span>"
       "<span><i class=\"sw\" style=\"background:#a9d1ef\"></i>blocked (asleep in a wait)</span>"
       "<span><i class=\"sw\" style=\"background:#b9e3c6\"></i>moving</span>"
       "<span><i class=\"sw\" style=\"background:#e8e8e8;border-style:dashed\"></i>unknown "
       "(not asked or seen once)</span>"
       "<span><i class=\"sw\" style=\"outline:3px double #000\"></i>the cause (root)</span></div>";
  if (left_out > 0) {
    h += fmt::format("<p class=\"note\">{} more nodes not drawn: they do not wait on the "
                     "cause{} (the JSON report has every node).</p>",
                     left_out,
                     g.nodes().size() > kHtmlGraphNodes ? ", or the drawing was full" : "");
  }
  h += "</section>";
}

void html_write_grid(std::string& h, const std::vector<CaseParts>& parts) {
  h += "<section id=\"ranks\"><h2>Ranks</h2><div class=\"grid\">";
  for (const auto& p : parts) {
    std::string_view name = p.state;
    for (const auto& s : kHtmlRankStates) {
      if (s.id == p.state) {
        name = s.name;
      }
    }
    h += fmt::format("<a href=\"#{}\" class=\"s-{}\" title=\"{}\"><b>{}</b>{}</a>", p.anchor,
                     p.state, escape(p.label + ": " + p.where + " — " + p.verdict, 1200),
                     p.rank ? std::to_string(*p.rank) : escape(html_base(p.label), 14), name);
  }
  h += "</div><div class=\"legend\">";
  for (const auto& s : kHtmlRankStates) {
    h +=
        fmt::format("<span><i class=\"sw s-{}\"></i><b>{}</b>: {}</span>", s.id, s.name, s.meaning);
  }
  h += "</div></section>";
}

} // namespace

void write_page(std::ostream& out, const Incident& inc, const TextOptions& options,
                std::string_view tool_version, const std::vector<CaseParts>& given) {
  // The parts of each case: given by a post-mortem batch, else made here from the live cases.
  std::vector<CaseParts> made;
  if (given.empty()) {
    for (std::size_t i = 0; i < inc.cases.size(); ++i) {
      const Case& c = inc.cases[i];
      CaseInput in;
      in.label = html_case_label(c, i);
      in.rank = c.source.rank ? c.source.rank : c.snapshot.rank;
      in.pid = c.source.pid ? c.source.pid : c.snapshot.pid;
      in.examined = c.examined();
      in.error = c.error;
      in.snapshot = &c.snapshot;
      in.findings = &c.findings;
      in.graph = &c.graph;
      in.warnings = &c.warnings;
      TextOptions to = options;
      to.color = false;
      to.width = 100;
      to.cause = graph::cause_lines(c.graph);
      std::ostringstream text;
      if (c.run != nullptr && has_text_report(*c.run)) {
        // A live run's text report: led by what failed, when it ended early.
        if (const std::string failure = failure_text(*c.run); !failure.empty()) {
          to.failure = failure;
          to.failure_label = failure_label(*c.run);
          to.target = target_account(*c.run);
        }
        write_run_case_text(text, c, to);
      } else if (c.examined() && c.faults == nullptr && c.run == nullptr) {
        write_text(text, c.snapshot, c.findings, to);
      }
      in.text_report = text.str();
      CaseParts p = case_parts(in, i);
      if (c.launch) {
        // `launch`, `run --wait-for-fault`: how the program ran and ended leads, as in the text.
        std::ostringstream launch;
        write_launch_text(launch, *c.launch, to.width, false);
        std::ostringstream verification; // `launch --verify`: culprit or victim, over the runs
        write_verification_text(verification, inc, to.width, false);
        p.lead = launch.str() + (verification.str().empty() ? std::string() : "\n") +
                 verification.str() + p.lead;
      }
      made.push_back(std::move(p));
    }
  }
  const std::vector<CaseParts>& parts = given.empty() ? made : given;
  const bool several = inc.cases.size() >= 2 || inc.several;

  // The cause: the text report's first lines.
  TextOptions to = options;
  to.color = false;
  to.width = 100;
  std::string lead;
  graph::Graph g;
  if (several) {
    std::ostringstream text;
    write_incident_text(text, inc, to);
    lead = html_lead(text.str());
    g = incident::wait_graph(inc);
  } else if (!parts.empty()) {
    lead = parts.front().lead;
    g = inc.cases.front().graph;
  }
  std::string crash;
  if (!inc.crash_verdict.empty()) {
    std::ostringstream text;
    write_crash_verdict(text, inc.crash_verdict, false, 100);
    crash = text.str();
    if (lead.empty()) {
      lead = html_lead(crash);
    }
  }
  if (lead.empty()) {
    const Finding* v = inc.verdict();
    lead = v != nullptr ? v->title : "no finding: no known stuck-kernel pattern";
  }
  // Ranks gone elsewhere, as the incident's graph says.
  std::vector<CaseParts> graded = parts;
  for (const auto& node : g.nodes()) {
    if (node.kind == "rank" && node.id.starts_with("rank ") && node.id.ends_with("/elsewhere")) {
      const auto r = source::parse_rank(std::string_view(node.id).substr(
          5, node.id.size() - 5 - std::string_view("/elsewhere").size()));
      for (auto& p : graded) {
        if (r && p.rank == r) {
          p.state = "elsewhere";
        }
      }
    }
  }
  for (std::size_t i = 0; i < graded.size() && i < inc.cases.size(); ++i) {
    if (!inc.cases[i].examined()) {
      graded[i].state = "unseen";
    }
  }

  std::string h;
  h.reserve(1 << 16);
  std::string title = lead.substr(0, lead.find('\n'));
  h += "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
       // No script, no request: the browser is told so too, should anything slip through.
       "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
       "style-src 'unsafe-inline'; img-src data:\">"
       "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
       "<meta name=\"generator\" content=\"rocplay " +
       escape(tool_version, 80) + "\"><title>rocplay: " + escape(title, 200) + "</title><style>";
  h += kHtmlCss;
  h += "</style></head><body><header><h1>rocplay report";
  if (!inc.title.empty()) {
    h += ": " + escape(inc.title, 200);
  }
  h += "</h1><p class=\"meta\">";
  std::size_t examined = 0;
  for (const auto& c : inc.cases) {
    examined += c.examined() ? 1 : 0;
  }
  h += fmt::format("{} case{}, {} examined · exit code {} · rocplay {}", inc.cases.size(),
                   inc.cases.size() == 1 ? "" : "s", examined, static_cast<int>(inc.exit_code()),
                   escape(tool_version, 80));
  if (!inc.cases.empty() && !inc.cases.front().snapshot.taken_at.empty()) {
    h += " · taken " + escape(inc.cases.front().snapshot.taken_at, 80);
  }
  h += " · <a href=\"#graph\">graph</a>";
  if (several) {
    h += " · <a href=\"#ranks\">ranks</a>";
  }
  h += " · <a href=\"#stacks\">stacks</a> · <a href=\"#waves\">waves</a> · <a "
       "href=\"#cases\">each case</a></p></header>";

  const auto harm = incident::harm(inc);
  if (!harm.empty()) {
    h += "<div class=\"harm\"><b>HARM</b>: the look behind this report may have damaged the job: "
         "a debugger's attach to a GPU failed inside the driver. Check the job's own progress; "
         "if it no longer advances, restart it from its last checkpoint.<ul>";
    for (const auto& line : harm) {
      h += "<li>" + escape(line, 1000) + "</li>";
    }
    h += "</ul></div>";
  }
  h += "<section id=\"cause\"><h2>Cause</h2><pre class=\"lead\">" + escape(lead, 16 << 10) +
       "</pre>";
  if (!crash.empty()) {
    // The crash verdict over every input's evidence, whole (the lead has its first lines).
    h += "<details><summary>Crash verdict</summary><pre>" + escape(crash, 64 << 10) +
         "</pre></details>";
  }
  h += "</section>";
  out << h;
  h.clear();

  html_write_graph(h, g, graded);
  if (several) {
    html_write_grid(h, graded);
  }
  out << h;
  h.clear();

  h += "<section id=\"stacks\"><h2>Merged stack tree</h2>";
  const auto tree = html_tree(graded);
  if (tree.front().threads == 0) {
    h += "<p class=\"note\">No host thread was seen (no stack was asked, or none could be "
         "read).</p>";
  } else {
    h += fmt::format("<p class=\"meta\">Every host thread of {} (outermost frame at the top; "
                     "Python frames marked <code>py</code>): threads on the same path share a "
                     "branch, labelled with how many and whose. <b>▶ bold</b>: the branch the "
                     "cause's chain is on.</p><div class=\"tree-box\">",
                     several ? "every rank" : "the process");
    html_write_tree(h, tree, graded);
    h += "</div>";
  }
  h += "</section>";
  out << h;
  h.clear();

  out << "<section id=\"waves\"><h2>Wave maps</h2>";
  // Ranks whose maps are alike but for their PCs (each process loads the kernel at its own
  // address) share one map, STAT-style: 64 ranks in one collective are one picture.
  std::vector<std::pair<std::string, std::set<std::size_t>>> alike;
  for (std::size_t i = 0; i < graded.size(); ++i) {
    if (graded[i].wave_maps.empty()) {
      continue;
    }
    const std::string key = html_without_addresses(graded[i].wave_maps);
    auto same =
        std::find_if(alike.begin(), alike.end(), [&](const auto& a) { return a.first == key; });
    if (same == alike.end()) {
      alike.push_back({key, {i}});
    } else {
      same->second.insert(i);
    }
  }
  for (const auto& [key, members] : alike) {
    const CaseParts& first = graded[*members.begin()];
    if (several) {
      out << "<h3>" << escape(html_who(members, graded), 400);
      std::size_t linked = 0;
      for (const auto i : members) {
        if (linked++ == 16) {
          out << " …";
          break;
        }
        out << (linked == 1 ? " · " : " ") << "<a href=\"#" << graded[i].anchor << "\">"
            << (graded[i].rank ? std::to_string(*graded[i].rank)
                               : escape(html_base(graded[i].label), 40))
            << "</a>";
      }
      out << "</h3>";
      if (members.size() > 1) {
        out << "<p class=\"meta\">These " << members.size()
            << " cases' maps are alike but for their addresses; the PCs shown are "
            << escape(first.label, 400) << "'s.</p>";
      }
    }
    out << first.wave_maps;
  }
  if (alike.empty()) {
    out << "<p class=\"note\">No wave was seen: no kernel was in flight, or the debugger could "
           "not see the GPU.</p>";
  }
  out << "</section><section id=\"cases\"><h2>" << (several ? "Each case" : "The snapshot")
      << "</h2>";
  for (const auto& p : graded) {
    out << p.section;
  }
  out << "</section><footer><p class=\"meta\">Written by rocplay " << escape(tool_version, 80)
      << ". This page runs no script and loads nothing: it reads the same offline and in "
         "print.</p></footer></body></html>\n";
}

} // namespace rocplay::report::html
