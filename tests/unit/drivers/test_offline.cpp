// The offline drivers through the one writer: `rocplay agent-log`'s driver (read_agent_logs) and
// report::write print exactly what the command printed before the writer moved
// (fixtures/agentlog/expected: `rocplay agent-log --color=never -f FORMAT NAME.log`, run in
// fixtures/agentlog), and its exit code and unreadable files are the command's.
#include "rocplay/drivers/drivers.hpp"
#include "rocplay/report/incident.hpp"

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

using namespace rocplay;

namespace {

const std::string kFixtures = std::string(ROCPLAY_SOURCE_DIR) + "/fixtures/agentlog/";

std::string read_expected(const std::string& name) {
  std::ifstream in(kFixtures + "expected/" + name, std::ios::binary);
  REQUIRE(in.good());
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// The working directory for one scope (the fixtures name their logs by bare file name).
class InDirectory {
public:
  explicit InDirectory(const std::string& dir) : before_(std::filesystem::current_path()) {
    std::filesystem::current_path(dir);
  }
  ~InDirectory() { std::filesystem::current_path(before_); }
  InDirectory(const InDirectory&) = delete;
  InDirectory& operator=(const InDirectory&) = delete;

private:
  std::filesystem::path before_;
};

std::string written(const Incident& incident, report::Format format) {
  std::ostringstream out;
  report::write(out, incident, format, {}, "test");
  return out.str();
}

} // namespace

TEST_CASE("agent-log through its driver and report::write: the bytes the command always printed",
          "[drivers][agentlog]") {
  const InDirectory here(kFixtures);
  for (const std::string name : {"seed_sample", "memory_violation", "two_kernels"}) {
    INFO(name);
    drivers::AgentLogRequest rq;
    rq.files = {name + ".log"};
    const Incident incident = drivers::read_agent_logs(rq);
    REQUIRE(incident.cases.size() == 1);
    REQUIRE(incident.cases.front().faults != nullptr);
    CHECK(written(incident, report::Format::Text) == read_expected(name + ".txt"));
    // JSON: `rocplay.agent-log` v3 (the incident's version), v1's bytes with the incident beside.
    nlohmann::json json = nlohmann::json::parse(written(incident, report::Format::Json));
    CHECK(json["schema_version"] == 3);
    const nlohmann::json inc = json["incident"];
    CHECK(inc["cases"] == 1);
    CHECK(inc["exit_code"] == static_cast<int>(ExitCode::Findings));
    REQUIRE(inc["groups"].size() == 1);
    CHECK(inc["groups"][0]["verdict"] == incident.cases.front().findings.front().title);
    CHECK(inc["groups"][0]["inputs"] == nlohmann::json::array({name + ".log"})); // the log read
    CHECK(inc["groups"][0]["who"] == name + ".log");
    CHECK(inc["groups"][0]["where"].get<std::string>().find(
              incident.cases.front().findings.front().kernel) != std::string::npos);
    json.erase("incident");
    json["schema_version"] = 1;
    CHECK(json.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n" ==
          read_expected(name + ".json"));
    CHECK(written(incident, report::Format::Jsonl) == read_expected(name + ".jsonl"));
    CHECK(incident.exit_code() == ExitCode::Findings); // each holds a fault
  }
}

TEST_CASE("agent-log: a file that cannot be read is said and makes it 2, none readable throws 66",
          "[drivers][agentlog]") {
  const InDirectory here(kFixtures);
  std::vector<std::string> errors;
  drivers::AgentLogRequest rq;
  rq.files = {"seed_sample.log", "no-such.log", "expected"};
  rq.error = [&errors](const std::string& message, const std::string&) {
    errors.push_back(message);
  };
  const Incident incident = drivers::read_agent_logs(rq);
  CHECK(incident.exit_code() == ExitCode::PartialInput);
  REQUIRE(errors.size() == 2);
  CHECK(errors[0].rfind("cannot open no-such.log: ", 0) == 0);
  CHECK(errors[1] == "expected is a directory");

  rq.files = {"no-such.log"};
  try {
    drivers::read_agent_logs(rq);
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(e.code() == ExitCode::NoInput);
    CHECK(std::string(e.what()) == "none of the inputs could be read");
  }
}
