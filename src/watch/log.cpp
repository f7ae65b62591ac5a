// The server's log as the watcher sees it: grown or not, rotated, truncated, gone.
//
// The file is held open, so a rotation by rename (logrotate's default) is seen as a new inode at
// the path while the old file, which the server keeps writing until it reopens its log, is still
// watched through its descriptor. The old one is let go once it is unlinked or another rotation
// comes, so the watcher never pins more than one deleted file's disk space.
#include "rocplay/core/error.hpp"
#include "rocplay/watch/watch.hpp"

#include <fmt/format.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace rocplay::watch {

namespace {

std::int64_t mtime_ns_of(const struct stat& st) {
  return static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
}

} // namespace

LogWatch::LogWatch(std::string path, Clock::time_point now) : path_(std::move(path)) {
  current_.fd = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  struct stat st {};
  if (current_.fd < 0 || ::fstat(current_.fd, &st) != 0) {
    const int err = errno;
    close(current_);
    throw Error(ExitCode::NoInput, fmt::format("--log {}: {}", path_, std::strerror(err)),
                "give the file the server writes its log to; it must exist when watching starts");
  }
  current_.dev = st.st_dev;
  current_.ino = st.st_ino;
  current_.size = st.st_size;
  current_.mtime_ns = mtime_ns_of(st);
  // The log's age is quiet time already spent: a watcher started on a hung server need not wait
  // a whole --quiet-for more. A future mtime (clock skew) counts as now.
  const auto wall = std::chrono::system_clock::now().time_since_epoch();
  const auto age = std::chrono::nanoseconds(std::max<std::int64_t>(
      0, std::chrono::duration_cast<std::chrono::nanoseconds>(wall).count() - current_.mtime_ns));
  current_.since = now - std::chrono::duration_cast<Clock::duration>(age);
  last_activity_ = current_.since;
}

LogWatch::~LogWatch() {
  close(current_);
  close(previous_);
}

void LogWatch::close(Open& f) {
  if (f.fd >= 0) {
    ::close(f.fd);
  }
  f = Open{};
}

bool LogWatch::look(Open& f, Clock::time_point now) {
  struct stat st {};
  if (f.fd < 0 || ::fstat(f.fd, &st) != 0) {
    return false;
  }
  const bool grew = st.st_size > f.size || (st.st_size == f.size && mtime_ns_of(st) != f.mtime_ns);
  const bool truncated = st.st_size < f.size;
  f.size = st.st_size;
  f.mtime_ns = mtime_ns_of(st);
  if (grew || truncated) {
    f.since = now;
  }
  return grew || truncated;
}

void LogWatch::check(Clock::time_point now, std::vector<std::string>& events) {
  grew_ = false;
  const off_t size_before = current_.size;
  if (look(current_, now)) {
    grew_ = true;
    if (current_.size < size_before) {
      events.push_back(fmt::format("log {} was truncated ({} -> {} bytes; copytruncate?): counted "
                                   "as activity",
                                   path_, size_before, current_.size));
    }
  }
  if (previous_.fd >= 0) {
    if (look(previous_, now)) {
      grew_ = true;
    }
    struct stat st {};
    // Unlinked (rotated away and deleted), or quiet since the rotation: the server has moved on.
    if (::fstat(previous_.fd, &st) != 0 || st.st_nlink == 0 ||
        now - previous_.since > std::chrono::minutes(10)) {
      close(previous_);
    }
  }
  struct stat st {};
  if (::stat(path_.c_str(), &st) != 0) {
    if (!path_missing_) {
      path_missing_ = true;
      events.push_back(fmt::format("log {} is gone ({}); still watching the file the server had "
                                   "open until one appears at that path",
                                   path_, std::strerror(errno)));
    }
  } else if (st.st_dev != current_.dev || st.st_ino != current_.ino) {
    // Rotated: a new file at the path. The old one stays watched while the server writes it.
    const int fd = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    struct stat opened {};
    if (fd >= 0 && ::fstat(fd, &opened) == 0) {
      close(previous_);
      previous_ = current_;
      current_ = Open{fd, opened.st_dev, opened.st_ino, opened.st_size, mtime_ns_of(opened), now};
      events.push_back(fmt::format("log {} {}: a new file at that path ({} bytes); the old one is "
                                   "still watched while it grows",
                                   path_, path_missing_ ? "reappeared" : "was rotated",
                                   opened.st_size));
      path_missing_ = false;
      grew_ = grew_ || opened.st_size > 0; // written since it was created
    } else if (fd >= 0) {
      ::close(fd);
    }
  } else if (path_missing_) {
    path_missing_ = false;
    events.push_back(fmt::format("log {} is back", path_));
  }
  if (grew_) {
    last_activity_ = now;
  }
}

} // namespace rocplay::watch
