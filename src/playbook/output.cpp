// The run's part of a report: what each step did, and what happened to the target.
#include "playbook/internal.hpp"
#include "rocplay/step_output.hpp"

#include <fmt/format.h>

#include <ostream>

namespace rocplay::playbook {

namespace {

nlohmann::json opt(const std::optional<double>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

std::string seconds_text(const std::optional<double>& v) {
  return v ? fmt::format("{:.3f} s", *v) : std::string("unknown");
}

} // namespace

nlohmann::json run_to_json(const RunResult& r) {
  nlohmann::json steps = nlohmann::json::array();
  for (const auto& s : r.steps) {
    nlohmann::json j = {
        {"name", mi::lossy_utf8(s.name)},
        {"kind", to_string(s.kind)},
        {"status", to_string(s.status)},
        {"seconds", s.seconds},
        {"command_count", s.command_count},
        {"always", s.in_always},
        {"depth", s.depth},
    };
    if (s.position.line != 0) {
      j["position"] = s.position.str();
    }
    if (!s.item.empty()) {
      j["item"] = s.item;
    }
    if (!s.message.empty()) {
      j["message"] = mi::lossy_utf8(s.message);
    }
    nlohmann::json cmds = nlohmann::json::array();
    for (const auto& c : s.commands) {
      cmds.push_back(mi::lossy_utf8(c));
    }
    j["commands"] = std::move(cmds);
    if (s.kind == StepKind::Mi || s.kind == StepKind::Cli) {
      j["output"] = mi::lossy_utf8(s.output); // whole: the text report shows the first lines
    }
    steps.push_back(std::move(j));
  }
  nlohmann::json warnings = nlohmann::json::array();
  for (const auto& w : r.warnings) {
    warnings.push_back(mi::lossy_utf8(w));
  }
  nlohmann::json out = {
      {"playbook", r.playbook},
      {"pid", r.pid},
      {"debugger",
       {{"kind", to_string(r.debugger.kind)},
        {"path", r.debugger.path},
        {"version", mi::lossy_utf8(r.debugger.version)}}},
      {"target",
       {{"attached", r.attached},
        {"attach_seconds", opt(r.times.attach_seconds)},
        {"stop_seconds", opt(r.times.stop_seconds)},
        {"total_seconds", opt(r.times.total_seconds)},
        {"detached", r.times.detached},
        {"left_stopped", r.times.left_stopped}}},
      {"steps", std::move(steps)},
      {"warnings", std::move(warnings)},
      {"aborted", r.aborted},
      {"seconds", r.total_seconds},
      {"exit_code", static_cast<int>(r.exit_code())},
  };
  if (r.unsafe_commands_allowed) {
    nlohmann::json ran = nlohmann::json::array();
    for (const auto& c : r.unsafe_commands_run) {
      ran.push_back(mi::lossy_utf8(c));
    }
    out["unsafe_commands"] = {{"allowed", true}, {"ran", std::move(ran)}};
  }
  if (r.fatal) {
    out["error"] = {{"code", static_cast<int>(r.fatal->code())},
                    {"message", mi::lossy_utf8(r.fatal->what())},
                    {"hint", mi::lossy_utf8(r.fatal->hint())}};
  }
  return out;
}

void write_steps_text(std::ostream& out, const RunResult& r) {
  out << fmt::format("Playbook {} on pid {} with {} ({})\n", r.playbook, r.pid,
                     to_string(r.debugger.kind), r.debugger.version);
  if (r.attached) {
    out << fmt::format("Target: attach took {}, stopped for {}; {}\n",
                       seconds_text(r.times.attach_seconds), seconds_text(r.times.stop_seconds),
                       r.times.left_stopped
                           ? "LEFT STOPPED after detach: rocplay sent SIGCONT"
                           : (r.times.detached ? "detached, running again" : "NOT DETACHED"));
  } else {
    out << "Target: not attached\n";
  }
  out << "Steps:\n";
  for (const auto& s : r.steps) {
    std::string status(to_string(s.status));
    if (s.status == StepStatus::Failed || s.status == StepStatus::TimedOut) {
      for (auto& c : status) {
        c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
      }
    }
    const std::string indent(2 + 2 * s.depth, ' ');
    std::string line =
        fmt::format("{}{:<9} {:>8}  {}{}", indent, status,
                    s.status == StepStatus::Skipped || s.status == StepStatus::NotRun
                        ? std::string()
                        : fmt::format("{:.3f}s", s.seconds),
                    s.in_always && s.depth == 0 ? "[always] " : "", mi::lossy_utf8(s.name));
    if (!s.item.empty()) {
      line += fmt::format(" ({})", s.item);
    }
    if (s.command_count > 1) {
      line += fmt::format(" [{} commands]", s.command_count);
    }
    if (!s.message.empty()) {
      line += ": " + mi::lossy_utf8(s.message);
    }
    out << line << '\n';
    if (s.status == StepStatus::Failed && s.position.line != 0) {
      out << indent << "          at " << s.position.str() << '\n';
    }
    report::write_step_output_text(out, s.output, indent + "          ");
  }
  if (r.unsafe_commands_allowed) {
    out << fmt::format("Unsafe commands: allowed by --allow-unsafe-commands; {}\n",
                       r.unsafe_commands_run.empty()
                           ? std::string("none ran")
                           : fmt::format("{} ran:", r.unsafe_commands_run.size()));
    for (const auto& c : r.unsafe_commands_run) {
      out << "  " << mi::lossy_utf8(c) << '\n';
    }
  }
  if (!r.warnings.empty()) {
    out << "Warnings:\n";
    for (const auto& w : r.warnings) {
      out << "  " << mi::lossy_utf8(w) << '\n';
    }
  }
  if (r.fatal) {
    out << "Stopped early: " << mi::lossy_utf8(r.fatal->what()) << '\n';
  }
}

} // namespace rocplay::playbook
