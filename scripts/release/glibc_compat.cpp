// Two glibc functions newer than 2.34 that the static libstdc++ and libgcc of GCC 12 (built on
// Debian 12's glibc 2.36) call, defined here so that the release binary runs on glibc 2.34: the
// linker binds the static archives' references to these definitions, and the binary asks the
// dynamic loader for no GLIBC_2.35/2.36 symbol. Built only with ROCPLAY_STATIC_RELEASE;
// scripts/release.sh fails when a newer symbol version appears in the binary.
//
// _dl_find_object (glibc 2.35).
// GCC 12's static unwinder (libgcc_eh.a, linked in by -static-libgcc) finds the unwind tables of
// the code an exception passes through with _dl_find_object when the glibc it was built against
// has it (2.35+; Debian 12 has 2.36), and has no other way compiled in. Linking it leaves
// `_dl_find_object@GLIBC_2.35` in the binary, which then refuses to start on glibc 2.34 (RHEL 9).
// This definition, in the executable, is the one the linker binds libgcc_eh's reference to: it
// answers the same question the way libgcc did before glibc 2.35, with dl_iterate_phdr (glibc
// 2.2.5): the loaded object whose PT_LOAD segments hold the address, its extent, and its
// PT_GNU_EH_FRAME (.eh_frame_hdr). Only the fields libgcc reads on x86-64 are filled
// (dlfo_link_map stays null: libgcc does not read it).
//
// arc4random (glibc 2.36). libstdc++'s std::random_device uses it (random.o), and random.o comes
// with every program that uses std exceptions (stdexcept.o -> cow-string-inst.o -> random.o), even
// though rocplay never makes a random_device. This one reads the kernel's getrandom (glibc 2.25),
// then /dev/urandom, and aborts if neither gives bytes, as glibc's does.
#include <dlfcn.h>
#include <link.h>

#include <fcntl.h>
#include <sys/random.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>

namespace {

struct Query {
  std::uintptr_t pc;
  dl_find_object* out;
  bool found;
};

int visit(dl_phdr_info* info, std::size_t, void* data) {
  auto* q = static_cast<Query*>(data);
  std::uintptr_t lo = UINTPTR_MAX;
  std::uintptr_t hi = 0;
  bool holds = false;
  const void* eh_frame = nullptr;
  for (ElfW(Half) i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    const std::uintptr_t start = info->dlpi_addr + ph.p_vaddr;
    if (ph.p_type == PT_LOAD) {
      const std::uintptr_t end = start + ph.p_memsz;
      lo = start < lo ? start : lo;
      hi = end > hi ? end : hi;
      holds = holds || (q->pc >= start && q->pc < end);
    } else if (ph.p_type == PT_GNU_EH_FRAME) {
      eh_frame = reinterpret_cast<const void*>(start);
    }
  }
  if (!holds) {
    return 0; // go on with the next object
  }
  std::memset(q->out, 0, sizeof(*q->out));
  q->out->dlfo_map_start = reinterpret_cast<void*>(lo);
  q->out->dlfo_map_end = reinterpret_cast<void*>(hi);
  q->out->dlfo_eh_frame = const_cast<void*>(eh_frame);
  q->found = true;
  return 1; // stop
}

} // namespace

extern "C" int _dl_find_object(void* pc, dl_find_object* result) {
  Query q{reinterpret_cast<std::uintptr_t>(pc), result, false};
  dl_iterate_phdr(visit, &q);
  return q.found ? 0 : -1;
}

extern "C" std::uint32_t arc4random() {
  std::uint32_t value = 0;
  auto* bytes = reinterpret_cast<unsigned char*>(&value);
  std::size_t got = 0;
  while (got < sizeof(value)) {
    const ssize_t n = getrandom(bytes + got, sizeof(value) - got, 0);
    if (n > 0) {
      got += static_cast<std::size_t>(n);
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else {
      break;
    }
  }
  if (got < sizeof(value)) {
    const int fd = ::open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    while (fd >= 0 && got < sizeof(value)) {
      const ssize_t n = ::read(fd, bytes + got, sizeof(value) - got);
      if (n > 0) {
        got += static_cast<std::size_t>(n);
      } else if (n < 0 && errno == EINTR) {
        continue;
      } else {
        break;
      }
    }
    if (fd >= 0) {
      ::close(fd);
    }
  }
  if (got < sizeof(value)) {
    std::abort(); // glibc's arc4random cannot fail either
  }
  return value;
}
