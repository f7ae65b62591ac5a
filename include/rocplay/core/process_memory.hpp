// Reads of another process's memory, for the capture's copy (src/capture/) and the Python frames
// reader (src/pyframes/). Linux only.
// Layer: src/core/ (library rocplay_core).
#pragma once

#include <cstddef>
#include <cstdint>

namespace rocplay::process {

// process_vm_readv on `pid`, and /proc/PID/mem where that falls short: always once it is refused
// (EPERM, ENOSYS: seccomp, Yama), and for a range it cannot read (EFAULT), which /proc/PID/mem
// may still read as a debugger does (a mapping the process itself may not read).
class MemoryReader {
public:
  explicit MemoryReader(std::int64_t pid) : pid_(pid) {}
  ~MemoryReader();
  MemoryReader(const MemoryReader&) = delete;
  MemoryReader& operator=(const MemoryReader&) = delete;

  // How many bytes from `address` were read into `out`: a prefix, 0 when none.
  std::size_t read_some(std::uint64_t address, void* out, std::size_t size);
  // All `size` bytes at `address`, or false.
  bool read(std::uint64_t address, void* out, std::size_t size) {
    return read_some(address, out, size) == size;
  }
  // /proc/PID/mem alone: for what a batched process_vm_readv of the caller's left unread.
  std::size_t pread_some(std::uint64_t address, void* out, std::size_t size);

  std::int64_t pid() const { return pid_; }

private:
  std::int64_t pid_;
  int mem_fd_ = -1;
  bool mem_failed_ = false;
  bool vm_readv_refused_ = false;
};

} // namespace rocplay::process
