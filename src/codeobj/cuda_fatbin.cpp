// CUDA device code in host files (see rocplay/codeobj/cuda_fatbin.hpp).
#include "rocplay/codeobj/cuda_fatbin.hpp"

#include "codeobj/internal.hpp"
#include "rocplay/core/unique_fd.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <memory>

namespace rocplay::codeobj {

namespace {

// The container and entry headers as nvcc 13.0 writes them (tests/hardware/fatbin_fixtures.sh
// dumps them): a 16-byte container header, then entries of a header and a payload each.
constexpr std::uint32_t kFatbinMagic = 0xBA55ED50;
constexpr std::size_t kContainerHeaderBytes = 16;
constexpr std::size_t kEntryHeaderMinBytes = 64;
constexpr std::uint16_t kEntryKindElf = 2;
constexpr std::uint64_t kEntryCompressed = 0x8000; // in the entry's flags, at byte 40
constexpr std::size_t kMaxSections = 65'536;
constexpr std::array<std::uint8_t, 4> kElfMagic{0x7f, 'E', 'L', 'F'};

template <typename T> T load(std::span<const std::uint8_t> bytes, std::size_t at) {
  T v{};
  std::memcpy(&v, bytes.data() + at, sizeof v); // little-endian, as x86-64 hosts write it
  return v;
}

} // namespace

std::vector<ElfSection> elf_sections(std::span<const std::uint8_t> elf) {
  std::vector<ElfSection> out;
  init_libelf();
  // libelf reads, never writes, an image opened with elf_memory.
  std::unique_ptr<Elf, ElfCloser> e(
      elf_memory(const_cast<char*>(reinterpret_cast<const char*>(elf.data())), elf.size()));
  std::size_t shstrndx = 0;
  if (!e || elf_kind(e.get()) != ELF_K_ELF || elf_getshdrstrndx(e.get(), &shstrndx) != 0) {
    return out;
  }
  for (Elf_Scn* scn = elf_nextscn(e.get(), nullptr); scn != nullptr && out.size() < kMaxSections;
       scn = elf_nextscn(e.get(), scn)) {
    GElf_Shdr sh;
    if (gelf_getshdr(scn, &sh) == nullptr) {
      continue;
    }
    ElfSection s;
    s.name = bounded_name(elf_strptr(e.get(), shstrndx, sh.sh_name), 4096);
    s.address = sh.sh_addr;
    if (sh.sh_type != SHT_NOBITS) {
      if (sh.sh_offset > elf.size() || sh.sh_size > elf.size() - sh.sh_offset) {
        continue;
      }
      s.contents = elf.subspan(sh.sh_offset, sh.sh_size);
    }
    out.push_back(std::move(s));
  }
  return out;
}

std::optional<ElfSection> elf_section(std::span<const std::uint8_t> elf, std::string_view name) {
  for (auto& s : elf_sections(elf)) {
    if (s.name == name) {
      return std::move(s);
    }
  }
  return std::nullopt;
}

std::vector<std::span<const std::uint8_t>> fatbin_cubins(std::span<const std::uint8_t> fatbin,
                                                         std::size_t max_count) {
  std::vector<std::span<const std::uint8_t>> out;
  std::size_t at = 0;
  while (fatbin.size() - at >= kContainerHeaderBytes && out.size() < max_count) {
    if (load<std::uint32_t>(fatbin, at) != kFatbinMagic) {
      break;
    }
    const std::size_t header = load<std::uint16_t>(fatbin, at + 6);
    const std::uint64_t entries = load<std::uint64_t>(fatbin, at + 8);
    if (header < kContainerHeaderBytes || header > fatbin.size() - at ||
        entries > fatbin.size() - at - header) {
      break;
    }
    const std::size_t end = at + header + static_cast<std::size_t>(entries);
    std::size_t entry = at + header;
    while (end - entry >= kEntryHeaderMinBytes && out.size() < max_count) {
      const auto kind = load<std::uint16_t>(fatbin, entry);
      const std::size_t entry_header = load<std::uint32_t>(fatbin, entry + 4);
      const std::uint64_t payload = load<std::uint64_t>(fatbin, entry + 8);
      const auto flags = load<std::uint64_t>(fatbin, entry + 40);
      if (entry_header < kEntryHeaderMinBytes || entry_header > end - entry ||
          payload > end - entry - entry_header) {
        break;
      }
      const auto bytes = fatbin.subspan(entry + entry_header, static_cast<std::size_t>(payload));
      const bool elf = bytes.size() >= kElfMagic.size() &&
                       std::equal(kElfMagic.begin(), kElfMagic.end(), bytes.begin());
      if (kind == kEntryKindElf && (flags & kEntryCompressed) == 0 && elf &&
          std::none_of(out.begin(), out.end(), [&](const auto& seen) {
            return std::equal(seen.begin(), seen.end(), bytes.begin(), bytes.end());
          })) {
        out.push_back(bytes);
      }
      entry += entry_header + static_cast<std::size_t>(payload);
    }
    at = end;
  }
  return out;
}

std::optional<std::vector<std::uint8_t>> read_elf_file_section(const std::string& path,
                                                               std::string_view name,
                                                               std::uint64_t max_bytes,
                                                               std::string& why) {
  init_libelf();
  const UniqueFd file(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (file.get() < 0) {
    why = std::strerror(errno);
    return std::nullopt;
  }
  // Headers only: libelf reads the section table and names, never the sections' contents.
  std::unique_ptr<Elf, ElfCloser> e(elf_begin(file.get(), ELF_C_READ, nullptr));
  std::size_t shstrndx = 0;
  if (!e || elf_kind(e.get()) != ELF_K_ELF || elf_getshdrstrndx(e.get(), &shstrndx) != 0) {
    why = "not an ELF file";
    return std::nullopt;
  }
  for (Elf_Scn* scn = elf_nextscn(e.get(), nullptr); scn != nullptr;
       scn = elf_nextscn(e.get(), scn)) {
    GElf_Shdr sh;
    if (gelf_getshdr(scn, &sh) == nullptr ||
        bounded_name(elf_strptr(e.get(), shstrndx, sh.sh_name), 4096) != name) {
      continue;
    }
    if (sh.sh_type == SHT_NOBITS || sh.sh_size > max_bytes) {
      why = sh.sh_type == SHT_NOBITS ? "the section holds no bytes in the file"
                                     : "the section is larger than the bound";
      return std::nullopt;
    }
    std::vector<std::uint8_t> bytes(static_cast<std::size_t>(sh.sh_size));
    const auto got =
        ::pread(file.get(), bytes.data(), bytes.size(), static_cast<off_t>(sh.sh_offset));
    if (got < 0 || static_cast<std::size_t>(got) != bytes.size()) {
      why = "the section runs past the end of the file";
      return std::nullopt;
    }
    return bytes;
  }
  why = "no such section";
  return std::nullopt;
}

} // namespace rocplay::codeobj
