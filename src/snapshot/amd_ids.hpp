// rocgdb's target-id strings (shared/reference/rocgdb-formats.md sections 1.3, 2.1, 2.5) and the
// dispatch cell formats (fence, grid). Any numeric slot may be `?`.
#pragma once

#include "rocplay/snapshot/snapshot.hpp"

#include <array>
#include <optional>
#include <string_view>
#include <vector>

namespace rocplay::snapshot::amd {

// `AMDGPU Wave 1:2:1:1 (0,0,0)/0`; the ROCm 5.x `AMDGPU Thread ...` prefix too.
struct WaveId {
  std::optional<std::uint32_t> agent;
  std::optional<std::uint32_t> queue;
  std::optional<std::uint64_t> dispatch;
  std::optional<std::uint64_t> wave;
  std::array<std::optional<std::int64_t>, 3> workgroup{};
  std::optional<std::uint32_t> wave_in_group;
};
std::optional<WaveId> parse_wave_id(std::string_view target_id);
bool is_wave_id(std::string_view target_id);

// `AMDGPU Lane 1:2:1:1/0 (0,0,0)[0,0,0]`.
struct LaneId {
  WaveId wave;
  std::optional<std::uint32_t> lane;
  std::array<std::optional<std::int64_t>, 3> work_item{};
};
std::optional<LaneId> parse_lane_id(std::string_view target_id);

// `AMDGPU Dispatch 1:2:1 (PKID 0)`.
struct DispatchId {
  std::optional<std::uint32_t> agent;
  std::optional<std::uint32_t> queue;
  std::optional<std::uint64_t> dispatch;
  std::optional<std::uint64_t> packet_id;
};
std::optional<DispatchId> parse_dispatch_id(std::string_view target_id);

// `AMDGPU Queue 1:2 (QID 1)`.
struct QueueId {
  std::optional<std::uint32_t> agent;
  std::optional<std::uint32_t> queue;
  std::optional<std::uint64_t> os_qid;
};
std::optional<QueueId> parse_queue_id(std::string_view target_id);

// `AMDGPU Agent (GPUID 35090)`.
std::optional<std::uint64_t> parse_agent_gpu_id(std::string_view target_id);

// `[B] [|] [Aa|As] [|] [Ra|Rs]`; empty is valid (no fence). nullopt for anything else.
std::optional<Fence> parse_fence(std::string_view text);
// `[256,1,1]` -> {256,1,1}; 1 to 3 components.
std::optional<std::vector<std::uint64_t>> parse_dims(std::string_view text);

QueueType parse_queue_type(std::string_view text);

// Lanes per wave for an architecture: 64 on gfx9 (CDNA, GCN), 32 on gfx10+ (RDNA, HIP default).
std::optional<std::uint32_t> lanes_for_architecture(std::string_view architecture);

} // namespace rocplay::snapshot::amd
