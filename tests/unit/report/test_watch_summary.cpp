// `rocplay watch`'s one-line capture summary of a capture's incident
// (src/report/watch_summary.cpp).
#include "rocplay/report/watch.hpp"

#include <catch2/catch.hpp>

using namespace rocplay;

TEST_CASE("capture summary: one line, stuck places per rank, findings, bounded",
          "[watch][report]") {
  report::CaptureHeader c;
  c.host = "node7";
  c.time = "2026-11-24T03:15:00Z";
  c.why = "log quiet 62.0s, GPU busy 100% (renderD128)";
  c.report_path = "/var/lib/rocplay/x.report.txt";
  Incident inc;
  for (int rank : {0, 1}) {
    rocplay::Case t;
    t.source.pid = 4300 + rank;
    t.source.rank = rank;
    for (int i = 0; i < 2; ++i) {
      ProgressEntry e;
      e.kind = "thread";
      e.label = "engine\n_spin";
      e.motion = Motion::Stuck;
      e.frame0 = "start_sync(int) at fake_server.cpp:61";
      t.progress.entries.push_back(e);
    }
    Finding f;
    f.id = "no-progress";
    t.findings.push_back(f);
    inc.cases.push_back(t);
  }
  rocplay::Case bad;
  bad.source.pid = 4302;
  bad.source.rank = 2;
  bad.status = CaseStatus::NotExamined;
  bad.error = "ptrace not permitted";
  inc.cases.push_back(bad);
  const std::string line = report::capture_summary_line(c, inc);
  INFO(line);
  CHECK(line.find('\n') == std::string::npos);
  CHECK(line.find("node7 2026-11-24T03:15:00Z: hang captured") != std::string::npos);
  CHECK(line.find("2/3 targets examined") != std::string::npos);
  CHECK(line.find("rank 0 pid 4300 2 threads in start_sync(int) at fake_server.cpp:61") !=
        std::string::npos);
  CHECK(line.find("rank 2 pid 4302: not examined (ptrace not permitted)") != std::string::npos);
  CHECK(line.find("findings: no-progress x2") != std::string::npos);
  CHECK(line.find("report: /var/lib/rocplay/x.report.txt") != std::string::npos);
  c.why = std::string(5000, 'x');
  const std::string cut = report::capture_summary_line(c, inc, 300);
  CHECK(cut.size() <= 300);
  CHECK(cut.find("report: /var/lib/rocplay/x.report.txt") != std::string::npos);
}
