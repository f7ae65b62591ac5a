// The CUDA API errors cuda-gdb warns of: a kernel's fault it did not stop on ends in the next
// CUDA call's error, and these warnings are then the only trace of it in the transcript.
#include "rocplay/mi/value.hpp"
#include "rocplay/snapshot.hpp"

#include <algorithm>
#include <string_view>

namespace rocplay::snapshot {

void take_cuda_api_errors(const mi::Exchange& exchange, std::vector<std::string>& errors,
                          std::size_t max) {
  static constexpr std::string_view kMarkers[] = {"Cuda Runtime API error detected: ",
                                                  "Cuda Driver error detected: "};
  for (const auto& rec : exchange.records) {
    if (errors.size() >= max) {
      return;
    }
    // The raw line first: decoding every console record of a full node's transcript would cost
    // more than the rest of this reader.
    if ((rec.kind() != mi::RecordKind::Console && rec.kind() != mi::RecordKind::Log) ||
        rec.line().find(" error detected: ") == std::string_view::npos) {
      continue;
    }
    const std::string text = rec.stream_text();
    for (const auto marker : kMarkers) {
      const auto at = text.find(marker);
      if (at == std::string::npos) {
        continue;
      }
      std::string what = text.substr(at + marker.size());
      while (!what.empty() && (what.back() == '\n' || what.back() == ' ')) {
        what.pop_back();
      }
      what = mi::lossy_utf8(mi::utf8_prefix(what, 300));
      if (!what.empty() && errors.size() < max &&
          std::find(errors.begin(), errors.end(), what) == errors.end()) {
        errors.push_back(std::move(what));
      }
    }
  }
}

std::vector<std::string> cuda_api_errors(const std::vector<mi::Exchange>& exchanges,
                                         std::size_t max) {
  std::vector<std::string> errors;
  for (const auto& ex : exchanges) {
    take_cuda_api_errors(ex, errors, max);
  }
  return errors;
}

} // namespace rocplay::snapshot
