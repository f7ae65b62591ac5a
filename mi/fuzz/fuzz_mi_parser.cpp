// libFuzzer target: any bytes through the MI parser, whole and split in two at a position taken
// from the input; both must give the same records, and every value must be readable. Each line
// must also read the same through every SIMD path the CPU runs.
#include "rocplay/mi/parser.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

using namespace rocplay::mi;

namespace {

void touch(const Value& v, std::string& sink) {
  sink += v.name();
  if (v.is_string()) {
    sink += v.bytes();
    (void)v.as_u64();
    (void)v.as_address();
    return;
  }
  for (const Value child : v) {
    touch(child, sink);
  }
  (void)v.path();
}

std::string run(std::string_view text, std::size_t split, const Limits& limits) {
  Parser parser(limits);
  std::string out;
  auto drain = [&] {
    while (auto r = parser.next()) {
      out += std::to_string(static_cast<int>(r->kind()));
      out += r->klass();
      if (r->is_error()) {
        out += r->error().message();
      } else {
        touch(r->results(), out);
        out += r->results().to_mi();
      }
      out += '\n';
    }
  };
  parser.feed(text.substr(0, split));
  drain();
  parser.feed(text.substr(split));
  drain();
  parser.finish();
  drain();
  return out;
}

// One line through one SIMD path, as text.
std::string line_with(detail::SimdPath path, std::string_view line, const Limits& limits) {
  NodeTable nodes;
  ParseError error;
  const RecordView r = detail::parse_line(path, line, 1, nodes, error, limits);
  std::string out = std::to_string(static_cast<int>(r.kind()));
  out += r.klass();
  out += r.is_error() ? r.error().message() : r.results().to_mi();
  return out;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) {
    return 0;
  }
  Limits limits;
  limits.max_line_bytes = 4096; // small limits exercise the bounded paths too
  limits.max_depth = 16;
  limits.max_values_per_record = 2048;
  const std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  const std::size_t split = text.empty() ? 0 : data[0] % (text.size() + 1);
  if (run(text, text.size(), limits) != run(text, split, limits)) {
    std::abort(); // streaming must not depend on where the input was split
  }
  static const std::vector<detail::SimdPath> paths = detail::simd_paths();
  for (std::size_t at = 0; at <= text.size();) {
    const std::size_t nl = std::min(text.find('\n', at), text.size());
    const std::string_view line = text.substr(at, nl - at);
    const std::string expected = line_with(detail::SimdPath::Baseline, line, limits);
    for (const detail::SimdPath path : paths) {
      if (line_with(path, line, limits) != expected) {
        std::abort(); // every instruction set must read a line the same way
      }
    }
    at = nl + 1;
  }
  return 0;
}
