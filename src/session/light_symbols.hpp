// Symbol-light copies of huge shared libraries, for gdb's symbol preload and cuda-gdb's sysroot
// (session/light_sysroot.hpp). GDB spends most of an attach to a PyTorch process reading
// .symtab: libtorch_cpu.so and libtorch_cuda.so hold 765,000 entries, and cuda-gdb 13.0 takes
// 7.3 s for libtorch_cuda.so alone, where a copy that keeps only the exported symbols (.dynsym)
// and the unwind tables (.eh_frame) takes 0.3 s (docs/hardware-validation.md, 2026-11-24). The
// copy keeps every section header at its address, so GDB maps PCs and unwinds through the
// library as before; a PC in a function the library does not export reads `??` rather than a
// wrong name. Internal to src/session.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace rocplay::session {

// .symtab entries of an ELF64 little-endian file; nullopt when the file is not one, or its
// section headers cannot be read.
std::optional<std::uint64_t> symtab_entries(const std::string& path);

// Writes to `dest` a copy of the ELF file `source` whose section headers are all kept (same
// addresses and sizes, no program headers), with contents only for what names exported
// functions and unwinds (.dynsym, .dynstr, symbol versions, .eh_frame, .eh_frame_hdr, the
// build-id note, .gnu_debuglink, .shstrtab); the other allocated sections become SHT_NOBITS and
// the rest (.symtab, .strtab, .debug_*) SHT_NULL. Returns false, and writes nothing that stays,
// when `source` is not an ELF64 little-endian file whose headers lie inside it.
bool write_light_copy(const std::string& source, const std::string& dest);

// A light copy of `library` shared by every session of this process that preloads it while it is
// unchanged on disk (a fan-out over 8 ranks writes one copy, not 8), in one private directory
// under $TMPDIR (or /tmp). The file is removed when the last holder lets go, and the directory
// with the last file. nullptr when no copy can be made; `why` then says so when the directory
// could not be created.
std::shared_ptr<const std::string> shared_light_copy(const std::string& library,
                                                     std::string* why = nullptr);

} // namespace rocplay::session
