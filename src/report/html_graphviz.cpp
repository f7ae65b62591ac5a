// The wait-for graph drawn by Graphviz (rocplay/report/html.hpp): the DOT text, and its `dot`
// layout rendered to SVG in memory (gvRenderData). The only file that knows Graphviz. libgvc is
// opened at first use (dlopen), as the LLVM disassembler is (src/codeobj/disasm.cpp): commands
// that draw nothing pay nothing at start, and a machine without Debian's libgvc6 still gets every
// other part of the page, with the graph as a list and a sentence saying how to get the drawing.
#include "rocplay/report/html.hpp"

#include <graphviz/gvc.h>

#include <dlfcn.h>

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <deque>
#include <mutex>
#include <set>
#include <vector>

namespace rocplay::report::html {

namespace {

// Okabe-Ito's colour-blind-safe palette, light tints for fills; the legend in the page names them.
constexpr std::string_view kGvStateFill[] = {
    "#e8e8e8", // unknown: grey, dashed outline
    "#b9e3c6", // moving: bluish green tint
    "#f6c39f", // spinning: vermillion tint
    "#a9d1ef", // blocked: sky blue tint
};

std::string gv_label(const graph::Node& node) {
  // Escaped for HTML first (Graphviz passes entities through to the SVG as they are), then the
  // characters DOT and Graphviz's label escapes read (`\` and `"`) as entities too: the label
  // holds no backslash or quote of its own, so nothing in it can end the string or expand.
  auto entity = [](std::string text) {
    std::string out;
    out.reserve(text.size());
    for (const char c : text) {
      if (c == '\\') {
        out += "&#92;";
      } else if (c == '"') {
        out += "&quot;";
      } else {
        out += c;
      }
    }
    return out;
  };
  std::string label = entity(escape(node.label, 160));
  if (!node.where.empty()) {
    label += "\\n" + entity(escape(node.where, 160));
  }
  return label;
}

} // namespace

std::string to_dot(const graph::Graph& graph, std::size_t max_nodes, std::size_t* left_out,
                   const std::function<std::string(const graph::Node&)>& link) {
  const auto& nodes = graph.nodes();
  const auto roots = graph::find_roots(graph);
  std::set<graph::NodeId> root_ids;
  // Which nodes to draw: the cause and everything that waits on it. The roots' chains and
  // cycles first, the open ends' chains, then every node that waits on one of those, nearest
  // first, up to max_nodes. Nodes that wait on none of it (threads going about their business)
  // are left out; with no root and no open end, the whole graph is drawn.
  std::vector<graph::NodeId> order;
  std::vector<bool> chosen(nodes.size(), false);
  auto take = [&](graph::NodeId n) {
    if (n < nodes.size() && !chosen[n] && order.size() < max_nodes) {
      chosen[n] = true;
      order.push_back(n);
    }
  };
  for (const auto& r : roots) {
    root_ids.insert(r.node);
    take(r.node);
    for (const auto n : r.cycle_nodes) {
      root_ids.insert(n);
      take(n);
    }
    for (const auto& chain : r.chains) {
      for (auto n = chain.rbegin(); n != chain.rend(); ++n) {
        take(*n);
      }
    }
  }
  for (const auto& oe : graph::open_ends(graph)) {
    for (auto n = oe.chain.rbegin(); n != oe.chain.rend(); ++n) {
      take(*n);
    }
  }
  if (order.empty()) {
    for (graph::NodeId n = 0; n < nodes.size(); ++n) {
      take(n);
    }
  } else {
    std::vector<std::vector<graph::NodeId>> waiters(nodes.size());
    for (const auto& e : graph.edges()) {
      if (e.to < nodes.size() && e.from < nodes.size()) {
        waiters[e.to].push_back(e.from);
      }
    }
    std::deque<graph::NodeId> queue(order.begin(), order.end());
    while (!queue.empty() && order.size() < max_nodes) {
      const auto n = queue.front();
      queue.pop_front();
      for (const auto w : waiters[n]) {
        if (!chosen[w]) {
          take(w);
          queue.push_back(w);
        }
      }
    }
  }
  if (left_out != nullptr) {
    *left_out = nodes.size() - order.size();
  }

  std::string dot = "digraph waits {\n"
                    "  graph [rankdir=LR, bgcolor=\"transparent\", nodesep=0.25, ranksep=0.35,"
                    " fontname=\"Helvetica,Arial,sans-serif\"];\n"
                    "  node [shape=box, style=\"rounded,filled\", fontsize=11,"
                    " fontname=\"Helvetica,Arial,sans-serif\", margin=\"0.12,0.05\"];\n"
                    "  edge [fontsize=9, fontname=\"Helvetica,Arial,sans-serif\","
                    " color=\"#444444\"];\n";
  for (const auto n : order) {
    const graph::Node& node = nodes[n];
    const auto state = static_cast<std::size_t>(node.state);
    std::string style = "rounded,filled";
    if (node.state == graph::State::Unknown) {
      style += ",dashed";
    }
    std::string extra;
    if (root_ids.contains(n) || node.fault) {
      // The root: a double outline and a bold border, which print in black and white too.
      extra = ", peripheries=2, penwidth=2.5, color=\"#000000\", fontname=\"Helvetica-Bold\"";
    }
    if (link) {
      if (const std::string to = link(node); !to.empty()) {
        extra += ", URL=\"" + to + "\"";
      }
    }
    dot += fmt::format("  n{} [label=\"{}\", fillcolor=\"{}\", style=\"{}\", id=\"gnode{}\"{}];\n",
                       n, gv_label(node), kGvStateFill[state < std::size(kGvStateFill) ? state : 0],
                       style, n, extra);
  }
  for (const auto& e : graph.edges()) {
    if (e.from >= chosen.size() || e.to >= chosen.size() || !chosen[e.from] || !chosen[e.to]) {
      continue;
    }
    // `a -> b`: a waits for b. AND waits solid, OR dashed, ONE bold (a lock's one owner).
    const std::string_view style = e.kind == graph::EdgeKind::Or    ? "dashed"
                                   : e.kind == graph::EdgeKind::One ? "bold"
                                                                    : "solid";
    dot += fmt::format("  n{} -> n{} [style={}];\n", e.from, e.to, style);
  }
  dot += "}\n";
  return dot;
}

namespace {

// Graphviz's entry points, their types taken from its own header so a mismatch fails to build.
struct Gvc {
  bool loaded = false;
  std::string error;
  decltype(&::gvContext) context = nullptr;
  decltype(&::gvFreeContext) free_context = nullptr;
  decltype(&::gvLayout) layout = nullptr;
  decltype(&::gvFreeLayout) free_layout = nullptr;
  decltype(&::gvRenderData) render_data = nullptr;
  decltype(&::gvFreeRenderData) free_render_data = nullptr;
  decltype(&::agmemread) memread = nullptr;
  decltype(&::agclose) close = nullptr;
  decltype(&::agseterr) seterr = nullptr;
  decltype(&::agseterrf) seterrf = nullptr;
  GVC_t* gvc = nullptr;
  std::mutex mutex; // Graphviz is not thread-safe
};

// What Graphviz says while it reads or lays out a graph (instead of its own stderr).
std::string& gv_messages() {
  static std::string messages;
  return messages;
}

int gv_collect(char* message) {
  if (message != nullptr && gv_messages().size() < 2000) {
    gv_messages() += message;
  }
  return 0;
}

Gvc& gvc() {
  static Gvc* instance = [] {
    auto* g = new Gvc; // never freed: the context lives as long as the process
    // $ROCPLAY_LIBGVC names another build of the library (and lets a test take it away).
    std::vector<std::string> names;
    if (const char* env = std::getenv("ROCPLAY_LIBGVC"); env != nullptr && *env != '\0') {
      names.emplace_back(env);
    } else {
      names = {"libgvc.so.6", "libgvc.so"};
    }
    void* handle = nullptr;
    std::string tried;
    for (const auto& name : names) {
      handle = ::dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (handle != nullptr) {
        break;
      }
      const char* why = ::dlerror();
      tried = why != nullptr ? why : name;
    }
    if (handle == nullptr) {
      g->error = "Graphviz's libgvc.so.6 could not be loaded (" + tried + ")";
      return g;
    }
    auto sym = [&](const char* name) { return ::dlsym(handle, name); };
    // libgvc links libcgraph: dlsym through libgvc's handle finds cgraph's functions too.
    g->context = reinterpret_cast<decltype(g->context)>(sym("gvContext"));
    g->free_context = reinterpret_cast<decltype(g->free_context)>(sym("gvFreeContext"));
    g->layout = reinterpret_cast<decltype(g->layout)>(sym("gvLayout"));
    g->free_layout = reinterpret_cast<decltype(g->free_layout)>(sym("gvFreeLayout"));
    g->render_data = reinterpret_cast<decltype(g->render_data)>(sym("gvRenderData"));
    g->free_render_data = reinterpret_cast<decltype(g->free_render_data)>(sym("gvFreeRenderData"));
    g->memread = reinterpret_cast<decltype(g->memread)>(sym("agmemread"));
    g->close = reinterpret_cast<decltype(g->close)>(sym("agclose"));
    g->seterr = reinterpret_cast<decltype(g->seterr)>(sym("agseterr"));
    g->seterrf = reinterpret_cast<decltype(g->seterrf)>(sym("agseterrf"));
    if (g->context == nullptr || g->layout == nullptr || g->render_data == nullptr ||
        g->free_render_data == nullptr || g->memread == nullptr || g->close == nullptr ||
        g->free_layout == nullptr || g->seterrf == nullptr || g->seterr == nullptr) {
      g->error = "libgvc.so.6 lacks gvRenderData or agmemread (not Graphviz 2.30 or later)";
      return g;
    }
    g->seterrf(&gv_collect);
    g->seterr(AGERR); // warnings (a font it does not know) are not the reader's business
    g->gvc = g->context();
    if (g->gvc == nullptr) {
      g->error = "Graphviz could not start (gvContext failed)";
      return g;
    }
    g->loaded = true;
    return g;
  }();
  return *instance;
}

constexpr std::string_view kGvFix =
    "install Debian's libgvc6 (`apt-get install libgvc6`; `dot -c` registers its plugins) and "
    "write the report again";

} // namespace

std::optional<std::string> draw_svg(std::string_view dot, std::string& error) {
  Gvc& g = gvc();
  if (!g.loaded) {
    error = g.error + "; " + std::string(kGvFix);
    return std::nullopt;
  }
  std::lock_guard lock(g.mutex);
  gv_messages().clear();
  const std::string text(dot); // agmemread needs a terminated string
  Agraph_t* graph = g.memread(text.c_str());
  if (graph == nullptr) {
    error = "Graphviz could not read the graph (" + gv_messages() + "); this is a bug in rocplay";
    return std::nullopt;
  }
  std::optional<std::string> svg;
  if (g.layout(g.gvc, graph, "dot") != 0) {
    error = "Graphviz's dot layout failed (" + gv_messages() + "); " + std::string(kGvFix);
  } else {
    char* data = nullptr;
    unsigned int length = 0;
    if (g.render_data(g.gvc, graph, "svg", &data, &length) != 0 || data == nullptr) {
      error = "Graphviz could not render SVG (" + gv_messages() + "); " + std::string(kGvFix);
    } else {
      std::string_view all(data, length);
      // Inline SVG in HTML: no XML prolog, DOCTYPE or comments before the element.
      const auto start = all.find("<svg");
      if (start != std::string_view::npos) {
        svg = std::string(all.substr(start));
      } else {
        error = "Graphviz's SVG held no <svg> element";
      }
      g.free_render_data(data);
    }
    g.free_layout(g.gvc, graph);
  }
  g.close(graph);
  return svg;
}

} // namespace rocplay::report::html
