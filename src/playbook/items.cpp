// Threads, waves and dispatches of a snapshot as values for `foreach`, `where:` and `${...}`.
#include "playbook/internal.hpp"

namespace rocplay::playbook::detail {

namespace {

template <class T> Value opt_int(const std::optional<T>& v) {
  return v ? Value::integer(static_cast<std::int64_t>(*v)) : Value();
}

Value opt_addr(const std::optional<std::uint64_t>& v) {
  return v ? Value::address(*v) : Value();
}

// Debugger ids are numbers in GDB (`3`) and dotted in some cases (`1.3`): keep them typed.
Value id_value(const std::string& id) {
  if (!id.empty() && id.size() < 19 && id.find_first_not_of("0123456789") == std::string::npos) {
    return Value::integer(std::stoll(id));
  }
  return Value::string(id);
}

Value dims(const std::vector<std::uint64_t>& v) {
  std::vector<Value> out;
  for (auto d : v) {
    out.push_back(Value::integer(static_cast<std::int64_t>(d)));
  }
  return Value::list(std::move(out));
}

} // namespace

Value thread_item(const HostThread& t) {
  const Frame* top = t.frames.empty() ? nullptr : &t.frames.front();
  return Value::map({
      {"id", id_value(t.id)},
      {"lwp", opt_int(t.lwp)},
      {"name", Value::string(t.name)},
      {"target_id", Value::string(t.target_id)},
      {"state", Value::string(t.state)},
      {"pc", top != nullptr ? opt_addr(top->pc) : Value()},
      {"function", Value::string(top != nullptr ? top->function : "")},
      {"file", Value::string(top != nullptr ? top->file : "")},
      {"line", top != nullptr ? opt_int(top->line) : Value()},
      {"from", Value::string(top != nullptr ? top->from : "")},
      {"frames", Value::integer(static_cast<std::int64_t>(t.frames.size()))},
  });
}

Value wave_item(const Wave& w) {
  std::vector<Value> group;
  for (const auto& c : w.workgroup) {
    group.push_back(c ? Value::integer(*c) : Value());
  }
  return Value::map({
      {"id", id_value(w.thread_id)},
      {"target_id", Value::string(w.target_id.str())},
      {"name", Value::string(w.name.str())},
      {"agent", opt_int(w.agent)},
      {"queue", opt_int(w.queue)},
      {"dispatch", opt_int(w.dispatch)},
      {"wave_no", opt_int(w.wave_no)},
      {"workgroup", Value::list(std::move(group))},
      {"wave_in_group", opt_int(w.wave_in_group)},
      {"lane_count", opt_int(w.lane_count)},
      {"first_work_item", opt_int(w.first_work_item)},
      {"last_work_item", opt_int(w.last_work_item)},
      {"count", Value::integer(static_cast<std::int64_t>(w.count))},
      {"pc", opt_addr(w.pc)},
      {"function", Value::string(w.function.str())},
      {"file", Value::string(w.file.str())},
      {"line", opt_int(w.line)},
      {"inline_function", Value::string(w.inline_function.str())},
      {"state", Value::string(w.state)},
  });
}

Value dispatch_item(const Dispatch& d) {
  return Value::map({
      {"id", id_value(d.id)},
      {"target_id", Value::string(d.target_id)},
      {"agent", opt_int(d.agent)},
      {"queue", opt_int(d.queue)},
      {"dispatch_no", opt_int(d.dispatch_no)},
      {"packet_id", opt_int(d.packet_id)},
      {"grid", dims(d.grid)},
      {"workgroup", dims(d.workgroup)},
      {"fence", Value::string(d.fence_text)},
      {"full_fence", Value::boolean(d.fence.full())},
      {"kernel", Value::string(d.kernel_name)},
      {"kernel_address", opt_addr(d.kernel_address)},
      {"status", Value::string(d.status)},
  });
}

const std::vector<std::string_view>& item_fields(ForeachOver over) {
  static const std::vector<std::string_view> kThread = {"id",    "lwp",  "name",     "target_id",
                                                        "state", "pc",   "function", "file",
                                                        "line",  "from", "frames"};
  static const std::vector<std::string_view> kWave = {"id",
                                                      "target_id",
                                                      "name",
                                                      "agent",
                                                      "queue",
                                                      "dispatch",
                                                      "wave_no",
                                                      "workgroup",
                                                      "wave_in_group",
                                                      "lane_count",
                                                      "first_work_item",
                                                      "last_work_item",
                                                      "count",
                                                      "pc",
                                                      "function",
                                                      "file",
                                                      "line",
                                                      "inline_function",
                                                      "state"};
  static const std::vector<std::string_view> kDispatch = {
      "id",        "target_id", "agent",      "queue",  "dispatch_no",    "packet_id", "grid",
      "workgroup", "fence",     "full_fence", "kernel", "kernel_address", "status"};
  switch (over) {
  case ForeachOver::Threads:
    return kThread;
  case ForeachOver::Waves:
    return kWave;
  case ForeachOver::Dispatches:
    return kDispatch;
  }
  return kThread;
}

} // namespace rocplay::playbook::detail
