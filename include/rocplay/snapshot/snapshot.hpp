// The typed model of a stopped GPU process: what every dialect (rocgdb, cuda-gdb, gdb) builds
// from MI records, what heuristics read, and what reports and JSON carry.
//
// Unknown values are std::optional, never sentinels: a wave seen after a late attach has `?`
// coordinates, and cuda-gdb has no queues. Ids are the debugger's own strings (`1.2`), kept
// apart from hardware numbers (queue_no, os_qid, packet_id).
#pragma once

#include "rocplay/core/debugger.hpp"
#include "rocplay/core/fault.hpp"
#include "rocplay/core/frame.hpp"
#include "rocplay/core/kernel_waits.hpp"
#include "rocplay/isa/instructions.hpp"
#include "rocplay/kernels/kernel_names.hpp"
#include "rocplay/mi/transcript.hpp"
#include "rocplay/snapshot/shared_string.hpp"

#include <nlohmann/json_fwd.hpp>

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace rocplay {

struct Agent {
  std::string id;                       // `1.1` (MI) or `1`
  std::optional<std::uint32_t> number;  // the handle waves and queues name (`A` of `A:Q:D:W`)
  std::string state;                    // `A` supported, `U` not
  std::string target_id;                // `AMDGPU Agent (GPUID 35090)`; cuda-gdb: device name
  std::optional<std::uint64_t> gpu_id;  // KFD gpu_id; cuda-gdb: device index
  std::string architecture;             // gfx90a / sm_90
  std::string name;                     // marketing name
  std::optional<std::uint32_t> cores;   // EUs / SMs
  std::optional<std::uint32_t> threads; // wave slots / warps
  std::string location;                 // PCI `0000:4a:00.0` or `29:00.0`
  bool current = false;
  bool operator==(const Agent&) const = default;
};

enum class QueueType : std::uint8_t { Unknown, Hsa, Pm4, Dma, Xgmi };
// `HSA`, `PM4`, `DMA`, `XGMI` as rocgdb prints them, and `Unknown`.
std::string_view to_string(QueueType type);
// The inverse of to_string; any other text is Unknown.
QueueType queue_type_from_string(std::string_view name);

struct Queue {
  std::string id;
  std::string target_id;              // `AMDGPU Queue 1:2 (QID 1)`
  std::optional<std::uint32_t> agent; // A of A:Q
  std::optional<std::uint32_t> queue_no;
  std::optional<std::uint64_t> os_qid;
  QueueType type = QueueType::Unknown;
  std::optional<std::uint64_t> read; // AQL packet ids; absent when unsupported
  std::optional<std::uint64_t> write;
  std::optional<std::uint64_t> size;
  std::optional<std::uint64_t> address;
  bool current = false;
  bool operator==(const Queue&) const = default;
};

enum class FenceScope : std::uint8_t { None, Agent, System };

struct Fence {
  bool barrier = false;
  FenceScope acquire = FenceScope::None;
  FenceScope release = FenceScope::None;
  // `B|Aa|Ra`: barrier with agent-scope acquire and release.
  bool full() const {
    return barrier && acquire != FenceScope::None && release != FenceScope::None;
  }
  bool operator==(const Fence&) const = default;
};

struct Dispatch {
  std::string id;
  std::string target_id; // `AMDGPU Dispatch 1:2:1 (PKID 0)`
  std::optional<std::uint32_t> agent;
  std::optional<std::uint32_t> queue;
  std::optional<std::uint64_t> dispatch_no;
  std::optional<std::uint64_t> packet_id;
  std::vector<std::uint64_t> grid;      // 1..3 dims, in work-items (cuda-gdb: blocks)
  std::vector<std::uint64_t> workgroup; // 1..3 dims (cuda-gdb: threads per block)
  Fence fence;
  std::string fence_text;     // as printed, `B|Aa|Ra`
  std::string address_spaces; // `Shared(0), Private(0)`
  std::optional<std::uint64_t> kernel_desc;
  std::optional<std::uint64_t> kernel_args;
  std::optional<std::uint64_t> completion;
  std::optional<std::uint64_t> kernel_address;
  std::string kernel_name;  // demangled when resolved
  std::string linkage_name; // the mangled name it came as (`_ZN5aiter...E`), when it was one
  std::string status;       // cuda-gdb: `Active`
  bool current = false;
  bool operator==(const Dispatch&) const = default;
};

// One AMD wave, or one cuda-gdb coalesced thread range (then `count` threads, and the work-item
// and block ranges below say which). Its texts are SharedStrings: a snapshot may hold 78,000.
struct Wave {
  std::string thread_id;  // debugger thread id
  SharedString target_id; // `AMDGPU Wave 1:2:1:1 (0,0,0)/0`
  SharedString name;      // thread name (kernel-derived in new rocgdb)
  std::optional<std::uint32_t> agent;
  std::optional<std::uint32_t> queue;
  std::optional<std::uint64_t> dispatch; // dispatch_no (AMD) / kernel id (cuda)
  std::optional<std::uint64_t> wave_no;
  std::array<std::optional<std::int64_t>, 3> workgroup{};      // first block/work-group
  std::array<std::optional<std::int64_t>, 3> workgroup_last{}; // last block of a range
  std::optional<std::uint32_t> wave_in_group;
  std::optional<std::uint32_t> lane_count;      // lanes in the wave (64/32 AMD, 32 cuda)
  std::optional<std::uint32_t> first_work_item; // flat work-item index in the group
  std::optional<std::uint32_t> last_work_item;
  std::uint64_t count = 1; // threads a cuda range stands for; 1 for waves
  std::optional<std::uint64_t> pc;
  SharedString function; // shared by the waves of one snapshot (Interner)
  SharedString file;
  std::optional<std::uint32_t> line;
  SharedString inline_function;      // the inlined function the PC is in
  std::string state;                 // stopped / running
  std::optional<std::uint32_t> lane; // selected lane (`lane-id`), when reported
  // No dispatch (or agent) of the snapshot matches the wave's coordinates: kept, with a warning,
  // rather than dropped (late attach, or the dispatch list was not taken).
  bool unattributed = false;
  bool operator==(const Wave&) const = default;
};

// One lane of the selected wave (`-lane-info`).
struct Lane {
  std::uint32_t id = 0;
  std::string state;       // A active, I inactive, U unused, R running
  std::string target_id;   // `AMDGPU Lane 1:2:1:1/0 (0,0,0)[0,0,0]`
  std::string wave_thread; // thread id of the wave it belongs to, when known
  std::array<std::optional<std::int64_t>, 3> work_item{}; // position in the work-group
  std::optional<std::uint64_t> pc;
  std::string function;
  std::string file;
  std::optional<std::uint32_t> line;
  bool operator==(const Lane&) const = default;
};

// `-wave-info`: how many waves the debugger knows, by state.
struct WaveCounts {
  std::uint64_t total = 0;
  std::uint64_t running = 0;
  std::uint64_t single_stepping = 0;
  std::uint64_t stopped = 0;
  bool operator==(const WaveCounts&) const = default;
};

// Which lists the debugger was actually asked for. An empty list means "none" only when it was
// asked: a transcript without `info agents` says nothing about agents.
struct Coverage {
  bool agents = false;
  bool queues = false;
  bool dispatches = false;
  bool threads = false;
  bool operator==(const Coverage&) const = default;
};

// The mutex a thread blocked in pthread_mutex_lock sleeps on, read by expressions on its innermost
// frame (no calls into the target): the futex word in the first syscall argument register is the
// mutex, and glibc's `__owner` field (4 ints in) holds the owner's LWP.
struct MutexWait {
  std::optional<std::uint64_t> address;
  std::string symbol;                // `mutex_b`, `cache_lock+8`, when the debugger named it
  std::optional<std::int64_t> owner; // LWP of the owner; 0 when unlocked at that instant
  bool operator==(const MutexWait&) const = default;
};

// What /proc/PID/task/TID/stat said of a host thread in the run before its sample (live runs
// that let the target run between samples; docs/transcript-format.md, "Thread figures").
struct ThreadFigures {
  std::string state;      // `R`, `S`, `D` ... just before the stop
  double cpu_seconds = 0; // CPU time (user + system) it used in the run
  double run_seconds = 0; // how long the run was
  bool operator==(const ThreadFigures&) const = default;
};

struct HostThread {
  std::string id;
  std::optional<std::uint64_t> lwp;
  std::string name;
  std::string target_id;
  std::string state;
  std::vector<Frame> frames; // innermost first
  std::optional<MutexWait> mutex_wait;
  // CPython threads (rocplay/snapshot/python_stacks.hpp): this thread held the GIL when the process
  // was stopped; why its Python stack ends early, when it does.
  bool holds_gil = false;
  std::string python_note;
  // The threading.Lock (its address) it sleeps on acquiring, when one of the process's Python
  // frames holds that lock in a `with` block (the frame's held_locks).
  std::optional<std::uint64_t> python_lock_wait;
  std::optional<ThreadFigures> figures; // absent: not measured (first sample, recordings)
  // The address whose source line frames[i] stands on: its PC for the innermost frame and for
  // frames inlined into it (same PC), PC - 1 for every caller (its PC is a return address).
  std::optional<std::uint64_t> lookup_pc(std::size_t i) const;
  bool operator==(const HostThread&) const = default;
};

// What `info line *PC` said about one PC.
struct SourceLine {
  std::uint64_t pc = 0;
  std::string file;
  std::optional<std::uint32_t> line;
  std::string function;                // symbol of the PC, demangled (`kern()`)
  std::string linkage_name;            // `_Z4kernv`, when it came mangled
  std::optional<std::uint64_t> offset; // +168
  std::string inlined_from;            // cuda-gdb: `splitk_reduce at line 20 of splitk.cu`
  bool has_code = true;                // false: "contains no code" / no line info
  bool operator==(const SourceLine&) const = default;
};

// Instructions around a stuck PC, as a disassembler printed them: the debugger's, in the stop
// (`-data-disassemble`), or nvdisasm's after the detach; the loop holding a PC is found from them
// (snapshot::code_loops).
struct CodeWindow {
  std::string thread; // the thread it was asked for (`--thread`, else the selected one)
  std::vector<isa::Instruction> instructions;
  // Empty: the debugger disassembled it in the stop. Else what decoded it after the detach from
  // the code the debugger named in the stop (`nvdisasm`; rocplay/snapshot/deferred_code.hpp).
  std::string decoded_by;
  bool operator==(const CodeWindow&) const = default;
};

// One run of `rocplay launch --verify` (docs/launch.md, "Is it the culprit?"): which run of how
// many, under which experiment (the environment it set), and how the program ended. The driver
// writes it as a `launch run: {json}` note, so a recording says alone what it was.
// Where the program launched a kernel (session::LaunchSpec::trace_launches): the kernel's name as
// nvcc's launch stub gives it, and the user's frame that launched it (`main at race.cu:60`).
struct LaunchSite {
  std::string kernel;
  std::string where;
  bool operator==(const LaunchSite&) const = default;
};

struct LaunchRun {
  std::uint32_t index = 0; // 1-based, in the order run
  std::uint32_t of = 0;
  std::string experiment; // `as given`, `blocking launches`, `serialised kernels`, `NAME=VALUE`
  std::map<std::string, std::string> env; // what the experiment set for the program
  std::vector<std::string> argv;
  std::string outcome; // session::to_string(LaunchOutcome): faulted, exited, timed out, ...
  std::optional<int> exit_code;
  std::string exit_signal;
  double seconds = 0; // from the start to the fault or the end
  // The run traced its kernel launches: how many, and each kernel's last launching line.
  std::optional<std::uint32_t> traced_launches;
  std::vector<LaunchSite> launch_sites;
  bool operator==(const LaunchRun&) const = default;
};

struct Snapshot {
  static constexpr int kFormatVersion = 1;
  DebuggerKind debugger = DebuggerKind::Unknown;
  std::string debugger_version; // first line of the banner
  std::optional<std::int64_t> pid;
  std::optional<int> rank;            // from metadata or --rank-from
  std::string label;                  // where it came from: a file, `pid 4242`
  std::string taken_at;               // ISO 8601 UTC
  std::optional<double> stop_seconds; // how long the target was stopped, when known
  std::vector<Agent> agents;
  std::vector<Queue> queues;
  std::vector<Dispatch> dispatches;
  std::vector<Wave> waves;
  std::vector<HostThread> host_threads;
  std::vector<SourceLine> source_lines;  // one per unique PC
  std::vector<CodeWindow> code_windows;  // disassembly around stuck PCs, when asked
  std::vector<Lane> lanes;               // of the selected wave, when asked
  std::optional<WaveCounts> wave_counts; // `-wave-info`
  Coverage coverage;
  std::vector<std::string> warnings;      // things that went wrong building it
  std::vector<std::string> notes;         // what this debugger cannot show (cuda-gdb: queues)
  std::map<std::string, std::string> env; // selected target environment (HSA_TOOLS_LIB ...)
  // CUDA calls of the program that failed, as cuda-gdb warned of them (`cudaDeviceSynchronize
  // returned cudaErrorIllegalInstruction(...)`): a kernel's fault it did not stop on.
  std::vector<std::string> api_errors;
  // cuda-gdb's attach to the GPU side failed (`The CUDA driver hit an internal error while
  // attaching to the application: ...`): no device, kernel or warp of this process can be seen,
  // which says nothing of whether it holds GPU work.
  std::string gpu_attach_error;
  // The fault the program was stopped on (`rocplay launch`, `run --wait-for-fault`), when the
  // exchanges hold a fault stop.
  std::optional<Fault> fault;
  std::optional<LaunchRun> launch_run; // a run of `launch --verify`
  // What the kernel said the target's threads (and the children they wait for) wait in, read
  // from /proc just before the stop (the session's `kernel waits:` notes); empty when not read.
  KernelWaits kernel_waits;
  bool operator==(const Snapshot&) const = default;

  const SourceLine* source_line(std::uint64_t pc) const;
  // The source line of a host frame: its PC for the innermost frame, PC - 1 for every caller (a
  // caller's PC is the return address, the instruction after the call; PC - 1 is inside the
  // call, which is how GDB finds its own frame lines). GPU waves keep their exact PC.
  const SourceLine* frame_line(const HostThread& thread, std::size_t frame) const;
  // The dispatch whose (agent, queue, dispatch_no) the wave names; nullptr when none does.
  const Dispatch* dispatch_of(const Wave& wave) const;
  // The agent numbered `number` (Agent::number, else the last part of its id).
  const Agent* agent(std::uint32_t number) const;
};

// The agent's handle: Agent::number when set, else parsed from `1.2` / `2`.
std::optional<std::uint32_t> agent_number(const Agent& agent);

nlohmann::json to_json(const Snapshot& snapshot);
// Throws rocplay::Error (DataError) naming the offending field.
Snapshot snapshot_from_json(const nlohmann::json& json);

namespace snapshot {

struct BuildOptions {
  DebuggerKind debugger = DebuggerKind::Unknown; // Unknown: tell from the records
  std::string label;
  // A recording's `# meta` object (docs/json-schema.md, "Recording meta"): pid, rank, env,
  // debugger version, taken_at. Empty for raw MI logs.
  std::string meta_json;
};

// Turns exchanges (live or replayed) into a Snapshot. Each exchange is claimed by the dialect that
// recognises its command or, for raw logs, its content.
class Builder {
public:
  explicit Builder(BuildOptions options = {});
  ~Builder();
  Builder(Builder&&) noexcept;
  Builder& operator=(Builder&&) noexcept;
  void add(const mi::Exchange& exchange);
  Snapshot finish();
  // The snapshot of the exchanges added so far, as finish() would make it, leaving the builder
  // as it was to take more: a live run's steps read the sample they are taking with it, inside
  // the stop, and the sample is finished once, after the detach. Costs a copy of the state and
  // the finishing work, not the exchanges' reading again.
  Snapshot peek() const;
  // The ids of the host threads finish() would list, in its order: cheaper than a peek.
  std::vector<std::string> host_thread_ids() const;
  // The host threads listed so far (-thread-info) with their LWPs, by id.
  std::vector<std::pair<std::string, std::uint64_t>> host_thread_lwps() const;
  // Takes the stacks of the threads `lwps` from `previous` (a builder of the sample before, its
  // threads and stacks matched by LWP: gdb numbers a core file's threads afresh), for threads this
  // one has no stack of yet. Stops by copy: those threads' stacks were byte for byte the same.
  void inherit_stacks(const Builder& previous, const std::vector<std::uint64_t>& lwps);

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// What every Builder of this process did so far (for tests and benchmarks).
struct BuilderCounts {
  std::uint64_t builders = 0; // made
  std::uint64_t added = 0;    // exchanges added
  std::uint64_t finished = 0; // finish() calls
  std::uint64_t peeked = 0;   // peek() calls
};
BuilderCounts builder_counts();

Snapshot build(const std::vector<mi::Exchange>& exchanges, BuildOptions options = {});

// Reads a transcript (raw MI log or rocplay recording) held in memory and builds its snapshot; the
// recording's meta is applied. Unparseable lines become warnings, never errors.
Snapshot build_from_transcript(std::string_view text, BuildOptions options = {},
                               mi::TranscriptInfo* info = nullptr);

// Demangles every name that entered the model mangled (dispatch kernels, wave functions, frames,
// source lines), keeping the linkage name beside it where the model has room for one. The
// builder and snapshot_from_json apply it; heuristics and reports only ever see demangled names.
void demangle_names(Snapshot& snapshot);

// The text after cuda-gdb's `Cuda Runtime API error detected: ` and `Cuda Driver error detected: `
// warnings, each once, into `errors` until it holds `max`.
inline constexpr std::size_t kMaxApiErrors = 8;
void take_cuda_api_errors(const mi::Exchange& exchange, std::vector<std::string>& errors,
                          std::size_t max = kMaxApiErrors);
// The CUDA driver's attach failure cuda-gdb printed in the exchange, if any, into `error`
// (the first one kept).
void take_gpu_attach_error(const mi::Exchange& exchange, std::string& error);
std::vector<std::string> cuda_api_errors(const std::vector<mi::Exchange>& exchanges,
                                         std::size_t max = kMaxApiErrors);

// The note a `launch --verify` run writes into its recording, and its reading (nullopt: not such a
// note; a note of ours that does not parse reads as a run with only what could be read).
inline constexpr std::string_view kLaunchRunNote = "launch run: ";
std::string launch_run_note(const LaunchRun& run);
std::optional<LaunchRun> read_launch_run_note(std::string_view note);

// Applies a recording's `# meta` JSON to a snapshot. Unknown keys are ignored; a value of the
// wrong type becomes a warning.
void apply_meta(Snapshot& snapshot, std::string_view meta_json);

} // namespace snapshot
} // namespace rocplay
