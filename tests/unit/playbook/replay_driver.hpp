// A playbook::Driver that answers from a rocplay recording of a real gdb session, so the runner's
// logic runs under the sanitizers without ptrace. A command the recording does not hold answers
// `^error` (what gdb says to an unknown command); faults can be injected per command.
#pragma once

#include "rocplay/playbook/playbook.hpp"

#include <catch2/catch.hpp>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <functional>
#include <set>
#include <sstream>

namespace rocplay::playbook::test {

inline std::string read_fixture(const std::string& rel) {
  std::ifstream in(std::string(ROCPLAY_SOURCE_DIR) + "/" + rel, std::ios::binary);
  if (!in) {
    throw std::runtime_error("missing fixture " + rel);
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The recorded gdb session most runner tests replay: hang-triage on spin_target.
inline const std::string& spin_gdb_recording() {
  static const std::string text = read_fixture("fixtures/playbook/spin-gdb.rec");
  return text;
}

class ReplayDriver : public Driver {
public:
  explicit ReplayDriver(const std::string& recording) {
    mi::TranscriptInfo info;
    recorded_ = mi::read_transcript(recording, &info);
    const auto meta = nlohmann::json::parse(info.meta_json, nullptr, false);
    debugger_.kind = DebuggerKind::Gdb;
    debugger_.path = "gdb";
    if (meta.is_object() && meta.contains("debugger")) {
      debugger_.version = meta["debugger"].value("version", "");
      debugger_.kind = debugger_kind_from_string(meta["debugger"].value("kind", "gdb"));
      debugger_.path = meta["debugger"].value("path", "gdb");
    }
    for (const auto& ex : recorded_) {
      if (ex.command.rfind("-info-gdb-mi-command ", 0) == 0 && ex.result() != nullptr &&
          ex.result()->results()["command"]["exists"].str_or() == "true") {
        mi_commands_.insert(ex.command.substr(21));
      }
    }
  }

  // Called before each command; may throw (a timeout, a dead debugger).
  std::function<void(const std::string&)> before_command;
  std::vector<std::string> sent;
  int detach_calls = 0;
  bool attached = false;

  void attach(std::int64_t /*pid*/) override {
    if (before_command) {
      before_command("-target-attach");
    }
    take_prefix("-target-attach");
    attached = true;
  }
  mi::Exchange execute(const std::string& command,
                       std::optional<std::chrono::milliseconds> /*timeout*/) override {
    if (before_command) {
      before_command(command);
    }
    sent.push_back(command);
    return take(command);
  }
  mi::Exchange console(const std::string& command,
                       std::optional<std::chrono::milliseconds> timeout) override {
    return execute(session::console_command(command), timeout);
  }
  void detach() override {
    ++detach_calls;
    if (attached) {
      take_prefix("-target-detach");
      attached = false;
      times_.detached = true;
    }
  }
  bool has_mi_command(const std::string& name) const override {
    return mi_commands_.count(name) != 0;
  }
  // resumable: run_for() answers at once as if the target ran and was stopped again (the
  // recording's later samples are not replayed); run_for_calls counts the resumes asked.
  bool resumable = false;
  int run_for_calls = 0;
  bool can_resume() const override { return resumable; }
  session::ResumeResult run_for(std::chrono::milliseconds /*interval*/,
                                std::chrono::milliseconds /*stop_timeout*/,
                                const session::IntervalStart& /*interval_start*/) override {
    ++run_for_calls;
    session::ResumeResult r;
    r.resumed_at = 1;
    r.interrupted_at = 2;
    r.stopped_at = 2;
    return r;
  }
  const session::Debugger& debugger() const override { return debugger_; }
  const std::vector<mi::Exchange>& exchanges() const override { return exchanges_; }
  session::TargetTimes times() const override { return times_; }
  std::vector<std::string> warnings() const override { return {}; }

  session::Debugger debugger_;

protected:
  // A note as the session files it after a finished command: an exchange of its own.
  void add_note(std::string text) {
    mi::Exchange ex;
    ex.notes.push_back(std::move(text));
    exchanges_.push_back(std::move(ex));
  }

private:
  // The first unused recorded exchange for `command`, and the command-less exchanges after it
  // (the `*stopped` after an attach), as the session groups them.
  mi::Exchange take(const std::string& command) {
    std::optional<std::size_t> seen;
    for (std::size_t i = 0; i < recorded_.size(); ++i) {
      if (recorded_[i].command == command) {
        if (!used_.count(i)) {
          return consume(i);
        }
        seen = i;
      }
    }
    if (seen) { // asked again: the debugger answers as it did
      exchanges_.push_back(recorded_[*seen]);
      return recorded_[*seen];
    }
    mi::Exchange ex;
    ex.command = command;
    const std::string line = fmt::format(
        "^error,msg=\"Undefined MI command: {}\",code=\"undefined-command\"",
        command.substr(1, command.find(' ') == std::string::npos ? std::string::npos
                                                                 : command.find(' ') - 1));
    for (auto& r : mi::parse_all(line + "\n")) {
      ex.records.push_back(std::move(r));
    }
    exchanges_.push_back(ex);
    return ex;
  }

  void take_prefix(const std::string& prefix) {
    for (std::size_t i = 0; i < recorded_.size(); ++i) {
      if (!used_.count(i) && recorded_[i].command.rfind(prefix, 0) == 0) {
        consume(i);
        return;
      }
    }
  }

  mi::Exchange consume(std::size_t i) {
    used_.insert(i);
    exchanges_.push_back(recorded_[i]);
    for (std::size_t j = i + 1; j < recorded_.size() && recorded_[j].command.empty(); ++j) {
      if (!used_.count(j)) {
        used_.insert(j);
        exchanges_.push_back(recorded_[j]);
      }
    }
    return recorded_[i];
  }

  std::vector<mi::Exchange> recorded_;
  std::set<std::size_t> used_;
  std::vector<mi::Exchange> exchanges_;
  std::set<std::string> mi_commands_;
  session::TargetTimes times_;
};

inline const StepRecord& step_named(const RunResult& r, const std::string& name) {
  for (const auto& s : r.steps) {
    if (s.name == name) {
      return s;
    }
  }
  FAIL("no step named " << name);
  static StepRecord none;
  return none;
}

} // namespace rocplay::playbook::test
