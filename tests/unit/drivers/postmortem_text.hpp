// `rocplay postmortem PATHS` as its text report, through the offline driver and the one writer,
// for tests that read what a person reads.
#pragma once

#include "rocplay/drivers/drivers.hpp"
#include "rocplay/report/incident.hpp"
#include "rocplay/report/postmortem.hpp"

#include <sstream>
#include <string>
#include <vector>

namespace rocplay::report_text {

struct PostmortemText {
  std::string out;
  drivers::OfflineResult result;
  std::vector<postmortem::InputResult> inputs;
};

inline PostmortemText postmortem_text(const std::vector<std::string>& paths) {
  postmortem::Options options;
  options.paths = paths;
  options.jobs = 2;
  PostmortemText w;
  report::PostmortemBatch batch(report::Format::Text, {}, {});
  w.result = drivers::read_inputs(options,
                                  [&](const postmortem::InputResult& r) {
                                    batch.add(r);
                                    w.inputs.push_back(r);
                                  },
                                  {});
  batch.close(w.result.summary);
  std::ostringstream out;
  report::write(out, w.result.incident, report::Format::Text, {}, "test", &batch);
  w.out = out.str();
  return w;
}

// The first n lines, wrapped lines joined: one space for each run of blanks.
inline std::string first_lines(const std::string& text, int n) {
  std::istringstream in(text);
  std::string out;
  std::string line;
  for (int i = 0; i < n && std::getline(in, line); ++i) {
    for (char c : line + " ") {
      if (c != ' ' || (!out.empty() && out.back() != ' ')) {
        out.push_back(c);
      }
    }
  }
  return out;
}

} // namespace rocplay::report_text
