// A file descriptor closed when it goes out of scope: the ELF readers (codeobj's section reader,
// session's light copies) and the listing cache open, read and leave on every path.
// Layer: src/core/ (library rocplay_core).
#pragma once

#include <unistd.h>

namespace rocplay {

class UniqueFd {
public:
  explicit UniqueFd(int fd) : fd_(fd) {}
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
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
