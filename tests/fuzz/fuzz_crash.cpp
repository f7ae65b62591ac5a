// libFuzzer target: any bytes through the crash-evidence readers (docs/crash-evidence.md): the
// content detection, the text reader fed in two pieces split where the input says, the dump
// metadata and diagnostics JSON readers, the per-input findings, the joined verdict across two
// inputs, and the JSON every report writes (which must dump: valid UTF-8).
#include "rocplay/crash/crash.hpp"
#include "rocplay/report/report.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>

using namespace rocplay;

namespace {

std::size_t exercise(const crash::Evidence& ev) {
  std::size_t sink = crash::to_json(ev).dump().size();
  for (const auto& f : crash::findings(ev)) {
    sink += report::finding_to_json(f).dump().size();
  }
  return sink;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) {
    return 0;
  }
  const std::string_view all(reinterpret_cast<const char*>(data), size);
  const std::size_t split = static_cast<std::uint8_t>(all[0]) * size / 256;
  crash::ReadOptions options;
  options.source = "dumps/20260302_140733_120_fn_call0007/kernel_api_4411.log";
  options.limits.max_line_bytes = 512; // long-line handling without megabyte inputs

  crash::TextReader reader(options);
  reader.feed(all.substr(0, split));
  reader.feed(all.substr(split));
  const crash::Evidence text = reader.finish();
  std::size_t sink = exercise(text);
  sink += crash::detect(all, options.source).has_value() ? 1 : 0;
  const crash::Evidence dump = crash::read_dump_metadata(all, options, false);
  const crash::Evidence diag = crash::read_diagnostics(all, options);
  sink += exercise(dump) + exercise(diag);

  crash::Joiner joiner(4);
  joiner.add(text);
  joiner.add(dump);
  joiner.add(diag);
  joiner.add(text);
  for (const auto& f : joiner.verdict()) {
    sink += report::finding_to_json(f).dump().size();
  }
  return sink == 0 ? 0 : 0;
}
