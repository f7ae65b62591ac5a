// process_vm_readv, then /proc/PID/mem (rocplay/core/process_memory.hpp).
#include "rocplay/core/process_memory.hpp"

#include <fcntl.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <string>

namespace rocplay::process {

MemoryReader::~MemoryReader() {
  if (mem_fd_ >= 0) {
    ::close(mem_fd_);
  }
}

std::size_t MemoryReader::read_some(std::uint64_t address, void* out, std::size_t size) {
  if (size == 0) {
    return 0;
  }
  if (!vm_readv_refused_) {
    iovec local{out, size};
    iovec remote{reinterpret_cast<void*>(static_cast<std::uintptr_t>(address)), size};
    const ssize_t n = ::process_vm_readv(static_cast<pid_t>(pid_), &local, 1, &remote, 1, 0);
    if (n > 0) {
      return static_cast<std::size_t>(n);
    }
    if (errno == ESRCH) {
      return 0; // the process is gone
    }
    vm_readv_refused_ = errno == EPERM || errno == ENOSYS;
  }
  return pread_some(address, out, size);
}

std::size_t MemoryReader::pread_some(std::uint64_t address, void* out, std::size_t size) {
  if (mem_fd_ < 0 && !mem_failed_) {
    mem_fd_ = ::open(("/proc/" + std::to_string(pid_) + "/mem").c_str(), O_RDONLY | O_CLOEXEC);
    mem_failed_ = mem_fd_ < 0;
  }
  if (mem_fd_ < 0 || address > static_cast<std::uint64_t>(INT64_MAX)) {
    return 0;
  }
  std::size_t done = 0;
  while (done < size) {
    const ssize_t n = ::pread(mem_fd_, static_cast<char*>(out) + done, size - done,
                              static_cast<off_t>(address + done));
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      break;
    }
    done += static_cast<std::size_t>(n);
  }
  return done;
}

} // namespace rocplay::process
