// The CUDA API errors cuda-gdb warns of: a kernel's fault it did not stop on ends in the next
// CUDA call's error, and these warnings are then the only trace of it in the transcript.
#include "snapshot/cuda_api_errors.hpp"

#include "rocplay/mi/value.hpp"
#include "rocplay/snapshot/snapshot.hpp"

#include <algorithm>
#include <string_view>
#include <utility>

namespace rocplay::snapshot {

namespace {

constexpr std::string_view kExpectedPrefix = "expected CUDA API failure, handled by the program: ";

// Calls `take(what)` with each failure cuda-gdb warned of in the exchange.
template <class Take> void api_scan(const mi::Exchange& exchange, Take take) {
  static constexpr std::string_view kMarkers[] = {"Cuda Runtime API error detected: ",
                                                  "Cuda Driver error detected: "};
  for (const auto& rec : exchange.records) {
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
      if (!what.empty() && !take(std::move(what))) {
        return;
      }
    }
  }
}

bool api_has(std::string_view s, std::string_view needle) {
  return s.find(needle) != std::string_view::npos;
}

} // namespace

bool is_expected_cuda_api_failure(std::string_view e) {
  // (error, the call that returned it): both must appear.
  static constexpr std::pair<std::string_view, std::string_view> kExpected[] = {
      {"CUDA_ERROR_INVALID_CONTEXT", "cuCtxGetDevice"},
      {"CUDA_ERROR_INVALID_CONTEXT", "cuCtxGetCurrent"},
      {"cudaErrorInvalidContext", "cuCtxGetDevice"},
      {"CUDA_ERROR_NOT_READY", "Query"},
      {"cudaErrorNotReady", "Query"},
      {"CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED", "EnablePeerAccess"},
      {"cudaErrorPeerAccessAlreadyEnabled", "EnablePeerAccess"},
      {"CUDA_ERROR_NOT_FOUND", "cuGetProcAddress"},
      {"CUDA_ERROR_NOT_FOUND", "cuGetExportTable"},
      {"cudaErrorSetOnActiveProcess", "cudaSetDeviceFlags"},
  };
  for (const auto& [error, call] : kExpected) {
    if (api_has(e, error) && api_has(e, call)) {
      return true;
    }
  }
  return false;
}

void take_cuda_api_errors(const mi::Exchange& exchange, std::vector<std::string>& errors,
                          std::size_t max) {
  api_scan(exchange, [&](std::string what) {
    if (errors.size() >= max) {
      return false;
    }
    if (!is_expected_cuda_api_failure(what) &&
        std::find(errors.begin(), errors.end(), what) == errors.end()) {
      errors.push_back(std::move(what));
    }
    return true;
  });
}

void take_expected_cuda_api_failures(const mi::Exchange& exchange, std::vector<std::string>& notes,
                                     std::size_t max) {
  api_scan(exchange, [&](std::string what) {
    if (!is_expected_cuda_api_failure(what)) {
      return true;
    }
    const auto n = static_cast<std::size_t>(
        std::count_if(notes.begin(), notes.end(),
                      [](const std::string& x) { return x.rfind(kExpectedPrefix, 0) == 0; }));
    if (n >= max) {
      return false;
    }
    std::string note = std::string(kExpectedPrefix) + what;
    if (std::find(notes.begin(), notes.end(), note) == notes.end()) {
      notes.push_back(std::move(note));
    }
    return true;
  });
}

void take_gpu_attach_error(const mi::Exchange& exchange, std::string& error) {
  static constexpr std::string_view kMarker = "CUDA driver hit an internal error while attaching";
  for (const auto& rec : exchange.records) {
    if (!error.empty()) {
      return;
    }
    if ((rec.kind() != mi::RecordKind::Console && rec.kind() != mi::RecordKind::Log) ||
        rec.line().find(kMarker) == std::string_view::npos) {
      continue;
    }
    std::string text = rec.stream_text();
    while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) {
      text.pop_back();
    }
    error = mi::lossy_utf8(mi::utf8_prefix(text, 300));
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
