// Crash evidence: what a dead GPU process left behind, read after the fact and joined into a
// verdict. Three families of input, each detected by content (docs/crash-evidence.md):
//
//  - kernel API-call logs (FlashInfer's `@flashinfer_api`, SGLang's `@debug_kernel_api`): levels
//    1, 3 and 5 as text, level 10 as one dump directory per call whose `metadata.json` says
//    `"execution_status": "inputs_saved"` until the call returns;
//  - kernel logs (raw dmesg, `dmesg -T`, journalctl): amdgpu page-fault blocks, ring timeouts,
//    GPU resets, NVIDIA `NVRM: Xid` lines;
//  - runtime messages in any log: the HSA runtime's memory-access-fault line, GPU core dumps,
//    HIP/CUDA error names, PyTorch out-of-memory, NCCL/RCCL watchdog timeouts, exit statuses (in
//    text and in the crash seed's diagnostics JSON).
//
// Input is untrusted: lines are cut at Limits::max_line_bytes, everything kept is bounded, binary
// junk and malformed records are counted and skipped, nothing throws for bad input. Nothing here
// opens files except read_dump_metadata's look at a dump's sibling files.
#pragma once

#include "rocplay/core/finding.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace rocplay::crash {

struct Limits {
  std::size_t max_line_bytes = 64 * 1024; // longer lines are cut here (and counted)
  std::size_t max_events = 256;           // kept per input; the rest are counted
  std::size_t max_arguments = 64;         // per logged call
  std::size_t max_tensors = 16;           // per argument (lists of tensors)
  std::size_t max_open_calls = 16;        // nesting depth of logged calls followed
  std::size_t max_streams = 64;           // line prefixes (`[rank3]:`) demultiplexed
  std::size_t max_warnings = 50;          // per input; the rest are counted
  std::size_t max_json_bytes = 4u << 20;  // metadata.json and diagnostics JSON
};

// What kinds of evidence an input held (a server log may hold several).
enum class Format : std::uint8_t {
  Text,         // API-call log, kernel log and/or runtime messages, line by line
  DumpMetadata, // a level-10 dump's metadata.json
  Diagnostics,  // the crash seed's crash_diagnostics.json
  DumpTensors,  // a level-10 dump's inputs.pt / outputs.pt (only its existence matters)
};
std::string_view to_string(Format format);

// Routes an input by its first bytes (and, for tensor files, its name). nullopt: not crash
// evidence as far as the head shows.
std::optional<Format> detect(std::string_view head, std::string_view path);

struct Tensor {
  std::string path; // where in the argument: `` or `[2]` or `['k']`
  std::vector<std::int64_t> shape;
  std::vector<std::int64_t> stride;
  std::string dtype;  // `torch.bfloat16`
  std::string device; // `cuda:3`
  std::optional<bool> contiguous;
  std::optional<std::uint64_t> data_ptr; // only when the logger prints one (`data_ptr=0x...`)
  std::string stats;                     // `min=... max=... mean=...` (level 5), bounded
  std::optional<std::uint64_t> nan_count;
  std::optional<std::uint64_t> inf_count;
  bool graph_capture = false; // `[statistics skipped: CUDA graph capture in progress]`
  std::optional<std::uint64_t> element_size() const;
  // Bytes from data_ptr to one past the last element, from shape and stride.
  std::optional<std::uint64_t> extent_bytes() const;
  std::string shape_text() const; // `(32, 8, 128)`
};

struct Argument {
  std::string name;    // `arg[0]`, `causal`
  std::string section; // `positional`, `keyword`, `default`
  std::string value;   // a non-tensor value, first line, bounded
  std::vector<Tensor> tensors;
};

struct ApiCall {
  std::string timestamp; // as printed, `2026-03-02 14:07:31`
  std::string library;   // `FlashInfer`, `SGLang Kernel`
  std::string function;
  std::uint64_t sequence = 0; // 1-based, counted per stream
  std::size_t line = 0;
  int level = 1;         // 1, 3 or 5 as the block showed
  bool returned = false; // an `Output value:` block closed it
  std::vector<Argument> inputs;
  std::size_t inputs_dropped = 0;
  std::string stream;                  // the line prefix that carried it, if any
  std::string shape_signature() const; // `arg[0]=(32, 8, 128) bf16; ...` for comparing ranks
};

struct ApiLogSummary {
  std::uint64_t calls = 0;        // headers seen
  std::uint64_t returned = 0;     // output blocks seen
  int level = 0;                  // highest level seen (0: no API log in this input)
  std::string library;            // of the last call
  std::optional<ApiCall> suspect; // the call that began and never completed (or the last one)
  std::vector<std::string> open_callers; // outer calls still open around the suspect
  std::string last_completed;            // function of the last call that returned
  std::uint64_t logger_errors = 0;
  bool graph_capture = false; // statistics skipped for graph capture somewhere in the log
  std::string system_info;    // bounded lines of the system-information block
};

enum class EventKind : std::uint8_t {
  PageFault,         // amdgpu [gfxhub]/[mmhub] page fault block
  RingTimeout,       // `ring gfx_0.0.0 timeout`, amdgpu_job_timedout
  GpuReset,          // `GPU reset begin!`, `GPU reset(N) succeeded!`, `... is hung!`
  Xid,               // NVRM: Xid
  MemoryAccessFault, // HSA runtime: Memory access fault by GPU node-N
  CoreDump,          // GPU core dump created / failed
  GpuError,          // hipError*/cudaError*, `HIP error: ...`
  OutOfMemory,       // torch.OutOfMemoryError / hipErrorOutOfMemory
  CollectiveTimeout, // NCCL/RCCL watchdog
  ExitStatus,        // exit code / signal of the process
  // Hangs and what the runtime, KFD and the debugger library say about them
  // (docs/crash-evidence.md, "GPU hangs, queue aborts and debugger diagnostics"):
  GpuHang,            // HSA runtime: `HW Exception by GPU node-N (...) reason :GPU Hang`
  QueueAbort,         // CLR: `... callbackQueue aborting with error : ...` (both generations)
  QueueEvictFailure,  // KFD: `Queue preemption time out`, `Failed to evict process queues`
  MesFailure,         // MES: `MES failed to respond to msg=REMOVE_QUEUE`, `failed to remove ...`
  DebuggerDiagnostic, // amd-dbgapi / ROCgdb: agent busy, per-queue memory missing, attach refused
};
std::string_view to_string(EventKind kind);

struct PageFaultDetail {
  std::string hub; // `gfxhub`, `mmhub` (`gfxhub0` as printed on some kernels)
  bool retry = false;
  std::optional<std::uint64_t> src_id, ring, vmid, pasid;
  std::string process, thread;
  std::optional<std::int64_t> tid;
  std::string client;                  // `10`, `0x1b (UTCL2)`
  std::optional<std::uint32_t> status; // *_L2_PROTECTION_FAULT_STATUS
  std::string status_register;         // `GCVM_L2_PROTECTION_FAULT_STATUS`
  std::string utcl2_client;            // `SDMA1 (0xe)`
  std::optional<std::uint32_t> more_faults, walker_error, permission_faults, mapping_error, rw;
};

struct Event {
  EventKind kind = EventKind::GpuError;
  std::size_t line = 0;
  std::string text;   // the line, sanitised and bounded
  std::string time;   // as printed: `1203.118204`, `Wed Oct  8 17:27:57 2026`, `Mar 11 02:13:40`
  std::string device; // PCI address, `node-2`, `cuda:3`
  std::optional<std::uint64_t> address;
  std::optional<std::int64_t> pid;
  std::string process;
  std::string name;    // `hipErrorIllegalAddress`, `Xid 31`, `SIGSEGV`, `ALLREDUCE`
  std::string reason;  // what the line said
  std::string meaning; // what it usually means (explained)
  std::optional<int> rank;
  std::optional<std::int64_t> number; // Xid number, exit status, watchdog SeqNum
  std::optional<PageFaultDetail> fault;
};

// A level-10 dump directory, from its metadata.json and the files beside it.
struct DumpCall {
  std::string directory;
  std::string function;
  std::string module;
  std::optional<std::uint64_t> call_sequence;
  std::string timestamp;
  std::optional<std::int64_t> pid;
  std::string status; // `inputs_saved`, `completed`
  bool inputs_file = false;
  bool outputs_file = false;
  std::vector<std::string> input_tensor_keys;
  std::optional<std::uint64_t> input_size_bytes;
  std::string input_metadata; // non-tensor args, compact JSON, bounded
  bool returned() const { return status == "completed" || outputs_file; }
};

struct Counters {
  std::uint64_t lines = 0;
  std::uint64_t bytes = 0;
  std::uint64_t long_lines = 0;   // cut at max_line_bytes
  std::uint64_t binary_lines = 0; // mostly non-text: skipped
  std::uint64_t malformed = 0;    // recognised, but a field was missing or unreadable
  std::uint64_t events_dropped = 0;
  std::uint64_t warnings_dropped = 0;
};

// Everything one input held.
struct Evidence {
  std::string source;
  std::vector<Format> formats;
  std::optional<int> rank;
  std::optional<std::int64_t> pid; // from the file name's `%i` or the content
  std::string gpu;                 // `cuda:3` from tensors, `node-2` from the runtime
  ApiLogSummary api;
  std::vector<Event> events;
  std::vector<DumpCall> dumps;
  std::optional<int> exit_code;
  std::string gpu_arch;             // diagnostics JSON `gpu_arch`
  std::string last_kernel_boundary; // diagnostics JSON, as the seed's script found it
  bool has_agent_dumps = false;     // rocm-debug-agent wave lines seen (read by agent-log)
  bool truncated = false;           // a dump directory without its files, cut-off JSON
  Counters counters;
  std::vector<std::string> warnings;
  bool empty() const;
};

struct ReadOptions {
  std::string source; // path: file name gives the `%i` process id
  std::optional<int> rank;
  Limits limits;
};

// Line-by-line reader for text inputs: feed bytes as they come, then finish().
class TextReader {
public:
  explicit TextReader(ReadOptions options = {});
  ~TextReader();
  TextReader(const TextReader&) = delete;
  TextReader& operator=(const TextReader&) = delete;
  void feed(std::string_view bytes);
  Evidence finish();

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

Evidence read_text(std::string_view text, const ReadOptions& options = {});
// Reads in bounded chunks; a log of gigabytes or without newlines is fine.
Evidence read_stream(std::istream& in, Format format, const ReadOptions& options = {});
// JSON inputs (whole text given). A dump's sibling inputs.pt/outputs.pt are checked on disk when
// `look_beside` is set (postmortem), not in tests that pass text alone.
Evidence read_dump_metadata(std::string_view json_text, const ReadOptions& options,
                            bool look_beside = true);
Evidence read_diagnostics(std::string_view json_text, const ReadOptions& options);

// Explanations (docs/crash-evidence.md lists them).
std::string_view explain_xid(std::int64_t xid);
std::string_view explain_utcl2_client(std::string_view client);
std::string_view explain_gpu_error(std::string_view name);
std::string_view explain_exit_status(int status);

// Stable finding ids.
inline constexpr std::string_view kCrashVerdict = "crash-verdict";
inline constexpr std::string_view kUnfinishedCall = "crash-unfinished-call";
inline constexpr std::string_view kShapeMismatch = "crash-rank-shapes-differ";
inline constexpr std::string_view kGpuFault = "crash-gpu-fault";
inline constexpr std::string_view kGpuError = "crash-gpu-error";
inline constexpr std::string_view kGpuReset = "crash-gpu-reset";
inline constexpr std::string_view kOutOfMemory = "crash-out-of-memory";
inline constexpr std::string_view kCollectiveTimeout = "crash-collective-timeout";
inline constexpr std::string_view kProcessExit = "crash-process-exit";
inline constexpr std::string_view kArchMismatch = "crash-gfx-arch-mismatch";
inline constexpr std::string_view kGpuHang = "crash-gpu-hang";
inline constexpr std::string_view kQueueAbort = "crash-queue-abort";
inline constexpr std::string_view kDebuggerDiagnostic = "crash-debugger-diagnostic";
// A hang of the GPU itself (runtime hang line, KFD preemption time-outs, MES failures, ring
// time-outs, resets), not of one kernel.
bool is_hang(EventKind kind);

// What one input says on its own (per-input findings, most severe first).
std::vector<Finding> findings(const Evidence& evidence);

// Joins evidence across inputs per process and rank. Keeps a bounded summary per process, so
// memory does not grow with the number of inputs beyond Limits of the joiner.
// The process an input belongs to, as the caller decided it (incident::ProcessIndex, the one
// join over snapshots, crash evidence and agent-log faults): evidence added with the same `id` is
// one process, whatever rank or pid each input names; `rank` and `pid` label it.
struct ProcessKey {
  std::size_t id = 0;
  std::optional<int> rank;
  std::optional<std::int64_t> pid;
};

class Joiner {
public:
  explicit Joiner(std::size_t max_processes = 4096);
  ~Joiner();
  Joiner(const Joiner&) = delete;
  Joiner& operator=(const Joiner&) = delete;
  // The joiner groups the evidence by its own rank and pid.
  void add(const Evidence& evidence);
  // The caller's grouping: the evidence goes to process `key.id` (events of other ranks in a
  // shared stderr still go to those ranks).
  void add(const Evidence& evidence, const ProcessKey& key);
  bool empty() const;
  // The verdict first (kCrashVerdict), then cross-rank findings. Empty without crash evidence.
  std::vector<Finding> verdict() const;

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

nlohmann::json to_json(const Evidence& evidence);
nlohmann::json to_json(const ApiCall& call);

} // namespace rocplay::crash
