// A post-mortem of a folder that holds documentation beside the logs (issue 42: the installed docs
// in share/doc/rocplay, a README next to a job's logs): a directory walk reads the logs, skips the
// docs and empty files and says so, and the verdict is the one the logs alone give. The logs are
// fixtures/crash/tp4-rank2-first; the docs are this repository's own README.md and docs/*.md,
// whose example lines read like crash evidence.
#include "rocplay/postmortem/postmortem.hpp"
#include "rocplay/report/postmortem.hpp"
#include "rocplay/report/report.hpp"

#include <catch2/catch.hpp>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

using namespace rocplay;
namespace fs = std::filesystem;

namespace doc_inputs_test {

const fs::path kSource = fs::path(ROCPLAY_SOURCE_DIR);
const fs::path kLogs = kSource / "fixtures" / "crash" / "tp4-rank2-first";

struct TempTree {
  fs::path root;
  TempTree() {
    char tmpl[] = "/tmp/rocplay-docs-XXXXXX";
    REQUIRE(::mkdtemp(tmpl) != nullptr);
    root = tmpl;
  }
  ~TempTree() {
    std::error_code ec;
    fs::remove_all(root, ec);
  }
  TempTree(const TempTree&) = delete;
  TempTree& operator=(const TempTree&) = delete;
};

// The logs, and with `docs` the documentation as it is installed beside them (README.md and
// docs/*.md in share/doc/rocplay), an HTML copy of one page, and an empty file.
void lay_out(const fs::path& dir, bool docs) {
  fs::create_directories(dir / "logs");
  for (const auto& e : fs::directory_iterator(kLogs)) {
    fs::copy_file(e.path(), dir / "logs" / e.path().filename());
  }
  if (!docs) {
    return;
  }
  const fs::path doc = dir / "share" / "doc" / "rocplay";
  fs::create_directories(doc);
  fs::copy_file(kSource / "README.md", doc / "README.md");
  for (const auto& e : fs::directory_iterator(kSource / "docs")) {
    if (e.path().extension() == ".md") {
      fs::copy_file(e.path(), doc / e.path().filename());
    }
  }
  fs::copy_file(kSource / "docs" / "crash-evidence.md", doc / "crash-evidence.html");
  fs::copy_file(kSource / "docs" / "crash-evidence.md", dir / "logs" / "README");
  std::ofstream(dir / "logs" / "rank3-notes.log").flush(); // empty
  // The job's own program beside its logs, with an error string of its own.
  std::ofstream(dir / "logs" / "train.py")
      << "raise RuntimeError(\"CUDA error: an illegal memory access was encountered\")\n";
}

postmortem::Summary run(const std::vector<std::string>& paths,
                        std::vector<postmortem::InputResult>* results = nullptr) {
  postmortem::Options o;
  o.paths = paths;
  o.jobs = 2;
  return postmortem::run(o, [&](const postmortem::InputResult& r) {
    if (results != nullptr) {
      results->push_back(r);
    }
  });
}

// What a person reads of the crash verdict: each finding's id, title and meaning.
std::vector<std::string> verdict_of(const postmortem::Summary& s) {
  std::vector<std::string> out;
  for (const auto& f : s.crash) {
    out.push_back(f.id + " | " + f.title + " | " + f.summary);
  }
  return out;
}

} // namespace doc_inputs_test

using namespace doc_inputs_test;

TEST_CASE("a documentation folder beside real logs gives the verdict of the logs alone",
          "[postmortem][docs]") {
  TempTree alone;
  lay_out(alone.root, false);
  TempTree beside;
  lay_out(beside.root, true);

  const auto logs = run({alone.root.string()});
  REQUIRE(!logs.crash.empty());
  std::vector<postmortem::InputResult> results;
  const auto walked = run({beside.root.string()}, &results);
  CHECK(verdict_of(walked) == verdict_of(logs));
  CHECK(walked.inputs == logs.inputs); // the five logs, nothing else read
  CHECK(walked.unreadable == 0);
  for (const auto& r : results) {
    INFO(r.path);
    CHECK(r.path.find("/share/doc/") == std::string::npos);
  }

  // The report says which files gave evidence and which were skipped, and why.
  CHECK(walked.evidence.size() == 5);
  for (const auto& e : walked.evidence) {
    CHECK(e.find("/logs/") != std::string::npos);
  }
  const auto skipped_why = [&](const std::string& name) {
    for (const auto& k : walked.skipped) {
      if (fs::path(k.path).filename() == name) {
        return k.why;
      }
    }
    return std::string("(not skipped)");
  };
  CHECK(skipped_why("crash-evidence.md") == "documentation (Markdown)");
  CHECK(skipped_why("crash-evidence.html") == "documentation (HTML)");
  CHECK(skipped_why("README") == "documentation (a README file)");
  CHECK(skipped_why("rank3-notes.log") == "an empty file");
  CHECK(skipped_why("train.py") == "a program's source (Python)");
  report::TextOptions text;
  text.width = 80;
  std::ostringstream out;
  report::write_postmortem_summary_text(out, walked, {}, 0, text);
  CHECK_THAT(out.str(), Catch::Contains("Evidence from 5 input(s):"));
  CHECK_THAT(out.str(), Catch::Contains("Skipped " + std::to_string(walked.skipped.size()) +
                                        " file(s) found by a directory walk"));
  CHECK_THAT(out.str(), Catch::Contains("an empty file in "));
  CHECK_THAT(out.str(), Catch::Contains("rank3-notes.log"));
  CHECK_THAT(out.str(), Catch::Contains("documentation (HTML) in "));
  const auto j = report::postmortem_summary_to_json(walked);
  CHECK(j["evidence"].size() == 5);
  CHECK(j["skipped"].size() == walked.skipped.size());

  // The docs do read as evidence when given: named, they are read, and they change the verdict.
  // That is why a walk must leave them out.
  std::vector<std::string> named = {(beside.root / "logs").string()};
  for (const auto& e : fs::directory_iterator(beside.root / "share" / "doc" / "rocplay")) {
    named.push_back(e.path().string());
  }
  const auto with_docs = run(named);
  CHECK(with_docs.skipped.empty() == false); // the empty log of the logs folder still is
  CHECK(verdict_of(with_docs) != verdict_of(logs));
}

TEST_CASE("an empty input named on the command line is unreadable, as garbage is",
          "[postmortem][docs]") {
  TempTree t;
  const fs::path empty = t.root / "hang.rec";
  std::ofstream(empty).flush();
  const fs::path garbage = t.root / "garbage.rec";
  std::ofstream(garbage) << "\x01\x02 not a recording\n";
  std::vector<postmortem::InputResult> results;
  run({empty.string(), garbage.string()}, &results);
  REQUIRE(results.size() == 2);
  for (const auto& r : results) {
    INFO(r.path);
    const Case c = postmortem::case_of(r);
    CHECK(c.status == CaseStatus::Unreadable);
    CHECK(c.exit_code == ExitCode::PartialInput);
  }
}
