// CUDA API failures a program expects and handles (internal to src/snapshot).
#pragma once

#include "rocplay/mi/transcript.hpp"

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace rocplay::snapshot {

// A failure a runtime provokes and handles itself, as cuda-gdb printed it (`Returning 201
// (CUDA_ERROR_INVALID_CONTEXT) from cuCtxGetDevice_v2`): PyTorch's start-up probe for a context,
// stream and event queries that answer "not ready", peer access enabled twice, a driver entry
// point looked up and missing. take_cuda_api_errors() leaves them out.
bool is_expected_cuda_api_failure(std::string_view error);

// The expected failures of one exchange as notes (`expected CUDA API failure, handled by the
// program: ...`), each once, into `notes` while fewer than `max` such notes are there.
void take_expected_cuda_api_failures(const mi::Exchange& exchange, std::vector<std::string>& notes,
                                     std::size_t max = 8);

} // namespace rocplay::snapshot
