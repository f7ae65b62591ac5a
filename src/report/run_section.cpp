// The `run` section of a playbook run's report: what each step did, and what happened to the
// target (JSON, and the text after the findings).
#include "rocplay/report/run.hpp"

#include "rocplay/mi/value.hpp"
#include "rocplay/report/step_output.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <ostream>
#include <vector>

namespace rocplay::report {

using playbook::RunResult;
using playbook::StepKind;
using playbook::StepStatus;

namespace {

nlohmann::json opt(const std::optional<double>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

std::string seconds_text(const std::optional<double>& v) {
  return v ? stop_time_text(*v) : std::string("unknown");
}

std::string state_text(char state) {
  switch (state) {
  case 'R':
    return "running (state R)";
  case 'S':
    return "running (state S, sleeping)";
  case 'D':
    return "running (state D, in an uninterruptible wait)";
  case 'I':
    return "running (state I, idle)";
  case 'T':
    return "STOPPED (state T)";
  case 't':
    return "STOPPED by a tracer (state t)";
  case 'Z':
  case 'X':
    return "gone (it exited)";
  default:
    return fmt::format("in state {}", state);
  }
}

} // namespace

std::string left_stopped_hint(const RunResult& r) {
  if (r.times.attach_sent && !r.times.attach_seconds && !r.times.copied) {
    return "the stop was left by the debugger's unfinished attach (it stops each thread as it "
           "attaches), and SIGCONT undid it; if the process stops again, something else is "
           "stopping or tracing it (`ps -o stat -p PID`)";
  }
  return "check that it runs (`ps -o stat -p PID`); something else may be tracing it";
}

std::string target_account(const RunResult& r) {
  const auto& t = r.times;
  std::string text;
  if (t.launched) {
    text = fmt::format("launched by rocplay; stopped for the report; {}",
                       t.killed ? "killed after it" : "detached after it");
  } else if (!t.attach_sent) {
    text = "not attached: rocplay never stopped it";
  } else if (r.attached && t.copied) {
    text = fmt::format("held only while rocplay copied its threads: stopped for {}{}; the debugger "
                       "read the copy and never attached",
                       seconds_text(t.stop_seconds),
                       r.samples.size() > 1
                           ? fmt::format(" in {} copies, running between them", r.samples.size())
                           : std::string());
  } else if (r.attached && t.attach_seconds) {
    text = fmt::format("attach took {}, stopped for {}{}", seconds_text(t.attach_seconds),
                       seconds_text(t.stop_seconds),
                       r.samples.size() > 1
                           ? fmt::format(" in {} stops, running between them", r.samples.size())
                           : std::string());
    // cuda-gdb resumes every thread while it attaches: the target ran then, measured.
    for (const auto& [from, to] : t.attach_run_windows) {
      text += fmt::format("; during the attach the debugger let it run for {} ({:.1f} s to "
                          "{:.1f} s into the session), not counted as stopped",
                          seconds_text(to - from), from, to);
    }
    // A resume that never answered (the samples' intervals are counted per sample above).
    if (r.samples.size() <= 1) {
      for (const auto& [from, to] : t.run_windows) {
        text += fmt::format("; the debugger let it run for {} ({:.1f} s to {:.1f} s into the "
                            "session), not counted as stopped",
                            seconds_text(to - from), from, to);
      }
    }
  } else {
    text = fmt::format("the attach did not complete; stopped for {}", seconds_text(t.stop_seconds));
  }
  if (t.attach_sent && !t.launched) {
    text += t.detached ? "; detached" : "; NOT DETACHED";
  }
  if (t.left_stopped) {
    text += "; it was still stopped afterwards, so rocplay sent it SIGCONT";
  } else if (t.stop_cancelled) {
    text += "; rocplay sent it SIGCONT to cancel the stop the unfinished attach leaves behind";
  }
  if (t.state_after != '?') {
    text += "; now " + state_text(t.state_after);
  }
  return text;
}

nlohmann::json run_section_to_json(const RunResult& r) {
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
    if (s.sample > 1) {
      j["sample"] = s.sample;
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
        {"left_stopped", r.times.left_stopped},
        {"stop_cancelled", r.times.stop_cancelled},
        {"attach_sent", r.times.attach_sent},
        {"copied", r.times.copied},
        {"state_after", r.times.state_after == '?'
                            ? nlohmann::json(nullptr)
                            : nlohmann::json(std::string(1, r.times.state_after))},
        {"account", target_account(r)}}},
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
  if (r.samples_wanted > 1) {
    nlohmann::json samples = nlohmann::json::array();
    for (const auto& sm : r.samples) {
      samples.push_back({{"index", sm.index},
                         {"at", sm.at},
                         {"stop_seconds", sm.stop_seconds},
                         {"wall_time", sm.wall_time}});
    }
    out["sampling"] = {
        {"wanted", r.samples_wanted}, {"taken", r.samples.size()}, {"samples", std::move(samples)}};
    if (!r.sampling_stopped.empty()) {
      out["sampling"]["stopped"] = mi::lossy_utf8(r.sampling_stopped);
    }
  }
  if (r.fatal) {
    out["error"] = {{"code", static_cast<int>(r.fatal->code())},
                    {"message", mi::lossy_utf8(r.fatal->what())},
                    {"hint", mi::lossy_utf8(r.fatal->hint())}};
  }
  return out;
}

namespace {

// Bounded readers of one field each: the path of the field in what they throw.
const nlohmann::json& field(const nlohmann::json& j, const char* key, const std::string& path) {
  if (!j.is_object() || !j.contains(key)) {
    throw Error(ExitCode::DataError, fmt::format("run section: `{}.{}` is missing", path, key));
  }
  return j.at(key);
}

template <typename T> T read_as(const nlohmann::json& v, const std::string& path) {
  try {
    return v.get<T>();
  } catch (const nlohmann::json::exception&) {
    throw Error(ExitCode::DataError,
                fmt::format("run section: `{}` has the wrong type ({})", path, v.type_name()));
  }
}

template <typename T>
T get_or(const nlohmann::json& j, const char* key, const std::string& path, T fallback) {
  if (!j.is_object() || !j.contains(key) || j.at(key).is_null()) {
    return fallback;
  }
  return read_as<T>(j.at(key), path + "." + key);
}

std::optional<double> opt_double(const nlohmann::json& j, const char* key,
                                 const std::string& path) {
  if (!j.is_object() || !j.contains(key) || j.at(key).is_null()) {
    return std::nullopt;
  }
  return read_as<double>(j.at(key), path + "." + key);
}

StepStatus step_status_of(const std::string& text) {
  for (auto s : {StepStatus::Ok, StepStatus::Failed, StepStatus::Ignored, StepStatus::TimedOut,
                 StepStatus::Skipped, StepStatus::NotRun}) {
    if (to_string(s) == text) {
      return s;
    }
  }
  return StepStatus::NotRun;
}

} // namespace

RunResult run_section_from_json(const nlohmann::json& j) {
  if (!j.is_object()) {
    throw Error(ExitCode::DataError, "run section: `run` is not an object");
  }
  RunResult r;
  r.playbook = get_or<std::string>(j, "playbook", "run", "");
  r.pid = get_or<std::int64_t>(j, "pid", "run", 0);
  if (j.contains("debugger")) {
    const auto& d = j.at("debugger");
    r.debugger.kind = debugger_kind_from_string(get_or<std::string>(d, "kind", "run.debugger", ""));
    r.debugger.path = get_or<std::string>(d, "path", "run.debugger", "");
    r.debugger.version = get_or<std::string>(d, "version", "run.debugger", "");
  }
  const auto& t = field(j, "target", "run");
  r.attached = get_or<bool>(t, "attached", "run.target", false);
  r.times.attach_seconds = opt_double(t, "attach_seconds", "run.target");
  r.times.stop_seconds = opt_double(t, "stop_seconds", "run.target");
  r.times.total_seconds = opt_double(t, "total_seconds", "run.target");
  r.times.detached = get_or<bool>(t, "detached", "run.target", false);
  r.times.left_stopped = get_or<bool>(t, "left_stopped", "run.target", false);
  r.times.stop_cancelled = get_or<bool>(t, "stop_cancelled", "run.target", false);
  r.times.attach_sent = get_or<bool>(t, "attach_sent", "run.target", false);
  r.times.copied = get_or<bool>(t, "copied", "run.target", false);
  const std::string state = get_or<std::string>(t, "state_after", "run.target", "?");
  r.times.state_after = state.size() == 1 ? state[0] : '?';
  const auto& steps = field(j, "steps", "run");
  if (!steps.is_array()) {
    throw Error(ExitCode::DataError, "run section: `run.steps` is not an array");
  }
  for (std::size_t i = 0; i < steps.size(); ++i) {
    const auto& s = steps[i];
    const std::string path = fmt::format("run.steps[{}]", i);
    playbook::StepRecord rec;
    rec.name = read_as<std::string>(field(s, "name", path), path + ".name");
    rec.kind = playbook::step_kind_from_string(get_or<std::string>(s, "kind", path, "mi"))
                   .value_or(StepKind::Mi);
    rec.status = step_status_of(get_or<std::string>(s, "status", path, ""));
    rec.seconds = get_or<double>(s, "seconds", path, 0);
    rec.command_count = get_or<std::size_t>(s, "command_count", path, 0);
    rec.in_always = get_or<bool>(s, "always", path, false);
    rec.depth = get_or<std::uint32_t>(s, "depth", path, 0);
    rec.item = get_or<std::string>(s, "item", path, "");
    rec.sample = get_or<std::uint32_t>(s, "sample", path, 1);
    rec.message = get_or<std::string>(s, "message", path, "");
    rec.output = get_or<std::string>(s, "output", path, "");
    rec.commands = get_or<std::vector<std::string>>(s, "commands", path, {});
    r.steps.push_back(std::move(rec));
  }
  r.warnings = get_or<std::vector<std::string>>(j, "warnings", "run", {});
  r.aborted = get_or<bool>(j, "aborted", "run", false);
  r.total_seconds = get_or<double>(j, "seconds", "run", 0);
  if (j.contains("sampling")) {
    const auto& sm = j.at("sampling");
    r.samples_wanted = get_or<std::uint32_t>(sm, "wanted", "run.sampling", 1);
    r.sampling_stopped = get_or<std::string>(sm, "stopped", "run.sampling", "");
    const auto& list = field(sm, "samples", "run.sampling");
    for (std::size_t i = 0; list.is_array() && i < list.size(); ++i) {
      const std::string path = fmt::format("run.sampling.samples[{}]", i);
      Sample times;
      times.index = get_or<std::uint32_t>(list[i], "index", path, 1);
      times.at = get_or<double>(list[i], "at", path, 0);
      times.stop_seconds = get_or<double>(list[i], "stop_seconds", path, 0);
      times.wall_time = get_or<double>(list[i], "wall_time", path, 0);
      r.samples.push_back(std::move(times));
    }
  }
  if (j.contains("error") && j.at("error").is_object()) {
    const auto& e = j.at("error");
    const int code = get_or<int>(e, "code", "run.error", static_cast<int>(ExitCode::Internal));
    r.fatal = Error(static_cast<ExitCode>(code), get_or<std::string>(e, "message", "run.error", ""),
                    get_or<std::string>(e, "hint", "run.error", ""));
  }
  return r;
}

void write_run_section_text(std::ostream& out, const RunResult& r, std::size_t width) {
  write_wrapped(out, width, "",
                fmt::format("Playbook {} on pid {} with {} ({})", r.playbook, r.pid,
                            to_string(r.debugger.kind), mi::lossy_utf8(r.debugger.version)));
  write_wrapped(out, width, "Target: ", target_account(r));
  out << "Steps:\n";
  std::uint32_t sample = 1;
  for (std::size_t i = 0; i < r.steps.size(); ++i) {
    const auto& s = r.steps[i];
    if (s.sample > sample) {
      sample = s.sample;
      out << fmt::format("  sample {} (steps skipped in sample 1 skipped again, not listed):\n",
                         sample);
    }
    if (s.sample > 1 && s.status == StepStatus::Skipped) {
      continue; // skipped for the debugger's kind, which no sample changes
    }
    // Consecutive skipped steps (a dozen GPU steps under plain gdb) share a line.
    std::size_t same = 1;
    while (s.status == StepStatus::Skipped && i + same < r.steps.size() &&
           r.steps[i + same].status == StepStatus::Skipped && r.steps[i + same].depth == s.depth) {
      ++same;
    }
    if (same > 1) {
      std::vector<std::string> reasons;
      for (std::size_t k = i; k < i + same; ++k) {
        if (std::find(reasons.begin(), reasons.end(), r.steps[k].message) == reasons.end()) {
          reasons.push_back(r.steps[k].message);
        }
      }
      std::string why;
      for (std::size_t k = 0; k < reasons.size() && k < 3; ++k) {
        why += (k == 0 ? "" : "; ") + mi::lossy_utf8(reasons[k]);
      }
      if (reasons.size() > 3) {
        why += fmt::format("; {} more reasons", reasons.size() - 3);
      }
      std::string names;
      for (std::size_t k = i; k < i + same; ++k) {
        names += (k == i ? "" : ", ") + mi::lossy_utf8(r.steps[k].name);
      }
      constexpr std::size_t kMaxNames = 60;
      if (names.size() > kMaxNames) {
        names.resize(kMaxNames - 4);
        while (!names.empty() && (static_cast<unsigned char>(names.back()) & 0xC0) == 0x80) {
          names.pop_back(); // never end inside a UTF-8 sequence
        }
        if (!names.empty() && static_cast<unsigned char>(names.back()) >= 0xC0) {
          names.pop_back();
        }
        names += " ...";
      }
      write_wrapped(
          out, width,
          fmt::format("{}{:<9} {:>8}  ", std::string(2 + 2 * s.depth, ' '), "skipped", ""),
          fmt::format("{} steps ({}): {}", same, names, why));
      i += same - 1;
      continue;
    }
    std::string status(to_string(s.status));
    if (s.status == StepStatus::Failed || s.status == StepStatus::TimedOut) {
      for (auto& c : status) {
        c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
      }
    }
    const std::string indent(2 + 2 * s.depth, ' ');
    const std::string lead =
        fmt::format("{}{:<9} {:>8}  ", indent, status,
                    s.status == StepStatus::Skipped || s.status == StepStatus::NotRun
                        ? std::string()
                        : fmt::format("{:.3f}s", s.seconds));
    std::string line =
        fmt::format("{}{}", s.in_always && s.depth == 0 ? "[always] " : "", mi::lossy_utf8(s.name));
    if (s.sample > 1 && s.kind != StepKind::Snapshot) {
      line += fmt::format(" [sample {}]", s.sample);
    }
    if (!s.item.empty()) {
      line += fmt::format(" ({})", s.item);
    }
    if (s.command_count > 1) {
      line += fmt::format(" [{} commands]", s.command_count);
    }
    if (!s.message.empty()) {
      line += ": " + mi::lossy_utf8(s.message);
    }
    // The wrapped lines keep to the step's column (the status and time stay a column of their
    // own); a long command or message breaks between words, never past the width.
    write_wrapped(out, width, lead, line);
    if (s.status == StepStatus::Failed && s.position.line != 0) {
      out << indent << "          at " << s.position.str() << '\n';
    }
    StepOutputLimits limits;
    const std::size_t output_indent = indent.size() + 10 + 2; // `| ` after the indent
    limits.max_columns = width > output_indent + 3 + 20 ? width - output_indent - 3 : 20;
    write_step_output_text(out, s.output, indent + "          ", limits);
  }
  if (r.unsafe_commands_allowed) {
    out << fmt::format("Unsafe commands: allowed by --allow-unsafe-commands; {}\n",
                       r.unsafe_commands_run.empty()
                           ? std::string("none ran")
                           : fmt::format("{} ran:", r.unsafe_commands_run.size()));
    for (const auto& c : r.unsafe_commands_run) {
      write_wrapped(out, width, "  ", mi::lossy_utf8(c));
    }
  }
  if (!r.warnings.empty()) {
    out << "Warnings:\n";
    for (const auto& w : r.warnings) {
      write_wrapped(out, width, "  ", mi::lossy_utf8(w));
    }
  }
  if (r.fatal) {
    write_wrapped(out, width, "Stopped early: ", mi::lossy_utf8(r.fatal->what()));
  }
}

bool attach_refused(const RunResult& r) {
  return std::any_of(r.steps.begin(), r.steps.end(), [](const playbook::StepRecord& s) {
    return s.kind == StepKind::Attach && s.status == StepStatus::Failed;
  });
}

std::string failure_text(const RunResult& r) {
  if (r.fatal) {
    return r.fatal->what();
  }
  if (r.aborted) {
    for (const auto& s : r.steps) {
      if (s.status == StepStatus::Failed || s.status == StepStatus::TimedOut) {
        return fmt::format("step `{}` {}: {}", s.name, to_string(s.status), s.message);
      }
    }
    return "a step failed and the playbook stopped";
  }
  return {};
}

std::string failure_label(const RunResult& r) {
  if (r.fatal && static_cast<int>(r.fatal->code()) >= 128) {
    return "RUN INTERRUPTED";
  }
  return "RUN FAILED";
}

std::string failed_step_position(const RunResult& r) {
  for (const auto& s : r.steps) {
    if (s.status == StepStatus::Failed || s.status == StepStatus::TimedOut) {
      return s.position.str();
    }
  }
  return "the playbook";
}

bool has_text_report(const RunResult& r) {
  return r.attached || (!failure_text(r).empty() && r.times.attach_sent);
}

} // namespace rocplay::report
