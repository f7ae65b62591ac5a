// From evidence to findings: what each input says, and the verdict joined per process and rank.
#include "rocplay/core/source.hpp"
#include "rocplay/crash/crash.hpp"
#include "rocplay/mi/value.hpp"

#include "crash/util.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <map>

namespace rocplay::crash {

namespace fs = std::filesystem;
using detail::hex;

std::optional<std::uint64_t> Tensor::element_size() const {
  std::string_view d = dtype;
  if (d.starts_with("torch.")) {
    d.remove_prefix(6);
  }
  if (d == "float32" || d == "float" || d == "int32" || d == "uint32") {
    return 4;
  }
  if (d == "bfloat16" || d == "float16" || d == "half" || d == "int16" || d == "uint16") {
    return 2;
  }
  if (d == "float64" || d == "double" || d == "int64" || d == "long" || d == "uint64" ||
      d == "complex64") {
    return 8;
  }
  if (d == "int8" || d == "uint8" || d == "bool" || d.starts_with("float8")) {
    return 1;
  }
  return std::nullopt;
}

std::optional<std::uint64_t> Tensor::extent_bytes() const {
  const auto size = element_size();
  if (!size || shape.empty()) {
    return std::nullopt;
  }
  std::vector<std::int64_t> st = stride;
  if (st.size() != shape.size()) { // contiguous strides when none were logged
    st.assign(shape.size(), 1);
    for (std::size_t i = shape.size(); i-- > 1;) {
      st[i - 1] = st[i] * std::max<std::int64_t>(shape[i], 1);
    }
  }
  std::uint64_t last = 0;
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] <= 0) {
      return 0;
    }
    if (st[i] < 0 || shape[i] > (std::int64_t{1} << 40) || st[i] > (std::int64_t{1} << 40)) {
      return std::nullopt;
    }
    last += static_cast<std::uint64_t>(shape[i] - 1) * static_cast<std::uint64_t>(st[i]);
  }
  return (last + 1) * *size;
}

std::string Tensor::shape_text() const {
  return fmt::format("({})", fmt::join(shape, ", "));
}

namespace {

std::string short_dtype(std::string_view d) {
  if (d.starts_with("torch.")) {
    d.remove_prefix(6);
  }
  if (d == "bfloat16") {
    return "bf16";
  }
  if (d == "float16") {
    return "f16";
  }
  if (d == "float32") {
    return "f32";
  }
  return std::string(d);
}

std::string tensor_text(const Argument& a, const Tensor& t) {
  std::string s = a.name + t.path + "=" + t.shape_text();
  if (!t.dtype.empty()) {
    s += " " + short_dtype(t.dtype);
  }
  if (!t.device.empty()) {
    s += " " + t.device;
  }
  if (t.contiguous && !*t.contiguous) {
    s += " non-contiguous";
  }
  if (t.data_ptr) {
    s += " @" + hex(*t.data_ptr);
  }
  if ((t.nan_count && *t.nan_count > 0) || (t.inf_count && *t.inf_count > 0)) {
    s += fmt::format(" nan={} inf={}", t.nan_count.value_or(0), t.inf_count.value_or(0));
  }
  return s;
}

std::vector<std::string> input_lines(const ApiCall& call, std::size_t max = 12) {
  std::vector<std::string> out;
  for (const auto& a : call.inputs) {
    if (out.size() >= max) {
      out.push_back(fmt::format("... and {} more inputs", call.inputs.size() - max));
      break;
    }
    if (a.tensors.empty()) {
      if (a.section != "default") {
        out.push_back(a.name + "=" + (a.value.empty() ? "?" : a.value));
      }
      continue;
    }
    for (const auto& t : a.tensors) {
      out.push_back(tensor_text(a, t));
    }
  }
  return out;
}

} // namespace

std::string ApiCall::shape_signature() const {
  std::string s;
  for (const auto& a : inputs) {
    for (const auto& t : a.tensors) {
      s += a.name + t.path + "=" + t.shape_text() + " " + short_dtype(t.dtype) + "; ";
    }
  }
  return s;
}

nlohmann::json to_json(const ApiCall& call) {
  nlohmann::json inputs = nlohmann::json::array();
  for (const auto& a : call.inputs) {
    nlohmann::json tensors = nlohmann::json::array();
    for (const auto& t : a.tensors) {
      nlohmann::json tj = {{"path", t.path},   {"shape", t.shape},   {"stride", t.stride},
                           {"dtype", t.dtype}, {"device", t.device}, {"stats", t.stats}};
      tj["contiguous"] = t.contiguous ? nlohmann::json(*t.contiguous) : nlohmann::json(nullptr);
      tj["data_ptr"] = t.data_ptr ? nlohmann::json(hex(*t.data_ptr)) : nlohmann::json(nullptr);
      const auto extent = t.extent_bytes();
      tj["bytes"] = extent ? nlohmann::json(*extent) : nlohmann::json(nullptr);
      if (t.nan_count) {
        tj["nan_count"] = *t.nan_count;
      }
      if (t.inf_count) {
        tj["inf_count"] = *t.inf_count;
      }
      if (t.graph_capture) {
        tj["graph_capture"] = true;
      }
      tensors.push_back(std::move(tj));
    }
    inputs.push_back(
        {{"name", a.name}, {"section", a.section}, {"value", a.value}, {"tensors", tensors}});
  }
  return {{"function", call.function},
          {"library", call.library},
          {"timestamp", call.timestamp},
          {"call_number", call.sequence},
          {"calls_before", call.sequence > 0 ? call.sequence - 1 : 0},
          {"line", call.line},
          {"level", call.level},
          {"returned", call.returned},
          {"stream", call.stream},
          {"inputs", inputs},
          {"inputs_dropped", call.inputs_dropped}};
}

namespace {

// Built key by key: an initializer list first makes every pair a two-element array, which
// doubled the allocations of the findings of an event-dense log (bench_crash's batch).
nlohmann::json event_json(const Event& e) {
  auto opt = [](const auto& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); };
  nlohmann::json j(nlohmann::json::value_t::object);
  j["kind"] = to_string(e.kind);
  j["line"] = e.line;
  j["text"] = e.text;
  j["time"] = e.time;
  j["device"] = e.device;
  j["name"] = e.name;
  j["reason"] = e.reason;
  j["meaning"] = e.meaning;
  j["process"] = e.process;
  j["address"] = e.address ? nlohmann::json(hex(*e.address)) : nlohmann::json(nullptr);
  j["pid"] = opt(e.pid);
  j["rank"] = opt(e.rank);
  if (e.number) {
    j["number"] = *e.number;
  }
  if (e.fault) {
    const auto& f = *e.fault;
    nlohmann::json& pf = j["page_fault"];
    pf = nlohmann::json(nlohmann::json::value_t::object);
    pf["hub"] = f.hub;
    pf["retry"] = f.retry;
    pf["src_id"] = opt(f.src_id);
    pf["ring"] = opt(f.ring);
    pf["vmid"] = opt(f.vmid);
    pf["pasid"] = opt(f.pasid);
    pf["thread"] = f.thread;
    pf["tid"] = opt(f.tid);
    pf["client"] = f.client;
    pf["status_register"] = f.status_register;
    pf["status"] = f.status ? nlohmann::json(hex(*f.status)) : nlohmann::json(nullptr);
    pf["utcl2_client"] = f.utcl2_client;
    pf["utcl2_meaning"] = explain_utcl2_client(f.utcl2_client);
    pf["more_faults"] = opt(f.more_faults);
    pf["walker_error"] = opt(f.walker_error);
    pf["permission_faults"] = opt(f.permission_faults);
    pf["mapping_error"] = opt(f.mapping_error);
    pf["rw"] = opt(f.rw);
  }
  return j;
}

nlohmann::json dump_json(const DumpCall& d) {
  nlohmann::json j = {{"directory", d.directory},
                      {"function", d.function},
                      {"module", d.module},
                      {"timestamp", d.timestamp},
                      {"status", d.status},
                      {"returned", d.returned()},
                      {"inputs_file", d.inputs_file},
                      {"outputs_file", d.outputs_file},
                      {"input_tensor_keys", d.input_tensor_keys},
                      {"input_metadata", d.input_metadata}};
  j["call_sequence"] = d.call_sequence ? nlohmann::json(*d.call_sequence) : nullptr;
  j["pid"] = d.pid ? nlohmann::json(*d.pid) : nullptr;
  j["input_size_bytes"] = d.input_size_bytes ? nlohmann::json(*d.input_size_bytes) : nullptr;
  return j;
}

std::string event_line(const Event& e) {
  std::string s = e.name.empty() ? std::string(to_string(e.kind)) : e.name;
  if (e.address) {
    s += " at " + hex(*e.address);
  }
  if (!e.device.empty()) {
    s += " on " + e.device;
  }
  if (!e.process.empty() || e.pid) {
    s += fmt::format(" (process {}{})", e.process, e.pid ? fmt::format(" pid {}", *e.pid) : "");
  }
  if (e.fault && !e.fault->utcl2_client.empty()) {
    s += ", UTCL2 client " + e.fault->utcl2_client;
    if (auto m = explain_utcl2_client(e.fault->utcl2_client); !m.empty()) {
      s += " = " + std::string(m);
    }
  }
  if (e.fault && e.fault->status) {
    s += fmt::format(", status {}", hex(*e.fault->status));
    if (e.fault->permission_faults && *e.fault->permission_faults) {
      s += " (permission fault)";
    }
    if (e.fault->mapping_error && *e.fault->mapping_error) {
      s += " (no mapping)";
    }
  }
  if (!e.reason.empty()) {
    s += ": " + e.reason;
  }
  if (!e.time.empty()) {
    s += " [" + e.time + "]";
  }
  if (e.line) {
    s += fmt::format(" (line {})", e.line);
  }
  return s;
}

constexpr std::string_view kHangNextStep =
    "The GPU itself hung: on the next occurrence, before the driver resets it, run `rocplay run "
    "hang-triage --pid PID` on each process named here (the kernels in flight and their waves), "
    "and keep `dmesg -T` (or `journalctl -k`) from the same minutes: the KFD and MES lines name "
    "the node; `HSA_ENABLE_DEBUG=1` at start makes the waves' positions readable after an attach.";

bool is_fault(EventKind k) {
  return k == EventKind::MemoryAccessFault || k == EventKind::PageFault || k == EventKind::Xid;
}

bool arch_error(const std::string& name) {
  return name == "hipErrorNoBinaryForGpu" || name == "cudaErrorNoKernelImageForDevice" ||
         name == "hipErrorInvalidDeviceFunction" || name == "cudaErrorInvalidDeviceFunction";
}

// The seed's escalation: what to rerun with, given what this evidence showed.
std::string escalation(int level, const std::optional<ApiCall>& suspect, bool all_returned,
                       bool graph_capture, const std::vector<const Event*>& events,
                       std::optional<int> exit_code, const std::string& gpu_arch,
                       const std::optional<DumpCall>& unreturned_dump) {
  bool fault = false;
  bool oom = false;
  bool arch = false;
  bool watchdog_only = !events.empty();
  bool watchdog = false;
  for (const Event* e : events) {
    watchdog = watchdog || e->kind == EventKind::CollectiveTimeout;
    fault =
        fault || is_fault(e->kind) ||
        (e->kind == EventKind::GpuError && (e->name.find("IllegalAddress") != std::string::npos ||
                                            e->name.find("Assert") != std::string::npos ||
                                            e->name.find("LaunchFailure") != std::string::npos));
    oom = oom || e->kind == EventKind::OutOfMemory;
    arch = arch || (e->kind == EventKind::GpuError && arch_error(e->name));
    watchdog_only = watchdog_only &&
                    (e->kind == EventKind::CollectiveTimeout || e->kind == EventKind::ExitStatus);
  }
  const std::string fn = suspect ? suspect->function : std::string();
  bool hardware = false;
  bool hang = false;
  for (const Event* e : events) {
    const auto n = e->number.value_or(0);
    hardware = hardware || (e->kind == EventKind::Xid &&
                            (n == 48 || n == 63 || n == 64 || n == 74 || n == 79 || n == 92 ||
                             n == 94 || n == 95 || n == 119 || n == 120));
    hang = hang || is_hang(e->kind);
  }
  if (hardware && !fault) {
    return "A hardware-class error (ECC, NVLink, fallen off the bus, GSP): drain the node and run "
           "the vendor's diagnostics (nvidia-smi -q, dcgmi diag -r 3) before blaming the code.";
  }
  if (hang && !fault && !oom) {
    return "The GPU hung (the runtime's GPU Hang line, KFD preemption time-outs, MES failures, or "
           "a ring timeout and reset): a kernel that never finished. On the next occurrence run "
           "`rocplay run hang-triage --pid PID` on each process before the driver resets the GPU "
           "(start them with HSA_ENABLE_DEBUG=1 so the waves' positions are readable after the "
           "attach), keep `dmesg -T` of the same minutes for the node, and keep the API-call log "
           "on to name the last call.";
  }
  if (arch) {
    return fmt::format(
        "A gfx target mismatch: the code was not built for this GPU{}. Compare `rocminfo | grep "
        "gfx` (gfx942 = MI300X/MI325X, gfx950 = MI355X) with the image's target "
        "(PYTORCH_ROCM_ARCH, --offload-arch) and rebuild or pick the image for this GPU.",
        gpu_arch.empty() ? "" : " (" + gpu_arch + ")");
  }
  if (oom || exit_code == 137) {
    return "Out of memory: for exit 137 check `docker inspect --format='{{.State.OOMKilled}}'` and "
           "the host's dmesg for the OOM killer; for GPU OOM lower the batch size or "
           "--mem-fraction-static, and try PYTORCH_HIP_ALLOC_CONF=expandable_segments:True "
           "(fragmentation). Retry with a level-1 API log to see the last call before it.";
  }
  if (watchdog && watchdog_only && !fault) {
    return "This process only timed out waiting for a peer: find the rank that did not time out "
           "(its log ends earlier, or shows a fault) and read its evidence; pass every rank's "
           "logs to `rocplay postmortem` together.";
  }
  if (unreturned_dump) {
    return fmt::format(
        "Replay the call offline from its level-10 dump: torch.load('{}/inputs.pt') and call {} "
        "with the input_metadata of its metadata.json, under HIP_LAUNCH_BLOCKING=1 and rocgdb (or "
        "with rocm-debug-agent: HSA_TOOLS_LIB=librocm-debug-agent.so.2) to stop at the faulting "
        "instruction.",
        unreturned_dump->directory, unreturned_dump->function);
  }
  if (level == 0) {
    return "No kernel API-call log: rerun with SGLANG_KERNEL_API_LOGLEVEL=1 (FLASHINFER_LOGLEVEL "
           "for FlashInfer) and SGLANG_KERNEL_API_LOGDEST=/path/kernel_api_rank%i.log (one file "
           "per process): the last logged call names the kernel boundary.";
  }
  if (all_returned || graph_capture) {
    return "Every logged call returned (or the crash came during graph capture/replay): the "
           "faulting kernel ran outside the logged boundaries, most likely inside a HIP/CUDA "
           "graph. Rerun with --enforce-eager (vLLM) or --disable-cuda-graph (SGLang) so each "
           "kernel passes through a logged call, with HIP_LAUNCH_BLOCKING=1.";
  }
  std::string async = fault ? " Set HIP_LAUNCH_BLOCKING=1 (CUDA_LAUNCH_BLOCKING=1) too: launches "
                              "are asynchronous, so without it the fault can surface in a later "
                              "call than the kernel that caused it."
                            : "";
  if (level < 3) {
    if (exit_code == 139) {
      return fmt::format("Exit 139 (segfault): escalate to level 10 to capture the inputs: "
                         "SGLANG_KERNEL_API_LOGLEVEL=10 "
                         "SGLANG_KERNEL_API_DUMP_DIR=/path/crash_dumps/rank%i "
                         "SGLANG_KERNEL_API_DUMP_INCLUDE='*{}*'.{}",
                         fn, async);
    }
    return fmt::format("Rerun with SGLANG_KERNEL_API_LOGLEVEL=3 (FLASHINFER_LOGLEVEL=3) to log "
                       "the shapes, dtypes and devices of {}'s inputs; level 5 adds NaN/Inf "
                       "counts.{}",
                       fn.empty() ? "the last call" : fn, async);
  }
  return fmt::format("Capture the inputs with level 10: SGLANG_KERNEL_API_LOGLEVEL=10 "
                     "SGLANG_KERNEL_API_DUMP_DIR=/path/crash_dumps/rank%i "
                     "SGLANG_KERNEL_API_DUMP_INCLUDE='*{}*', then replay the dump offline.{}",
                     fn, async);
}

Finding unfinished_call_finding(const ApiCall& call, const std::string& source,
                                const ApiLogSummary& api, std::optional<int> rank) {
  Finding f;
  f.id = std::string(kUnfinishedCall);
  const bool block = call.level >= 3;
  f.severity = block ? Severity::Error : Severity::Warning;
  f.confidence = block ? 0.85 : 0.6;
  f.title =
      fmt::format("{} call #{} {}: {}", call.library.empty() ? "API" : call.library, call.sequence,
                  block ? "began and never returned" : "was the last logged", call.function);
  f.summary = block ? "The API-call log shows the call's inputs but no output block: the process "
                      "died (or hung) inside it. It is the suspect kernel boundary."
                    : "A level-1 log names each call as it begins; the last one is where the "
                      "process was when it died (whether it returned is not logged at level 1).";
  f.evidence.push_back(fmt::format("{} calls logged before it; last call that returned: {}",
                                   call.sequence - 1,
                                   api.last_completed.empty() ? "none seen" : api.last_completed));
  if (!call.timestamp.empty()) {
    f.evidence.push_back("began at " + call.timestamp);
  }
  for (auto& l : input_lines(call)) {
    f.evidence.push_back("input " + l);
  }
  if (!api.open_callers.empty()) {
    f.evidence.push_back(
        fmt::format("inside the still-open call(s): {}", fmt::join(api.open_callers, " > ")));
  }
  f.kernel = call.function;
  f.details = {{"call", to_json(call)}, {"kernel", call.function}, {"level", api.level}};
  f.locations.push_back(Location{source, static_cast<std::uint32_t>(call.line), call.function, {}});
  f.rank = rank;
  return f;
}

} // namespace

nlohmann::json to_json(const Evidence& ev) {
  nlohmann::json formats = nlohmann::json::array();
  for (Format f : ev.formats) {
    formats.push_back(to_string(f));
  }
  nlohmann::json events = nlohmann::json::array();
  for (const auto& e : ev.events) {
    events.push_back(event_json(e));
  }
  nlohmann::json dumps = nlohmann::json::array();
  for (const auto& d : ev.dumps) {
    dumps.push_back(dump_json(d));
  }
  nlohmann::json api = {{"calls", ev.api.calls},
                        {"returned", ev.api.returned},
                        {"level", ev.api.level},
                        {"library", ev.api.library},
                        {"last_completed", ev.api.last_completed},
                        {"open_callers", ev.api.open_callers},
                        {"logger_errors", ev.api.logger_errors},
                        {"graph_capture", ev.api.graph_capture}};
  api["suspect"] = ev.api.suspect ? to_json(*ev.api.suspect) : nlohmann::json(nullptr);
  return {{"source", ev.source},
          {"formats", formats},
          {"rank", ev.rank ? nlohmann::json(*ev.rank) : nullptr},
          {"pid", ev.pid ? nlohmann::json(*ev.pid) : nullptr},
          {"gpu", ev.gpu},
          {"api", api},
          {"events", events},
          {"events_dropped", ev.counters.events_dropped},
          {"dumps", dumps},
          {"exit_code", ev.exit_code ? nlohmann::json(*ev.exit_code) : nullptr},
          {"gpu_arch", ev.gpu_arch},
          {"truncated", ev.truncated},
          {"lines", ev.counters.lines},
          {"long_lines", ev.counters.long_lines},
          {"binary_lines", ev.counters.binary_lines},
          {"malformed", ev.counters.malformed}};
}

std::vector<Finding> findings(const Evidence& ev) {
  std::vector<Finding> out;
  if (ev.api.suspect) {
    out.push_back(unfinished_call_finding(*ev.api.suspect, ev.source, ev.api, ev.rank));
  }
  for (const auto& d : ev.dumps) {
    if (d.status == "inputs_saved" && !d.returned()) {
      Finding f;
      f.id = std::string(kUnfinishedCall);
      f.severity = Severity::Error;
      f.confidence = 0.9;
      f.title = fmt::format("level-10 dump: {} call {} saved its inputs and never returned",
                            d.function, d.call_sequence ? std::to_string(*d.call_sequence) : "?");
      f.summary = "The dump's execution_status stayed `inputs_saved`: the process died inside "
                  "the call. inputs.pt holds the tensors to replay it.";
      f.evidence.push_back("dump directory " + d.directory);
      if (!d.input_tensor_keys.empty()) {
        f.evidence.push_back(
            fmt::format("input tensors: {}", fmt::join(d.input_tensor_keys, ", ")));
      }
      if (!d.input_metadata.empty()) {
        f.evidence.push_back("other inputs: " + d.input_metadata);
      }
      f.kernel = d.function;
      f.details = {{"dump", dump_json(d)}, {"kernel", d.function}};
      f.next_step = fmt::format("torch.load('{}/inputs.pt') and call {} with those inputs under "
                                "HIP_LAUNCH_BLOCKING=1 to reproduce it offline.",
                                d.directory, d.function);
      f.locations.push_back(Location{ev.source, std::nullopt, d.function, {}});
      f.rank = ev.rank;
      out.push_back(std::move(f));
    }
  }
  // One finding per kind of event, its first events as evidence.
  struct Kind {
    std::string_view id;
    Severity severity;
    std::string_view title;
  };
  std::map<int, std::vector<const Event*>> by_kind;
  for (const auto& e : ev.events) {
    by_kind[static_cast<int>(e.kind)].push_back(&e);
  }
  for (const auto& [k, list] : by_kind) {
    const auto kind = static_cast<EventKind>(k);
    Finding f;
    const Event& first = *list.front();
    switch (kind) {
    case EventKind::PageFault:
    case EventKind::MemoryAccessFault:
    case EventKind::Xid:
    case EventKind::CoreDump:
      f.id = std::string(kGpuFault);
      f.severity = kind == EventKind::CoreDump ? Severity::Info : Severity::Error;
      break;
    case EventKind::GpuError:
      f.id = arch_error(first.name) ? std::string(kArchMismatch) : std::string(kGpuError);
      f.severity = Severity::Error;
      break;
    case EventKind::RingTimeout:
    case EventKind::GpuReset:
      f.id = std::string(kGpuReset);
      f.severity = Severity::Error;
      break;
    case EventKind::OutOfMemory:
      f.id = std::string(kOutOfMemory);
      f.severity = Severity::Error;
      break;
    case EventKind::CollectiveTimeout:
      f.id = std::string(kCollectiveTimeout);
      f.severity = Severity::Warning;
      break;
    case EventKind::ExitStatus:
      f.id = std::string(kProcessExit);
      f.severity = Severity::Error;
      break;
    case EventKind::GpuHang:
    case EventKind::QueueEvictFailure:
    case EventKind::MesFailure:
      f.id = std::string(kGpuHang);
      f.severity = Severity::Critical;
      f.next_step = std::string(kHangNextStep);
      break;
    case EventKind::QueueAbort:
      f.id = std::string(kQueueAbort);
      f.severity = Severity::Error;
      break;
    case EventKind::DebuggerDiagnostic:
      f.id = std::string(kDebuggerDiagnostic);
      f.severity = Severity::Warning;
      f.next_step = first.meaning;
      break;
    }
    f.confidence = 0.8;
    f.title = fmt::format("{}{}", mi::utf8_prefix(event_line(first), 160),
                          list.size() > 1 ? fmt::format(" (+{} more)", list.size() - 1) : "");
    f.summary = first.meaning;
    for (std::size_t i = 0; i < list.size() && i < 8; ++i) {
      f.evidence.push_back(event_line(*list[i]));
    }
    nlohmann::json evs = nlohmann::json::array();
    for (std::size_t i = 0; i < list.size() && i < 8; ++i) {
      evs.push_back(event_json(*list[i]));
    }
    f.details = {{"events", std::move(evs)}, {"count", list.size()}, {"kind", to_string(kind)}};
    f.locations.push_back(
        Location{ev.source, first.line ? std::optional<std::uint32_t>(first.line) : std::nullopt,
                 "", first.address});
    f.rank = first.rank ? first.rank : ev.rank;
    out.push_back(std::move(f));
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const Finding& a, const Finding& b) { return a.severity > b.severity; });
  return out;
}

// ---------------------------------------------------------------------------------------------
// Joining across inputs.

// Not in an anonymous namespace: Joiner::Impl holds them.
struct Process {
  std::optional<int> rank;
  std::optional<std::int64_t> pid;
  std::string gpu;
  std::string file; // the only input, when nothing names the process
  std::vector<std::string> sources;
  std::optional<ApiCall> suspect;
  std::string suspect_source;
  std::vector<std::string> open_callers;
  std::string last_completed;
  int level = 0;
  std::uint64_t calls = 0;
  std::uint64_t returned = 0;
  bool graph_capture = false;
  std::vector<Event> events;
  std::vector<std::string> event_sources;
  std::optional<DumpCall> unreturned_dump;
  std::uint64_t dumps = 0;
  std::optional<int> exit_code;
  std::string label() const {
    std::string s;
    if (rank) {
      s = fmt::format("rank {}", *rank);
    }
    if (pid) {
      s += fmt::format("{}pid {}", s.empty() ? "" : " (", *pid) + (rank ? ")" : "");
    }
    if (s.empty() && !gpu.empty()) {
      s = "the process on " + gpu;
    }
    if (s.empty()) {
      s = "the process of " + fs::path(file).filename().string();
    }
    return s;
  }
};

namespace {

constexpr std::size_t kEventsPerProcess = 32;
constexpr std::size_t kMachineEvents = 256;

bool primary(const Event& e) {
  return e.kind == EventKind::MemoryAccessFault || e.kind == EventKind::GpuError ||
         e.kind == EventKind::OutOfMemory || e.kind == EventKind::CoreDump ||
         (e.kind == EventKind::ExitStatus && e.number && (*e.number == 139 || *e.number == 134));
}

} // namespace

struct Joiner::Impl {
  std::size_t max_processes;
  std::vector<Process> processes;
  std::map<int, std::size_t> by_rank;
  std::map<std::int64_t, std::size_t> by_pid;
  std::map<std::size_t, std::size_t> by_key; // the caller's process ids (ProcessKey::id)
  std::vector<Event> machine;                // kernel-log events: the whole node
  std::vector<std::string> machine_sources;
  std::uint64_t machine_dropped = 0;
  std::uint64_t processes_dropped = 0;
  std::string gpu_arch;
  std::optional<int> job_exit;
  std::size_t inputs = 0;

  // SGLang and vLLM put tensor-parallel rank N on device cuda:N of its node: a rank to join on
  // when nothing else names one (the one rule: source::rank_from_device).
  static std::optional<int> rank_from_device(const std::string& gpu) {
    return source::rank_from_device(gpu);
  }

  Process* find_or_add(const Evidence& in) {
    Evidence ev_rank; // only rank/pid/gpu/source are looked at
    ev_rank.rank = in.rank ? in.rank : rank_from_device(in.gpu);
    ev_rank.pid = in.pid;
    ev_rank.gpu = in.gpu;
    ev_rank.source = in.source;
    const Evidence& ev = ev_rank;
    if (ev.rank) {
      if (auto it = by_rank.find(*ev.rank); it != by_rank.end()) {
        return &processes[it->second];
      }
    }
    if (ev.pid) {
      if (auto it = by_pid.find(*ev.pid); it != by_pid.end()) {
        Process& p = processes[it->second];
        if (!p.rank && ev.rank) {
          p.rank = ev.rank;
          by_rank.emplace(*ev.rank, it->second);
        }
        return &p;
      }
    }
    if (!ev.rank && !ev.pid && !ev.gpu.empty()) {
      for (auto& p : processes) {
        if (!p.rank && !p.pid && p.gpu == ev.gpu) {
          return &p;
        }
      }
    }
    if (processes.size() >= max_processes) {
      ++processes_dropped;
      return nullptr;
    }
    Process p;
    p.rank = ev.rank;
    p.pid = ev.pid;
    p.gpu = ev.gpu;
    p.file = ev.source;
    if (p.rank) {
      by_rank.emplace(*p.rank, processes.size());
    }
    if (p.pid) {
      by_pid.emplace(*p.pid, processes.size());
    }
    processes.push_back(std::move(p));
    return &processes.back();
  }

  // The process the caller named; made with its rank and pid when new.
  Process* find_or_add(const ProcessKey& key, const Evidence& in) {
    if (auto it = by_key.find(key.id); it != by_key.end()) {
      Process& p = processes[it->second];
      if (!p.rank && key.rank) { // a later input of the process named its rank
        p.rank = key.rank;
        by_rank.emplace(*key.rank, it->second);
      }
      if (!p.pid && key.pid) {
        p.pid = key.pid;
        by_pid.emplace(*key.pid, it->second);
      }
      return &p;
    }
    // Made already by another input's `[rankN]:` lines: the same rank is the same process.
    if (key.rank) {
      if (auto it = by_rank.find(*key.rank); it != by_rank.end()) {
        by_key.emplace(key.id, it->second);
        return &processes[it->second];
      }
    }
    if (processes.size() >= max_processes) {
      ++processes_dropped;
      return nullptr;
    }
    Process p;
    p.rank = key.rank;
    p.pid = key.pid;
    p.gpu = in.gpu;
    p.file = in.source;
    if (p.rank) {
      by_rank.emplace(*p.rank, processes.size());
    }
    if (p.pid) {
      by_pid.emplace(*p.pid, processes.size());
    }
    by_key.emplace(key.id, processes.size());
    processes.push_back(std::move(p));
    return &processes.back();
  }

  void add(const Evidence& ev, const ProcessKey* key = nullptr) {
    ++inputs;
    if (!ev.gpu_arch.empty()) {
      gpu_arch = ev.gpu_arch;
    }
    // Kernel-log events belong to the node; the rest to the process that wrote the input.
    std::vector<const Event*> own;
    for (const auto& e : ev.events) {
      const bool node = e.kind == EventKind::PageFault || e.kind == EventKind::RingTimeout ||
                        e.kind == EventKind::GpuReset || e.kind == EventKind::Xid ||
                        e.kind == EventKind::QueueEvictFailure || e.kind == EventKind::MesFailure;
      if (node) {
        if (machine.size() < kMachineEvents) {
          machine.push_back(e);
          machine_sources.push_back(ev.source);
        } else {
          ++machine_dropped;
        }
      } else {
        own.push_back(&e);
      }
    }
    const bool diagnostics_only =
        ev.formats.size() == 1 && ev.formats.front() == Format::Diagnostics && !ev.rank && !ev.pid;
    if (diagnostics_only && ev.exit_code) {
      job_exit = ev.exit_code;
    }
    if (diagnostics_only && ev.api.calls == 0) {
      return; // the job's exit status and arch, no process of its own
    }
    // A shared stderr carries several ranks (`[rank3]:` prefixes): each event goes to its rank.
    std::vector<const Event*> unranked;
    std::map<int, std::vector<const Event*>> ranked;
    for (const Event* e : own) {
      if (e->rank && !ev.rank) {
        ranked[*e->rank].push_back(e);
      } else {
        unranked.push_back(e);
      }
    }
    for (const auto& [rank, list] : ranked) {
      Evidence key;
      key.rank = rank;
      key.source = ev.source;
      if (Process* p = find_or_add(key)) {
        add_events(*p, list, ev.source);
      }
    }
    const bool has_process_evidence = ev.api.calls > 0 || !unranked.empty() || !ev.dumps.empty();
    if (!has_process_evidence) {
      return;
    }
    Process* p = key != nullptr ? find_or_add(*key, ev) : find_or_add(ev);
    if (p == nullptr) {
      return;
    }
    if (p->sources.size() < 8) {
      p->sources.push_back(ev.source);
    }
    if (ev.api.suspect && (!p->suspect || ev.api.calls >= p->calls ||
                           p->suspect->timestamp < ev.api.suspect->timestamp)) {
      p->suspect = ev.api.suspect;
      p->suspect_source = ev.source;
      p->open_callers = ev.api.open_callers;
      p->last_completed = ev.api.last_completed;
    }
    p->level = std::max(p->level, ev.api.level);
    p->calls = std::max(p->calls, ev.api.calls);
    p->returned = std::max(p->returned, ev.api.returned);
    p->graph_capture = p->graph_capture || ev.api.graph_capture;
    if (ev.api.calls > 0 && !ev.api.suspect && p->last_completed.empty()) {
      p->last_completed = ev.api.last_completed;
    }
    if (p->gpu.empty()) {
      p->gpu = ev.gpu;
    }
    add_events(*p, unranked, ev.source);
    for (const auto& d : ev.dumps) {
      if (d.status == "listed") {
        continue;
      }
      ++p->dumps;
      if (d.status == "inputs_saved" && !d.returned() &&
          (!p->unreturned_dump || d.call_sequence > p->unreturned_dump->call_sequence)) {
        p->unreturned_dump = d;
      }
      if (!p->pid && d.pid) {
        p->pid = d.pid;
      }
    }
    if (ev.exit_code) {
      p->exit_code = ev.exit_code;
    }
  }

  static void add_events(Process& p, const std::vector<const Event*>& list,
                         const std::string& source) {
    for (const Event* e : list) {
      if (p.events.size() < kEventsPerProcess) {
        p.events.push_back(*e);
        p.event_sources.push_back(source);
      }
      if (e->kind == EventKind::ExitStatus && e->number) {
        p.exit_code = static_cast<int>(*e->number);
      }
    }
    if (p.sources.size() < 8 && (p.sources.empty() || p.sources.back() != source)) {
      p.sources.push_back(source);
    }
  }

  // Node events that concern this process: its pid, else every one when it is the only process.
  std::vector<std::pair<const Event*, const std::string*>> node_events_for(const Process& p) const {
    std::vector<std::pair<const Event*, const std::string*>> out;
    for (std::size_t i = 0; i < machine.size(); ++i) {
      const Event& e = machine[i];
      if ((p.pid && e.pid && *e.pid == *p.pid) || (!e.pid && processes.size() <= 1) ||
          (processes.size() == 1 && e.pid)) {
        out.emplace_back(&e, &machine_sources[i]);
      }
    }
    return out;
  }

  int failure_score(const Process& p) const {
    int score = 0;
    for (const auto& e : p.events) {
      if (primary(e)) {
        score = std::max(score, 3);
      } else if (e.kind == EventKind::ExitStatus) {
        score = std::max(score, 2);
      }
    }
    for (const auto& [e, src] : node_events_for(p)) {
      if (e->pid && p.pid && *e->pid == *p.pid) {
        score = std::max(score, 3);
      }
    }
    if (p.unreturned_dump) {
      score = std::max(score, 2);
    }
    const bool victim = std::any_of(p.events.begin(), p.events.end(), [](const Event& e) {
      return e.kind == EventKind::CollectiveTimeout;
    });
    if (victim && score < 3) {
      score = -1;
    }
    return score;
  }

  std::vector<Finding> verdict() const {
    std::vector<Finding> out;
    if (processes.empty() && machine.empty() && !job_exit) {
      return out;
    }
    // The first to fail: a process with its own fault or error beats one that only timed out;
    // among equals, the one whose last call began earliest, then the one with fewest calls.
    const Process* first = nullptr;
    int best = -2;
    for (const auto& p : processes) {
      const int s = failure_score(p);
      auto earlier = [&](const Process& a, const Process& b) {
        const std::string ta = a.suspect ? a.suspect->timestamp : std::string();
        const std::string tb = b.suspect ? b.suspect->timestamp : std::string();
        if (!ta.empty() && !tb.empty() && ta != tb) {
          return ta < tb;
        }
        if (a.suspect && b.suspect && a.suspect->sequence != b.suspect->sequence) {
          return a.suspect->sequence < b.suspect->sequence;
        }
        return false;
      };
      if (first == nullptr || s > best || (s == best && earlier(p, *first))) {
        first = &p;
        best = s;
      }
    }

    Finding v;
    v.id = std::string(kCrashVerdict);
    v.severity = Severity::Critical;
    std::vector<const Event*> events;
    std::vector<std::string> event_evidence;
    const Event* fault = nullptr;
    if (first != nullptr) {
      for (const auto& e : first->events) {
        events.push_back(&e);
      }
      for (const auto& [e, src] : node_events_for(*first)) {
        events.push_back(e);
      }
    } else {
      for (const auto& e : machine) {
        events.push_back(&e);
      }
    }
    for (const Event* e : events) {
      if (fault == nullptr && (is_fault(e->kind) && e->address)) {
        fault = e;
      }
    }
    if (fault == nullptr) {
      for (const Event* e : events) {
        if (is_fault(e->kind) || e->kind == EventKind::GpuError ||
            e->kind == EventKind::OutOfMemory || e->kind == EventKind::QueueAbort) {
          fault = e;
          break;
        }
      }
    }
    // No fault: a hang of the GPU itself is the verdict (which node, which processes).
    bool gpu_hang = false;
    if (fault == nullptr) {
      for (const Event* e : events) {
        if (is_hang(e->kind)) {
          fault = e;
          gpu_hang = true;
          break;
        }
      }
    }
    std::optional<int> exit_code = first ? first->exit_code : std::nullopt;
    if (!exit_code) {
      exit_code = job_exit;
    }

    // Title: who, where, what.
    const std::string who = first ? first->label() : std::string("the node");
    std::string what = fault ? std::string(mi::utf8_prefix(event_line(*fault), 120))
                       : exit_code
                           ? fmt::format("exit {} ({})", *exit_code,
                                         std::string(explain_exit_status(*exit_code)).substr(0, 40))
                           : std::string("no fault message found");
    if (fault) {
      what = fault->name.empty() ? std::string(to_string(fault->kind)) : fault->name;
      if (fault->address) {
        what += " at " + hex(*fault->address);
      }
      if (!fault->device.empty()) {
        what += " on " + fault->device;
      }
    }
    const ApiCall* call = first && first->suspect ? &*first->suspect : nullptr;
    const DumpCall* dump = first && first->unreturned_dump ? &*first->unreturned_dump : nullptr;
    if (call != nullptr) {
      v.title =
          fmt::format("{} died in {} (call #{}): {}", who, call->function, call->sequence, what);
    } else if (dump != nullptr) {
      v.title = fmt::format("{} died in {} (level-10 dump, never returned): {}", who,
                            dump->function, what);
    } else if (gpu_hang) {
      v.title = fmt::format("{}: the GPU hung: {}", who, what);
    } else {
      v.title = fmt::format("{} crashed: {}", who, what);
    }

    nlohmann::json d = nlohmann::json::object();
    d["process"] = {{"label", who}};
    if (first) {
      d["process"]["rank"] = first->rank ? nlohmann::json(*first->rank) : nullptr;
      d["process"]["pid"] = first->pid ? nlohmann::json(*first->pid) : nullptr;
      d["process"]["gpu"] = first->gpu;
      d["process"]["sources"] = first->sources;
      if (first->rank) {
        v.rank = first->rank;
      }
    }
    if (call != nullptr) {
      v.evidence.push_back(
          fmt::format("last kernel boundary: {} {} call #{} ({} calls before it){}{}",
                      call->library, call->function, call->sequence, call->sequence - 1,
                      call->timestamp.empty() ? "" : ", began " + call->timestamp,
                      call->level >= 3 ? ", never returned" : ", level 1: return not logged"));
      for (const auto& l : input_lines(*call)) {
        v.evidence.push_back("  input " + l);
      }
      if (!first->open_callers.empty()) {
        v.evidence.push_back(
            fmt::format("  inside still-open call(s): {}", fmt::join(first->open_callers, " > ")));
      }
      v.evidence.push_back(fmt::format("  from {}:{}", first->suspect_source, call->line));
      d["last_call"] = to_json(*call);
      d["last_call"]["source"] = first->suspect_source;
      d["kernel"] = call->function;
      v.locations.push_back(Location{
          first->suspect_source, static_cast<std::uint32_t>(call->line), call->function, {}});
    } else if (first && first->calls > 0) {
      v.evidence.push_back(fmt::format("every one of the {} logged calls returned (last: {})",
                                       first->calls, first->last_completed));
    }
    d["calls_logged"] = first ? first->calls : 0;
    d["log_level"] = first ? first->level : 0;
    if (dump != nullptr) {
      v.evidence.push_back(fmt::format(
          "level-10 dump that never returned: {} (call {}), {}", dump->function,
          dump->call_sequence ? std::to_string(*dump->call_sequence) : "?", dump->directory));
      d["dump"] = dump_json(*dump);
      if (d["kernel"].is_null()) {
        d["kernel"] = dump->function;
      }
    }
    if (fault != nullptr) {
      d["fault"] = event_json(*fault);
    }
    // Where the fault address falls among the suspect's inputs (needs logged pointers).
    if (fault && fault->address && call != nullptr) {
      const std::uint64_t addr = *fault->address;
      std::optional<std::uint64_t> best_distance;
      nlohmann::json placed;
      bool any_pointer = false;
      for (const auto& a : call->inputs) {
        for (const auto& t : a.tensors) {
          if (!t.data_ptr) {
            continue;
          }
          any_pointer = true;
          const std::uint64_t begin = *t.data_ptr;
          const std::uint64_t extent = t.extent_bytes().value_or(0);
          const std::uint64_t end = begin + extent;
          std::string relation;
          std::uint64_t distance = 0;
          // The fault address may be the page's start (amdgpu, HSA): a page that overlaps counts.
          if (addr >= begin && addr < end) {
            relation = "inside";
            distance = addr - begin;
          } else if (addr < begin && begin - addr < 4096) {
            relation = "inside";
            distance = 0;
          } else if (addr >= end) {
            relation = "after";
            distance = addr - end;
          } else {
            relation = "before";
            distance = begin - addr;
          }
          const std::uint64_t rank_distance = relation == "inside" ? 0 : distance + 1;
          if (!best_distance || rank_distance < *best_distance) {
            best_distance = rank_distance;
            placed = {{"input", a.name + t.path},
                      {"relation", relation},
                      {"distance_bytes", distance},
                      {"tensor_begin", hex(begin)},
                      {"tensor_bytes", extent}};
          }
        }
      }
      if (!placed.is_null()) {
        d["address_in_input"] = placed;
        const std::string rel = placed["relation"];
        const std::uint64_t dist = placed["distance_bytes"];
        v.evidence.push_back(
            rel == "inside"
                ? fmt::format("fault address {} is inside input {} (byte offset {} of {})",
                              hex(addr), placed["input"].get<std::string>(), dist,
                              placed["tensor_bytes"].get<std::uint64_t>())
                : fmt::format("fault address {} is {} bytes {} the end of input {} (the nearest)",
                              hex(addr), dist, rel == "after" ? "past" : "before the start, not",
                              placed["input"].get<std::string>()));
      } else if (!any_pointer && !call->inputs.empty()) {
        v.evidence.push_back("the log has shapes but no data pointers, so the fault address "
                             "cannot be placed in an input");
      }
    }
    for (const Event* e : events) {
      if (event_evidence.size() < 10) {
        event_evidence.push_back(std::string(to_string(e->kind)) + ": " + event_line(*e));
      }
    }
    for (auto& l : event_evidence) {
      v.evidence.push_back(std::move(l));
    }
    if (exit_code) {
      v.evidence.push_back(
          fmt::format("exit status {}: {}", *exit_code, explain_exit_status(*exit_code)));
      d["exit_code"] = *exit_code;
    }
    if (!gpu_arch.empty()) {
      d["gpu_arch"] = gpu_arch;
      v.evidence.push_back("GPU architecture " + gpu_arch);
    }
    // The rest of the job: who else stopped, and how.
    nlohmann::json others = nlohmann::json::array();
    for (const auto& p : processes) {
      if (&p == first) {
        continue;
      }
      std::string how = "no error of its own";
      for (const auto& e : p.events) {
        if (e.kind == EventKind::CollectiveTimeout) {
          how = "collective timeout (a victim)";
        } else if (primary(e)) {
          how = e.name;
          break;
        }
      }
      if (others.size() < 64) {
        others.push_back({{"label", p.label()},
                          {"rank", p.rank ? nlohmann::json(*p.rank) : nullptr},
                          {"pid", p.pid ? nlohmann::json(*p.pid) : nullptr},
                          {"last_call", p.suspect ? p.suspect->function : std::string()},
                          {"calls", p.calls},
                          {"how", how}});
      }
      if (v.evidence.size() < 40) {
        v.evidence.push_back(fmt::format(
            "{}: last call {}{}, {} calls; {}", p.label(), p.suspect ? p.suspect->function : "-",
            p.suspect && !p.suspect->timestamp.empty() ? " at " + p.suspect->timestamp : "",
            p.calls, how));
      }
    }
    d["other_processes"] = others;
    d["first_rank"] = first && first->rank ? nlohmann::json(*first->rank) : nullptr;
    d["processes"] = processes.size();
    if (processes_dropped > 0) {
      d["processes_dropped"] = processes_dropped;
    }
    if (machine_dropped > 0) {
      d["node_events_dropped"] = machine_dropped;
    }

    std::vector<std::string> meaning;
    if (fault && !fault->meaning.empty()) {
      meaning.push_back(fault->meaning + ".");
      meaning.back()[0] =
          static_cast<char>(std::toupper(static_cast<unsigned char>(meaning.back()[0])));
    }
    if (processes.size() > 1 && first) {
      meaning.push_back(fmt::format("{} failed first of {} processes; the others stopped after it.",
                                    who, processes.size()));
    }
    if (call != nullptr && fault && fault->kind != EventKind::OutOfMemory) {
      meaning.push_back("Kernel launches are asynchronous: the fault belongs to this call or a "
                        "kernel launched shortly before it.");
    }
    v.summary = fmt::format("{}", fmt::join(meaning, " "));
    const bool all_returned = first && first->calls > 0 && !first->suspect;
    v.next_step =
        escalation(first ? first->level : 0, call ? std::optional<ApiCall>(*call) : std::nullopt,
                   all_returned, first && first->graph_capture, events, exit_code, gpu_arch,
                   first ? first->unreturned_dump : std::nullopt);
    d["next_step"] = v.next_step;
    v.confidence = call && fault ? 0.85 : (call || fault) ? 0.7 : 0.5;
    v.details = std::move(d);
    out.push_back(std::move(v));

    // Across ranks: whose last call had other shapes than the rest.
    std::map<std::string, std::vector<const Process*>> by_shape;
    std::size_t with_calls = 0;
    for (const auto& p : processes) {
      if (p.suspect) {
        ++with_calls;
        by_shape[p.suspect->function + " " + p.suspect->shape_signature()].push_back(&p);
      }
    }
    if (with_calls >= 2 && by_shape.size() >= 2) {
      const auto majority =
          std::max_element(by_shape.begin(), by_shape.end(), [](const auto& a, const auto& b) {
            return a.second.size() < b.second.size();
          });
      Finding f;
      f.id = std::string(kShapeMismatch);
      f.severity = Severity::Warning;
      f.confidence = 0.7;
      std::vector<std::string> odd;
      nlohmann::json groups = nlohmann::json::array();
      for (const auto& [sig, list] : by_shape) {
        nlohmann::json members = nlohmann::json::array();
        for (const Process* p : list) {
          members.push_back(p->label());
          if (sig != majority->first) {
            odd.push_back(p->label());
          }
        }
        groups.push_back(
            {{"signature", sig}, {"processes", members}, {"majority", sig == majority->first}});
        f.evidence.push_back(fmt::format("{}: {}", fmt::join(members, ", "), sig));
      }
      f.title = fmt::format("the last call differs across ranks: {} ({} of {})",
                            fmt::join(odd, ", "), odd.size(), with_calls);
      f.summary = "Ranks of one job run the same calls with the same shapes; a rank whose last "
                  "call had another function or other input shapes took a different path (a "
                  "different batch, a rank-dependent branch) or stopped at another point.";
      f.next_step = "Compare those ranks' inputs with the majority's: the odd one out is where to "
                    "look first.";
      f.details = {{"groups", groups}, {"odd", odd}};
      out.push_back(std::move(f));
    }
    return out;
  }
};

Joiner::Joiner(std::size_t max_processes) : impl_(std::make_unique<Impl>()) {
  impl_->max_processes = max_processes;
}
Joiner::~Joiner() = default;
void Joiner::add(const Evidence& evidence) {
  impl_->add(evidence);
}
void Joiner::add(const Evidence& evidence, const ProcessKey& key) {
  impl_->add(evidence, &key);
}
bool Joiner::empty() const {
  return impl_->processes.empty() && impl_->machine.empty() && !impl_->job_exit;
}
std::vector<Finding> Joiner::verdict() const {
  return impl_->verdict();
}

} // namespace rocplay::crash
