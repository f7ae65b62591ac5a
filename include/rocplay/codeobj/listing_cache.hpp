// Listings a disassembler printed, kept between looks, keyed by the code object's bytes, the
// disassembler and its arguments. nvdisasm spends about half a second on any cubin, the better
// part of a look at a small CUDA program; a second look at the same program (or the next rank of
// the same job) takes the listing from here. Each entry keeps a copy of its object, compared
// byte for byte on every find, so a key's hash can never hand back another object's listing.
// Implemented in src/codeobj/listing_cache.cpp.
#pragma once

#include "rocplay/core/unique_fd.hpp"

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace rocplay::codeobj {

class ListingCache {
public:
  // Where a user's cache lives: $ROCPLAY_CACHE_DIR, else $XDG_CACHE_HOME/rocplay, else
  // $HOME/.cache/rocplay, with `listings` under it; nullopt when $ROCPLAY_CACHE_DIR is `off` or
  // empty, or no home is known.
  static std::optional<std::string> default_dir();

  // `decoder` says which disassembler wrote the listings (decoder_identity): another one, or the
  // same one updated, finds nothing of the old one's. The directory is made (0700) on the first
  // store; a directory that is not ours alone (another owner, writable by others, a link) is
  // never read or written.
  ListingCache(std::string dir, std::string decoder, std::uintmax_t max_total_bytes = 64u << 20);

  // The listing `arguments` gave of `object`, when one is kept and holds at most max_bytes.
  std::optional<std::string> find(std::span<const std::uint8_t> object, std::string_view arguments,
                                  std::size_t max_bytes) const;
  // Keeps a listing; then, past max_total_bytes in all, the entries used longest ago go until
  // three quarters remain. Objects larger than max_object_bytes are not kept. Failures are silent:
  // a cache is an optimisation.
  void store(std::span<const std::uint8_t> object, std::string_view arguments,
             std::string_view listing) const;

  // Waits until this look's turn to decode `object` with `arguments`: while another look (an
  // 8-rank job's looks start together) decodes the same, find() after the wait takes its
  // listing, and the object is decoded once. The turn lasts while the returned descriptor is
  // open; it is not held (-1) when the cache is unusable, after max_wait, or once `cancel`.
  UniqueFd wait_turn(std::span<const std::uint8_t> object, std::string_view arguments,
                     const std::atomic<bool>& cancel, std::chrono::milliseconds max_wait) const;

  // find(), and on a miss wait_turn() and find() again: the listing of an earlier look, or of the
  // look that was decoding the same object. nullopt when this look is to decode it; `turn` then
  // holds the others back until it is closed, after store().
  std::optional<std::string> find_or_take_turn(std::span<const std::uint8_t> object,
                                               std::string_view arguments, std::size_t max_bytes,
                                               const std::atomic<bool>& cancel,
                                               std::chrono::milliseconds max_wait,
                                               UniqueFd& turn) const;

  const std::string& dir() const { return dir_; }

  static constexpr std::size_t max_object_bytes = 8u << 20;

private:
  std::string entry_path(std::span<const std::uint8_t> object, std::string_view arguments) const;
  bool usable() const;
  bool made() const; // usable, made (0700) when missing

  std::string dir_;
  std::string decoder_;
  std::uintmax_t max_total_bytes_;
};

// A program's identity for ListingCache: its resolved path, size and modification time.
std::string decoder_identity(const std::string& program);

} // namespace rocplay::codeobj
