// What a program rocplay starts (a debugger, srun, scontrol) inherits: its stdio and the
// descriptors asked for, nothing else.
//
// Boost 1.81's launcher means to close every other descriptor in the child, but its Linux loop
// compares each whitelisted descriptor with itself and closes only those above the highest one:
// everything between 3 and its own launch pipe stays open across the exec. Two targets' sessions
// start their debuggers from two threads; the second debugger kept the first launch's pipe, and
// the first launch, which waits for that pipe's end-of-file, waited until the second debugger
// quit, while the second target waited at the samples' lockstep for the first (a node of
// `--slurm-job`, 2 looks in 106, until the run's bound ended it).
//
// Layer: src/session/ (internal). Include after Boost.Process (BOOST_PROCESS_USE_STD_FS set).
#pragma once

#include <boost/process/v2/process.hpp>

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>

namespace rocplay::session::detail {

// In the forked child, before the exec: every descriptor from 3 up is closed by the exec. Only
// async-signal-safe calls (the parent may have other threads). Descriptors the program should
// keep get their close-on-exec flag cleared afterwards; stdio is 0-2, set by dup2 (which clears
// the flag) whether before or after this.
inline void close_on_exec_from_3() {
#if defined(SYS_close_range)
  constexpr unsigned kCloseRangeCloexec = 1U << 2; // CLOSE_RANGE_CLOEXEC, Linux 5.11
  if (::syscall(SYS_close_range, 3U, ~0U, kCloseRangeCloexec) == 0) {
    return;
  }
#endif
  rlimit limit{};
  const long most = ::getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY
                        ? static_cast<long>(std::min<rlim_t>(limit.rlim_cur, 1U << 20))
                        : 65536;
  for (int fd = 3; fd < most; ++fd) {
    const int flags = ::fcntl(fd, F_GETFD);
    if (flags >= 0) {
      ::fcntl(fd, F_SETFD, flags | FD_CLOEXEC);
    }
  }
}

// A Boost.Process v2 initializer for programs that keep nothing but their stdio.
struct OnlyStdio {
  boost::process::v2::error_code on_exec_setup(boost::process::v2::posix::default_launcher&,
                                               const boost::process::v2::filesystem::path&,
                                               const char* const*) {
    close_on_exec_from_3();
    return {};
  }
};

} // namespace rocplay::session::detail
