// CUDA device code in host files: the `.nv_fatbin` section nvcc links into an executable or a
// library holds containers of device ELFs (cubins) and PTX, and cuda-gdb's copy of a loaded
// module is one of those cubins at the addresses it runs at (docs/code-objects.md).
// Layer: src/codeobj/ (library rocplay_codeobj; docs/architecture.md).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace rocplay::codeobj {

struct ElfSection {
  std::string name;
  std::uint64_t address = 0;              // sh_addr: where a loaded module's code runs
  std::span<const std::uint8_t> contents; // empty for NOBITS
};
// The sections of an ELF image of any machine, in order (at most 65,536); empty when the bytes
// are no ELF. Sections that run past the image are left out.
std::vector<ElfSection> elf_sections(std::span<const std::uint8_t> elf);
std::optional<ElfSection> elf_section(std::span<const std::uint8_t> elf, std::string_view name);

// The cubins stored uncompressed in a `.nv_fatbin` section, in order, each once, at most
// `max_count`. Compressed entries (`-Xfatbin -compress-all`) and PTX are passed over; so is
// anything past a malformed container.
std::vector<std::span<const std::uint8_t>> fatbin_cubins(std::span<const std::uint8_t> fatbin,
                                                         std::size_t max_count = 64);

// The contents of section `name` of the ELF file at `path`, read without the rest of the file;
// nullopt with `why` when the file is no ELF, has no such section, or it is over `max_bytes`.
std::optional<std::vector<std::uint8_t>> read_elf_file_section(const std::string& path,
                                                               std::string_view name,
                                                               std::uint64_t max_bytes,
                                                               std::string& why);

} // namespace rocplay::codeobj
