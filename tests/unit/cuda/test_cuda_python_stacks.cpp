// A PyTorch worker (Python 3.12.3, PyTorch 2.11) blocked in `.item()` behind a spin kernel on an
// H200, attached with `rocplay run hang-triage --debugger cuda-gdb --record`
// (fixtures/pyframes/torch-item-hang-h200.rocplay, from tests/hardware/torch_item_hang.py): the
// Python frames read from the worker's memory in each stop, through 3.12's layout table, are in
// the recording; the replay puts them into the main thread's stack and the verdict names the
// Python line that waits on the GPU (`print(z.item(), flush=True)`, line 25).
#include "replay.hpp"

#include "rocplay/heuristics/progress.hpp"
#include "rocplay/snapshot/frames.hpp"

#include <catch2/catch.hpp>

using namespace rocplay;

TEST_CASE("cuda: a PyTorch worker's Python line in its stack and in the verdict (3.12 table)") {
  const auto r = test::replay_samples("pyframes/torch-item-hang-h200.rocplay");
  REQUIRE(r.samples.size() == 2);
  for (const auto& sample : r.samples) {
    const Snapshot& s = sample.snapshot;
    const HostThread* main_thread = nullptr;
    for (const auto& t : s.host_threads) {
      if (t.lwp == 710u) {
        main_thread = &t;
      }
    }
    REQUIRE(main_thread != nullptr);
    std::vector<std::string> python;
    for (const auto& f : main_thread->frames) {
      if (f.python) {
        python.push_back(frame_where(f));
      }
    }
    CHECK(python == std::vector<std::string>{"main (torch_item_hang.py:25)",
                                             "<module> (torch_item_hang.py:30)"});
    // The native frames stay around them: the CUDA wait inside, the interpreter's start outside.
    CHECK_FALSE(main_thread->frames.front().python);
    std::size_t sync = 0, first_python = 0;
    for (std::size_t i = 0; i < main_thread->frames.size(); ++i) {
      const auto& f = main_thread->frames[i];
      sync = f.function == "cuStreamSynchronize" ? i : sync;
      first_python = f.python && first_python == 0 ? i : first_python;
    }
    CHECK(sync > 0);
    CHECK(sync < first_python);
    CHECK_FALSE(main_thread->frames.back().python);
    CHECK_FALSE(main_thread->holds_gil); // .item() releases the GIL while it waits
    REQUIRE_FALSE(s.notes.empty());
    bool noted = false;
    for (const auto& n : s.notes) {
      noted |= n == "python: CPython 3.12.3, 1 thread with Python frames; no thread holds the GIL";
    }
    CHECK(noted);
  }
  const auto out = heuristics::run_samples(r.samples, r.context);
  REQUIRE_FALSE(out.findings.empty());
  // The stuck kernel leads (issue 27); the host wait, with its Python line, is its evidence.
  const Finding& verdict = out.findings.front();
  CHECK(verdict.id == heuristics::kNoProgress);
  CHECK(verdict.title.find("spin_kernel") != std::string::npos);
  bool python_line = false;
  for (const auto& e : verdict.evidence) {
    python_line |= e.find("<- ... <- main (torch_item_hang.py:25)") != std::string::npos;
  }
  CHECK(python_line);
  const Finding* wait = nullptr;
  for (const auto& f : out.findings) {
    wait = f.id == heuristics::kHostBlockedOnGpu ? &f : wait;
  }
  REQUIRE(wait != nullptr);
  REQUIRE_FALSE(wait->evidence.empty());
  CHECK(wait->evidence[0].find("<- ... <- main (torch_item_hang.py:25)") != std::string::npos);
  REQUIRE(wait->details.contains("threads"));
  CHECK(wait->details["threads"][0]["python"] == "main (torch_item_hang.py:25)");
}
