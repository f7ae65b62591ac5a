// `rocplay agent-log --format json`: the fault groups as `rocplay.agent-log`
// (docs/json-schema.md).
#include "rocplay/report/agent_log.hpp"

#include "core/text_scan.hpp"
#include "report/agent_log_lines.hpp"
#include "rocplay/report/kernel_report.hpp"

namespace rocplay::report {
namespace agent_log_json {
namespace {

using namespace agentlog;
using agent_log_lines::finding_id;
using agent_log_lines::hex32;
using nlohmann::json;
using text_scan::hex;

json opt_hex(const std::optional<std::uint64_t>& v) {
  return v ? json(hex(*v)) : json(nullptr);
}

template <typename T> json opt(const std::optional<T>& v) {
  return v ? json(*v) : json(nullptr);
}

json instruction_json(const Instruction& i) {
  return {{"address", hex(i.address)},
          {"offset", opt(i.offset)},
          {"text", i.text},
          {"at_pc", i.at_pc},
          {"line", i.line}};
}

json saved_object_json(const SavedObjectView& v) {
  json window = json::array();
  for (const auto& in : v.window) {
    window.push_back(isa::to_json(in));
  }
  return {{"path", v.path},
          {"arch", v.arch},
          {"function", v.function},
          {"pc", hex(v.pc)},
          {"window", window},
          {"loop", v.loop ? isa::to_json(*v.loop) : json(nullptr)},
          {"trap", v.trap},
          {"trap_address", opt_hex(v.trap_address)},
          {"assert_confirmed", v.assert_confirmed},
          {"kernel", v.kernel},
          {"fit", v.fit ? report::fit_to_json(*v.fit) : json(nullptr)},
          {"decoder", v.decoder},
          {"problem", v.problem.empty() ? json(nullptr) : json(v.problem)},
          {"hint", v.hint.empty() ? json(nullptr) : json(v.hint)}};
}

json code_object_json(const CodeObject& co) {
  return {{"uri", co.uri},
          {"protocol", co.protocol},
          {"path", co.path},
          {"pid", opt(co.pid)},
          {"offset", opt_hex(co.offset)},
          {"size", opt(co.size)},
          {"saved_name", co.saved_name}};
}

json host_fault_json(const HostFault& f) {
  return {{"kind", f.kind}, {"text", f.text},     {"address", opt_hex(f.address)},
          {"gpu", f.gpu},   {"reason", f.reason}, {"stream", f.stream},
          {"line", f.line}};
}

} // namespace

json group(const FaultGroup& g) {
  json j;
  j["id"] = finding_id(g);
  j["kernel"] = {{"name", g.kernel.name},
                 {"linkage_name", g.kernel.linkage_name},
                 {"short_name", g.kernel.short_name},
                 {"family", to_string(g.kernel.family)},
                 {"category", to_string(g.kernel.category)},
                 {"op", g.kernel.op},
                 {"dtype", g.kernel.dtype_hint},
                 {"source", g.kernel.source_hint},
                 {"test", g.kernel.test_hint},
                 {"named_by", g.kernel_source}};
  j["reason"] = g.reason;
  j["reason_known"] = g.reason_info.known;
  j["fault"] = g.reason_info.fault;
  j["severity"] = to_string(g.reason_info.severity);
  j["meaning"] = g.meaning;
  j["next_step"] = g.reason_info.next_step;
  j["kernel_offset"] = opt(g.kernel_offset);
  json pcs = json::array();
  for (auto pc : g.pcs) {
    pcs.push_back(hex(pc));
  }
  j["pcs"] = pcs;
  j["wave_count"] = g.wave_count;
  j["dump_count"] = g.dump_count;
  json waves = json::array();
  for (const auto& w : g.waves) {
    waves.push_back({{"log", w.log},
                     {"dump", w.dump},
                     {"wave", w.wave},
                     {"pc", hex(w.pc)},
                     {"line", w.line},
                     {"rank", opt(w.rank)},
                     {"pid", opt(w.pid)}});
  }
  j["waves"] = waves;
  j["ranks"] = g.ranks;
  j["pids"] = g.pids;
  j["instruction"] = g.instruction ? instruction_json(*g.instruction) : json(nullptr);
  json context = json::array();
  for (const auto& i : g.context) {
    context.push_back(instruction_json(i));
  }
  j["context"] = context;
  j["code_object"] = g.code_object ? code_object_json(*g.code_object) : json(nullptr);
  j["load_base"] = opt_hex(g.load_base);
  j["elf_address"] = opt_hex(g.elf_address);
  j["saved_file"] = g.saved_file;
  j["saved_file_found"] = g.saved_file_found;
  j["saved_object"] = g.saved_object ? saved_object_json(*g.saved_object) : json(nullptr);
  j["commands"] = {
      {"objdump", g.objdump_command}, {"grep", g.grep_command}, {"extract", g.extract_command}};
  j["exec"] = {{"waves_with_exec", g.exec.waves_with_exec},
               {"mask", opt_hex(g.exec.mask)},
               {"active_lanes", g.exec.active_lanes},
               {"lane_count", g.exec.lane_count}};
  json regs = json::array();
  for (const auto& r : g.registers) {
    json samples = json::array();
    for (const auto& s : r.samples) {
      samples.push_back({{"wave", s.wave}, {"lane", s.lane}, {"value", hex32(s.value)}});
    }
    json values = json::array();
    for (auto v : r.active_values) {
      values.push_back(hex32(v));
    }
    regs.push_back({{"name", r.name},
                    {"waves", r.waves},
                    {"basis", r.basis},
                    {"active_values", values},
                    {"active_distinct", r.active_distinct},
                    {"active_min", r.active_min ? json(hex32(*r.active_min)) : json(nullptr)},
                    {"active_max", r.active_max ? json(hex32(*r.active_max)) : json(nullptr)},
                    {"other_min", r.other_min ? json(hex32(*r.other_min)) : json(nullptr)},
                    {"other_max", r.other_max ? json(hex32(*r.other_max)) : json(nullptr)},
                    {"off_pattern", r.off_pattern},
                    {"stands_out", r.stands_out},
                    {"samples", samples}});
  }
  j["registers"] = regs;
  if (g.access) {
    const auto& a = *g.access;
    json addrs = json::array();
    for (const auto& x : a.addresses) {
      addrs.push_back({{"wave", x.wave},
                       {"lane", x.lane},
                       {"address", hex(x.address)},
                       {"in_fault_page", x.in_fault_page}});
    }
    j["access"] = {{"instruction", instruction_json(a.instruction)},
                   {"at_pc", a.at_pc},
                   {"kind", a.kind},
                   {"store", a.store},
                   {"address_operand", a.address_operand},
                   {"base_operand", a.base_operand},
                   {"immediate_offset", a.immediate_offset},
                   {"addresses", addrs},
                   {"note", a.note}};
  } else {
    j["access"] = nullptr;
  }
  j["host_fault"] = g.host_fault ? host_fault_json(*g.host_fault) : json(nullptr);
  j["caveats"] = g.caveats;
  j["notes"] = g.notes;
  return j;
}

json document(const Report& report) {
  json j;
  j["schema"] = "rocplay.agent-log";
  j["schema_version"] = kAgentLogSchemaVersion;
  j["sources"] = report.sources;
  std::size_t faulting = 0;
  std::size_t fault_groups = 0;
  for (const auto& g : report.groups) {
    if (g.reason_info.fault) {
      ++fault_groups;
      faulting += g.wave_count;
    }
  }
  j["summary"] = {{"dumps", report.dumps},
                  {"waves", report.waves},
                  {"waves_dropped", report.waves_dropped},
                  {"groups", report.groups.size()},
                  {"fault_groups", fault_groups},
                  {"faulting_waves", faulting}};
  json groups = json::array();
  for (const auto& g : report.groups) {
    groups.push_back(group(g));
  }
  j["groups"] = groups;
  json faults = json::array();
  for (const auto& f : report.host_faults) {
    faults.push_back(host_fault_json(f));
  }
  j["host_faults"] = faults;
  json warnings = json::array();
  for (const auto& [source, w] : report.warnings) {
    warnings.push_back({{"source", source}, {"line", w.line}, {"message", w.message}});
  }
  j["warnings"] = warnings;
  j["warnings_dropped"] = report.warnings_dropped;
  if (report.dumps == 0) {
    j["message"] = kNoDumpsMessage;
    j["hint"] = kNoDumpsHint;
  }
  return j;
}
} // namespace agent_log_json

nlohmann::json fault_group_to_json(const agentlog::FaultGroup& group) {
  return agent_log_json::group(group);
}

nlohmann::json agent_log_to_json(const agentlog::Report& report) {
  return agent_log_json::document(report);
}

} // namespace rocplay::report
