// Reading a stream to its end in pieces through the caller's buffer: the loop the transcript,
// crash-log and agent-log readers share. Header-only; internal to src/ (layer core,
// docs/architecture.md).
#pragma once

#include <cstddef>
#include <istream>
#include <span>
#include <string_view>

namespace rocplay {

// Hands each piece read into `buffer` to `consume(std::string_view)`, never an empty one, until
// the end of `in` or a read error (`in.bad()` then says which). The buffer is the caller's, so it
// may be left uninitialised or sized to the input.
template <typename Consume>
void read_chunks(std::istream& in, std::span<char> buffer, Consume&& consume) {
  while (in) {
    in.read(buffer.data(), static_cast<std::streamsize>(buffer.size()));
    const auto n = static_cast<std::size_t>(in.gcount());
    if (n == 0) {
      break;
    }
    consume(std::string_view(buffer.data(), n));
  }
}

} // namespace rocplay
