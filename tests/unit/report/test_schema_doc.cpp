// `rocplay.run.multi` (run --pids, --workers-of) holds exactly the keys docs/json-schema.md
// documents, as JSON and as JSON Lines; its text names each target and the cross-rank findings.
// `rocplay.report` (run, record, launch) and its `launch` object hold exactly theirs too.
#include "../snapshot/support.hpp"
#include "rocplay/case/run_result.hpp"
#include "rocplay/heuristics/heuristics.hpp"
#include "rocplay/heuristics/wait_graph.hpp"
#include "rocplay/report/incident.hpp"
#include "rocplay/report/launch.hpp"
#include "rocplay/report/run.hpp"
#include "rocplay/snapshot/sampling.hpp"
#include "schema_doc.hpp"

#include <catch2/catch.hpp>

#include <sstream>

using namespace rocplay;
using rocplay::testing::documented_keys;
using rocplay::testing::emitted_keys;

namespace {

// Two ranks of a real NCCL hang (cuda-gdb on two H200s) and a third target never examined.
struct Fanout {
  std::vector<Snapshot> snapshots;
  std::vector<std::vector<Finding>> findings;
  std::vector<Sample> samples;
  SampleProgress progress;
  // Three targets as the model every driver fills (rocplay/case/case.hpp).
  Incident incident;

  Fanout() {
    for (int rank : {0, 1}) {
      snapshots.push_back(
          test::load("cuda-gdb/h200x2-rocplay/nccl-rank" + std::to_string(rank) + ".rec"));
      snapshots.back().rank = rank;
      findings.push_back(heuristics::run(snapshots.back()));
    }
    samples.resize(2);
    samples[0].snapshot = snapshots[0];
    samples[1].index = 2;
    samples[1].at = 2.0;
    samples[1].snapshot = snapshots[0];
    progress = heuristics::analyze_progress(samples);
    incident.title = "hang-triage";
    for (std::size_t i = 0; i < snapshots.size(); ++i) {
      rocplay::Case c;
      c.source.pid = 4301 + static_cast<std::int64_t>(i);
      c.source.rank = static_cast<int>(i);
      c.source.rank_rule = source::RankRule::Order;
      c.exit_code = ExitCode::Findings;
      c.seconds = 1.5;
      c.snapshot = snapshots[i];
      c.findings = findings[i];
      auto run = std::make_shared<playbook::RunResult>();
      run->playbook = "hang-triage";
      run->pid = *c.source.pid;
      run->attached = true;
      if (i == 0) {
        c.samples = samples;
        c.progress = progress;
        run->samples_wanted = 2;
      }
      c.run = std::move(run);
      heuristics::GraphInputs in;
      in.snapshot = &c.snapshot;
      in.findings = &c.findings;
      c.graph = heuristics::wait_graph(in);
      incident.cases.push_back(std::move(c));
    }
    rocplay::Case gone_case;
    gone_case.source.pid = 4399;
    gone_case.source.rank = 2;
    gone_case.source.host = "node2"; // a --slurm-job case names its node
    gone_case.status = CaseStatus::NotExamined;
    gone_case.exit_code = ExitCode::NoSuchProcess;
    gone_case.error = "no process with pid 4399";
    gone_case.error_hint = "check the pid with `rocplay ps`";
    incident.cases.push_back(std::move(gone_case));
    incident.cross_rank = heuristics::run_ranks(snapshots);
    incident.sample_skew = {{1, 0.002}, {2, 0.004}};
    incident.lockstep = true;
  }
};

} // namespace

TEST_CASE("rocplay.run.multi holds exactly the keys docs/json-schema.md documents",
          "[report][schema]") {
  const Fanout f;
  REQUIRE_FALSE(f.incident.cross_rank.empty());
  // v2 (the incident model): written from the Incident, with `incident` beside v1's keys.
  const nlohmann::json j = report::multi_target_to_json(f.incident);
  CHECK(j["schema"] == "rocplay.run.multi");
  CHECK(j["schema_version"] == report::kIncidentSchemaVersion);
  const auto keys = documented_keys("(`rocplay.run.multi`)");
  CHECK(emitted_keys({j}, keys) == keys);
  // Each examined target's report is a rocplay.report with the run beside it.
  CHECK(j["targets"][0]["report"]["schema"] == "rocplay.report");
  CHECK(j["targets"][0]["report"].contains("run"));
  CHECK(j["targets"][0]["report"]["samples"].size() == 2);
  CHECK_FALSE(j["targets"][1]["report"].contains("samples"));
  CHECK_FALSE(j["targets"][0]["report"].contains("partial"));

  const auto lines = report::multi_target_to_jsonl(f.incident);
  REQUIRE(lines.size() == 5);
  // v2: the incident first, as the text opens with it.
  CHECK(lines[0]["type"] == "incident");
  CHECK(lines[0]["schema_version"] == report::kIncidentSchemaVersion);
  for (std::size_t i = 1; i < 4; ++i) {
    CHECK(lines[i]["type"] == "target");
  }
  // The target lines: a target's keys, `type`, and its snapshot once, at the top, for `rocplay
  // postmortem` (v1 carried it a second time inside `report`).
  CHECK(lines[1]["snapshot"] == j["targets"][0]["report"]["snapshot"]);
  CHECK_FALSE(lines[1]["report"].contains("snapshot"));
  CHECK_FALSE(lines[3].contains("snapshot"));
  const auto summary_keys = documented_keys("(`rocplay.run.multi` as `--format jsonl`)");
  CHECK(emitted_keys({lines.back()}, summary_keys) == summary_keys);
  CHECK(lines.back()["examined"] == 2);
}

TEST_CASE("several targets in text: each target, then the cross-rank findings whole",
          "[report][text]") {
  const Fanout f;
  report::TextOptions options;
  std::ostringstream out;
  report::write(out, f.incident, report::Format::Text, options, "test");
  const std::string text = out.str();
  INFO(text);
  CHECK(text.rfind("INCIDENT  3 targets, 2 examined", 0) == 0);
  CHECK(text.find("\n=== pid 4301 (rank 0): exit 1, 1.50s\nVERDICT") != std::string::npos);
  CHECK(text.find("Playbook hang-triage on pid 4302") != std::string::npos); // rank 1's steps
  CHECK(text.find("Progress") != std::string::npos); // rank 0's two samples, as `run` prints them
  CHECK(text.find("=== node2 pid 4399 (rank 2): not examined: no process with pid 4399\n    hint: "
                  "check the pid") != std::string::npos);
  CHECK(text.find("=== across 2 examined of 3 targets") != std::string::npos);
  CHECK(text.find("sample 2: stops began within 0.004 s of each other (lockstep)") !=
        std::string::npos);
  // A cross-rank finding as a live report words it: title, meaning, evidence, next step.
  const Finding& cross = f.incident.cross_rank.front();
  CHECK(text.find("[" + cross.id + "] ") != std::string::npos);
  if (!cross.next_step.empty()) {
    CHECK(text.find("  next: ") != std::string::npos);
  }
  if (!cross.evidence.empty()) {
    CHECK(text.find("  - ") != std::string::npos);
  }
}

TEST_CASE("rocplay.report holds exactly the keys docs/json-schema.md documents, `launch` too",
          "[report][schema]") {
  const Fanout f;
  // One snapshot, several, a run with samples that ended early, and a launched program's
  // report with and without a stop.
  const auto single = report::report_to_json(f.snapshots[0], f.findings[0]);
  const auto several = report::report_to_json(f.snapshots, f.incident.cross_rank);
  const rocplay::Case& run = f.incident.cases[0];
  const auto with_run = report::run_case_to_json(run, true);
  LaunchInfo launch;
  launch.argv = {"./app", "--steps", "3"};
  launch.pid = 4242;
  launch.outcome = "faulted";
  launch.stop_signal = "SIGSEGV";
  launch.stop_reason = "signal-received";
  launch.ran_seconds = 0.41;
  launch.timeout_seconds = 30.0;
  launch.passed_signals = 1;
  launch.api_errors = {"cudaMemcpy returned cudaErrorIllegalAddress"};
  launch.after = "killed after the report";
  const auto stopped = report::launch_report_to_json(launch, &run, true);
  LaunchInfo exited;
  exited.pid = 4243;
  exited.outcome = "exited";
  exited.exit_code = 0;
  exited.exit_signal = "SIGKILL";
  exited.user_signal = "SIGINT";
  const auto no_stop = report::launch_report_to_json(exited, nullptr);
  CHECK(no_stop == nlohmann::json{{"schema", "rocplay.report"},
                                  {"schema_version", report::kJsonSchemaVersion},
                                  {"findings", nlohmann::json::array()},
                                  {"launch", report::launch_to_json(exited)}});
  CHECK(stopped["partial"] == true);
  CHECK(stopped["run"] == report::run_section_to_json(*run.run));
  CHECK(report::launch_jsonl_line(launch) ==
        nlohmann::json{{"type", "launch"}, {"launch", report::launch_to_json(launch)}});

  const auto keys = documented_keys("## Report (`schema_version` 1)");
  CHECK(emitted_keys({single, several, with_run, stopped, no_stop}, keys) == keys);
  const auto launch_keys = documented_keys("The `launch` object");
  CHECK(emitted_keys({stopped["launch"], no_stop["launch"]}, launch_keys) == launch_keys);
}

TEST_CASE("a finding holds exactly the keys docs/json-schema.md documents", "[report][schema]") {
  const Fanout f;
  Finding located;
  located.id = "host-fault";
  located.title = "SIGSEGV in write_through_null";
  located.rank = 3;
  located.locations.push_back({"fault_target.cpp", 22, "write_through_null", 0x55555555739bULL});
  std::vector<nlohmann::json> findings = {report::finding_to_json(located)};
  for (const auto& finding : f.incident.cross_rank) {
    findings.push_back(report::finding_to_json(finding));
  }
  const auto keys = documented_keys("### Finding");
  CHECK(emitted_keys(findings, keys) == keys);
}

TEST_CASE("the incident object holds exactly the keys docs/json-schema.md documents",
          "[report][schema]") {
  const Fanout f;
  const nlohmann::json j = report::incident_to_json(f.incident);
  const auto keys = documented_keys("### The incident");
  CHECK(emitted_keys({j}, keys) == keys);
  CHECK(j["cases"] == 3);
  CHECK(j["examined"] == 2);
  CHECK(j["exit_code"] == 2); // one target was not examined
  CHECK(j["verdict"]["id"] == f.incident.cross_rank.front().id);
}

TEST_CASE("several targets in text open with the incident: the verdict, then where each rank is",
          "[report][text]") {
  const Fanout f;
  report::TextOptions options;
  std::ostringstream out;
  report::write(out, f.incident, report::Format::Text, options, "test");
  const std::string text = out.str();
  INFO(text);
  const Finding& cross = f.incident.cross_rank.front();
  CHECK(text.rfind("INCIDENT  3 targets, 2 examined: [" + std::string(to_string(cross.severity)),
                   0) == 0);
  // One line per group of ranks that stand in the same place; the rank never examined says why.
  const auto incident_end = text.find("\n=== pid 4301");
  REQUIRE(incident_end != std::string::npos);
  const std::string head = text.substr(0, incident_end);
  CHECK(head.find(
            "rank 2 (node2 pid 4399): (no place known)\n      not examined: no process with pid "
            "4399") != std::string::npos);
  for (const auto& g : incident::rank_groups(f.incident)) {
    CHECK(head.find(incident::who(f.incident, g) + ": ") != std::string::npos);
  }
  // Then each target's full report, as before.
  CHECK(text.find("=== pid 4301 (rank 0): exit 1, 1.50s\nVERDICT") != std::string::npos);
  CHECK(text.find("=== across 2 examined of 3 targets") != std::string::npos);
}

TEST_CASE("one live case's JSON (run --pid, launch) is v1's report with the incident beside it",
          "[report][schema]") {
  const Fanout f;
  Incident one;
  one.title = "hang-triage";
  one.cases.push_back(f.incident.cases[0]); // a run with two samples
  const auto json_of = [](const Incident& inc) {
    std::ostringstream out;
    report::write(out, inc, report::Format::Json, {}, "test");
    return nlohmann::json::parse(out.str());
  };
  const auto run = json_of(one);

  Incident launched = one;
  LaunchInfo& stop = launched.cases[0].launch.emplace();
  stop.argv = {"./app"};
  stop.pid = 4301;
  stop.outcome = "faulted";
  stop.stop_signal = "SIGSEGV";
  launched.cases[0].exit_code = ExitCode::ProgramFaulted;
  const auto stopped = json_of(launched);

  Incident ended;
  ended.title = "fault-triage";
  rocplay::Case exited;
  exited.source.pid = 4302;
  exited.launch.emplace().outcome = "exited";
  ended.cases.push_back(std::move(exited));
  const auto no_stop = json_of(ended);

  const auto keys = documented_keys("One live case");
  CHECK(emitted_keys({run, stopped, no_stop}, keys) == keys);
  CHECK(run["schema_version"] == 3);
  CHECK(run["graph"]["nodes"].size() == one.cases[0].graph.nodes().size());
  CHECK(run["incident"]["cases"] == 1);
  CHECK(run["incident"]["exit_code"] == static_cast<int>(ExitCode::Findings));
  CHECK(stopped["incident"]["exit_code"] == static_cast<int>(ExitCode::ProgramFaulted));
  CHECK(no_stop["incident"]["exit_code"] == 0);

  // Beside `incident`, `graph` and the version, the bytes of v1 (what `run --pid` wrote before).
  auto v1 = run;
  v1.erase("incident");
  v1.erase("graph");
  v1["schema_version"] = 1;
  CHECK(v1 == report::run_case_to_json(one.cases[0], false));

  // The text of one case is the run's report, as `run --pid` always printed it: no INCIDENT block.
  std::ostringstream text;
  report::write(text, one, report::Format::Text, {}, "test");
  std::ostringstream before;
  report::write_run_case_text(before, one.cases[0], {});
  CHECK(text.str() == before.str());
  CHECK(text.str().rfind("INCIDENT", 0) == std::string::npos);
}
