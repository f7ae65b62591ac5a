// A capture written as an ELF core file (rocplay/capture/capture.hpp), laid out like the kernel's:
// the ELF header, the program headers (PT_NOTE first, then one PT_LOAD per region), the notes, and
// the memory from the next page on.
#include "rocplay/capture/capture.hpp"
#include "rocplay/core/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#if defined(__linux__) && defined(__x86_64__)
#include <elf.h>
#include <fcntl.h>
#include <sys/procfs.h>
#include <sys/uio.h>
#include <unistd.h>

#include <csignal>
#endif

namespace rocplay::capture {

#if defined(__linux__) && defined(__x86_64__)

namespace {

constexpr std::uint64_t kPageSize = 4096;

std::uint64_t align_up(std::uint64_t v, std::uint64_t a) {
  return (v + a - 1) / a * a;
}

void put(std::string& out, const void* p, std::size_t n) {
  out.append(static_cast<const char*>(p), n);
}
void put_u64(std::string& out, std::uint64_t v) {
  put(out, &v, 8);
}
void pad4(std::string& out) {
  out.append(align_up(out.size(), 4) - out.size(), '\0');
}

// One note: header, name "CORE" (NUL included, padded to 4), descriptor (padded to 4).
void note(std::string& out, std::uint32_t type, const void* desc, std::size_t size) {
  static constexpr char kName[] = "CORE";
  Elf64_Nhdr h{};
  h.n_namesz = sizeof kName;
  h.n_descsz = static_cast<Elf64_Word>(size);
  h.n_type = type;
  put(out, &h, sizeof h);
  put(out, kName, sizeof kName);
  pad4(out);
  put(out, desc, size);
  pad4(out);
}

void copy_field(char* dst, std::size_t cap, const std::string& src) {
  std::memset(dst, 0, cap);
  std::memcpy(dst, src.data(), std::min(cap - 1, src.size()));
}

std::string notes(const Capture& c) {
  std::string out;
  elf_prpsinfo ps{};
  ps.pr_sname = 'R';
  ps.pr_pid = static_cast<int>(c.pid);
  ps.pr_pgrp = static_cast<int>(c.pid);
  ps.pr_sid = static_cast<int>(c.pid);
  copy_field(ps.pr_fname, sizeof ps.pr_fname, c.command_name);
  copy_field(ps.pr_psargs, sizeof ps.pr_psargs,
             c.command_line.empty() ? c.command_name : c.command_line);
  note(out, NT_PRPSINFO, &ps, sizeof ps);
  for (const auto& t : c.threads) {
    elf_prstatus st{};
    const int sig = t.pending_signal != 0 ? t.pending_signal : SIGSTOP;
    st.pr_info.si_signo = sig;
    st.pr_cursig = static_cast<short>(sig);
    st.pr_pid = static_cast<int>(t.tid);
    st.pr_pgrp = static_cast<int>(c.pid);
    st.pr_sid = static_cast<int>(c.pid);
    std::memcpy(&st.pr_reg, t.prstatus_regs.data(),
                std::min(sizeof st.pr_reg, t.prstatus_regs.size()));
    st.pr_fpvalid = t.fp_regs.empty() ? 0 : 1;
    note(out, NT_PRSTATUS, &st, sizeof st);
    if (!t.fp_regs.empty()) {
      note(out, NT_FPREGSET, t.fp_regs.data(), t.fp_regs.size());
    }
  }
  note(out, NT_AUXV, c.auxv.data(), c.auxv.size());
  // NT_FILE: count, page size, then (start, end, offset in pages) per mapping, then the paths.
  std::string files;
  put_u64(files, c.files.size());
  put_u64(files, kPageSize);
  for (const auto& f : c.files) {
    put_u64(files, f.start);
    put_u64(files, f.end);
    put_u64(files, f.offset / kPageSize);
  }
  for (const auto& f : c.files) {
    files.append(f.path.c_str(), std::strlen(f.path.c_str()) + 1);
  }
  note(out, NT_FILE, files.data(), files.size());
  return out;
}

class File {
public:
  // Writes `path`, naming `shown` in errors.
  File(const std::string& path, std::string shown) : path_(std::move(shown)) {
    fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd_ < 0) {
      fail("cannot create");
    }
  }
  ~File() {
    if (fd_ >= 0) {
      ::close(fd_);
    }
  }
  File(const File&) = delete;
  File& operator=(const File&) = delete;

  void write(const void* data, std::size_t size) {
    const char* p = static_cast<const char*>(data);
    while (size > 0) {
      const ssize_t n = ::write(fd_, p, size);
      if (n < 0 && errno == EINTR) {
        continue;
      }
      if (n <= 0) {
        fail("cannot write");
      }
      p += n;
      size -= static_cast<std::size_t>(n);
    }
  }
  void close() {
    const int fd = fd_;
    fd_ = -1;
    if (::close(fd) != 0) {
      fail("cannot write");
    }
  }

private:
  [[noreturn]] void fail(const char* what) {
    const int err = errno;
    throw Error(ExitCode::NoInput,
                fmt::format("{} the core file {}: {}", what, path_, std::strerror(err)),
                "check that its directory exists, is writable and has room (a core holds the "
                "threads' stacks)");
  }
  std::string path_;
  int fd_ = -1;
};

} // namespace

void write_core(const Capture& c, const std::string& path) {
  const std::string note_bytes = notes(c);
  const std::size_t segments = 1 + c.memory.size();
  // More than 65534 segments: e_phnum holds PN_XNUM and section header 0 the count (like the
  // kernel).
  const bool extended = segments >= PN_XNUM;
  const std::uint64_t ph_off = sizeof(Elf64_Ehdr);
  const std::uint64_t notes_off = ph_off + segments * sizeof(Elf64_Phdr);
  const std::uint64_t sh_off = align_up(notes_off + note_bytes.size(), 8);
  const std::uint64_t data_off = align_up(sh_off + (extended ? sizeof(Elf64_Shdr) : 0), kPageSize);

  std::string head;
  head.reserve(data_off);
  Elf64_Ehdr eh{};
  std::memcpy(eh.e_ident, ELFMAG, SELFMAG);
  eh.e_ident[EI_CLASS] = ELFCLASS64;
  eh.e_ident[EI_DATA] = ELFDATA2LSB;
  eh.e_ident[EI_VERSION] = EV_CURRENT;
  eh.e_ident[EI_OSABI] = ELFOSABI_NONE;
  eh.e_type = ET_CORE;
  eh.e_machine = EM_X86_64;
  eh.e_version = EV_CURRENT;
  eh.e_phoff = ph_off;
  eh.e_ehsize = sizeof(Elf64_Ehdr);
  eh.e_phentsize = sizeof(Elf64_Phdr);
  eh.e_phnum = static_cast<Elf64_Half>(extended ? PN_XNUM : segments);
  if (extended) {
    eh.e_shoff = sh_off;
    eh.e_shentsize = sizeof(Elf64_Shdr);
    eh.e_shnum = 1;
  }
  put(head, &eh, sizeof eh);

  Elf64_Phdr ph{};
  ph.p_type = PT_NOTE;
  ph.p_offset = notes_off;
  ph.p_filesz = note_bytes.size();
  ph.p_align = 4;
  put(head, &ph, sizeof ph);
  std::uint64_t at = data_off;
  for (const auto& r : c.memory) {
    ph = Elf64_Phdr{};
    ph.p_type = PT_LOAD;
    ph.p_flags = PF_R | PF_W;
    ph.p_offset = at;
    ph.p_vaddr = r.address;
    ph.p_filesz = r.bytes.size();
    ph.p_memsz = r.bytes.size();
    ph.p_align = 1;
    put(head, &ph, sizeof ph);
    at = align_up(at + r.bytes.size(), 8);
  }
  head += note_bytes;
  head.append(sh_off - head.size(), '\0');
  if (extended) {
    Elf64_Shdr sh{};
    sh.sh_info = static_cast<Elf64_Word>(segments);
    put(head, &sh, sizeof sh);
  }
  head.append(data_off - head.size(), '\0');

  // A temporary name beside `path`, renamed once complete: a reader never sees half a core.
  const std::string tmp = path + ".part";
  try {
    File f(tmp, path);
    // Regions gathered into writes of about 1 MB: a capture of 1,000 threads has as many small
    // stacks (one write each took 11 ms for 4.7 MB).
    constexpr std::size_t kChunk = 1 << 20;
    std::string buf = std::move(head);
    buf.reserve(std::max(buf.size(), kChunk) + kChunk);
    for (const auto& r : c.memory) {
      if (buf.size() + r.bytes.size() > kChunk && !buf.empty()) {
        f.write(buf.data(), buf.size());
        buf.clear();
      }
      if (r.bytes.size() >= kChunk) {
        f.write(r.bytes.data(), r.bytes.size());
      } else {
        buf += r.bytes;
      }
      buf.append(align_up(r.bytes.size(), 8) - r.bytes.size(), '\0');
    }
    f.write(buf.data(), buf.size());
    f.close();
  } catch (...) {
    ::unlink(tmp.c_str());
    throw;
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    throw Error(ExitCode::NoInput,
                fmt::format("cannot write the core file {}: {}", path, std::strerror(err)),
                "check that its directory is writable");
  }
}

#else // not Linux x86-64

void write_core(const Capture&, const std::string&) {
  throw Error(ExitCode::Internal, "rocplay's own capture writes x86-64 Linux cores only");
}

#endif

} // namespace rocplay::capture
