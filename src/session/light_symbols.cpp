// See session/light_symbols.hpp.
#include "session/light_symbols.hpp"

#include "rocplay/core/temp_dir.hpp"
#include "rocplay/core/unique_fd.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>
#include <string_view>
#include <tuple>
#include <vector>

namespace rocplay::session {
namespace {

constexpr std::uint32_t kShtNull = 0;
constexpr std::uint32_t kShtSymtab = 2;
constexpr std::uint32_t kShtNobits = 8;
constexpr std::uint64_t kShfAlloc = 2;
constexpr std::size_t kEhdrSize = 64;
constexpr std::size_t kShdrSize = 64;
constexpr std::uint64_t kMaxShstrtab = 64ull << 20;

bool read_at(int fd, void* buffer, std::size_t size, std::uint64_t offset) {
  auto* out = static_cast<unsigned char*>(buffer);
  while (size > 0) {
    const ssize_t n = ::pread(fd, out, size, static_cast<off_t>(offset));
    if (n <= 0) {
      if (n < 0 && errno == EINTR) {
        continue;
      }
      return false;
    }
    out += n;
    size -= static_cast<std::size_t>(n);
    offset += static_cast<std::uint64_t>(n);
  }
  return true;
}

bool write_all(int fd, const void* buffer, std::size_t size) {
  const auto* in = static_cast<const unsigned char*>(buffer);
  while (size > 0) {
    const ssize_t n = ::write(fd, in, size);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      return false;
    }
    in += n;
    size -= static_cast<std::size_t>(n);
  }
  return true;
}

// Little-endian fields, whatever the host's order.
std::uint64_t le(const unsigned char* p, int bytes) {
  std::uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) {
    v = (v << 8) | p[i];
  }
  return v;
}
void put_le(unsigned char* p, std::uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) {
    p[i] = static_cast<unsigned char>(v >> (8 * i));
  }
}

struct SectionHeader {
  std::uint32_t name, type;
  std::uint64_t flags, addr, offset, size;
  std::uint32_t link, info;
  std::uint64_t addralign, entsize;

  static SectionHeader decode(const unsigned char* p) {
    return {static_cast<std::uint32_t>(le(p, 4)),
            static_cast<std::uint32_t>(le(p + 4, 4)),
            le(p + 8, 8),
            le(p + 16, 8),
            le(p + 24, 8),
            le(p + 32, 8),
            static_cast<std::uint32_t>(le(p + 40, 4)),
            static_cast<std::uint32_t>(le(p + 44, 4)),
            le(p + 48, 8),
            le(p + 56, 8)};
  }
  void encode(unsigned char* p) const {
    put_le(p, name, 4);
    put_le(p + 4, type, 4);
    put_le(p + 8, flags, 8);
    put_le(p + 16, addr, 8);
    put_le(p + 24, offset, 8);
    put_le(p + 32, size, 8);
    put_le(p + 40, link, 4);
    put_le(p + 44, info, 4);
    put_le(p + 48, addralign, 8);
    put_le(p + 56, entsize, 8);
  }
  bool inside(std::uint64_t file_size) const {
    return offset <= file_size && size <= file_size - offset;
  }
};

struct Elf {
  std::array<unsigned char, kEhdrSize> header{};
  std::vector<SectionHeader> sections;
  std::uint16_t shstrndx = 0;
  std::uint64_t file_size = 0;
};

// The header and section headers of an ELF64 little-endian file, each checked to lie inside it.
std::optional<Elf> read_elf(int fd) {
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    return std::nullopt;
  }
  Elf elf;
  elf.file_size = static_cast<std::uint64_t>(st.st_size);
  auto& h = elf.header;
  if (elf.file_size < kEhdrSize || !read_at(fd, h.data(), h.size(), 0) ||
      std::memcmp(h.data(),
                  "\x7f"
                  "ELF",
                  4) != 0 ||
      h[4] != 2 /* 64-bit */ || h[5] != 1 /* little-endian */) {
    return std::nullopt;
  }
  const std::uint64_t shoff = le(&h[0x28], 8);
  const auto shentsize = le(&h[0x3a], 2);
  const auto shnum = le(&h[0x3c], 2);
  elf.shstrndx = static_cast<std::uint16_t>(le(&h[0x3e], 2));
  // shnum 0 and shstrndx 0xffff mean the real values sit in section 0: not worth the case.
  if (shentsize != kShdrSize || shnum == 0 || elf.shstrndx >= shnum || shoff > elf.file_size ||
      shnum * kShdrSize > elf.file_size - shoff) {
    return std::nullopt;
  }
  std::vector<unsigned char> table(shnum * kShdrSize);
  if (!read_at(fd, table.data(), table.size(), shoff)) {
    return std::nullopt;
  }
  for (std::size_t i = 0; i < shnum; ++i) {
    elf.sections.push_back(SectionHeader::decode(&table[i * kShdrSize]));
  }
  return elf;
}

bool kept_whole(std::string_view name) {
  static constexpr std::array<std::string_view, 10> kKept = {
      ".dynsym",       ".dynstr",   ".gnu.version",       ".gnu.version_d", ".gnu.version_r",
      ".eh_frame_hdr", ".eh_frame", ".note.gnu.build-id", ".gnu_debuglink", ".shstrtab"};
  return std::find(kKept.begin(), kKept.end(), name) != kKept.end();
}

bool copy_range(int from, int to, std::uint64_t offset, std::uint64_t size) {
  std::vector<unsigned char> buffer(std::min<std::uint64_t>(size, 1u << 20));
  while (size > 0) {
    const auto n = static_cast<std::size_t>(std::min<std::uint64_t>(size, buffer.size()));
    if (!read_at(from, buffer.data(), n, offset) || !write_all(to, buffer.data(), n)) {
      return false;
    }
    offset += n;
    size -= n;
  }
  return true;
}

bool write_copy(int source, const Elf& elf, int dest) {
  const SectionHeader& shstr = elf.sections[elf.shstrndx];
  if (shstr.type == kShtNobits || !shstr.inside(elf.file_size) || shstr.size > kMaxShstrtab) {
    return false;
  }
  std::string names(shstr.size, '\0');
  if (!read_at(source, names.data(), names.size(), shstr.offset)) {
    return false;
  }
  auto name_of = [&](const SectionHeader& s) -> std::string_view {
    if (s.name >= names.size()) {
      return {};
    }
    const auto end = names.find('\0', s.name);
    return end == std::string::npos ? std::string_view{}
                                    : std::string_view(names).substr(s.name, end - s.name);
  };

  std::vector<SectionHeader> out = elf.sections;
  std::uint64_t position = kEhdrSize;
  if (!write_all(dest, elf.header.data(), kEhdrSize)) { // rewritten at the end
    return false;
  }
  for (std::size_t i = 1; i < out.size(); ++i) {
    SectionHeader& s = out[i];
    if (s.type != kShtNull && s.type != kShtNobits && kept_whole(name_of(s)) &&
        s.inside(elf.file_size)) {
      const std::uint64_t align = std::clamp<std::uint64_t>(s.addralign, 1, 4096);
      const std::uint64_t padded = (position + align - 1) / align * align;
      const std::vector<unsigned char> zeros(padded - position);
      if (!write_all(dest, zeros.data(), zeros.size()) ||
          !copy_range(source, dest, s.offset, s.size)) {
        return false;
      }
      s.offset = padded;
      position = padded + s.size;
    } else if ((s.flags & kShfAlloc) != 0) {
      s.type = kShtNobits; // the address range stays for GDB to map PCs; the bytes go
      s.offset = 0;
    } else {
      s = SectionHeader{s.name, kShtNull, 0, 0, 0, 0, 0, 0, 0, 0};
    }
  }
  const std::uint64_t table_at = (position + 7) / 8 * 8;
  std::vector<unsigned char> table(table_at - position + out.size() * kShdrSize);
  for (std::size_t i = 0; i < out.size(); ++i) {
    out[i].encode(&table[table_at - position + i * kShdrSize]);
  }
  if (!write_all(dest, table.data(), table.size())) {
    return false;
  }
  auto header = elf.header;
  put_le(&header[0x20], 0, 8); // e_phoff: no program headers (they would point past the end)
  put_le(&header[0x28], table_at, 8);
  put_le(&header[0x38], 0, 2); // e_phnum
  return ::pwrite(dest, header.data(), header.size(), 0) == static_cast<ssize_t>(header.size());
}

} // namespace

std::optional<std::uint64_t> symtab_entries(const std::string& path) {
  const UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) {
    return std::nullopt;
  }
  const auto elf = read_elf(fd.get());
  if (!elf) {
    return std::nullopt;
  }
  std::uint64_t entries = 0;
  for (const auto& s : elf->sections) {
    if (s.type == kShtSymtab && s.inside(elf->file_size)) {
      entries += s.size / 24;
    }
  }
  return entries;
}

bool write_light_copy(const std::string& source, const std::string& dest) {
  const UniqueFd in(::open(source.c_str(), O_RDONLY | O_CLOEXEC));
  if (in.get() < 0) {
    return false;
  }
  const auto elf = read_elf(in.get());
  if (!elf) {
    return false;
  }
  bool ok = false;
  {
    const UniqueFd out(::open(dest.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
    if (out.get() < 0) {
      return false; // never unlink a file this call did not create
    }
    ok = write_copy(in.get(), *elf, out.get());
  }
  if (!ok) {
    ::unlink(dest.c_str());
  }
  return ok;
}

namespace {

// The library as it is on disk now: a copy made from another version of it is not reused.
struct LibraryKey {
  std::string path;
  dev_t device = 0;
  ino_t inode = 0;
  off_t size = 0;
  std::int64_t mtime_ns = 0;
  auto tie() const { return std::tie(path, device, inode, size, mtime_ns); }
  bool operator<(const LibraryKey& other) const { return tie() < other.tie(); }
};

struct Registry {
  std::mutex mutex;
  std::string dir; // empty until the first copy
  std::size_t files_written = 0;
  std::map<LibraryKey, std::weak_ptr<const std::string>> copies;
};

Registry& registry() {
  static Registry r; // never destroyed before a session that uses it: sessions end first
  return r;
}

// Called with the registry unlocked: removes the file, and the directory once nothing is left.
void release_copy(const std::string* path) {
  auto& r = registry();
  std::lock_guard lock(r.mutex);
  ::unlink(path->c_str());
  for (auto it = r.copies.begin(); it != r.copies.end();) {
    it = it->second.expired() ? r.copies.erase(it) : std::next(it);
  }
  if (r.copies.empty() && !r.dir.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(r.dir, ec);
    r.dir.clear();
  }
  delete path;
}

} // namespace

std::shared_ptr<const std::string> shared_light_copy(const std::string& library, std::string* why) {
  struct stat st {};
  if (::stat(library.c_str(), &st) != 0) {
    return nullptr;
  }
  const LibraryKey key{library, st.st_dev, st.st_ino, st.st_size,
                       static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 +
                           st.st_mtim.tv_nsec};
  auto& r = registry();
  std::unique_lock lock(r.mutex);
  if (auto existing = r.copies[key].lock()) {
    return existing;
  }
  if (r.dir.empty()) {
    std::string problem;
    auto dir = make_private_temp_dir("rocplay-symbols", problem);
    if (!dir) {
      if (why != nullptr) {
        *why = "no temporary directory for them (" + problem + ")";
      }
      r.copies.erase(key);
      return nullptr;
    }
    r.dir = std::move(*dir);
  }
  // A number first: two libraries of one name from different directories.
  const std::string dest = r.dir + "/" + std::to_string(r.files_written++) + "-" +
                           std::filesystem::path(library).filename().string();
  if (!write_light_copy(library, dest)) {
    r.copies.erase(key);
    if (r.copies.empty()) {
      std::error_code ec;
      std::filesystem::remove_all(r.dir, ec);
      r.dir.clear();
    }
    return nullptr;
  }
  std::shared_ptr<const std::string> copy(new std::string(dest), release_copy);
  r.copies[key] = copy;
  return copy;
}

} // namespace rocplay::session
