// Listings kept between looks (rocplay/codeobj/listing_cache.hpp).
#include "rocplay/codeobj/listing_cache.hpp"

#include "rocplay/core/unique_fd.hpp"

#include <fmt/format.h>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <system_error>
#include <thread>
#include <vector>

namespace rocplay::codeobj {

namespace {

namespace fs = std::filesystem;

// What a listing file starts with: the decoder and arguments it is the answer of, checked on
// every find (the file name is only a hash of them).
std::string listing_header(std::string_view decoder, std::string_view arguments) {
  return fmt::format("rocplay-listing 1\t{}\t{}\n", decoder, arguments);
}

std::uint64_t fnv1a(std::uint64_t h, std::span<const std::uint8_t> bytes) {
  for (const std::uint8_t b : bytes) {
    h = (h ^ b) * 0x100000001b3ull;
  }
  return h;
}
std::uint64_t fnv1a(std::uint64_t h, std::string_view text) {
  return fnv1a(h, std::span(reinterpret_cast<const std::uint8_t*>(text.data()), text.size()));
}

// The whole file when it holds at most max_bytes, else nullopt.
std::optional<std::string> read_bounded(const std::string& path, std::size_t max_bytes) {
  const UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  struct stat st {};
  if (fd.get() < 0 || ::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode) ||
      static_cast<std::uintmax_t>(st.st_size) > max_bytes) {
    return std::nullopt;
  }
  std::string data(static_cast<std::size_t>(st.st_size), '\0');
  std::size_t got = 0;
  while (got < data.size()) {
    const ssize_t n = ::read(fd.get(), data.data() + got, data.size() - got);
    if (n <= 0) {
      return std::nullopt;
    }
    got += static_cast<std::size_t>(n);
  }
  return data;
}

// Writes `parts` to a new file beside `path`, then renames it there: a reader sees the whole
// file or none.
bool write_atomically(const std::string& path, std::initializer_list<std::string_view> parts) {
  std::string temp = fs::path(path).parent_path().string() + "/.tmp-XXXXXX";
  const UniqueFd fd(::mkostemp(temp.data(), O_CLOEXEC));
  if (fd.get() < 0) {
    return false;
  }
  bool ok = true;
  for (std::string_view part : parts) {
    while (ok && !part.empty()) {
      const ssize_t n = ::write(fd.get(), part.data(), part.size());
      ok = n > 0;
      part.remove_prefix(ok ? static_cast<std::size_t>(n) : part.size());
    }
  }
  if (!ok || ::rename(temp.c_str(), path.c_str()) != 0) {
    ::unlink(temp.c_str());
    return false;
  }
  return true;
}

// Past `limit` bytes in all, the files used longest ago go until three quarters remain.
void prune(const std::string& dir, std::uintmax_t limit) {
  struct Entry {
    fs::file_time_type used;
    std::uintmax_t size;
    fs::path path;
  };
  std::vector<Entry> entries;
  std::uintmax_t total = 0;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::error_code e;
    if (!it->is_regular_file(e)) {
      continue;
    }
    const auto size = it->file_size(e);
    const auto used = it->last_write_time(e);
    if (!e) {
      entries.push_back({used, size, it->path()});
      total += size;
    }
  }
  if (total <= limit) {
    return;
  }
  std::sort(entries.begin(), entries.end(),
            [](const Entry& a, const Entry& b) { return a.used < b.used; });
  for (const auto& e : entries) {
    if (total <= limit / 4 * 3) {
      break;
    }
    std::error_code rm;
    if (fs::remove(e.path, rm)) {
      total -= e.size;
    }
  }
}

} // namespace

std::optional<std::string> ListingCache::default_dir() {
  if (const char* dir = std::getenv("ROCPLAY_CACHE_DIR")) {
    const std::string_view d(dir);
    if (d.empty() || d == "off") {
      return std::nullopt;
    }
    return std::string(d) + "/listings";
  }
  // Only in a home of ours: `sudo rocplay` that kept a user's $HOME must not leave directories
  // of root's there.
  auto ours = [](const char* dir) {
    struct stat st {};
    return dir != nullptr && *dir == '/' && ::stat(dir, &st) == 0 && st.st_uid == ::geteuid();
  };
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) {
    return ours(xdg) ? std::optional(std::string(xdg) + "/rocplay/listings") : std::nullopt;
  }
  if (const char* home = std::getenv("HOME"); ours(home)) {
    return std::string(home) + "/.cache/rocplay/listings";
  }
  return std::nullopt;
}

ListingCache::ListingCache(std::string dir, std::string decoder, std::uintmax_t max_total_bytes)
    : dir_(std::move(dir)), decoder_(std::move(decoder)), max_total_bytes_(max_total_bytes) {}

std::string ListingCache::entry_path(std::span<const std::uint8_t> object,
                                     std::string_view arguments) const {
  std::uint64_t h = 0xcbf29ce484222325ull;
  h = fnv1a(h, listing_header(decoder_, arguments));
  h = fnv1a(h, object);
  return fmt::format("{}/{:016x}-{}", dir_, h, object.size());
}

bool ListingCache::usable() const {
  struct stat st {};
  return ::lstat(dir_.c_str(), &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == ::geteuid() &&
         (st.st_mode & (S_IWGRP | S_IWOTH)) == 0;
}

bool ListingCache::made() const {
  if (usable()) {
    return true;
  }
  std::error_code ec;
  fs::create_directories(fs::path(dir_).parent_path(), ec);
  ::mkdir(dir_.c_str(), 0700); // another look may make it first: what counts is whose it is
  return usable();
}

std::optional<std::string> ListingCache::find(std::span<const std::uint8_t> object,
                                              std::string_view arguments,
                                              std::size_t max_bytes) const {
  if (object.empty() || object.size() > max_object_bytes || !usable()) {
    return std::nullopt;
  }
  const std::string path = entry_path(object, arguments);
  const auto kept = read_bounded(path + ".obj", object.size());
  if (!kept ||
      !std::equal(kept->begin(), kept->end(), object.begin(), object.end(),
                  [](char a, std::uint8_t b) { return static_cast<std::uint8_t>(a) == b; })) {
    return std::nullopt;
  }
  const std::string header = listing_header(decoder_, arguments);
  auto listing = read_bounded(path + ".txt", header.size() + max_bytes);
  if (!listing || !listing->starts_with(header)) {
    return std::nullopt;
  }
  // Used now: the last to go when the cache is pruned.
  ::utimensat(AT_FDCWD, (path + ".obj").c_str(), nullptr, 0);
  ::utimensat(AT_FDCWD, (path + ".txt").c_str(), nullptr, 0);
  listing->erase(0, header.size());
  return listing;
}

void ListingCache::store(std::span<const std::uint8_t> object, std::string_view arguments,
                         std::string_view listing) const {
  if (object.empty() || object.size() > max_object_bytes) {
    return;
  }
  if (!made()) {
    return;
  }
  const std::string path = entry_path(object, arguments);
  const std::string_view bytes(reinterpret_cast<const char*>(object.data()), object.size());
  // The listing first: an object file is only ever found beside its listing.
  if (write_atomically(path + ".txt", {listing_header(decoder_, arguments), listing}) &&
      write_atomically(path + ".obj", {bytes})) {
    prune(dir_, max_total_bytes_);
  }
}

UniqueFd ListingCache::wait_turn(std::span<const std::uint8_t> object, std::string_view arguments,
                                 const std::atomic<bool>& cancel,
                                 std::chrono::milliseconds max_wait) const {
  if (object.empty() || object.size() > max_object_bytes) {
    return UniqueFd();
  }
  if (!made()) {
    return UniqueFd();
  }
  const std::string path = entry_path(object, arguments) + ".lock";
  UniqueFd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (fd.get() < 0) {
    return UniqueFd();
  }
  // Polled, not blocking: a cancelled look must not wait out another's nvdisasm.
  const auto until = std::chrono::steady_clock::now() + max_wait;
  while (::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) {
    if (errno != EWOULDBLOCK || cancel || std::chrono::steady_clock::now() >= until) {
      return UniqueFd();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return fd;
}

std::optional<std::string>
ListingCache::find_or_take_turn(std::span<const std::uint8_t> object, std::string_view arguments,
                                std::size_t max_bytes, const std::atomic<bool>& cancel,
                                std::chrono::milliseconds max_wait, UniqueFd& turn) const {
  if (auto listing = find(object, arguments, max_bytes)) {
    return listing;
  }
  turn = wait_turn(object, arguments, cancel, max_wait);
  return find(object, arguments, max_bytes);
}

std::string decoder_identity(const std::string& program) {
  std::error_code ec;
  const auto real = fs::canonical(program, ec);
  struct stat st {};
  if (ec || ::stat(real.c_str(), &st) != 0) {
    return program;
  }
  return fmt::format("{} {} {}.{:09}", real.string(), st.st_size, st.st_mtim.tv_sec,
                     st.st_mtim.tv_nsec);
}

} // namespace rocplay::codeobj
