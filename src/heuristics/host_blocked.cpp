// Heuristic 5: a host thread blocked on the GPU (docs/heuristics.md).
//
// A host thread inside hipMemcpy*/hip*Synchronize (or the CUDA equivalents), or inside PyTorch's
// `_local_scalar_dense` (what `.item()` calls), while a dispatch is in flight: the host waits for
// the GPU. The host is the victim; the in-flight kernel is where to look.
#include "heuristics/analysis.hpp"
#include "rocplay/snapshot/frames.hpp"

#include <fmt/format.h>

namespace rocplay::heuristics {
namespace {

// The identifier of a frame's function: `at::native::_local_scalar_dense_cuda(at::Tensor const&)`
// -> `_local_scalar_dense_cuda`; `hipMemcpyAsync` stays.
std::string_view blocking_call(const Frame& f) {
  // Each name below appears as it is in the frame's function, mangled or not: most frames (every
  // thread's, every input's) are none of these and need no shortening.
  if (!detail::contains(f.function, "Synchronize") && !detail::contains(f.function, "Memcpy") &&
      !detail::contains(f.function, "_local_scalar_dense")) {
    return {};
  }
  std::string name = short_function_name(f.function);
  static constexpr std::string_view kExact[] = {"hipStreamSynchronize",  "hipDeviceSynchronize",
                                                "hipEventSynchronize",   "cudaStreamSynchronize",
                                                "cudaDeviceSynchronize", "cudaEventSynchronize",
                                                "cuStreamSynchronize",   "cuCtxSynchronize"};
  for (auto e : kExact) {
    if (name == e) {
      return e;
    }
  }
  for (std::string_view prefix : {"hipMemcpy", "cudaMemcpy", "cuMemcpy"}) {
    if (name.rfind(prefix, 0) == 0) {
      return prefix;
    }
  }
  if (detail::contains(name, "_local_scalar_dense")) {
    return "_local_scalar_dense";
  }
  return {};
}

} // namespace

std::vector<Finding> host_blocked_on_gpu(const Snapshot& s) {
  detail::Analysis analysis(s);
  return host_blocked_on_gpu(analysis);
}

std::vector<Finding> host_blocked_on_gpu(detail::Analysis& analysis) {
  const Snapshot& s = analysis.snapshot();
  std::vector<Finding> out;
  if (s.dispatches.empty()) {
    return out;
  }
  struct Blocked {
    const HostThread* thread;
    const Frame* frame;
    std::string_view call;
  };
  std::vector<Blocked> blocked;
  for (const auto& t : s.host_threads) {
    // The outermost blocking frame names the user-level call (`.item()` over hipMemcpy).
    const Frame* hit = nullptr;
    std::string_view call;
    for (const auto& fr : t.frames) {
      if (auto c = blocking_call(fr); !c.empty()) {
        hit = &fr;
        call = c;
      }
    }
    if (hit) {
      blocked.push_back({&t, hit, call});
    }
  }
  if (blocked.empty()) {
    return out;
  }
  Finding f;
  f.id = std::string(kHostBlockedOnGpu);
  f.severity = Severity::Warning;
  f.confidence = 0.7;
  std::vector<std::string> kernels;
  nlohmann::json dj = nlohmann::json::array();
  detail::Kernels& kernel_info = analysis.kernels();
  for (const auto& d : s.dispatches) {
    kernels.push_back(short_function_name(detail::kernel_label(d)));
    dj.push_back(detail::dispatch_json(d, kernel_info));
    f.dispatches.push_back({d.id, detail::kernel_label(d)});
  }
  const auto& first = blocked.front();
  const bool item = first.call == "_local_scalar_dense";
  f.title = fmt::format("host thread {} waits on the GPU in {}{}", first.thread->id, first.call,
                        item ? " (`.item()`)" : "");
  nlohmann::json tj = nlohmann::json::array();
  for (const auto& b : blocked) {
    std::vector<std::string> chain;
    for (const auto& fr : b.thread->frames) {
      if (!fr.function.empty()) {
        chain.push_back(short_function_name(fr.function));
      }
      if (&fr == b.frame || chain.size() >= 12) {
        break;
      }
    }
    // The Python line that made the call (rocplay/snapshot/python_stacks.hpp), when the stack has
    // one.
    const Frame* python = nullptr;
    for (const Frame* fr = b.frame; fr != b.thread->frames.data() + b.thread->frames.size(); ++fr) {
      if (fr->python) {
        python = fr;
        break;
      }
    }
    f.evidence.push_back(
        fmt::format("thread {}{} ({}): {}{}", b.thread->id,
                    b.thread->name.empty() ? "" : " \"" + b.thread->name + "\"",
                    b.thread->target_id, fmt::join(chain, " <- "),
                    python != nullptr ? fmt::format(" <- ... <- {}", frame_where(*python)) : ""));
    nlohmann::json j = {{"id", b.thread->id}, {"call", b.call}, {"frames", chain}};
    if (python != nullptr) {
      j["python"] = frame_where(*python);
    }
    if (b.thread->lwp) {
      j["lwp"] = *b.thread->lwp;
    }
    tj.push_back(std::move(j));
    Location l;
    l.function = b.frame->function;
    l.file = b.frame->file;
    l.line = b.frame->line;
    l.pc = b.frame->pc;
    f.locations.push_back(std::move(l));
  }
  for (const auto& d : s.dispatches) {
    f.evidence.push_back(
        fmt::format("in flight: {}: {}", detail::dispatch_label(d), detail::kernel_label(d)));
    if (auto k = detail::kernel_line(d, kernel_info); !k.empty()) {
      f.evidence.push_back("  " + k);
    }
  }
  if (!s.dispatches.empty()) {
    f.kernel = detail::kernel_label(s.dispatches.front());
  }
  f.details = {{"threads", std::move(tj)}, {"dispatches", std::move(dj)}};
  f.summary = fmt::format(
      "{} host thread(s) wait for the GPU ({}) while {} dispatch(es) are in flight ({}). The "
      "host is where the hang is noticed, not where it is caused{}.",
      blocked.size(), first.call, s.dispatches.size(), fmt::join(kernels, ", "),
      item ? ": `.item()` copies a scalar back and waits for every kernel queued before it" : "");
  f.next_step = fmt::format(
      "Look at the GPU side: anchor on the in-flight kernel ({}) and its wave PCs, map the PCs to "
      "source lines, and read that code. Do not add torch.cuda.synchronize() or remove the "
      "`.item()`: that moves the wait, it does not fix the kernel.",
      fmt::join(kernels, ", "));
  out.push_back(std::move(f));
  return out;
}

} // namespace rocplay::heuristics
