// libFuzzer target: any bytes as saved debugger console text (a `set logging` file, `-batch`
// output, a pasted `(gdb)` session) through the post-mortem path console text takes: the sniff,
// the split into exchanges, the snapshot (every dialect), the heuristics and the snapshot's JSON,
// which must dump (valid UTF-8) and read back to the same snapshot.
#include "rocplay/heuristics/heuristics.hpp"
#include "rocplay/snapshot/console_log.hpp"
#include "rocplay/snapshot/snapshot.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <cstdlib>
#include <string>

using namespace rocplay;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  std::size_t sink = console_log::looks_like_console_log(text) ? 1 : 0;
  console_log::Info info;
  const auto exchanges = console_log::to_exchanges(text, &info);
  snapshot::BuildOptions options;
  options.debugger = info.debugger;
  snapshot::Builder builder(options);
  for (const auto& ex : exchanges) {
    builder.add(ex);
  }
  Snapshot snapshot = builder.finish();
  snapshot.notes = console_log::unknowns(snapshot, info);
  sink += heuristics::run(snapshot).size();
  const nlohmann::json json = to_json(snapshot);
  sink += json.dump().size(); // throws on invalid UTF-8: a report would fail the same way
  if (!(snapshot_from_json(json) == snapshot)) {
    std::abort();
  }
  return sink == 0xdeadbeef ? 1 : 0;
}
