// Heuristic 4: nothing visible (docs/heuristics.md).
//
// The GPU debugger was asked and shows no agents, or agents without queues and dispatches.
// Either rocplay is attached to the wrong process (the dispatcher, which holds no GPU queues,
// instead of a worker), or the ROCm debug agent (HSA_TOOLS_LIB) holds the debugger hook and
// shadows queues and dispatches from rocgdb.
#include "heuristics/common.hpp"

#include <fmt/format.h>

namespace rocplay::heuristics {
namespace {

std::string pid_text(const Snapshot& s) {
  return s.pid ? fmt::format("PID {}", *s.pid) : std::string("the process");
}

} // namespace

std::vector<Finding> nothing_visible(const Snapshot& s, const Context& ctx) {
  std::vector<Finding> out;
  if (s.debugger != DebuggerKind::RocGdb && s.debugger != DebuggerKind::CudaGdb) {
    return out; // a CPU-only gdb session is not expected to show GPUs
  }
  const bool asked = s.coverage.agents || s.coverage.queues || s.coverage.dispatches;
  if (!asked) {
    return out; // the lists were never taken: absence says nothing
  }
  const bool no_agents = s.coverage.agents && s.agents.empty();
  const bool no_queues = s.queues.empty();
  const bool no_dispatches = s.dispatches.empty();
  if (!no_agents && !no_dispatches) {
    return out;
  }
  // Agents seen but dispatches never asked: unknown, not "none" (a saved `info queues` alone).
  if (!no_agents && !s.agents.empty() && !s.coverage.dispatches) {
    return out;
  }
  auto hook = s.env.find("HSA_TOOLS_LIB");
  const bool hook_held = hook != s.env.end() && !hook->second.empty();
  const std::string workers = fmt::format("{}", fmt::join(ctx.worker_pids, " "));

  Finding f;
  f.id = std::string(kNothingVisible);
  f.evidence.push_back(
      fmt::format("agents: {}{}", s.agents.size(), s.coverage.agents ? "" : " (not asked)"));
  f.evidence.push_back(
      fmt::format("queues: {}{}", s.queues.size(), s.coverage.queues ? "" : " (not asked)"));
  f.evidence.push_back(fmt::format("dispatches: {}{}", s.dispatches.size(),
                                   s.coverage.dispatches ? "" : " (not asked)"));
  f.details = {{"agents", s.agents.size()},
               {"queues", s.queues.size()},
               {"dispatches", s.dispatches.size()},
               {"worker_pids", ctx.worker_pids}};
  if (s.pid) {
    f.details["pid"] = *s.pid;
  }

  if (hook_held) {
    f.severity = Severity::Error;
    f.confidence = hook->second.find("debug-agent") != std::string::npos ? 0.9 : 0.75;
    f.title = "the ROCm debug agent holds the debugger hook: rocgdb cannot see queues or "
              "dispatches";
    f.evidence.push_back(fmt::format("HSA_TOOLS_LIB={} in the target's environment", hook->second));
    f.details["cause"] = "debug-agent";
    f.details["HSA_TOOLS_LIB"] = hook->second;
    f.summary = fmt::format(
        "{} was started with HSA_TOOLS_LIB={}, which loads the ROCm debug agent into the HSA "
        "runtime's single debugger slot. rocgdb then reports no {}. The GPU work is there; this "
        "debugger cannot see it.",
        pid_text(s), hook->second,
        no_agents ? "agents, queues or dispatches" : "queues or dispatches");
    f.next_step = "Restart the server without the debug-agent wrapper (plain launcher, no "
                  "HSA_TOOLS_LIB), reproduce the hang, and attach again. Use one tool at a "
                  "time: the debug agent for faults and traps, rocgdb for silent hangs.";
    out.push_back(std::move(f));
    return out;
  }

  if (no_agents && !s.gpu_attach_error.empty()) {
    f.severity = Severity::Error;
    f.confidence = 0.9;
    f.details["cause"] = "gpu-attach-failed";
    f.title = fmt::format("cuda-gdb could not attach to the GPU side of {}: its GPU state is "
                          "unknown",
                          pid_text(s));
    f.evidence.push_back(s.gpu_attach_error);
    f.summary = fmt::format(
        "The CUDA driver failed cuda-gdb's attach, so no device, kernel or warp of {} could be "
        "seen. That is not evidence that it holds no GPU work. cuda-gdb abandoned the driver's "
        "attach call (cudbgApiAttach) inside the process: on a 4-GPU host such a worker was dead "
        "(a zombie) soon after the detach.",
        pid_text(s));
    f.next_step = fmt::format(
        "Check that {} is still alive (`ps -o stat= -p {}`). If it is, attach to it alone, "
        "after the others: `rocplay run hang-triage --pid {} --debugger cuda-gdb`.",
        pid_text(s), s.pid.value_or(0), s.pid.value_or(0));
    out.push_back(std::move(f));
    return out;
  }

  if (no_agents || (no_queues && no_dispatches && s.coverage.queues)) {
    f.severity = Severity::Error;
    f.confidence = ctx.worker_pids.empty() ? 0.55 : 0.85;
    f.details["cause"] = "not-a-worker";
    f.title = no_agents ? fmt::format("no GPU agents in {}: not a GPU worker", pid_text(s))
                        : fmt::format("no GPU queues in {}: not a GPU worker", pid_text(s));
    f.summary = fmt::format(
        "{} has {}: it holds no GPU work. In ATOM, SGLang and vLLM the front-end server and the "
        "dispatcher hold no GPU queues; only the workers (children of the dispatcher) do.",
        pid_text(s), no_agents ? "no GPU agents at all" : "GPU agents but no queues or dispatches");
    if (!ctx.worker_pids.empty()) {
      f.evidence.push_back(fmt::format("worker PIDs of this process tree: {}", workers));
      f.next_step = fmt::format("This looks like the dispatcher. Attach to a worker instead: "
                                "`rocplay run --pid {}` (workers: {}).",
                                ctx.worker_pids.front(), workers);
    } else {
      f.next_step = "Find the workers: `ps -ef --forest | grep -E 'spawn_main|worker'` (workers "
                    "are children of the dispatcher and sit near 100% CPU while a kernel spins), "
                    "then attach to one of them with `rocplay run --pid <worker>`.";
    }
    out.push_back(std::move(f));
    return out;
  }

  // Agents and queues, but nothing in flight.
  f.severity = Severity::Info;
  f.confidence = 0.5;
  f.details["cause"] = "idle";
  f.title = fmt::format("no dispatch in flight in {}", pid_text(s));
  f.summary = "The GPU agents and queues are visible but no kernel is in flight: the GPU is idle "
              "in this process. A hang here is on the host side, or the stuck kernel belongs to "
              "another process.";
  const bool python_read = detail::has_python_frames(s);
  f.next_step = fmt::format("Read the host threads' stacks below{}, and take snapshots of the "
                            "other workers: a rank waiting for a peer shows the collective there, "
                            "not here.",
                            python_read ? " (their Python frames included)"
                                        : " (or `py-spy dump --pid <pid>`)");
  out.push_back(std::move(f));
  return out;
}

} // namespace rocplay::heuristics
