// AMDGPU code objects read offline: ELF files with machine AMDGPU, the clang offload bundles that
// hold them, and the `memory://` / `file://` URIs rocgdb and rocm-debug-agent print, resolved
// against saved files. Per kernel: its symbol, the AMDGPU metadata note and the kernel descriptor.
//
// Everything here is untrusted input: sizes, counts and offsets are checked against the bytes
// there are and against Limits; a malformed object gives a Problem, never a crash. Depends on
// nothing else in the project (elfutils' libelf and msgpuck underneath).
// Layer: src/codeobj/ (library rocplay_codeobj; docs/architecture.md).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace rocplay::codeobj {

struct Limits {
  std::uint64_t max_file_bytes = std::uint64_t{2} << 30; // a whole fat binary may be large
  std::size_t max_bundle_entries = 4096;
  std::size_t max_embedded_bundles = 1024; // bundles found inside a host executable
  std::size_t max_kernels = 200000;
  std::size_t max_symbols = 2000000;
  std::uint64_t max_note_bytes = std::uint64_t{64} << 20;
  std::size_t max_name_bytes = 65536;
};

// What went wrong with one input or one object in it: what happened and why (message), what to
// do next (hint).
struct Problem {
  std::string message;
  std::string hint;
};

// The fields of the `amdhsa.kernels` entry that say how the kernel uses the hardware. Absent
// keys stay empty: old compilers leave some out.
struct KernelMetadata {
  std::optional<std::uint32_t> vgpr_count; // on gfx90a and later: arch VGPRs + AGPRs (unified)
  std::optional<std::uint32_t> agpr_count;
  std::optional<std::uint32_t> sgpr_count; // with VCC, FLAT_SCRATCH and XNACK as allocated
  std::optional<std::uint32_t> vgpr_spill_count;
  std::optional<std::uint32_t> sgpr_spill_count;
  std::optional<std::uint32_t> group_segment_fixed_size;   // LDS bytes per workgroup
  std::optional<std::uint32_t> private_segment_fixed_size; // scratch bytes per work-item
  std::optional<std::uint32_t> wavefront_size;
  std::optional<std::uint32_t> kernarg_segment_size;
  std::optional<std::uint32_t> max_flat_workgroup_size;
  bool uses_dynamic_stack = false;
};

// The 64-byte kernel descriptor (LLVM AMDGPUUsage, "Kernel Descriptor", code object v3-v5).
struct KernelDescriptor {
  std::uint32_t group_segment_fixed_size = 0;
  std::uint32_t private_segment_fixed_size = 0;
  std::uint32_t kernarg_size = 0;
  std::int64_t kernel_code_entry_byte_offset = 0; // from the descriptor's own address
  std::uint32_t compute_pgm_rsrc3 = 0;
  std::uint32_t compute_pgm_rsrc1 = 0;
  std::uint32_t compute_pgm_rsrc2 = 0;
  std::uint16_t kernel_code_properties = 0;

  // COMPUTE_PGM_RSRC1 fields: register blocks as encoded (count = (blocks + 1) * granule).
  unsigned granulated_vgprs() const { return compute_pgm_rsrc1 & 0x3f; }
  unsigned granulated_sgprs() const { return (compute_pgm_rsrc1 >> 6) & 0xf; }
  bool wave32() const { return (kernel_code_properties & (1u << 10)) != 0; }
  bool uses_dynamic_stack() const { return (kernel_code_properties & (1u << 11)) != 0; }
  bool private_segment_enabled() const { return (compute_pgm_rsrc2 & 1u) != 0; }
};

struct Kernel {
  std::string name;                          // `.name` of the metadata, or the symbol without `.kd`
  std::string symbol;                        // the descriptor symbol, `NAME.kd`
  std::optional<std::uint64_t> code_address; // the FUNC symbol (or the descriptor's entry)
  std::uint64_t code_size = 0;
  std::optional<std::uint64_t> descriptor_address;
  bool has_metadata = false;
  KernelMetadata metadata;
  std::optional<KernelDescriptor> descriptor;
  // Wave size: metadata, else the descriptor's wave32 bit, else the architecture's default.
  unsigned wavefront_size(std::string_view arch) const;
};

// A function symbol, to name the code an address falls in (kernels and the device functions they
// call, such as `__assert_fail`).
struct Function {
  std::string name;
  std::uint64_t address = 0;
  std::uint64_t size = 0;
};

// An executable section's bytes, copied so the object outlives the buffer it was read from.
struct CodeSection {
  std::string name;
  std::uint64_t address = 0;
  std::vector<std::uint8_t> bytes;
};

struct CodeObject {
  std::string label;  // where it came from: the path, plus `[TRIPLE]` for a bundle entry
  std::string triple; // the bundle entry's triple, when it came from a bundle
  std::string arch;   // `gfx90a`, from e_flags (or the metadata's amdhsa.target)
  std::string target; // amdhsa.target as written, with feature suffixes (`gfx90a:xnack-`)
  std::uint32_t e_flags = 0;
  unsigned abi_version = 0; // ELF ABI version: 1 = code object v3, 2 = v4, 3 = v5
  unsigned code_object_version() const { return abi_version + 2; }
  std::optional<bool> xnack; // from e_flags (v4+); empty when "any"
  std::optional<bool> sramecc;
  std::vector<Kernel> kernels;
  std::vector<Function> functions; // sorted by address
  std::vector<CodeSection> code;
  std::vector<std::string> warnings; // read but incomplete: say what is missing and why

  const Kernel* find_kernel(std::string_view name) const; // by name or symbol
  const Function* function_at(std::uint64_t address) const;
  // The bytes from `address` to the end of its code section; empty when no section holds it.
  std::span<const std::uint8_t> code_at(std::uint64_t address) const;
};

struct ReadResult {
  std::vector<CodeObject> objects;
  std::vector<Problem> problems; // inputs or bundle entries that could not be read
};

// Reads one buffer: an AMDGPU ELF, a clang offload bundle, or a host ELF that embeds bundles
// (a HIP executable's .hip_fatbin). `label` names the input in messages and in each object.
ReadResult read_bytes(std::span<const std::uint8_t> bytes, const std::string& label,
                      const Limits& limits = {});

// A code-object URI as rocgdb (`info sharedlibrary`) and rocm-debug-agent print it.
struct Uri {
  std::string text;
  std::string protocol;            // `file` or `memory`
  std::string path;                // file://: the %-decoded path
  std::optional<std::int64_t> pid; // memory://PID
  std::uint64_t offset = 0;
  std::optional<std::uint64_t> size;
  // The name rocm-debug-agent's --save-code-objects gives the object: the URI with each of
  // `:/#?&=` replaced by `_`; some builds prefix `N_`.
  std::string saved_name;
};
std::optional<Uri> parse_uri(std::string_view text);

// A URI taken apart before a reader decides what it accepts (parse_uri takes only file:// and
// memory:// with a valid PID; the agent-log reader keeps any protocol): `PROTOCOL://PATH#K=V&..`
// of at most 8 KiB. `path` views `text`, still %-encoded; offset and size are the last valid
// `offset=` and `size=` values.
struct UriParts {
  std::string protocol; // lower case
  std::string_view path;
  std::optional<std::uint64_t> offset;
  std::optional<std::uint64_t> size;
  std::string saved_name; // as in Uri
};
std::optional<UriParts> split_uri(std::string_view text);
// `%20` -> ` `; a `%` not followed by two hex digits stays as it is.
std::string percent_decode(std::string_view path);

// Reads what a path or URI names. A URI is looked up first among the saved objects in
// `saved_dir` (by its saved name), then, for file://, at its path with its offset and size.
// A memory:// URI with no saved object is a Problem that says how to save one.
ReadResult read_input(const std::string& path_or_uri, const std::string& saved_dir = {},
                      const Limits& limits = {});

// The architecture named by e_flags' machine byte (`gfx90a` for 0x3f); empty when unknown.
std::string arch_from_e_flags(std::uint32_t e_flags);

// The .symtab index of the symbol `name` in an ELF of any machine (a CUDA device ELF that
// cuda-gdb kept: `nvdisasm -fun` takes this index); nullopt when the bytes are no ELF or hold no
// such symbol.
std::optional<std::size_t> symbol_index(std::span<const std::uint8_t> elf, std::string_view name);

} // namespace rocplay::codeobj
