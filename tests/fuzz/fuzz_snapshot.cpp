// libFuzzer target: any bytes as a transcript through the whole offline path a post-mortem takes:
// the snapshot (every dialect), the single-snapshot, pair and cross-rank heuristics, the wave
// grouping, and the snapshot's JSON, which must dump (valid UTF-8, as the CLI's reports need)
// and read back to the same snapshot.
#include "rocplay/heuristics/heuristics.hpp"
#include "rocplay/snapshot/grouping.hpp"
#include "rocplay/snapshot/snapshot.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <cstdlib>
#include <string>

using namespace rocplay;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  mi::TranscriptInfo info;
  const Snapshot snapshot = snapshot::build_from_transcript(text, {}, &info);
  std::size_t sink =
      heuristics::run(snapshot, heuristics::context_from_meta(info.meta_json)).size();
  sink += heuristics::run_pair(snapshot, snapshot).size();
  sink += heuristics::run_ranks({snapshot, snapshot}).size();
  sink += snapshot::group_waves(snapshot).size();
  const nlohmann::json json = to_json(snapshot);
  sink += json.dump().size(); // throws on invalid UTF-8: a report would fail the same way
  if (!(snapshot_from_json(json) == snapshot)) {
    std::abort(); // the JSON output lost or changed something
  }
  return sink == 0xdeadbeef ? 1 : 0;
}
