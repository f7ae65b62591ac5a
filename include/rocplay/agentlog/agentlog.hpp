// The fault path: rocm-debug-agent wave dumps, found inside ordinary server logs, parsed into
// typed waves and turned into grouped fault reports.
//
// Hangs go through rocgdb; faults and device asserts (ASSERT_TRAP, MEMORY_VIOLATION, ...) go
// through rocm-debug-agent (HSA_TOOLS_LIB=librocm-debug-agent.so.2), which prints, per stopped
// wave:
//
//   --------------------------------------------------------
//   wave_27876: pc=0x7f20f5e534c4 (kernel_code_entry=0x7f20f5e52900 <FQN>) (stopped, reason: R)
//
//   scalar registers:   s0: ffffffff   s1: ...
//   vector registers:   v0: [0] 95f02814 [1] 95f02818 ...
//   general registers:  pc: 00007f20f5e534c4   exec: f800000000000000 ...
//
//   Disassembly for function FQN:
//       code object: memory://2188702#offset=0x546c3060&size=4026672
//       loaded at: [0x7f20f5e00000-0x7f20f615ff09]
//    => 0x7f20f5e534c4 <+3012>:    s_endpgm
//
//   End of disassembly.
//
// Older agents (ROCm 6.3) print `wave_N: pc=0x... (stopped, reason: R)` with no kernel, and the
// disassembly before the waves. Both are read. Docs: docs/agent-log.md.
//
// Input is untrusted: lines, waves, lanes and stored register values are bounded (Limits), and a
// dump cut off mid-block, unknown reasons or binary junk give warnings with line numbers, never
// an exception. Nothing here reads files, prints or runs anything: the report renders it
// (report_agent_log.hpp: text, JSON, findings).
#pragma once

#include "rocplay/codeobj/fit.hpp"
#include "rocplay/core/finding.hpp"
#include "rocplay/isa/instructions.hpp"
#include "rocplay/kernels/kernel_names.hpp"

#include <cstdint>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace rocplay::agentlog {

struct Limits {
  std::size_t max_line_bytes = 256 * 1024; // longer lines are cut (with a warning)
  std::size_t max_waves = 65536;           // per log; later waves are counted, not kept
  std::size_t max_lanes = 128;             // per vector register
  std::size_t max_registers = 2048;        // per wave
  std::size_t max_lane_values = 16u << 20; // per log; beyond it vector registers are dropped
  std::size_t max_memory_rows = 4096;      // per memory block
  std::size_t max_instructions = 256;      // per disassembly block
  std::size_t max_warnings = 1000;         // per log; the rest are counted
  std::size_t max_streams = 1024;          // distinct line prefixes demultiplexed
};

struct Warning {
  std::size_t line = 0; // 1-based; 0 when it concerns the whole input
  std::string message;
};

struct Register {
  std::string name; // `s0`, `v6`, `exec`, `pc`, `ttmp4`
  bool vector = false;
  std::uint64_t value = 0;          // scalar-like registers
  std::vector<std::uint32_t> lanes; // vector registers: value of lane i at [i]
  std::vector<bool> present;        // lane i was printed (the seed's trimmed dumps skip lanes)
  std::optional<std::uint32_t> lane(std::size_t i) const;
};

struct RegisterClass {
  std::string name; // `scalar`, `system`, `trap`, `vector`, `general`
  std::vector<Register> registers;
};

struct MemoryRow {
  std::uint64_t address = 0;
  std::vector<std::uint32_t> words;
};

struct MemoryBlock {
  std::string title;                       // `Local memory content (256 bytes)`
  std::optional<std::uint64_t> size_bytes; // from the title
  std::vector<MemoryRow> rows;
};

struct Instruction {
  std::uint64_t address = 0;
  std::optional<std::int64_t> offset; // `<+3012>`: from the start of the function symbol
  std::string text;                   // `s_endpgm`
  bool at_pc = false;                 // the `=>` line
  std::size_t line = 0;
};

struct CodeObject {
  std::string uri;                     // as printed
  std::string protocol;                // `memory` or `file`
  std::string path;                    // file:// path, %-decoded
  std::optional<std::int64_t> pid;     // memory://PID
  std::optional<std::uint64_t> offset; // hex or decimal in the URI
  std::optional<std::uint64_t> size;
  // What `--save-code-objects` writes: the URI with each of `:/#?&=` replaced by `_`
  // (`memory___2188702_offset_0x546c3060_size_4026672`). Some agent builds prefix `N_`.
  std::string saved_name;
};
std::optional<CodeObject> parse_code_object_uri(std::string_view uri);

struct Disassembly {
  std::string function; // after `Disassembly for function`; empty when the agent found none
  std::optional<CodeObject> code_object;
  std::optional<std::uint64_t> load_begin;
  std::optional<std::uint64_t> load_end;
  std::vector<Instruction> instructions;
  std::vector<std::string> source_lines; // source context the agent printed, if any
  bool complete = false;                 // `End of disassembly.` seen
  std::size_t line = 0;
  const Instruction* at_pc() const;
};

struct Wave {
  std::uint64_t id = 0; // wave_N (a debugger-API handle, unique per process)
  std::uint64_t pc = 0;
  std::optional<std::uint64_t> kernel_code_entry;
  std::string kernel; // symbol as printed between <...>; empty on old agents
  std::optional<std::uint64_t> kernargs;
  std::vector<std::string> reasons; // `ASSERT_TRAP`; several when the agent prints `A|B`
  bool running = false;             // `(running)`: printed with --all, not stopped
  std::vector<RegisterClass> registers;
  std::vector<MemoryBlock> memory;
  std::optional<std::size_t> disassembly; // index into Dump::disassemblies
  bool disassembly_inferred = false;      // matched by address, not printed after this wave
  bool vector_registers_dropped = false;  // over Limits::max_lane_values
  bool truncated = false;                 // the dump ended before this wave's registers did
  std::size_t line = 0;
  const Register* find_register(std::string_view name) const;
};

// What the runtime itself printed about the fault (not the agent):
// `Memory access fault by GPU node-4 (Agent handle: 0x...) on address 0x7ffb6a0f6000. Reason: ...`,
// `OFFLOAD ERROR: memory access fault by GPU 4 (agent 0x...) at virtual address 0x... Reasons:
// ...`, or a HIP queue abort with an HSA status (`HSA_STATUS_ERROR_EXCEPTION`).
struct HostFault {
  std::string kind; // `memory-access-fault` or `queue-error`
  std::string text; // the line, bounded
  std::optional<std::uint64_t> address;
  std::string gpu;    // `node-4` / `4`
  std::string reason; // `Write access to a read-only page.` / `HSA_STATUS_ERROR_EXCEPTION`
  std::string stream;
  std::size_t line = 0;
};

struct Dump {
  std::size_t first_line = 0;
  std::size_t last_line = 0;
  std::string stream; // the line prefix that carried it (`[1,3]`, `VllmWorker rank=3 pid=7`)
  std::optional<int> rank;
  std::optional<std::int64_t> pid; // from memory://PID code objects or the stream prefix
  std::vector<Wave> waves;
  std::vector<Disassembly> disassemblies;
};

struct AgentLog {
  std::string source; // file name, for messages
  std::size_t lines = 0;
  std::uint64_t bytes = 0;
  std::vector<Dump> dumps;
  std::vector<HostFault> host_faults;
  std::vector<Warning> warnings;
  std::size_t warnings_dropped = 0;
  std::size_t waves_dropped = 0; // over Limits::max_waves
  std::size_t wave_count() const;
};

struct ParseOptions {
  std::string source;      // file name, for messages and rank inference (`rank3.log`)
  std::optional<int> rank; // force the rank of every dump (one file per rank)
  Limits limits;
};

// Cheap test for "this text has rocm-debug-agent output in it" (postmortem uses it to route).
bool looks_like_agent_log(std::string_view text);

// Incremental parser: feed lines (without their newline) as they come, then finish().
class Parser {
public:
  explicit Parser(ParseOptions options = {});
  ~Parser();
  Parser(const Parser&) = delete;
  Parser& operator=(const Parser&) = delete;
  Parser(Parser&&) noexcept;
  Parser& operator=(Parser&&) noexcept;

  void feed_line(std::string_view line);
  AgentLog finish();

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

AgentLog parse(std::string_view text, const ParseOptions& options = {});
// Reads the stream in bounded chunks (a multi-gigabyte log is fine; so is one without newlines).
AgentLog parse(std::istream& in, const ParseOptions& options = {});

// ---------------------------------------------------------------------------------------------
// Analysis: waves grouped by (kernel, offset in kernel, reason), explained.

struct ReasonInfo {
  std::string_view name;
  bool known = false;
  bool fault = true; // false for BREAKPOINT, SINGLE_STEP, running waves ...
  Severity severity = Severity::Error;
  std::string_view meaning; // one sentence
  std::string_view next_step;
};
ReasonInfo explain_reason(std::string_view reason);

struct WaveRef {
  std::size_t log = 0;  // index into the logs given to analyze()
  std::size_t dump = 0; // index into AgentLog::dumps
  std::uint64_t wave = 0;
  std::uint64_t pc = 0;
  std::size_t line = 0;
  std::optional<int> rank;
  std::optional<std::int64_t> pid;
};

// One vector register over the group's waves: what the lanes that were active (exec) at the
// fault held, against the inactive ones. At an assert the active lanes are the failing ones.
struct LaneSample {
  std::uint64_t wave = 0;
  std::uint32_t lane = 0;
  std::uint32_t value = 0;
};
struct RegisterSummary {
  std::string name;
  std::size_t waves = 0;
  std::vector<std::uint32_t> active_values; // distinct, ascending, bounded
  std::size_t active_distinct = 0;
  std::optional<std::uint32_t> active_min, active_max;
  std::optional<std::uint32_t> other_min, other_max;
  std::size_t off_pattern = 0; // active lanes whose value breaks the lane-to-lane stride
  bool stands_out = false;     // every active value lies outside the inactive lanes' range
  std::vector<LaneSample> samples;
  std::string basis; // `exec` or `stride` (lanes off the register's lane-to-lane pattern)
};

struct ExecSummary {
  std::size_t waves_with_exec = 0;
  std::optional<std::uint64_t> mask;       // when every wave had the same exec
  std::vector<std::uint32_t> active_lanes; // union over the group
  std::size_t lane_count = 0;              // lanes per wave (32 or 64), from the vector registers
};

// For MEMORY_VIOLATION: the access, decoded, and the per-lane addresses it used.
struct AccessAddress {
  std::uint64_t wave = 0;
  std::uint32_t lane = 0;
  std::uint64_t address = 0;
  bool in_fault_page = false; // inside the page the runtime reported
};
struct MemoryAccess {
  Instruction instruction; // the access (at the PC or the nearest memory op before it)
  bool at_pc = false;
  std::string kind; // global, flat, buffer, scratch, scalar, ds
  bool store = false;
  std::string address_operand; // `v[0:1]`, `v2` (+ base), `s[4:5]`
  std::string base_operand;    // global saddr / scalar base, when not `off`
  std::int64_t immediate_offset = 0;
  std::vector<AccessAddress> addresses; // bounded; empty when not computable (buffer, scratch)
  std::string note;
};

// What the saved code object says about a fault group (agent-log --code-objects DIR): the
// instructions decoded from the file itself, not the agent's few lines.
struct SavedObjectView {
  std::string path;
  std::string arch;
  std::string function; // the function holding the PC (`__assert_fail` for an assert)
  std::uint64_t pc = 0; // ELF address
  std::vector<isa::Instruction> window; // the faulting instruction, the 16 before, 4 after
  std::optional<isa::Loop> loop;
  bool trap = false; // `s_trap 2` at or just before the PC
  std::optional<std::uint64_t> trap_address;
  bool assert_confirmed = false; // an ASSERT_TRAP stop and the trap is there
  std::string kernel;            // the kernel whose fit is given
  std::optional<codeobj::Fit> fit;
  std::string decoder;
  std::string problem; // why the object could not be read or decoded
  std::string hint;
};

struct FaultGroup {
  KernelInfo kernel;         // classified; kernel.name empty when the agent did not name it
  std::string kernel_source; // `wave line`, `disassembly`, or empty
  std::string reason;        // `ASSERT_TRAP` (joined with `|` when several)
  ReasonInfo reason_info;
  std::string meaning; // reason_info.meaning, specialised to the kernel when we can
  std::optional<std::uint64_t> kernel_offset; // pc - kernel_code_entry
  std::vector<std::uint64_t> pcs;             // distinct, bounded
  std::vector<WaveRef> waves;                 // bounded sample; wave_count has the total
  std::size_t wave_count = 0;
  std::size_t dump_count = 0;
  std::vector<int> ranks;
  std::vector<std::int64_t> pids;
  std::optional<Instruction> instruction; // at the PC
  std::vector<Instruction> context;       // the disassembly window around it
  std::optional<CodeObject> code_object;
  std::optional<std::uint64_t> load_base;
  std::optional<std::uint64_t> elf_address; // pc - load base: how llvm-objdump numbers it
  std::string saved_file;                   // resolved in the code-object dir, or a glob
  bool saved_file_found = false;
  std::string objdump_command;
  std::string grep_command;
  std::string extract_command; // file:// code objects: cut it out of the file
  ExecSummary exec;
  std::vector<RegisterSummary> registers; // the interesting ones first, bounded
  std::optional<MemoryAccess> access;
  std::optional<HostFault> host_fault; // the runtime's line for this fault, if near
  std::vector<std::string> caveats;
  std::vector<std::string> notes; // truncation and other per-group remarks
  std::optional<SavedObjectView> saved_object;
};

struct AnalyzeOptions {
  std::string objdump = "/opt/rocm/llvm/bin/llvm-objdump";
  std::string code_object_dir;                 // where --save-code-objects wrote (for commands)
  std::vector<std::string> saved_code_objects; // file names listed there, to resolve N_ prefixes
  std::size_t max_wave_refs = 64;              // per group
  std::size_t max_registers = 8;               // register summaries per group
  bool read_code_objects = false; // open the saved objects in code_object_dir (SavedObjectView)
};

struct Report {
  std::vector<std::string> sources;
  std::size_t dumps = 0;
  std::size_t waves = 0;
  std::size_t waves_dropped = 0;
  std::vector<FaultGroup> groups; // most waves first
  std::vector<HostFault> host_faults;
  std::vector<std::pair<std::string, Warning>> warnings; // (source, warning)
  std::size_t warnings_dropped = 0;
  bool empty() const { return groups.empty(); }
};

Report analyze(const std::vector<AgentLog>& logs, const AnalyzeOptions& options = {});

// What to say when no dumps were found (also used by postmortem).
constexpr std::string_view kNoDumpsMessage = "no wave dumps found";
constexpr std::string_view kNoDumpsHint =
    "rocm-debug-agent prints wave dumps only on a fault or trap (ASSERT_TRAP, MEMORY_VIOLATION, "
    "...); a silent hang with the GPU at 100% needs `rocplay run hang-triage --pid PID` instead "
    "(without HSA_TOOLS_LIB set, so rocgdb can attach)";

} // namespace rocplay::agentlog
