// libFuzzer target for the Python-frame reader (src/pyframes/) and its recording notes: the
// location-table decoders (3.11+ and 3.10) on arbitrary tables and code offsets, the whole walk
// from _PyRuntime over an arbitrary memory image with each version's layout (3.13's through a
// _Py_DebugOffsets the input supplies; 3.14's and 3.15's, default and free-threaded, through
// their real ones put over the input), and the builder's reader of `python stacks`/`python
// thread` notes. Nothing may crash, hang or read outside the image; strings come out valid UTF-8.
#include "../unit/pyframes/debug_offsets_tables.hpp"
#include "rocplay/pyframes/pyframes.hpp"
#include "rocplay/snapshot/python_stacks.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string_view>
#include <vector>

namespace {

// The input, mapped at kBase; reads outside it fail, as unmapped pages do.
class ImageMemory : public rocplay::pyframes::Memory {
public:
  static constexpr std::uint64_t kBase = 0x10000;
  explicit ImageMemory(std::span<const std::uint8_t> bytes) : bytes_(bytes) {}
  bool read(std::uint64_t address, void* out, std::size_t size) override {
    if (address < kBase || address - kBase > bytes_.size() ||
        size > bytes_.size() - (address - kBase)) {
      return false;
    }
    std::memcpy(out, bytes_.data() + (address - kBase), size);
    return true;
  }

private:
  std::span<const std::uint8_t> bytes_;
};

bool valid_utf8(std::string_view s) {
  return rocplay::pyframes::clean_text(s, s.size() + 1) == s;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 4) {
    return 0;
  }
  const std::uint8_t mode = data[0] % 4;
  const std::int64_t index = static_cast<std::int8_t>(data[1]) * 4 + data[2];
  const std::span<const std::uint8_t> rest(data + 3, size - 3);
  switch (mode) {
  case 0:
    (void)rocplay::pyframes::line_311(rest, static_cast<std::int64_t>(data[1]) << 20, index);
    break;
  case 1:
    (void)rocplay::pyframes::line_310(rest, static_cast<std::int64_t>(data[1]) << 20, index);
    break;
  case 2: {
    // data[2] >= 128: _PyRuntime opens with a real _Py_DebugOffsets of 3.14 or 3.15, default or
    // free-threaded (tests/unit/pyframes/debug_offsets_tables.hpp), over the input, so the walk
    // goes past the offsets' checks into memory the input makes up.
    std::vector<std::uint8_t> image(rest.begin(), rest.end());
    const std::size_t at = (data[1] % 64) * 8;
    if (data[2] >= 128) {
      const std::span<const std::uint64_t> tables[] = {
          rocplay::testing::k314, rocplay::testing::k314t, rocplay::testing::k315,
          rocplay::testing::k315t};
      const auto words = tables[data[2] % 4];
      image.resize(std::max(image.size(), at + 8 + words.size_bytes()));
      std::memcpy(image.data() + at, "xdebugpy", 8);
      std::memcpy(image.data() + at + 8, words.data(), words.size_bytes());
    }
    ImageMemory memory(image);
    rocplay::pyframes::Runtime runtime;
    runtime.address = ImageMemory::kBase + at;
    runtime.major = 3;
    runtime.minor = 10 + data[2] % 4; // 3.13+: only the debug offsets in the image count
    rocplay::pyframes::Limits limits;
    limits.max_frames = 64;
    limits.max_threads = 64;
    const auto stacks = rocplay::pyframes::read(memory, runtime, limits);
    for (const auto& t : stacks.threads) {
      for (const auto& f : t.frames) {
        if (!valid_utf8(f.function) || !valid_utf8(f.file)) {
          __builtin_trap();
        }
      }
    }
    break;
  }
  default: {
    rocplay::snapshot::PythonNoteReader reader;
    std::string_view text(reinterpret_cast<const char*>(rest.data()), rest.size());
    while (!text.empty()) {
      const auto nl = text.find('\n');
      reader.take(text.substr(0, nl));
      text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    }
    rocplay::Snapshot snap;
    rocplay::HostThread h;
    h.lwp = 1;
    h.frames.resize(3);
    h.frames[1].function = "_PyEval_EvalFrameDefault";
    snap.host_threads.push_back(h);
    reader.apply(snap);
    break;
  }
  }
  return 0;
}
