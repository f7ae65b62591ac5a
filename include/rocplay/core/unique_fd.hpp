// A file descriptor closed when it goes out of scope: the ELF readers (codeobj's section reader,
// session's light copies) and the listing cache (and its turns) open, read and leave on every
// path.
// Layer: src/core/ (library rocplay_core).
#pragma once

#include <unistd.h>

namespace rocplay {

class UniqueFd {
public:
  explicit UniqueFd(int fd = -1) : fd_(fd) {}
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  UniqueFd(UniqueFd&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  UniqueFd& operator=(UniqueFd&& other) noexcept {
    if (this != &other) {
      if (fd_ >= 0) {
        ::close(fd_);
      }
      fd_ = other.fd_;
      other.fd_ = -1;
    }
    return *this;
  }
  ~UniqueFd() {
    if (fd_ >= 0) {
      ::close(fd_);
    }
  }
  int get() const { return fd_; }

private:
  int fd_;
};

} // namespace rocplay
