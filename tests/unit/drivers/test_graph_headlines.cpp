// Issue 41's shapes, recorded on real processes, read through `rocplay postmortem` and the one
// text writer: the root and its line within the first three lines (VERDICT or INCIDENT, then the
// `Cause:` chain). fixtures/cuda-gdb/README.md says what is true of each recording.
#include "postmortem_text.hpp"

#include <catch2/catch.hpp>

#include <string>
#include <vector>

using namespace rocplay;

namespace {

const std::string kShapeFixtures = std::string(ROCPLAY_SOURCE_DIR) + "/fixtures/";

} // namespace

TEST_CASE("issue 41's shapes: the root and its line in the first three lines") {
  struct Shape {
    const char* path;
    std::vector<std::string> expected;
  };
  const std::vector<Shape> shapes = {
      // The polling lanes, not the barrier the other 255 threads of each block stand at (:15).
      {"cuda-gdb/h200x2-graph41/barrier.rec",
       {"poll_then_barrier is stuck at", "graph_barrier_poll.cu:11", "the flag the looping lanes"}},
      // A launch behind a stream wait under lazy loading: nothing in flight, the launch the root.
      {"cuda-gdb/h200x2-graph41/lazywait.rec",
       {"[error", "main thread never returns from cuLaunchKernel", "graph_lazy_launch.cu:50"}},
      {"cuda-gdb/h200x2-graph41/item.rec", {"spin_kernel is stuck", "spin_kernel (dispatch 0)"}},
      // Two process groups in opposite orders: where the ranks' paths part, and the cycle.
      {"cuda-gdb/h200x2-graph41-order",
       {"reached by different lines", "rank 0 from main (graph_group_order.py:47)",
        "rank 1 from main (graph_group_order.py:49)", "a cycle of waits"}},
      // A helper thread holds the GIL in one C call (gdb, Debian's python3).
      {"pyframes/gil-ccall-gdb.rocplay",
       {"[error", "never returns from rocplay_tokenize_forever", "py_gil_ccall.py:16"}},
  };
  for (const auto& s : shapes) {
    const std::string head =
        report_text::first_lines(report_text::postmortem_text({kShapeFixtures + s.path}).out, 3);
    INFO(s.path << "\n" << head);
    for (const auto& e : s.expected) {
      CHECK(head.find(e) != std::string::npos);
    }
  }
}
