// libFuzzer target: any bytes as a transcript (raw MI log or rocplay recording).
#include "rocplay/mi/transcript.hpp"

#include <cstdint>

using namespace rocplay::mi;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  Limits limits;
  limits.max_line_bytes = 8192;
  limits.max_exchange_bytes = 65536;
  TranscriptInfo info;
  const auto exchanges =
      read_transcript(std::string_view(reinterpret_cast<const char*>(data), size), &info, limits);
  std::size_t sink = 0;
  for (const auto& ex : exchanges) {
    sink += ex.console().size();
    if (auto msg = ex.error_message()) {
      sink += msg->size();
    }
    for (const auto& r : ex.records) {
      sink += r.results().to_mi().size();
      const auto table = as_table(r.results()[0]);
      sink += table.ok() ? table.value().rows.size() : 0;
    }
  }
  return sink == 0xdeadbeef ? 1 : 0;
}
