// The Driver the runner steps over: a live session::Session (tests drive the runner with their
// own).
#include "rocplay/playbook/playbook.hpp"

namespace rocplay::playbook {

namespace {

class SessionDriver final : public Driver {
public:
  explicit SessionDriver(session::Session& s) : s_(s) {}
  void attach(std::int64_t pid) override { s_.attach(pid); }
  mi::Exchange execute(const std::string& command,
                       std::optional<std::chrono::milliseconds> timeout) override {
    return s_.execute(command, timeout);
  }
  mi::Exchange console(const std::string& command,
                       std::optional<std::chrono::milliseconds> timeout) override {
    return s_.console(command, timeout);
  }
  std::vector<mi::Exchange> execute_all(const std::vector<std::string>& commands,
                                        std::optional<std::chrono::milliseconds> timeout) override {
    return s_.execute_all(commands, timeout);
  }
  void detach() override { s_.detach(); }
  void end() override { s_.end(); }
  bool has_mi_command(const std::string& name) const override { return s_.has_mi_command(name); }
  const session::Debugger& debugger() const override { return s_.debugger(); }
  const std::vector<mi::Exchange>& exchanges() const override { return s_.exchanges(); }
  session::TargetTimes times() const override { return s_.times(); }
  std::vector<std::string> warnings() const override { return s_.warnings(); }
  std::map<std::string, std::string> target_env() const override {
    return s_.attached() || s_.times().detached ? s_.target().env
                                                : std::map<std::string, std::string>{};
  }
  session::ResumeResult run_for(std::chrono::milliseconds interval,
                                std::chrono::milliseconds stop_timeout,
                                const session::IntervalStart& interval_start) override {
    return s_.run_for(interval, stop_timeout, interval_start);
  }
  bool can_resume() const override { return true; }
  bool stop_by_copy(std::function<void()> while_stopped) override {
    return s_.stop_by_copy(std::move(while_stopped));
  }
  std::vector<std::int64_t> unchanged_stacks() const override { return s_.unchanged_stacks(); }
  void note(std::string_view text) override { s_.note(text); }
  double now() const override { return s_.now(); }

private:
  session::Session& s_;
};

} // namespace

std::unique_ptr<Driver> make_driver(session::Session& session) {
  return std::make_unique<SessionDriver>(session);
}

std::vector<mi::Exchange> Driver::execute_all(const std::vector<std::string>& commands,
                                              std::optional<std::chrono::milliseconds> timeout) {
  std::vector<mi::Exchange> out;
  out.reserve(commands.size());
  for (const auto& command : commands) {
    out.push_back(execute(command, timeout));
  }
  return out;
}

session::ResumeResult Driver::run_for(std::chrono::milliseconds /*interval*/,
                                      std::chrono::milliseconds /*stop_timeout*/,
                                      const session::IntervalStart& /*interval_start*/) {
  throw Error(ExitCode::Usage, "this debugger driver cannot resume the target for another sample",
              "take one sample (--samples 1)");
}

} // namespace rocplay::playbook
