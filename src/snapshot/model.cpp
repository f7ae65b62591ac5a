// Small accessors of the typed model.
#include "rocplay/snapshot/snapshot.hpp"

#include "rocplay/core/names.hpp"

#include <algorithm>
#include <charconv>

namespace rocplay {

constexpr NameTable<QueueType, 5> kQueueTypeNames{{
    {QueueType::Unknown, "Unknown"},
    {QueueType::Hsa, "HSA"},
    {QueueType::Pm4, "PM4"},
    {QueueType::Dma, "DMA"},
    {QueueType::Xgmi, "XGMI"},
}};
static_assert(names_cover(kQueueTypeNames, QueueType::Xgmi));

std::string_view to_string(QueueType type) {
  return name_of(kQueueTypeNames, type, "Unknown");
}

QueueType queue_type_from_string(std::string_view name) {
  return value_of(kQueueTypeNames, name).value_or(QueueType::Unknown);
}

std::optional<std::uint32_t> agent_number(const Agent& agent) {
  if (agent.number) {
    return agent.number;
  }
  std::string_view id = agent.id;
  if (auto dot = id.rfind('.'); dot != std::string_view::npos) {
    id.remove_prefix(dot + 1);
  }
  std::uint32_t n = 0;
  auto [end, ec] = std::from_chars(id.data(), id.data() + id.size(), n);
  if (ec != std::errc() || end != id.data() + id.size() || id.empty()) {
    return std::nullopt;
  }
  return n;
}

const SourceLine* Snapshot::source_line(std::uint64_t pc) const {
  for (const auto& line : source_lines) {
    if (line.pc == pc) {
      return &line;
    }
  }
  return nullptr;
}

std::optional<std::uint64_t> HostThread::lookup_pc(std::size_t i) const {
  if (i >= frames.size() || !frames[i].pc || *frames[i].pc == 0) {
    return std::nullopt;
  }
  const std::uint64_t pc = *frames[i].pc;
  // Frames inlined into the innermost one share its PC, which is not a return address.
  std::size_t j = i;
  while (j > 0 && frames[j - 1].pc == frames[i].pc) {
    --j;
  }
  return j == 0 && frames[0].level == 0 ? pc : pc - 1;
}

const SourceLine* Snapshot::frame_line(const HostThread& thread, std::size_t frame) const {
  auto pc = thread.lookup_pc(frame);
  return pc ? source_line(*pc) : nullptr;
}

const Dispatch* Snapshot::dispatch_of(const Wave& wave) const {
  if (!wave.dispatch) {
    return nullptr;
  }
  for (const auto& d : dispatches) {
    if (d.dispatch_no != wave.dispatch) {
      continue;
    }
    // A coordinate unknown on either side does not rule the dispatch out.
    if (d.agent && wave.agent && *d.agent != *wave.agent) {
      continue;
    }
    if (d.queue && wave.queue && *d.queue != *wave.queue) {
      continue;
    }
    return &d;
  }
  return nullptr;
}

const Agent* Snapshot::agent(std::uint32_t number) const {
  for (const auto& a : agents) {
    if (agent_number(a) == number) {
      return &a;
    }
  }
  return nullptr;
}

} // namespace rocplay
