// rocplay's private temporary directories (see rocplay/core/temp_dir.hpp).
#include "rocplay/core/temp_dir.hpp"

#include <fmt/format.h>

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <filesystem>

namespace rocplay {

namespace {

namespace fs = std::filesystem;

// Removes `dir`'s PREFIX-N-* entries that belong to this user and whose process N is gone.
void remove_orphans(const fs::path& dir, std::string_view prefix) {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.size() <= prefix.size() + 1 || !name.starts_with(prefix) ||
        name[prefix.size()] != '-') {
      continue;
    }
    const char* digits = name.data() + prefix.size() + 1;
    const char* end = name.data() + name.size();
    pid_t pid = 0;
    const auto [next, err] = std::from_chars(digits, end, pid);
    struct stat st {};
    if (err != std::errc() || next == end || *next != '-' || pid <= 0 ||
        ::lstat(entry.path().c_str(), &st) != 0 || !S_ISDIR(st.st_mode) ||
        st.st_uid != ::getuid()) {
      continue;
    }
    if (::kill(pid, 0) != 0 && errno == ESRCH) {
      fs::remove_all(entry.path(), ec);
    }
  }
}

} // namespace

std::optional<std::string> make_private_temp_dir(std::string_view prefix, std::string& why) {
  const char* tmp = std::getenv("TMPDIR");
  const fs::path base = tmp != nullptr && *tmp == '/' ? tmp : "/tmp";
  remove_orphans(base, prefix);
  std::string pattern = fmt::format("{}/{}-{}-XXXXXX", base.string(), prefix, ::getpid());
  if (::mkdtemp(pattern.data()) == nullptr) {
    why = fmt::format("cannot create a directory in {} ({})", base.string(), std::strerror(errno));
    return std::nullopt;
  }
  return pattern;
}

} // namespace rocplay
