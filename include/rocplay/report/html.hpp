// `--format html`: one self-contained page per report (docs/html-report.md). Top to bottom: the
// cause (the text report's first lines), the wait-for graph drawn by Graphviz (`dot`, SVG,
// inlined), the ranks as a grid coloured by state, the merged stack tree of every rank's host
// and Python frames (STAT-style), a wave map and PC histogram per dispatch, and each rank's
// tables and text report, collapsed. No script, no request to the network, no font or image
// fetched: inline CSS and SVG only, so the page reads the same offline and in print.
//
// Everything that came from a debugger, a recording or a log is untrusted: every such string is
// HTML-escaped (html_escape), in the DOT labels Graphviz draws too (dot_label). What is drawn is
// capped so the page stays small however large the incident: the wave map merges work-groups
// whose waves sit alike, the tree and the graph stop at a bound and say what they left out
// (docs/benchmarks.md: a 64-rank, 100,000-wave page).
//
//   report::write(out, incident, report::Format::Html, text_options, ROCPLAY_VERSION);
//
// Layer: src/report/ (library rocplay_report; Graphviz only in src/report/html_graphviz.cpp).
#pragma once

#include "rocplay/case/case.hpp"
#include "rocplay/graph/graph.hpp"
#include "rocplay/report/report.hpp"

#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

namespace rocplay::report::html {

// `text` for HTML text or a quoted attribute: `& < > " '` as entities, bytes that are not UTF-8
// and control characters (NUL included) as U+FFFD, at most `max_bytes` of the input (then `…`).
std::string escape(std::string_view text, std::size_t max_bytes = 4096);

// A DOT graph of `graph` for Graphviz: every label escaped (escape, then no backslash or quote
// left), the cause and what waits on it: the roots' chains and cycles, the open ends' chains,
// then every node that waits on them, nearest first (the whole graph when it has no root and no
// open end), at most `max_nodes`; `left_out` says how many nodes were not drawn. Roots are
// outlined twice; each node's label is its label and its line.
// `link`, when given, names a node's target on the page (`#case-3`), or "" for none; it is put
// into the DOT as it is, so it must come from rocplay, not from the input.
std::string to_dot(const graph::Graph& graph, std::size_t max_nodes, std::size_t* left_out,
                   const std::function<std::string(const graph::Node&)>& link = {});

// Graphviz's `dot` layout of a DOT text as an inline <svg> element (no XML prolog or DOCTYPE).
// Graphviz (libgvc.so.6, Debian's libgvc6) is loaded at first use; when it cannot be, or it
// refuses the graph, nullopt and `error` says why.
std::optional<std::string> draw_svg(std::string_view dot, std::string& error);

// What the page knows of one case: its label and state for the grid, its host stacks for the
// merged tree, and its rendered wave maps and section. The post-mortem batch makes one per input
// as it reads it, so that no input's snapshot is kept (PostmortemBatch).
struct CaseParts {
  std::string label;  // `rank 3 (pid 4301)`, `hang_rank3.mi`
  std::string anchor; // `case-3`: the section's id
  std::optional<int> rank;
  std::string state; // collective, kernel, idle, elsewhere, unseen
  std::string where; // the whereabouts line
  std::string verdict;
  // Each host thread's frames, outermost first; `hot`: a thread the cause's chain holds.
  struct Stack {
    std::vector<std::string> frames;
    std::vector<std::string> lines; // each frame's file:line, when known
    bool hot = false;
  };
  std::vector<Stack> stacks;
  std::string lead;      // the first lines of its text report: the cause as the text says it
  std::string wave_maps; // rendered HTML
  std::string section;   // rendered HTML
};

// One case's parts. `text_report`: the case's text report, shown in the collapsed section.
struct CaseInput {
  std::string label;
  std::optional<int> rank;
  std::optional<std::int64_t> pid;
  bool examined = true;
  std::string error;
  const Snapshot* snapshot = nullptr;
  const std::vector<Finding>* findings = nullptr;
  const graph::Graph* graph = nullptr;
  const std::vector<std::string>* warnings = nullptr;
  std::string text_report;
};
CaseParts case_parts(const CaseInput& input, std::size_t index);

// The whole page. `parts`: one per incident case, in its order (a post-mortem batch's, made as it
// read them); empty: made here from the cases (live runs keep their snapshots).
void write_page(std::ostream& out, const Incident& incident, const TextOptions& options,
                std::string_view tool_version, const std::vector<CaseParts>& parts);

} // namespace rocplay::report::html
