// The line lexing of the agent-log parser: launcher prefixes (stream demux), timestamps, wave
// lines, register and instruction lines, and a rank in a file name. Pure functions of one line;
// the state machine in parser.cpp calls them. Internal to src/agentlog.
#pragma once

#include "rocplay/agentlog/agentlog.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace rocplay::agentlog::detail {

// A line split into the launcher's prefix (its stream key, rank and pid) and the rest.
struct Prefix {
  std::string key;
  std::optional<int> rank;
  std::optional<std::int64_t> pid;
  std::string_view rest;
};

std::optional<int> small_int(std::string_view s);
std::string_view digits_at(std::string_view s, std::size_t pos);
// `2026-05-20T15:31:09.123456Z ` (docker logs -t, journald exports): stripped, not a stream.
std::string_view strip_timestamp(std::string_view s);
Prefix split_prefix(std::string_view line);
// Position of `wave_N: pc=0x` in s, or npos.
std::size_t find_wave_line(std::string_view s);
bool has_wave_tail(std::string_view s);
bool is_separator(std::string_view t);
bool valid_register_name(std::string_view n);
// `scalar registers:` -> `scalar`
std::optional<std::string> register_class_header(std::string_view t);
std::vector<std::string_view> split_ws(std::string_view s, std::size_t max_tokens);
// ` => 0x7f20f5e534c4 <+3012>:    s_endpgm`
std::optional<Instruction> parse_instruction(std::string_view t);
std::optional<std::pair<std::uint64_t, std::uint64_t>> parse_loaded_at(std::string_view t);
std::optional<std::size_t> find_ci(std::string_view hay, std::string_view needle);
std::optional<int> rank_from_name(std::string_view name);

} // namespace rocplay::agentlog::detail
