// cuda-api-error: CUDA calls of the program failed (docs/heuristics.md).
//
// Not a guess: cuda-gdb printed the failed calls. A kernel's fault that cuda-gdb did not stop on
// (it stops only on what its exception reporting catches) surfaces as the error of the next CUDA
// call, and the program usually ends soon after: these warnings are then all a recording shows.
#include "rocplay/heuristics/heuristics.hpp"

#include <fmt/format.h>

namespace rocplay::heuristics {

std::vector<Finding> cuda_api_error(const Snapshot& s) {
  if (s.api_errors.empty()) {
    return {};
  }
  Finding f;
  f.id = std::string(kCudaApiError);
  // With a fault stop the fault is the verdict and these calls its echo.
  f.severity = s.fault ? Severity::Error : Severity::Critical;
  f.confidence = 1.0;
  const std::string& last = s.api_errors.back();
  f.title = fmt::format("CUDA call failed: {}", last.substr(0, last.find(':')));
  f.summary = fmt::format(
      "cuda-gdb reported {} failed CUDA call(s). A call such as cudaDeviceSynchronize returns "
      "the error of a kernel that faulted before it, so the fault happened in a kernel launched "
      "earlier{}.",
      s.api_errors.size(),
      s.fault ? "" : ", and cuda-gdb did not stop on it: there is no fault stop in this session");
  for (const auto& e : s.api_errors) {
    f.evidence.push_back("cuda-gdb: " + e);
  }
  f.next_step =
      "Rerun under `rocplay launch --debugger cuda-gdb --set 'cuda api_failures stop' -- PROGRAM` "
      "so cuda-gdb stops at the failing call with the kernel still in view, or under "
      "compute-sanitizer, which names the kernel and the access; CUDA_LAUNCH_BLOCKING=1 makes "
      "the failing launch itself return the error.";
  f.details = {{"api_errors", s.api_errors}};
  return {std::move(f)};
}

} // namespace rocplay::heuristics
