// `--format html` (rocplay/report/html.hpp): escaping, hostile strings never becoming markup
// (in the page and in what Graphviz draws), and the page of a real eight-rank recording.
// The pages of real recordings in a browser: tests/scripts/html_pages.sh.
#include "../snapshot/support.hpp"
#include "rocplay/case/case.hpp"
#include "rocplay/heuristics/heuristics.hpp"
#include "rocplay/heuristics/wait_graph.hpp"
#include "rocplay/report/html.hpp"
#include "rocplay/report/incident.hpp"

#include <catch2/catch.hpp>

#include <random>
#include <set>
#include <sstream>

using namespace rocplay;

namespace {

// The elements and attributes the page and Graphviz's SVG may hold. Anything else in the output
// (a `<script>`, an `onload=`, a `javascript:` URL, an element from an input) is live markup.
const std::set<std::string> kTags = {
    "!doctype", "html", "head",    "meta", "title",   "style", "body",    "header",
    "footer",   "h1",   "h2",      "h3",   "h4",      "p",     "a",       "section",
    "div",      "span", "i",       "b",    "code",    "pre",   "details", "summary",
    "ul",       "li",   "table",   "tr",   "th",      "td",    "caption", "br",
    "svg",      "g",    "polygon", "path", "ellipse", "text",  "polyline"};

// Every `<` of `page` opens an allowed element (or a comment), and no attribute is an event
// handler or a script URL. Returns the first offence, or "".
std::string live_markup(const std::string& page) {
  std::size_t at = 0;
  while ((at = page.find('<', at)) != std::string::npos) {
    if (page.compare(at, 4, "<!--") == 0) {
      const auto end = page.find("-->", at);
      if (end == std::string::npos) {
        return "an unterminated comment";
      }
      at = end + 3;
      continue;
    }
    std::size_t p = at + 1;
    if (p < page.size() && page[p] == '/') {
      ++p;
    }
    std::string name;
    while (p < page.size() &&
           (std::isalnum(static_cast<unsigned char>(page[p])) != 0 || page[p] == '!')) {
      name += static_cast<char>(std::tolower(static_cast<unsigned char>(page[p])));
      ++p;
    }
    if (!kTags.contains(name)) {
      return "element <" + name + "> at " + std::to_string(at) + ": " + page.substr(at, 60);
    }
    // Attributes up to the tag's end, quotes respected: no event handler, and no URL attribute
    // that runs script (text that merely reads `javascript:`, in a title, is fine).
    while (p < page.size() && page[p] != '>') {
      if (page[p] == '<') {
        return "a `<` inside a tag at " + std::to_string(p);
      }
      if (std::isspace(static_cast<unsigned char>(page[p])) != 0 || page[p] == '/') {
        ++p;
        continue;
      }
      std::string attr;
      while (p < page.size() && page[p] != '=' && page[p] != '>' &&
             std::isspace(static_cast<unsigned char>(page[p])) == 0) {
        attr += static_cast<char>(std::tolower(static_cast<unsigned char>(page[p])));
        ++p;
      }
      std::string value;
      if (p < page.size() && page[p] == '=') {
        ++p;
        const char quote = page[p] == '"' || page[p] == '\'' ? page[p++] : 0;
        while (p < page.size() &&
               (quote != 0
                    ? page[p] != quote
                    : std::isspace(static_cast<unsigned char>(page[p])) == 0 && page[p] != '>')) {
          value += static_cast<char>(std::tolower(static_cast<unsigned char>(page[p])));
          ++p;
        }
        if (quote != 0) {
          ++p;
        }
      }
      if (attr.starts_with("on")) {
        return "an event handler `" + attr + "` in <" + name + "> at " + std::to_string(at);
      }
      if ((attr == "href" || attr == "src" || attr == "xlink:href" || attr == "action") &&
          value.find("javascript:") != std::string::npos) {
        return "a javascript: URL in <" + name + "> at " + std::to_string(at);
      }
    }
    at = p;
  }
  return "";
}

std::string hostile(std::mt19937& rng) {
  static const std::vector<std::string> kParts = {"</script>",
                                                  "<script>alert(1)</script>",
                                                  "<svg onload=alert(1)>",
                                                  "\" onmouseover=\"x",
                                                  "' onfocus='x",
                                                  "<!--",
                                                  "-->",
                                                  "]]>",
                                                  "&amp;",
                                                  "&",
                                                  "\\",
                                                  "\\n",
                                                  "\\N",
                                                  "\"",
                                                  "'",
                                                  "<",
                                                  ">",
                                                  std::string(1, '\0'),
                                                  "\x01\x1b[31m",
                                                  "\xff\xfe",
                                                  "\xc0\xaf",
                                                  "\xed\xa0\x80",
                                                  "{|}",
                                                  "javascript:alert(1)",
                                                  "<a href=javascript:x>",
                                                  "\n",
                                                  "\t",
                                                  "%s%n",
                                                  "<![CDATA[",
                                                  "<style>",
                                                  "</style>",
                                                  "<img src=http://example.com/x>",
                                                  "label=\"x\"]; n9 [label=\"y",
                                                  "é漢字",
                                                  "\xe2\x80\xae"};
  std::string s;
  const int n = std::uniform_int_distribution<int>(1, 8)(rng);
  for (int i = 0; i < n; ++i) {
    s += kParts[std::uniform_int_distribution<std::size_t>(0, kParts.size() - 1)(rng)];
  }
  if (std::uniform_int_distribution<int>(0, 20)(rng) == 0) {
    // Huge (the text report wraps it in time quadratic in its length: 20 KB keeps this quick).
    s += std::string(20000, '<');
  }
  return s;
}

Case hostile_case(std::mt19937& rng, int rank) {
  Case c;
  c.source.rank = rank;
  c.source.path = hostile(rng);
  Snapshot& s = c.snapshot;
  Dispatch d;
  d.id = hostile(rng);
  d.dispatch_no = 1;
  d.agent = 1;
  d.kernel_name = hostile(rng);
  d.fence_text = hostile(rng);
  d.grid = {64, 1, 1};
  d.workgroup = {64, 1, 1};
  s.dispatches.push_back(d);
  for (int i = 0; i < 4; ++i) {
    Wave w;
    w.thread_id = std::to_string(i);
    w.agent = 1;
    w.dispatch = 1;
    w.workgroup = {i, 0, 0};
    w.workgroup_last = {i, 0, 0};
    w.wave_in_group = 0;
    w.pc = 0x1000 + static_cast<std::uint64_t>(i % 2) * 4;
    w.function = hostile(rng);
    w.file = hostile(rng);
    w.line = 12;
    s.waves.push_back(w);
  }
  HostThread t;
  t.id = "1";
  t.lwp = 4242;
  t.name = hostile(rng);
  t.state = hostile(rng);
  for (int i = 0; i < 3; ++i) {
    Frame f;
    f.level = static_cast<std::uint32_t>(i);
    f.function = hostile(rng);
    f.file = hostile(rng);
    f.line = 7;
    f.python = i == 1;
    t.frames.push_back(f);
  }
  s.host_threads.push_back(t);
  Finding f;
  f.id = hostile(rng);
  f.title = hostile(rng);
  f.summary = hostile(rng);
  f.evidence = {hostile(rng), hostile(rng)};
  f.next_step = hostile(rng);
  f.severity = Severity::Error;
  f.locations.push_back({hostile(rng), 12, hostile(rng), 0x1000});
  c.findings.push_back(f);
  c.warnings = {hostile(rng)};
  graph::Node a;
  a.id = "thread:4242";
  a.kind = "thread";
  a.label = hostile(rng);
  a.where = hostile(rng);
  a.state = graph::State::Blocked;
  graph::Node b;
  b.id = hostile(rng);
  b.kind = "lanes";
  b.label = hostile(rng);
  b.where = hostile(rng);
  b.state = graph::State::Spinning;
  const auto na = c.graph.add(a);
  const auto nb = c.graph.add(b);
  c.graph.wait(na, nb, graph::EdgeKind::One, hostile(rng));
  return c;
}

std::string page_of(const Incident& inc) {
  std::ostringstream out;
  report::write(out, inc, report::Format::Html, {}, "test");
  return out.str();
}

} // namespace

TEST_CASE("html: escape leaves no markup, no control byte and no broken UTF-8", "[report][html]") {
  using report::html::escape;
  const auto [name, in, out] = GENERATE(table<const char*, std::string, std::string>({
      {"plain", "all_reduce.cu:52", "all_reduce.cu:52"},
      {"script end", "</script>", "&lt;/script&gt;"},
      {"svg handler", "<svg onload=alert(1)>", "&lt;svg onload=alert(1)&gt;"},
      {"quotes", "a\"b'c", "a&quot;b&#39;c"},
      {"ampersand", "&amp;", "&amp;amp;"},
      {"NUL", std::string("a\0b", 3),
       "a\xEF\xBF\xBD"
       "b"},
      {"escape byte", "\x1b[31m", "\xEF\xBF\xBD[31m"},
      {"invalid UTF-8", "\xff", "\xEF\xBF\xBD"},
      {"overlong slash", "\xc0\xaf", "\xEF\xBF\xBD\xEF\xBF\xBD"},
      {"surrogate", "\xed\xa0\x80", "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD"},
      {"UTF-8 kept", "caf\xc3\xa9 \xe6\xbc\xa2", "caf\xc3\xa9 \xe6\xbc\xa2"},
      {"cut sequence", "ab\xc3", "ab\xEF\xBF\xBD"},
  }));
  DYNAMIC_SECTION(name) {
    CHECK(escape(in) == out);
  }
}

TEST_CASE("html: the live-markup check finds what it looks for", "[report][html]") {
  CHECK(live_markup("<p>a &lt;script&gt; <b title=\"javascript:x onload=y\">b</b></p>") == "");
  CHECK(live_markup("<p><script>alert(1)</script></p>") != "");
  CHECK(live_markup("<svg onload=alert(1)>") != "");
  CHECK(live_markup("<svg><g ONLOAD='x'></g></svg>") != "");
  CHECK(live_markup("<a href=\"JavaScript:alert(1)\">x</a>") != "");
  CHECK(live_markup("<img src=x>") != "");
  CHECK(live_markup("<p title=\"a\" <b>") != "");
}

TEST_CASE("html: escape bounds a huge string and says it cut it", "[report][html]") {
  const std::string huge(1 << 20, '<');
  const std::string out = report::html::escape(huge, 100);
  CHECK(out.size() == 100 * 4 + 3);
  CHECK(out.ends_with("\xE2\x80\xA6"));
}

TEST_CASE("html: hostile strings from the MI never become live markup, in the page or the graph",
          "[report][html]") {
  std::mt19937 rng(44);
  for (int round = 0; round < 60; ++round) {
    Incident inc;
    inc.title = hostile(rng);
    const int cases = round % 3 == 0 ? 1 : 3;
    for (int r = 0; r < cases; ++r) {
      inc.cases.push_back(hostile_case(rng, r));
    }
    const std::string page = page_of(inc);
    INFO("round " << round);
    CHECK(live_markup(page) == "");
    // Nothing the input said reaches the page raw: no NUL, and no sentinel as a tag.
    CHECK(page.find('\0') == std::string::npos);
    CHECK(page.find("<script") == std::string::npos);
    CHECK(page.find("<img") == std::string::npos);
    CHECK(page.size() < (std::size_t{2} << 20)); // huge strings are cut
  }
}

TEST_CASE("html: the DOT text Graphviz reads holds no quote or backslash from a label",
          "[report][html]") {
  std::mt19937 rng(7);
  Case c = hostile_case(rng, 0);
  std::size_t left_out = 0;
  const std::string dot = report::html::to_dot(c.graph, 100, &left_out);
  CHECK(left_out == 0);
  // Each label is one quoted string: between `label="` and its closing quote only entities and
  // the `\n` that separates label and line.
  std::size_t at = 0;
  std::size_t labels = 0;
  while ((at = dot.find("label=\"", at)) != std::string::npos) {
    at += 7;
    const auto end = dot.find('"', at);
    REQUIRE(end != std::string::npos);
    const std::string label = dot.substr(at, end - at);
    for (std::size_t i = 0; i < label.size(); ++i) {
      if (label[i] == '\\') {
        CHECK(label.substr(i, 2) == "\\n");
        ++i;
      }
    }
    CHECK(label.find('<') == std::string::npos);
    // The label ends where the attribute list goes on: `", fillcolor=`.
    CHECK(dot.compare(end, 13, "\", fillcolor=") == 0);
    at = end + 1;
    ++labels;
  }
  CHECK(labels == 2);
  std::string error;
  if (const auto svg = report::html::draw_svg(dot, error)) {
    CHECK(live_markup(*svg) == "");
    CHECK(svg->starts_with("<svg"));
  } else {
    WARN("Graphviz not drawn here: " << error);
  }
}

TEST_CASE("html: the page of the eight-rank missing-rank recording", "[report][html]") {
  Incident inc;
  inc.title = "postmortem";
  std::vector<Snapshot> snaps;
  for (int r = 0; r < 8; ++r) {
    Case c;
    c.snapshot = test::load("rocgdb/tp8-missing-rank/rank" + std::to_string(r) + ".mi");
    c.snapshot.rank = r;
    c.source.rank = r;
    c.source.path = "rank" + std::to_string(r) + ".mi";
    c.classes = snapshot::group_waves(c.snapshot);
    c.findings = heuristics::run(c.snapshot);
    heuristics::GraphInputs gi;
    gi.snapshot = &c.snapshot;
    gi.classes = &c.classes;
    gi.findings = &c.findings;
    c.graph = heuristics::wait_graph(gi);
    snaps.push_back(c.snapshot);
    inc.cases.push_back(std::move(c));
  }
  inc.cross_rank = heuristics::run_ranks(snaps);
  const std::string page = page_of(inc);
  CHECK(live_markup(page) == "");
  // The cause first: the incident's lines, naming the rank the others wait for.
  const auto cause = page.find("<section id=\"cause\">");
  const auto graph = page.find("<section id=\"graph\">");
  const auto ranks = page.find("<section id=\"ranks\">");
  const auto stacks = page.find("<section id=\"stacks\">");
  const auto waves = page.find("<section id=\"waves\">");
  REQUIRE(cause != std::string::npos);
  CHECK(cause < graph);
  CHECK(graph < ranks);
  CHECK(ranks < stacks);
  CHECK(stacks < waves);
  const std::string lead = page.substr(cause, graph - cause);
  CHECK_THAT(lead, Catch::Contains("INCIDENT"));
  CHECK_THAT(lead, Catch::Contains("rank 5"));
  // One cell per rank, linked to its section; rank 5 is the one gone elsewhere.
  std::size_t cells = 0;
  for (std::size_t at = ranks; (at = page.find("<a href=\"#case-", at)) < stacks; ++at) {
    ++cells;
  }
  CHECK(cells == 8);
  CHECK_THAT(page, Catch::Contains("<a href=\"#case-5\" class=\"s-elsewhere\""));
  CHECK_THAT(page, Catch::Contains("<a href=\"#case-0\" class=\"s-collective\""));
  for (int r = 0; r < 8; ++r) {
    CHECK_THAT(page, Catch::Contains("<section class=\"case\" id=\"case-" + std::to_string(r)));
  }
  // The wave maps: the polling lanes outlined, a legend entry saying so, a PC histogram.
  const std::string maps = page.substr(waves);
  CHECK_THAT(maps, Catch::Contains(" p\" style=\"width:"));
  CHECK_THAT(maps, Catch::Contains("outlined: the lanes polling"));
  // Only the polling lanes' line (custom_all_reduce.cuh:131), not the barrier's behind them.
  CHECK_THAT(maps, Catch::Contains("<code>custom_all_reduce.cuh:131</code> start_sync · 16 · <b>"));
  CHECK_THAT(maps,
             Catch::Contains("<code>custom_all_reduce.cuh:136</code> start_sync · 112</span>"));
  CHECK_THAT(maps, Catch::Contains("PC histogram"));
  std::string error;
  if (report::html::draw_svg("digraph { a -> b }", error)) {
    CHECK_THAT(page.substr(graph, ranks - graph), Catch::Contains("<svg"));
    // The root, rank 5 gone elsewhere, is outlined twice (Graphviz draws two polygons).
    CHECK_THAT(page.substr(graph, ranks - graph), Catch::Contains("rank 5: not in"));
    // Each rank's nodes link to its section.
    CHECK_THAT(page.substr(graph, ranks - graph), Catch::Contains("xlink:href=\"#case-5\""));
  }
}

TEST_CASE("html: a tree past its bound stops whole, and says where to look", "[report][html]") {
  Incident inc;
  Case c;
  c.source.path = "many-threads.rec";
  for (int t = 0; t < 200; ++t) {
    HostThread h;
    h.id = std::to_string(t + 1);
    h.lwp = static_cast<std::uint64_t>(1000 + t);
    for (int f = 0; f < 40; ++f) {
      Frame fr;
      fr.level = static_cast<std::uint32_t>(f);
      fr.function = "f" + std::to_string(t) + "_" + std::to_string(f); // every path its own
      h.frames.push_back(fr);
    }
    c.snapshot.host_threads.push_back(h);
  }
  inc.cases.push_back(std::move(c));
  const std::string page = page_of(inc);
  const auto from = page.find("<section id=\"stacks\">");
  const auto to = page.find("<section id=\"waves\">");
  REQUIRE(from < to);
  const std::string tree = page.substr(from, to - from);
  auto count = [&](const std::string& what) {
    std::size_t n = 0;
    for (std::size_t at = 0; (at = tree.find(what, at)) != std::string::npos; at += what.size()) {
      ++n;
    }
    return n;
  };
  CHECK(count("<li") == count("</li>"));
  CHECK(count("<ul") == count("</ul>"));
  CHECK(count("<span class=\"fn\">") == 3000);
  CHECK_THAT(tree, Catch::Contains("The tree stops at 3000 frames"));
}
