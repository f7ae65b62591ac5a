// `rocplay agent-log`'s report over the fixtures in fixtures/agentlog: the findings each fault
// group becomes, the JSON (`rocplay.agent-log`, exactly the keys docs/json-schema.md documents)
// and the text, verdict first; and for three of them every byte, as fixtures/agentlog/expected
// holds it.
#include "rocplay/report/agent_log.hpp"
#include "rocplay/report/incident.hpp"
#include "rocplay/report/report.hpp"
#include "schema_doc.hpp"

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

using namespace rocplay;
using rocplay::testing::documented_keys;
using rocplay::testing::emitted_keys;

namespace {

const std::string kAgentLogFixtures = std::string(ROCPLAY_SOURCE_DIR) + "/fixtures/agentlog/";

agentlog::AgentLog parse_log(const std::string& name) {
  std::ifstream in(kAgentLogFixtures + name, std::ios::binary);
  REQUIRE(in.good());
  std::ostringstream text;
  text << in.rdbuf();
  agentlog::ParseOptions options;
  options.source = name;
  return agentlog::parse(text.str(), options);
}

agentlog::Report analyze_logs(const std::vector<std::string>& names,
                              const agentlog::AnalyzeOptions& options = {}) {
  std::vector<agentlog::AgentLog> logs;
  for (const auto& name : names) {
    logs.push_back(parse_log(name));
  }
  return agentlog::analyze(logs, options);
}

// The gfx90a trap fixture with its saved code object decoded (`--code-objects`).
agentlog::Report analyze_with_code_objects() {
  agentlog::AnalyzeOptions options;
  options.code_object_dir = kAgentLogFixtures + "code-objects";
  for (const auto& e : std::filesystem::directory_iterator(options.code_object_dir)) {
    options.saved_code_objects.push_back(e.path().filename().string());
  }
  options.read_code_objects = true;
  return analyze_logs({"trap_kernel_gfx90a.log"}, options);
}

std::string read_expected(const std::string& name) {
  std::ifstream in(kAgentLogFixtures + "expected/" + name, std::ios::binary);
  REQUIRE(in.good());
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string text_of(const agentlog::Report& report) {
  std::ostringstream out;
  report::write_agent_log_text(out, report);
  return out.str();
}

} // namespace

TEST_CASE("the seed's sample dump as a finding: id, severity, title, location, next step",
          "[report][agentlog]") {
  const auto report = analyze_logs({"seed_sample.log"});
  const auto findings = report::agent_log_findings(report);
  REQUIRE(findings.size() == 1);
  CHECK(findings[0].id == "fault-device-assert");
  CHECK(findings[0].severity == Severity::Error);
  CHECK(findings[0].confidence > 0.8);
  CHECK(findings[0].title.starts_with("ASSERT_TRAP in Tensor.index_copy_"));
  REQUIRE(findings[0].locations.size() == 1);
  CHECK(findings[0].locations[0].file == "seed_sample.log");
  CHECK(findings[0].locations[0].line == 6U);
  CHECK(findings[0].locations[0].pc == 0x7f20f5e534c4ULL);
  CHECK(findings[0].next_step.find("llvm-objdump --disassemble-all") != std::string::npos);
  // The structured evidence is the group's JSON object.
  CHECK(findings[0].details == report::fault_group_to_json(report.groups[0]));
}

TEST_CASE("agent-log findings: one per fault group, none for context", "[report][agentlog]") {
  const auto violation = report::agent_log_findings(analyze_logs({"memory_violation.log"}));
  REQUIRE(violation.size() == 1);
  CHECK(violation[0].id == "fault-memory-violation");
  CHECK(violation[0].severity == Severity::Critical);
  // Two faulting kernels and a running RCCL wave: the running wave is no finding.
  CHECK(report::agent_log_findings(analyze_logs({"two_kernels.log"})).size() == 2);
  // Every rank faulted: no single rank to blame.
  CHECK(report::agent_log_findings(analyze_logs({"eight_ranks.log"}))[0].rank == std::nullopt);
  // ROCm 6.3's format names the kernel by its disassembly only: less sure.
  CHECK(report::agent_log_findings(analyze_logs({"rocm63_format.log"}))[0].confidence <= 0.6);
}

TEST_CASE("a log with no dumps: the JSON and the text say so and point at hang triage",
          "[report][agentlog]") {
  const auto report = analyze_logs({"no_dumps.log"});
  const auto j = report::agent_log_to_json(report);
  CHECK(j["message"] == "no wave dumps found");
  CHECK(j["hint"].get<std::string>().find("rocplay run hang-triage") != std::string::npos);
  CHECK(text_of(report).find("no wave dumps found") != std::string::npos);
  CHECK(report::agent_log_findings(report).empty());
}

TEST_CASE("agent-log JSON is versioned and carries the evidence, text leads with the verdict",
          "[report][agentlog]") {
  const auto report = analyze_logs({"memory_violation.log", "seed_sample.log"});
  const auto j = report::agent_log_to_json(report);
  CHECK(j["schema"] == "rocplay.agent-log");
  CHECK(j["schema_version"] == report::kAgentLogSchemaVersion);
  CHECK(j["sources"].size() == 2);
  CHECK(j["summary"]["dumps"] == 2);
  CHECK(j["summary"]["fault_groups"] == 2);
  REQUIRE(j["groups"].size() == 2);
  const auto& mv = j["groups"][0]; // critical first
  CHECK(mv["id"] == "fault-memory-violation");
  CHECK(mv["kernel"]["family"] == "hip_cpp");
  CHECK(mv["kernel"]["category"] == "kv_cache");
  CHECK(mv["access"]["addresses"][16]["address"] == "0x7f2c80000000");
  CHECK(mv["access"]["addresses"][16]["in_fault_page"] == true);
  const auto& at = j["groups"][1];
  CHECK(at["pcs"][0] == "0x7f20f5e534c4");
  CHECK(at["elf_address"] == "0x534c4");
  CHECK(at["code_object"]["saved_name"] == "memory___2188702_offset_0x546c3060_size_4026672");
  CHECK(at["exec"]["active_lanes"].size() == 5);
  CHECK(at["waves"][0]["log"] == 1);

  const auto text = text_of(report);
  CHECK(text.starts_with("rocplay agent-log: 2 faults (2 of 2 waves) in 2 dumps"));
  CHECK(text.find("MEMORY_VIOLATION  reshape_and_cache_flash_kernel") != std::string::npos);
  CHECK(text.find("ASSERT_TRAP  Tensor.index_copy_(dim, index, source), 4-byte dtype") !=
        std::string::npos);
  CHECK(text.find("=> 0x7f20f5e534c4 <+3012>:  s_endpgm") != std::string::npos);
  CHECK(text.find("exec 0xf800000000000000: lanes 59-63 active (5 of 64)") != std::string::npos);
}

TEST_CASE("agent-log --code-objects: the decoded saved object in JSON and text",
          "[report][agentlog]") {
  const auto report = analyze_with_code_objects();
  REQUIRE(report.groups.size() == 1);
  REQUIRE(report.groups[0].saved_object);
  const auto json = report::agent_log_to_json(report);
  CHECK(json["groups"][0]["saved_object"]["assert_confirmed"] == true);
  CHECK(json["groups"][0]["saved_object"]["window"].size() ==
        report.groups[0].saved_object->window.size());
  const auto text = text_of(report);
  CHECK(text.find("s_trap 2 at 0x51a0 just before the PC: a device-side assert, confirmed "
                  "in the code object") != std::string::npos);
  CHECK(text.find("ISA fit on gfx90a") != std::string::npos);
}

TEST_CASE("rocplay.agent-log holds exactly the keys docs/json-schema.md documents",
          "[report][agentlog][schema]") {
  // Every fixture at once (each has what another lacks: registers, an access, host faults,
  // warnings), the decoded saved object, and a log with no dumps for `message` and `hint`.
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(kAgentLogFixtures)) {
    if (e.path().extension() == ".log" && e.path().filename() != "no_dumps.log") {
      names.push_back(e.path().filename().string());
    }
  }
  std::sort(names.begin(), names.end());
  // As the command writes it: the one writer over its incident (one case with the faults), so
  // `incident` is there too (schema_version 3: the incident's version; no graph without a
  // snapshot).
  Incident inc;
  inc.title = "agent-log";
  auto faults = std::make_shared<const agentlog::Report>(analyze_logs(names));
  inc.cases.emplace_back().findings = report::agent_log_findings(*faults);
  inc.cases.back().exit_code = ExitCode::Findings;
  inc.cases.back().faults = faults;
  std::ostringstream written;
  report::write(written, inc, report::Format::Json, {}, "test");
  const auto all = nlohmann::json::parse(written.str());
  CHECK(all["schema_version"] == 3);
  CHECK_FALSE(all.contains("graph"));
  CHECK(all["incident"]["exit_code"] == 1);
  CHECK(all["incident"]["groups"][0]["verdict"] == inc.cases[0].findings.front().title);
  nlohmann::json v1 = all;
  v1.erase("incident");
  v1["schema_version"] = 1;
  CHECK(v1 == report::agent_log_to_json(*faults)); // beside `incident`, v1's document
  const auto decoded = report::agent_log_to_json(analyze_with_code_objects());
  const auto empty = report::agent_log_to_json(analyze_logs({"no_dumps.log"}));

  const auto keys = documented_keys("(`rocplay.agent-log`)");
  CHECK(emitted_keys({all, decoded, empty}, keys) == keys);

  std::vector<nlohmann::json> groups;
  for (const auto* doc : {&all, &decoded}) {
    for (const auto& g : (*doc)["groups"]) {
      groups.push_back(g);
    }
  }
  const auto group_keys = documented_keys("A fault group");
  CHECK(emitted_keys(groups, group_keys) == group_keys);
}

TEST_CASE("agent-log's text, JSON and JSON Lines are byte for byte what they were",
          "[report][agentlog]") {
  // fixtures/agentlog/expected holds what `rocplay agent-log --color=never -f FORMAT NAME.log`
  // printed in fixtures/agentlog before the writers moved to src/report/.
  for (const std::string name : {"seed_sample", "memory_violation", "two_kernels"}) {
    INFO(name);
    const auto report = analyze_logs({name + ".log"});
    CHECK(text_of(report) == read_expected(name + ".txt"));
    CHECK(report::agent_log_to_json(report).dump(2, ' ', false,
                                                 nlohmann::json::error_handler_t::replace) +
              "\n" ==
          read_expected(name + ".json"));
    std::ostringstream jsonl;
    report::write_jsonl(jsonl, report::agent_log_findings(report));
    CHECK(jsonl.str() == read_expected(name + ".jsonl"));
  }
}
