// The agent-log driver (rocplay/drivers/drivers.hpp): rocm-debug-agent wave dumps read from server
// logs, grouped and explained (src/agentlog/), as one case with its faults.
#include "rocplay/drivers/drivers.hpp"

#include "rocplay/agentlog/agentlog.hpp"
#include "rocplay/report/agent_log.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>

namespace rocplay::drivers {

namespace {

constexpr std::size_t kMaxListedCodeObjects = 200000;

// The names --save-code-objects left in DIR, so the report can name the exact file.
std::vector<std::string> list_code_objects(const std::string& dir, const ErrorSink& error) {
  std::vector<std::string> names;
  std::error_code ec;
  std::filesystem::directory_iterator it(dir, ec);
  if (ec) {
    error("cannot list " + dir + ": " + ec.message(),
          "the report still names the code objects, as globs");
    return names;
  }
  for (const auto& entry : it) {
    if (names.size() >= kMaxListedCodeObjects) {
      break;
    }
    names.push_back(entry.path().filename().string());
  }
  return names;
}

} // namespace

Incident read_agent_logs(const AgentLogRequest& rq) {
  const ErrorSink error = rq.error ? rq.error : [](const std::string&, const std::string&) {};
  std::vector<agentlog::AgentLog> logs;
  std::size_t unreadable = 0;
  for (const auto& file : rq.files) {
    agentlog::ParseOptions po;
    po.source = file == "-" ? "<stdin>" : file;
    po.rank = rq.rank;
    if (file == "-") {
      logs.push_back(agentlog::parse(std::cin, po));
      continue;
    }
    std::error_code ec;
    if (std::filesystem::is_directory(file, ec)) {
      ++unreadable;
      error(file + " is a directory", "pass the log files in it, e.g. " + file + "/*.log");
      continue;
    }
    std::ifstream in(file, std::ios::binary);
    if (!in) {
      ++unreadable;
      error("cannot open " + file + ": " + std::strerror(errno),
            "check the path and permissions; the other files are still read");
      continue;
    }
    logs.push_back(agentlog::parse(in, po));
    if (in.bad()) {
      ++unreadable;
      error("reading " + file + " failed part way: " + std::strerror(errno),
            "the part read so far is reported");
    }
  }
  if (logs.empty()) {
    throw Error(ExitCode::NoInput, "none of the inputs could be read",
                "check the paths; `-` reads standard input");
  }

  agentlog::AnalyzeOptions ao;
  ao.objdump = rq.objdump;
  if (!rq.code_objects.empty()) {
    ao.code_object_dir = rq.code_objects;
    ao.saved_code_objects = list_code_objects(rq.code_objects, error);
    ao.read_code_objects = true;
  }
  auto faults = std::make_shared<const agentlog::Report>(agentlog::analyze(logs, ao));

  Case c;
  c.source.rank = rq.rank;
  // The logs read, for the incident's group (`who`, `inputs`): one case over all of them.
  for (const auto& name : faults->sources) {
    c.source.path += (c.source.path.empty() ? "" : ", ") + name;
  }
  c.findings = report::agent_log_findings(*faults);
  const bool any_fault = std::any_of(faults->groups.begin(), faults->groups.end(),
                                     [](const auto& g) { return g.reason_info.fault; });
  c.exit_code = unreadable > 0 ? ExitCode::PartialInput
                : any_fault    ? ExitCode::Findings
                               : ExitCode::Ok;
  if (unreadable > 0) {
    c.status = CaseStatus::Partial;
  }
  c.faults = std::move(faults);
  Incident inc;
  inc.title = "agent-log";
  inc.cases.push_back(std::move(c));
  return inc;
}

} // namespace rocplay::drivers
