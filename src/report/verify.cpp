// `launch --verify`'s comparison in a report (rocplay/report/verify.hpp).
#include "rocplay/report/verify.hpp"

#include "rocplay/report/report.hpp"

#include <fmt/format.h>

namespace rocplay::report {

namespace {

std::string bold(bool color, const std::string& text) {
  return color ? "\x1b[1m" + text + "\x1b[0m" : text;
}

} // namespace

void write_verification_text(std::ostream& out, const Incident& incident, std::size_t width,
                             bool color, bool headline) {
  if (!incident.verification) {
    return;
  }
  const Finding& v = *incident.verification;
  const std::string runs =
      fmt::format("{} run{}, each under the debugger", incident.verify_runs.size(),
                  incident.verify_runs.size() == 1 ? "" : "s");
  if (headline) {
    write_wrapped(out, width, bold(color, "VERIFY") + "   ",
                  fmt::format("[{} {:.2f}] {}", to_string(v.severity), v.confidence, v.title));
    if (!v.summary.empty()) {
      write_wrapped(out, width, "  Meaning: ", v.summary);
    }
    if (!v.next_step.empty()) {
      write_wrapped(out, width, "  Next:    ", v.next_step);
    }
    write_wrapped(out, width, "  Runs:    ", runs);
  } else {
    write_wrapped(out, width, bold(color, "VERIFY") + "   ", runs + " (launch --verify):");
  }
  for (const auto& line : v.evidence) {
    write_wrapped(out, width, "    - ", line);
  }
  if (!incident.verify_runs.empty() && !incident.verify_runs.front().concurrent.empty()) {
    write_wrapped(out, width, "  Running at the first fault: ",
                  fmt::format("{}", fmt::join(incident.verify_runs.front().concurrent, "; ")));
  }
  const auto sites = heuristics::launch_sites(incident.verify_runs);
  if (!sites.empty()) {
    std::vector<std::string> words;
    for (const auto& site : sites) {
      words.push_back(fmt::format("{} from {}", site.kernel, site.where));
    }
    write_wrapped(out, width, "  Launched: ", fmt::format("{}", fmt::join(words, "; ")));
  }
  for (const auto& n : incident.notes) {
    write_wrapped(out, width, "  Note:    ", n);
  }
  out << '\n';
}

nlohmann::json verification_to_json(const Incident& incident) {
  if (!incident.verification) {
    return nullptr;
  }
  nlohmann::json runs = nlohmann::json::array();
  for (const auto& r : incident.verify_runs) {
    nlohmann::json fault = nullptr;
    if (r.fault) {
      fault = {
          {"function", r.fault->function},
          {"file", r.fault->at.file},
          {"line", r.fault->at.line ? nlohmann::json(*r.fault->at.line) : nullptr},
          {"pc", r.fault->at.pc ? nlohmann::json(fmt::format("{:#x}", *r.fault->at.pc)) : nullptr},
          {"on_gpu", r.fault->on_gpu},
          {"signal", r.fault->signal}};
    }
    nlohmann::json sites = nlohmann::json::array();
    for (const auto& site : r.launch_sites) {
      sites.push_back({{"kernel", site.kernel}, {"where", site.where}});
    }
    runs.push_back({{"index", r.run.index},
                    {"of", r.run.of},
                    {"experiment", r.run.experiment},
                    {"env", r.run.env},
                    {"outcome", r.run.outcome},
                    {"exit_code", r.run.exit_code ? nlohmann::json(*r.run.exit_code) : nullptr},
                    {"exit_signal", r.run.exit_signal},
                    {"seconds", r.run.seconds},
                    {"fault", std::move(fault)},
                    {"launch_line", r.launch_line},
                    {"concurrent", r.concurrent},
                    {"launch_sites", std::move(sites)},
                    {"recording", r.recording}});
  }
  return {{"verdict", finding_to_json(*incident.verification)}, {"runs", std::move(runs)}};
}

} // namespace rocplay::report
