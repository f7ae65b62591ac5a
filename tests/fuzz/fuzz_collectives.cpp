// libFuzzer target: any bytes through the collective-record readers (rocplay/collectives): the
// data-only pickle reader with small bounds, the Flight Recorder reader on the same bytes as a
// pickle and as JSON, the NCCL log and ncclras readers, content detection, the cross-rank matching
// of what they read under two ranks, and the findings' JSON (which must dump: valid UTF-8).
#include "rocplay/collectives/collectives.hpp"
#include "rocplay/collectives/pickle.hpp"

#include <cstdint>
#include <string>

using namespace rocplay;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view all(reinterpret_cast<const char*>(data), size);
  std::size_t sink = 0;
  collectives::pickle::Limits small;
  small.max_values = 1u << 16;
  small.max_stack = 1u << 12;
  small.max_memo = 1u << 12;
  small.max_string_bytes = 1u << 16;
  const auto parsed = collectives::pickle::read(all, small);
  sink += parsed.ok() ? 1 : parsed.error.size();
  sink += collectives::detect(all).has_value() ? 1 : 0;

  // A pickle header in front makes every input reach the pickle path of the dump reader.
  const std::string as_pickle = std::string("\x80\x02", 2) + std::string(all);
  std::vector<collectives::Input> inputs;
  inputs.push_back(collectives::read_flight_recorder(as_pickle, "fuzz/nccl_trace_rank_0"));
  inputs.push_back(collectives::read_flight_recorder(all, "fuzz/nccl_trace_rank_1.json"));
  inputs.push_back(collectives::read_nccl_log(all, "fuzz/nccl.log", 1));
  inputs.push_back(collectives::read_ras(all, "fuzz/ras.txt"));
  for (const auto& in : inputs) {
    sink += collectives::to_json(in).dump().size();
  }
  const auto matched = collectives::match(inputs);
  for (const auto& f : collectives::findings(matched)) {
    nlohmann::json j{{"title", f.title},
                     {"summary", f.summary},
                     {"evidence", f.evidence},
                     {"details", f.details}};
    sink += j.dump().size();
  }
  return sink == 0 ? 0 : 0;
}
